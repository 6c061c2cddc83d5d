"""sched/stage_and_replace.py: runs as a file end to end (stages, lifts, expands, replaces
by instructions, compiles and matches numpy), and its schedule keeps the proc's meaning."""

from __future__ import annotations

from types import ModuleType

from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "stage_and_replace.py"


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def sgemm(M: size")
    assert "ok: matches numpy" in out
    for call in (
        "load4(Ct[i0, 0:4], C[4 * io + i0, 4 * jo:4 * jo + 4])",
        "load4(Bk[k, 0:4], B[k, 4 * jo:4 * jo + 4])",
        "fma4(Ct[ii, 0:4], A[4 * io + ii, k], Bk[k, 0:4])",
        "store4(C[4 * io + i0, 4 * jo:4 * jo + 4], Ct[i0, 0:4])",
    ):
        assert call in out
    assert "Bk: f32[K, 4] @ DRAM" in out
    assert "# schedule of sgemm: 13 step(s)" in out


def test_one_pattern_then_cursors(script: ModuleType) -> None:
    """The schedule names one thing by a pattern; every other step takes a cursor."""
    text = SCRIPT.read_text(encoding="utf-8")
    body = text[text.index("def schedule") : text.index("def main")]
    assert body.count('find_loop("') + body.count('find("') == 1
    assert "p.at(" not in body


def test_schedule_is_equivalent(script: ModuleType) -> None:
    p = script.schedule(script.sgemm)
    assert_equivalent(script.sgemm, p, trials=2, sizes={"M": 8, "N": 8, "K": 3})


def test_history_replays(script: ModuleType) -> None:
    p = script.schedule(script.sgemm)
    assert "# other procs it uses (bind them first): fma4, load4, store4" in p.history()
    assert_history_replays(
        p, sgemm=script.sgemm, fma4=script.fma4, load4=script.load4, store4=script.store4
    )
