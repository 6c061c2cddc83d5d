"""sched/cuda_flash_attention.py: runs as a file, one kernel (golden) that nvcc compiles
without a spill, the emulation matches numpy, equivalence in the interpreter, history replay."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from cursched import Proc
from cursched.codegen.cuda import kernel_resources, nvcc_available
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "cuda_flash_attention.py"


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> Proc:
    p: Proc = script.schedule_flash(script.attention)
    return p


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert "ok: emulated flash attention" in out
    assert out.count('extern "C" __global__') == 1


def test_golden(scheduled: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled, "proc")
    golden.check(scheduled.cuda_source(), "cu")


def test_patterns_only_at_the_start() -> None:
    body = SCRIPT.read_text(encoding="utf-8").split("def schedule_flash", 1)[1]
    body = body.split("def inputs", 1)[0]
    calls = re.findall(r"\b(find\w*|at)\(", body)
    assert calls == ["find_loop", "find_loop", "find_alloc_or_arg"]
    first_steps = body.split("# 1.", 1)[1]
    assert not re.findall(r"\b(find\w*|at)\(", first_steps)


def test_emulated_matches_numpy(script: ModuleType, scheduled: Proc) -> None:
    f = scheduled.compile(target="cuda-emulated", check_races=True)
    assert script.check(f, 64, 48) == []
    src = scheduled.cuda_source()
    assert "__shared__ float Kt[1024];" in src and "__shared__ float Vt[1024];" in src


@pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
def test_compiles_with_nvcc(scheduled: Proc) -> None:
    res = kernel_resources(scheduled.cuda_source())["flash_attention"]
    assert not res.spills, res
    assert res.shared_bytes == 2 * 16 * 64 * 4


def test_equivalent_and_history_replays(script: ModuleType, scheduled: Proc) -> None:
    assert_equivalent(script.attention, scheduled, trials=1, sizes={"Nq": 32, "Nk": 32})
    assert_history_replays(scheduled, attention=script.attention)


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("importlib").util.find_spec("cupy"), reason="no cupy")
def test_on_the_gpu(script: ModuleType, scheduled: Proc) -> None:
    if not script.gpu_available():
        pytest.skip("no GPU")
    assert script.check(scheduled.compile(target="cuda"), 96, 336, gpu=True) == []
