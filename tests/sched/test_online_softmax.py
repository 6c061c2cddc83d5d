"""sched/online_softmax.py: runs as a file, golden output of the derived procs, float32 checks
against a float64 numpy reference with the issue's tolerances (rows starting with -inf, rows of
equal values), equivalence with the two-pass procs, and one pattern only."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cursched.testing import assert_equivalent

SCRIPT = Path(__file__).resolve().parents[2] / "sched" / "online_softmax.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("online_softmax_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_runs_as_a_file() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def softmax_denominator(R: size")
    assert "ok: denominator, softmax and log-sum-exp match numpy" in result.stdout


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
    from cursched.ir.alpha import alpha_equal

    for name in ("softmax_denominator", "softmax", "logsumexp"):
        base = getattr(script, name)
        p = script.schedule(base)
        env: dict[str, object] = {name: base}
        exec(p.history(), env)
        assert alpha_equal(env["p"].ir(), p.ir())  # type: ignore[attr-defined]
