"""The ``cursched`` command line: compile, show, help, and one-line errors."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from cursched import Proc
from cursched.cli import main
from cursched.ir.alpha import alpha_equal

EXAMPLE = Path(__file__).with_name("schedule_example.py")


def test_compile_writes_c_and_h(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(EXAMPLE), "-o", str(tmp_path)]) == 0
    c = (tmp_path / "schedule_example.c").read_text()
    h = (tmp_path / "schedule_example.h").read_text()
    assert "void scale(" in c and "void scale_copy(" in c
    assert "void copy1(" not in c  # instructions are expanded, not emitted
    assert "void scale(int_fast64_t n, float *a, float *restrict x);" in h
    assert "scale_copy" in capsys.readouterr().out
    # the generated unit compiles on its own
    r = subprocess.run(
        [
            "cc",
            "-c",
            "-fopenmp",
            "-Wall",
            "-Werror",
            str(tmp_path / "schedule_example.c"),
            "-o",
            str(tmp_path / "u.o"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr


def test_compile_selected_procs(tmp_path: Path) -> None:
    assert (
        main(["compile", str(EXAMPLE), "-o", str(tmp_path), "--proc", "scale", "--name", "k"]) == 0
    )
    c = (tmp_path / "k.c").read_text()
    assert "void scale(" in c and "scale_copy" not in c


def test_compile_several_named_procs(tmp_path: Path) -> None:
    argv = ["compile", str(EXAMPLE), "-o", str(tmp_path), "--proc", "scale", "copy1"]
    assert main(argv) == 0
    c = (tmp_path / "schedule_example.c").read_text()
    # an instruction named explicitly becomes a function running its template
    assert "void scale(" in c and "void copy1(" in c and "scale_copy" not in c


def test_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", f"{EXAMPLE}:scale"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def scale(n: size")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", f"{EXAMPLE}:nope"], "defines no proc nope"),
        (["show", str(EXAMPLE)], "expected FILE.py:NAME"),
        (["compile", "/nonexistent/file.py"], "no such file"),
        (["compile", str(EXAMPLE), "--proc", "nope"], "defines no proc nope"),
    ],
)
def test_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("cursched: error: ") and message in err
    assert err.count("\n") == 1


def test_broken_schedule_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from __future__ import annotations\nraise ValueError('boom')\n")
    assert main(["compile", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom" in err and "Traceback" not in err


@pytest.mark.parametrize("cmd", [[], ["compile"], ["show"]])
def test_help(cmd: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*cmd, "--help"])
    assert info.value.code == 0
    assert "usage: cursched" in capsys.readouterr().out


def test_console_script_error_has_no_traceback() -> None:
    help_run = subprocess.run(
        [sys.executable, "-m", "cursched.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert help_run.returncode == 0 and "compile" in help_run.stdout
    r = subprocess.run(
        [sys.executable, "-m", "cursched.cli", "show", f"{EXAMPLE}:missing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and r.stderr.startswith("cursched: error:")


# -- the schedule-file convention: scheduled() ---------------------------------------------------

DECLARED = Path(__file__).with_name("schedule_declared.py")


def _c_of(tmp_path: Path, argv: list[str]) -> str:
    assert main(["compile", *argv, "-o", str(tmp_path), "--name", "u"]) == 0
    return (tmp_path / "u.c").read_text()


def test_compile_writes_what_scheduled_returns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cursched.codegen.c import generate_unit

    ns = runpy.run_path(str(DECLARED))
    want = generate_unit("u", [ns["schedule"](ns["scale"]).ir()]).c_source
    naive = generate_unit("u", [ns["scale"].ir()]).c_source
    assert want != naive
    assert _c_of(tmp_path, [str(DECLARED)]) == want
    assert "scale v1" in capsys.readouterr().out
    # the scheduled proc shadows the input of the same name: naming it gives the schedule ...
    assert _c_of(tmp_path, [f"{DECLARED}:scale"]) == want
    assert _c_of(tmp_path, [str(DECLARED), "--proc", "scale"]) == want
    # ... and --unscheduled the input as written, without a warning
    assert _c_of(tmp_path, [f"{DECLARED}:scale", "--unscheduled"]) == naive
    assert "warning" not in capsys.readouterr().err


def test_show_prints_the_scheduled_proc(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", f"{DECLARED}:scale"]) == 0
    out, err = capsys.readouterr()
    assert "for io in seq(0, n / 4):" in out and not err
    assert main(["show", f"{DECLARED}:scale", "--unscheduled"]) == 0
    assert "for i in seq(0, n):" in capsys.readouterr().out


def test_show_history_prints_a_script_that_replays(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", f"{DECLARED}:scale", "--history"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("# schedule of scale: 1 step(s), v0 -> v1")
    ns = runpy.run_path(str(DECLARED))
    env: dict[str, object] = {"scale": ns["scale"]}
    exec(script, env)
    replayed = env["p"]
    assert isinstance(replayed, Proc)
    assert alpha_equal(replayed.ir(), ns["schedule"](ns["scale"]).ir())


def test_an_unscheduled_input_warns_with_the_name_to_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # helper: not returned by scheduled(), never scheduled; the file has a schedule
    assert main(["show", f"{DECLARED}:helper"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("cursched: warning: helper in ") and "empty history" in err
    assert f"use {DECLARED}:scale" in err
    # a file with no scheduled() whose module-level procs were scheduled: the warning names the
    # proc made from the input
    f = tmp_path / "derived.py"
    f.write_text(DECLARED.read_text().split("def scheduled")[0])
    assert main(["compile", f"{f}:scale", "-o", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and f"use {f}:scale_tiled" in err
    # a file with no schedule at all: no warning
    assert main(["compile", f"{EXAMPLE}:scale", "-o", str(tmp_path)]) == 0
    assert not capsys.readouterr().err


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("def scheduled():\n    return 3\n", "scheduled() must return Procs, not int"),
        ("def scheduled():\n    return [scale, 1]\n", "returned a int among its procs"),
        ("def scheduled():\n    return [scale, scale]\n", "two procs named scale"),
        ("def scheduled():\n    raise KeyError('x')\n", "KeyError"),
    ],
)
def test_a_bad_scheduled_is_one_line(
    tmp_path: Path, body: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.py"
    f.write_text(EXAMPLE.read_text() + "\n\n" + body)
    assert main(["compile", str(f), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cursched: error: ") and message in err and err.count("\n") == 1


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata

    import cursched

    assert cursched.__version__ == importlib.metadata.version("cursched")
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"cursched {cursched.__version__}\n"
