"""sched/cuda_flash_attention.py: runs as a file, one kernel (golden) that nvcc compiles
without a spill, the emulation matches numpy, equivalence in the interpreter, history replay."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
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
    assert calls == ["find_loop", "find_loop", "find_alloc_or_arg", "find_loop"]
    first_steps = body.split("# 1.", 1)[1]
    assert not re.findall(r"\b(find\w*|at)\(", first_steps)


def test_emulated_matches_numpy(script: ModuleType, scheduled: Proc) -> None:
    f = scheduled.compile(target="cuda-emulated", check_races=True)
    # sequence length 333 (ragged query and key tiles), odd sizes on each side, full tiles
    for nq, nk in ((333, 333), (45, 77), (64, 48), (1, 1), (31, 17)):
        assert script.check(f, nq, nk) == [], (nq, nk)
    src = scheduled.cuda_source()
    assert "__shared__ float Kt[1024];" in src and "__shared__ float Vt[1024];" in src


def test_running_values_and_output_row_in_registers(scheduled: Proc) -> None:
    """m, l and the output row are per-thread arrays; O is written once, at the end."""
    src = scheduled.cuda_source()
    body = src.split("void __launch_bounds__(32) flash_attention", 1)[1]
    for decl in ("float m[1];", "float l[1];", "float o[64];", "float S[16];", "float w;"):
        assert decl in body, decl
    assert body.count("O[") == 1  # the store of the finished row
    assert "16 * io + ii < Nk" in body and "32 * rt + rr < Nq" in body


def test_tail_keys_do_not_reach_the_sum(script: ModuleType, scheduled: Proc) -> None:
    """Keys past ``Nk`` in the staged tile (garbage in shared memory) must not change the
    result: a huge value just past the sequence would dominate the softmax if it leaked."""
    f = scheduled.compile(target="cuda-emulated")
    x = script.inputs(33, 21)
    big_k = np.vstack([x["K"], np.full((11, 64), 50.0, np.float32)])
    big_v = np.vstack([x["V"], np.full((11, 64), 1e6, np.float32)])
    o, lse = np.zeros((33, 64), np.float32), np.zeros(33, np.float32)
    # a view of the first 21 rows: the buffers continue with the huge rows in memory
    f(33, 21, x["Q"], big_k[:21], big_v[:21], o, lse)
    ref, ref_lse = script.reference(x["Q"], x["K"], x["V"])
    np.testing.assert_allclose(o, ref, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(lse, ref_lse, atol=1e-5, rtol=1e-4)


@pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
def test_compiles_with_nvcc(scheduled: Proc) -> None:
    res = kernel_resources(scheduled.cuda_source())["flash_attention"]
    assert not res.spills, res
    assert res.shared_bytes == 2 * 16 * 64 * 4


def test_equivalent_and_history_replays(script: ModuleType, scheduled: Proc) -> None:
    assert_equivalent(script.attention, scheduled, trials=1, sizes={"Nq": 33, "Nk": 21})
    assert_history_replays(scheduled, attention=script.attention)


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("importlib").util.find_spec("cupy"), reason="no cupy")
def test_on_the_gpu(script: ModuleType, scheduled: Proc) -> None:
    if not script.gpu_available():
        pytest.skip("no GPU")
    g = scheduled.compile(target="cuda")
    assert script.check(g, 333, 333, gpu=True) == []
    assert script.check(g, 45, 77, gpu=True) == []
