"""sched/cuda_scan.py: runs as a file, four kernels (golden) that nvcc compiles for sm_90, the
emulation (both thread orders) matches float64 numpy at lengths that are not multiples of the
chunk, equivalence in the interpreter, history replay."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from cursched import Proc
from cursched.codegen.cuda import kernel_resources, nvcc_available
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "cuda_scan.py"


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> Proc:
    p: Proc = script.schedule(script.prefix_sum)
    return p


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert "ok: matches numpy" in out
    assert out.count('extern "C" __global__') == 4


def test_golden(scheduled: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled, "proc")
    golden.check(scheduled.cuda_source(), "cu")


def test_only_the_first_steps_use_patterns() -> None:
    body = SCRIPT.read_text(encoding="utf-8").split("def schedule", 1)[1].split("def check", 1)[0]
    assert re.findall(r"\b(find\w*|at)\(", body) == ["find", "find_loop"]


def test_tree_scan_in_shared_with_barriers(scheduled: Proc) -> None:
    src = scheduled.cuda_source()
    scan = src.split("scan_chunks(", 1)[1].split("__global__", 1)[0]
    assert "__shared__ float y_sh[256];" in scan
    # 8 up-sweep and 7 down-sweep levels; a barrier wherever one level reads another
    # thread's element (insert_barriers), not between levels run by thread 0 alone
    assert 12 <= scan.count("__syncthreads();") <= 17


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1001])
def test_emulated_matches_numpy(script: ModuleType, scheduled: Proc, n: int) -> None:
    f = scheduled.compile(target="cuda-emulated", check_races=True)
    assert script.check(f, n, seed=n) <= 1e-6


@pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
def test_compiles_with_nvcc(scheduled: Proc) -> None:
    res = kernel_resources(scheduled.cuda_source())
    assert set(res) == {"scan_chunks", "carry", "fixup", "fixup_tail"}
    assert not any(r.spills for r in res.values())
    assert res["scan_chunks"].shared_bytes == 4 * 256 + 4


def test_equivalent_and_history_replays(script: ModuleType, scheduled: Proc) -> None:
    small = script.schedule(script.prefix_sum, 8)
    assert_equivalent(script.prefix_sum, small, trials=2, sizes={"n": 29}, rtol=1e-5, atol=1e-5)
    assert_history_replays(scheduled, prefix_sum=script.prefix_sum)


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("importlib").util.find_spec("cupy"), reason="no cupy")
def test_on_the_gpu(script: ModuleType, scheduled: Proc) -> None:
    if not script.gpu_available():
        pytest.skip("no GPU")
    assert script.check(scheduled.compile(target="cuda"), 10**6 + 3, gpu=True) <= 1e-6
