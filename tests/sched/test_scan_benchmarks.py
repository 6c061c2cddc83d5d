"""benchmarks/online_softmax.py, benchmarks/flash_attention.py and benchmarks/scan.py keep
working: their kernels are the derived ones and each measurement checks results against numpy
first (no timing is asserted)."""

from __future__ import annotations

import os
import sys
from types import ModuleType

import numpy as np
import pytest

from .scripts import ROOT, load_module

BENCH = ROOT / "benchmarks"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        return load_module(BENCH / f"{name}.py", f"{name}_bench")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def softmax_bench() -> ModuleType:
    return _load("online_softmax")


def test_online_softmax_measures_checked_kernels(softmax_bench: ModuleType) -> None:
    kernel = softmax_bench.SCRIPT.schedule(softmax_bench.SCRIPT.softmax).compile()
    for n in softmax_bench.thread_counts():
        times = softmax_bench.measure(8, 256, kernel, None, n, reps=1)
        assert times is not None and set(times) == {"cursched", "numpy"}
        row = softmax_bench.table_row("8x256", n, times)
        assert row.split()[:2] == ["8x256", str(n)] and row.endswith("x")
    # a wrong kernel is caught before anything is timed
    assert softmax_bench.measure(8, 256, softmax_bench.SCRIPT.softmax.compile(), None, 1, 1)
    assert softmax_bench.measure(8, 256, lambda *a: None, None, 1, reps=1) is None


def test_flash_attention_measures_checked_kernels() -> None:
    fa = _load("flash_attention")
    kernel = fa.SCRIPT.schedule_flash(fa.SCRIPT.attention).compile()
    times = fa.measure(128, 16, kernel, None, 2, reps=1)
    assert times is not None and set(times) == {"cursched", "numpy"}
    assert fa.measure(128, 16, lambda *a: None, None, 1, reps=1) is None


def test_interleaved_best_takes_the_minimum(softmax_bench: ModuleType) -> None:
    calls: list[str] = []
    best = softmax_bench.interleaved_best(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, reps=3
    )
    assert calls == ["a", "b"] * 3 and set(best) == {"a", "b"}
    assert all(0 <= t < 1 for t in best.values())


def test_interleaved_best_times_by_the_given_clock(softmax_bench: ModuleType) -> None:
    ticks = iter([0.0, 3.0, 3.0, 5.0])  # two calls: 3 s, then 2 s
    best = softmax_bench.interleaved_best({"a": lambda: None}, reps=2, clock=lambda: next(ticks))
    assert best == {"a": 2.0}


def test_flash_attention_cpu_times_one_thread_only() -> None:
    fa = _load("flash_attention")
    with pytest.raises(SystemExit):  # thread_time would miss the other threads' time
        fa.main(["--cpu", "--threads", "1,2", "--sizes", "64x8"])


def test_scan_benchmark_checks_then_measures(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("scan")
    assert bench.main(["--sizes", "4171", "--reps", "1"]) == 0
    rows = [r.split() for r in capsys.readouterr().out.splitlines() if "4171" in r]
    assert len(rows) == 4 * len({1, os.cpu_count() or 1}) and all(r[-1].endswith("x") for r in rows)
    # a wrong kernel is caught before anything is timed
    n = 4171
    x, d = np.ones(n, np.float32), np.ones(n, np.float32)
    wrong = {"sum": lambda *a: None, "sum avx2": lambda *a: None, "disc": lambda *a: None}
    assert bench.check(n, x, d, wrong) == [
        "sum at n = 4171",
        "sum avx2 at n = 4171",
        "discounted at n = 4171",
    ]


def test_online_softmax_cpu_times_one_thread_at_the_sizes_asked(
    softmax_bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(softmax_bench, "torch_module", lambda: None)
    assert softmax_bench.main(["--cpu", "--sizes", "16x128,32x64", "--reps", "1"]) == 0
    out = capsys.readouterr().out
    assert "times: CPU time of the thread" in out
    rows = [line.split()[:2] for line in out.splitlines() if "x" in line.split()[0]]
    assert [r for r in rows if r[0][0].isdigit()] == [["16x128", "1"], ["32x64", "1"]]
    with pytest.raises(SystemExit):  # thread_time would miss the other threads' time
        softmax_bench.main(["--cpu", "--threads", "1,2", "--sizes", "16x128"])
