"""``cursched compile`` on every file of ``sched/`` writes the C of the scheduled procs.

Every schedule file declares what it produces with ``scheduled()`` (docs/cli.md). For each
file the test runs the CLI, then compares the C it wrote with the C of the script's own result,
computed here from the script's entry points (``EXPECTED``), and checks that this C is not that
of the unscheduled input. A file added to ``sched/`` without ``scheduled()`` fails here; one
without an entry in ``EXPECTED`` is still checked against its own ``scheduled()``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cursched import Proc
from cursched.analysis.kernels import kernels
from cursched.cli import SCHEDULED, main
from cursched.codegen.c import generate_unit
from cursched.codegen.cuda import generate_cuda
from cursched.errors import CurschedError

from .scripts import ROOT, load_module

FILES = sorted((ROOT / "sched").glob("*.py"))

# The script's own result, from the functions its main() uses.
EXPECTED: dict[str, Callable[[Any], list[Proc]]] = {
    "tiled_matmul": lambda m: [m.schedule(m.sgemm)],
    "stage_and_replace": lambda m: [m.schedule(m.sgemm)],
    "online_softmax": lambda m: [
        m.schedule(p) for p in (m.softmax_denominator, m.softmax, m.logsumexp)
    ],
    "prefix_scan": lambda m: [m.discounted_scan, m.schedule(m.scan_normalised)[0]],
    "attention": lambda m: [m.schedule_row(m.attention_row), m.schedule_flash(m.attention)],
    "quickstart": lambda m: [m.softmax],
    "sgemm_x86": lambda m: [m.schedule(m.sgemm)],
    "cuda_sgemm": lambda m: [m.schedule(m.sgemm)],
    "cuda_online_softmax": lambda m: [m.schedule(m.softmax)],
    "cuda_flash_attention": lambda m: [m.schedule_flash(m.attention)],
    "cuda_attention_backward": lambda m: [m.schedule(m.attention_backward)],
    "cuda_scan": lambda m: [m.schedule(m.prefix_sum)],
}
# Files whose procs are used as written (nothing to schedule).
UNSCHEDULED = {"quickstart"}


def _root(p: Proc) -> Proc:
    while (parent := p.parent()) is not None:
        p = parent
    return p


def test_sched_holds_the_known_files() -> None:
    assert set(EXPECTED) <= {f.stem for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_compile_writes_the_scheduled_procs(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod: ModuleType = load_module(path, f"{path.stem}_cli_script")
    assert callable(getattr(mod, SCHEDULED, None)), (
        f"sched/{path.name} does not declare what it produces: add a module-level"
        f" `def {SCHEDULED}() -> list[Proc]` returning the scheduled procs (docs/cli.md)"
    )
    expected = EXPECTED.get(path.stem, lambda m: list(m.scheduled()))(mod)
    if any(any(True for _ in kernels(p.ir())) for p in expected):
        _check_cuda(path, expected, tmp_path, capsys)
        return
    assert main(["compile", str(path), "-o", str(tmp_path)]) == 0
    assert "warning" not in capsys.readouterr().err
    written = (tmp_path / f"{path.stem}.c").read_text()
    assert written == generate_unit(path.stem, [p.ir() for p in expected]).c_source
    if path.stem in UNSCHEDULED:
        return
    scheduled = [p for p in expected if p.version > 0]
    assert scheduled, f"sched/{path.name}: scheduled() returns no scheduled proc"
    for p in scheduled:
        # the emitted function is the schedule's, not the input's
        alone = generate_unit("one", [p.ir()]).c_source
        naive = generate_unit("one", [_root(p).ir()]).c_source
        assert alone != naive
        assert main(["compile", f"{path}:{p.name()}", "-o", str(tmp_path), "--name", "one"]) == 0
        assert (tmp_path / "one.c").read_text() == alone


def _check_cuda(
    path: Path, expected: list[Proc], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CUDA schedule (kernels in its procs): ``compile --target cuda`` writes their .cu."""
    assert all(p.version > 0 for p in expected), f"sched/{path.name}: an unscheduled proc"
    for p in expected:
        argv = ["compile", f"{path}:{p.name()}", "--target", "cuda", "-o", str(tmp_path)]
        assert main([*argv, "--name", "one"]) == 0
        assert "warning" not in capsys.readouterr().err
        written = (tmp_path / "one.cu").read_text()
        assert written == generate_cuda(p.ir()).source
        try:  # the input, when it has kernels at all, gives other CUDA
            naive = generate_cuda(_root(p).ir()).source
        except CurschedError:
            continue
        assert written != naive
