"""sched/tiled_matmul.py: runs as a file end to end, schedules with returned cursors only,
and its history replays to the same proc."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np

from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "tiled_matmul.py"


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def sgemm(M: size")
    assert "ok: matches numpy" in out
    assert "# schedule of sgemm: 10 step(s)" in out
    assert "for ko in seq(0, K / 8):" in out


def test_final_proc_golden(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(script.schedule(script.sgemm))


def test_only_the_first_step_uses_a_pattern() -> None:
    body = SCRIPT.read_text(encoding="utf-8").split("def schedule", 1)[1].split("def main", 1)[0]
    calls = re.findall(r"\b(find\w*|at)\(", body)
    assert calls == ["find"], calls


def test_schedule_is_equivalent_and_history_replays(script: ModuleType) -> None:
    p = script.schedule(script.sgemm)
    assert_equivalent(script.sgemm, p, trials=2, sizes={"M": 16, "N": 32, "K": 8})
    assert_history_replays(p, sgemm=script.sgemm)


def test_compiled_matches_numpy(script: ModuleType) -> None:
    f = script.schedule(script.sgemm).compile()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 48)).astype(np.float32)
    c = np.zeros((32, 48), np.float32)
    f(32, 48, 16, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
