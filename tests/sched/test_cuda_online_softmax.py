"""sched/cuda_online_softmax.py: runs as a file, one kernel (golden) that nvcc compiles, a
warp per row (the partial pairs in SHARED, a tree reduction with a barrier per level), the
emulation matches numpy on 333 rows, equivalence in the interpreter, history replay."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from cursched import Proc
from cursched.codegen.cuda import kernel_resources, nvcc_available
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "cuda_online_softmax.py"


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> Proc:
    p: Proc = script.schedule(script.softmax)
    return p


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert "ok: matches numpy" in out
    assert out.count('extern "C" __global__') == 1


def test_golden(scheduled: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled, "proc")
    golden.check(scheduled.cuda_source(), "cu")


def test_only_the_first_step_uses_a_pattern() -> None:
    body = SCRIPT.read_text(encoding="utf-8").split("def schedule", 1)[1].split("def rows", 1)[0]
    assert re.findall(r"\b(find\w*|at)\(", body) == ["find_loop"]


def test_emulated_matches_numpy(script: ModuleType, scheduled: Proc) -> None:
    f = scheduled.compile(target="cuda-emulated", check_races=True)
    assert script.check(f, 333, 77) <= 1e-6
    assert script.check(f, 3, 4) <= 1e-6  # fewer columns than threads
    assert script.check(f, 5, 97) <= 1e-6


def test_a_warp_per_row(scheduled: Proc) -> None:
    src = scheduled.cuda_source()
    assert "__launch_bounds__(32)" in src
    assert "__shared__ float m_part[32];" in src and "__shared__ float s_part[32];" in src
    # after the partial pairs and after each of the 5 levels of the tree (16 ... 1 threads)
    assert src.count("__syncthreads();") == 6
    for h in (16, 8, 4, 2, 1):
        assert f"if (threadIdx.x < {h}) {{" in src and f"m_part[t + {h}]" in src
    assert "x[r * C + t + 32 * jo]" in src  # consecutive threads, consecutive columns


@pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
def test_compiles_with_nvcc(scheduled: Proc) -> None:
    res = kernel_resources(scheduled.cuda_source())["softmax_rows"]
    assert not res.spills and res.shared_bytes == 2 * 32 * 4


def test_equivalent_and_history_replays(script: ModuleType, scheduled: Proc) -> None:
    assert_equivalent(script.softmax, scheduled, trials=2, sizes={"R": 70, "C": 5})
    assert_history_replays(scheduled, softmax=script.softmax)


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("importlib").util.find_spec("cupy"), reason="no cupy")
def test_on_the_gpu(script: ModuleType, scheduled: Proc) -> None:
    if not script.gpu_available():
        pytest.skip("no GPU")
    g = scheduled.compile(target="cuda")
    assert script.check(g, 333, 77, gpu=True) <= 1e-6
    assert script.check(g, 45, 5, gpu=True) <= 1e-6
