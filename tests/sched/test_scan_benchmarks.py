"""benchmarks/online_softmax.py and benchmarks/flash_attention.py keep working: their kernels
are the derived ones and each measurement checks results against numpy first (no timing is
asserted)."""

from __future__ import annotations

import sys
from types import ModuleType

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
    derived = softmax_bench.SCRIPT.schedule(softmax_bench.softmax, reduce_tile=64, norm_tile=256)
    assert "for jo in seq(0, C / 64):" in str(derived)
    kernels = {"cursched": derived.compile(), "cs fast": derived.compile(extra_cflags=("-O1",))}
    row = softmax_bench.measure(8, 256, kernels, None)
    assert row is not None and row.split()[:3] == ["8", "x", "256"]
    # a wrong kernel is caught before anything is timed
    wrong = {"cursched": softmax_bench.softmax.compile(), "cs fast": lambda *a: None}
    assert softmax_bench.measure(8, 256, wrong, None) is None


def test_flash_attention_measures_checked_kernels() -> None:
    fa = _load("flash_attention")
    derived = fa.SCRIPT.schedule_flash(fa.attention, 64, 16)
    kernels = {"cursched": derived.compile(), "cs fast": derived.compile()}
    row = fa.measure(128, 16, kernels, None, ref_tol=1e-5)
    assert row is not None and row.split()[:3] == ["128", "x", "16"]
    wrong = {"cursched": kernels["cursched"], "cs fast": lambda *a: None}
    assert fa.measure(128, 16, wrong, None, ref_tol=1e-5) is None
