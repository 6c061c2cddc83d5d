"""sched/online_softmax.py: runs as a file, golden output of the derived procs, float32 checks
against a float64 numpy reference with the issue's tolerances (rows starting with -inf, rows of
equal values), equivalence with the two-pass procs, and one pattern only."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "online_softmax.py"


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def softmax_denominator(R: size")
    assert "ok: denominator, softmax and log-sum-exp match numpy" in out


@pytest.mark.parametrize("name", ["softmax_denominator", "softmax", "logsumexp"])
def test_golden_numpy_equivalent(script: ModuleType, golden, name: str) -> None:  # type: ignore[no-untyped-def]
    p = getattr(script, name)
    q = script.schedule(p)
    golden.check(q, name=name)
    text = str(q)
    assert "for jo in seq(0, C / 8):" in text and "alpha = alpha" not in text
    if name == "softmax":
        # the same dimension as a reduction (tiles of 8) and a parallel one (tiles of 16)
        assert "for jn in seq(0, C / 16):" in text
    for seed in (0, 1):
        x = script.rows(5, 48 if name != "softmax" else 64, seed)
        assert script.check(q, x, compiled=False) == []
    assert script.check(q, script.rows(7, 128), compiled=True) == []
    assert_equivalent(p, q, sizes={"R": 3, "C": 32}, trials=2)


def test_only_the_first_step_uses_a_pattern() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule", 1)[1].split("def rows", 1)[0]
    calls = re.findall(r"\b(find\w*|at)\(", body)
    assert calls == ["find_loop"], calls


def test_histories_replay(script: ModuleType) -> None:
    for name in ("softmax_denominator", "softmax", "logsumexp"):
        base = getattr(script, name)
        assert_history_replays(script.schedule(base), **{name: base})
