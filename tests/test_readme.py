"""README.md: the set-up commands come first and work; every python block of the tour runs."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from cursched import Proc
from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_diff, alpha_equal

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.S | re.M)
INSTALL = "python -m pip install -e ."  # the library alone
RUN = "python sched/tiled_matmul.py"
INSTALL_DEV = "python -m pip install -e '.[dev]'"
TESTS = "python -m pytest -q -W error"


def test_readme_starts_with_the_two_setup_commands() -> None:
    (lang1, first), (lang2, second) = BLOCKS[:2]
    assert (lang1, lang2) == ("bash", "bash")
    assert first.strip() == f"{INSTALL} && {RUN}"
    assert second.startswith(f"{INSTALL_DEV} && bash .ci/run") and TESTS in second
    # nothing but a one-line intro before the first command
    assert README.index("```bash") < 200


def test_ci_runs_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in ci.splitlines()]
    assert lines.index(INSTALL) < lines.index(RUN) < lines.index(INSTALL_DEV)
    assert TESTS in ci


def test_the_first_install_is_the_library_alone() -> None:
    """`pip install -e .` brings only what running a schedule needs: no tool of the extras."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = {re.split(r"[<>=!\[ ]", d)[0].lower() for d in project["dependencies"]}
    assert base == {"numpy", "pysmt", "z3-solver", "platformdirs"}
    extras = project["optional-dependencies"]
    assert {"dev", "notebooks", "cuda", "bench"} <= set(extras)
    names = {k: {re.split(r"[<>=!\[ ]", d)[0].lower() for d in v} for k, v in extras.items()}
    assert {"pytest", "ruff", "mypy", "hypothesis"} <= names["dev"]
    assert {"jupytext", "nbconvert", "matplotlib", "ipywidgets"} <= names["notebooks"]
    assert names["notebooks"] & {"jupyterlab", "notebook"}
    assert {"exo-lang", "torch", "threadpoolctl"} <= names["bench"]
    assert "torch==2.13.0" in extras["bench"]


def test_the_readme_says_how_to_open_the_notebooks() -> None:
    assert "python -m pip install -e '.[notebooks]' && jupyter lab notebooks/" in README


def test_quickstart_runs_end_to_end() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "sched" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def softmax(n: size")
    assert "ok: matches numpy" in result.stdout


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The README's python blocks, run in order as one script (a file, so procs parse)."""
    code = "\n\n".join(text for lang, text in BLOCKS if lang == "python")
    path = tmp_path_factory.mktemp("readme") / "readme_tour.py"
    path.write_text(code, encoding="utf-8")
    return runpy.run_path(str(path))


def test_tour_defines_every_proc_it_shows(tour: dict[str, object]) -> None:
    shown = re.findall(r"^@(?:proc|instr\(.*\))\ndef (\w+)", README, re.M)
    assert len(shown) >= 10
    for name in shown:
        assert isinstance(tour[name], Proc), name


def test_tour_procs_print_and_parse_back(tour: dict[str, object]) -> None:
    procs = [v for v in tour.values() if isinstance(v, Proc)]
    for p in procs:
        parsed = parse_source(str(p), tour, filename=f"<printout of {p.name()}>")
        assert alpha_equal(p.ir(), parsed), alpha_diff(p.ir(), parsed)


def test_tour_shows_every_extern() -> None:
    from cursched.ir.externs import EXTERNS

    code = "\n".join(text for lang, text in BLOCKS if lang == "python")
    for name in EXTERNS:
        assert re.search(rf"\b{name}\(", code), name
