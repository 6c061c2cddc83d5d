"""sched/cuda_sgemm.py: runs as a file, the kernel text (golden) compiles with nvcc without a
register spill, the emulation matches numpy at ragged sizes, the schedule is equivalent to
the naive proc in the interpreter and its history replays."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from cursched import Proc
from cursched.codegen.cuda import kernel_resources, nvcc_available
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "cuda_sgemm.py"


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> Proc:
    p: Proc = script.schedule(script.sgemm)
    return p


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def sgemm(M: size")
    assert "ok: matches numpy" in out
    assert 'extern "C" __global__ void __launch_bounds__(256) sgemm_64x64(' in out


def test_final_proc_and_kernel_golden(scheduled: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled, "proc")
    golden.check(scheduled.cuda_source(), "cu")


def test_patterns_only_in_the_first_steps() -> None:
    body = SCRIPT.read_text(encoding="utf-8").split("def schedule", 1)[1].split("def check", 1)[0]
    assert re.findall(r"\b(find\w*|at)\(", body) == ["find"]
    # besides that one, the only strings naming code are the two loops of the first splits
    assert re.findall(r'split\(p, "(\w+)"', body) == ["i", "j"]


def test_emulated_matches_numpy_at_ragged_sizes(script: ModuleType, scheduled: Proc) -> None:
    f = scheduled.compile(target="cuda-emulated", check_races=True)
    assert script.check(f, 100, 77, 130) <= 1e-4
    assert script.check(f, 1, 1, 1) <= 1e-4


def test_two_barriers_and_a_register_tile(scheduled: Proc) -> None:
    src = scheduled.cuda_source()
    assert src.count("__syncthreads();") == 2
    assert "float acc[16];" in src
    assert "__shared__ float As[1024];" in src and "__shared__ float Bs[1024];" in src


@pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
def test_cubin_has_no_spill(scheduled: Proc) -> None:
    res = kernel_resources(scheduled.cuda_source())["sgemm_64x64"]
    assert not res.spills, res
    assert res.shared_bytes == 2 * 64 * 16 * 4
    assert 0 < res.registers <= 255


def test_equivalent_in_the_interpreter_and_history_replays(
    script: ModuleType, scheduled: Proc
) -> None:
    assert_equivalent(script.sgemm, scheduled, trials=1, sizes={"M": 67, "N": 66, "K": 17})
    assert_history_replays(scheduled, sgemm=script.sgemm)


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("importlib").util.find_spec("cupy"), reason="no cupy")
def test_on_the_gpu(script: ModuleType, scheduled: Proc) -> None:
    if not script.gpu_available():
        pytest.skip("no GPU")
    assert script.check(scheduled.compile(target="cuda"), 100, 77, 130, gpu=True) <= 1e-4


def test_benchmark_runs_without_a_gpu() -> None:
    out = run_file(ROOT / "benchmarks" / "cuda.py")
    assert "emulated sgemm 100x77x130" in out
    assert "emulated flash attention 333 x 333: matches numpy" in out
    assert "no GPU" in out or "cuBLAS" in out
