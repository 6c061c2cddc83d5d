"""sched/cuda_attention_backward.py: three kernels (golden), emulated against the float64
formulas, torch autograd and the naive program in the interpreter at ragged sizes, races
refused where dQ would be shared, history replay, patterns only at the start."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
import pytest

from cursched import Proc, bind_loop, scope
from cursched.analysis.races import check_kernels
from cursched.codegen.cuda import nvcc_available
from cursched.primitives.gpu.bind import BindRaceError
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays

SCRIPT = ROOT / "sched" / "cuda_attention_backward.py"


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> Proc:
    p: Proc = script.schedule(script.attention_backward)
    return p


@pytest.fixture(scope="module")
def emulated(scheduled: Proc) -> object:
    # check_races: the emulation runs the threads of a block in both orders and compares
    return scheduled.compile(target="cuda-emulated", check_races=True)


def test_main_runs(script: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert script.main() == 0
    out = capsys.readouterr().out
    assert "ok: the emulated flash attention 2 backward" in out
    assert out.count('extern "C" __global__') == 3


def test_golden(scheduled: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled, "proc")
    golden.check(scheduled.cuda_source(), "cu")


def test_patterns_only_at_the_start() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule(", 1)[1].split("# -- running and checking", 1)[0]
    steps = body.split("p, nests = _fa2_nest(", 1)[1]
    assert not re.findall(r"\b(find\w*|at)\(", steps)
    nest = text.split("def _fa2_nest(", 1)[1].split("def _rows_keys(", 1)[0]
    assert not re.findall(r"\b(find\w*|at)\(", nest.split("split_off = []", 1)[1])


@pytest.mark.parametrize(("nq", "nk"), [(100, 77), (33, 130), (64, 64), (1, 5)])
def test_emulated_matches_torch_and_formulas(
    script: ModuleType, emulated: object, nq: int, nk: int
) -> None:
    """Ragged query and key tiles on both sides, whole tiles, a single query row."""
    assert script.check(emulated, nq, nk) == []


def test_other_tiles(script: ModuleType) -> None:
    """The derivation is not tied to its default tiles: 16-key blocks with 64-row query tiles
    (the dQ product's 64 head columns then use more threads than the keys)."""
    p = script.schedule(script.attention_backward, key_tile=16, query_tile=64)
    f = p.compile(target="cuda-emulated", check_races=True)
    assert script.check(f, 33, 130) == []


def test_emulated_matches_the_naive_program(script: ModuleType, emulated: object) -> None:
    """The kernels against the naive backward program in the interpreter (float32)."""
    x = script.inputs(37, 70, seed=3)
    got = script.run(emulated, x)
    ref = script.run(script.attention_backward.interpret, x)
    for name in script.OUTPUTS:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-5)


def test_equivalent_and_history_replays(script: ModuleType, scheduled: Proc) -> None:
    assert_equivalent(script.attention_backward, scheduled, trials=1, sizes={"Nq": 33, "Nk": 65})
    assert_history_replays(scheduled, attention_backward=script.attention_backward)


def test_kernel_structure(scheduled: Proc) -> None:
    """D first, then one block per key tile, then the dQ sum; Q/dO/dS tiles in SHARED, the
    dK and dV rows in registers and written once, dQ written only by dq_sum."""
    src = scheduled.cuda_source()
    names = re.findall(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)', src)
    assert names == ["drow", "dkdv", "dq_sum"]
    dkdv = src.split(" dkdv(", 1)[1].split(" dq_sum(", 1)[0]
    for decl in ("__shared__ float Qt[2048];", "__shared__ float dOt[2048];"):
        assert decl in dkdv
    assert "__shared__ float dS[2048];" in dkdv
    assert "float dK_acc[64];" in dkdv and "float dV_acc[64];" in dkdv
    assert "float P[1];" in dkdv and "float dP[1];" in dkdv
    assert dkdv.count("dK[") == 1 and dkdv.count("dV[") == 1  # written once
    assert "dQ[" not in dkdv.replace("dQ_part[", "")
    assert dkdv.count("__syncthreads();") == 2  # per query tile: after the loads, before dQ
    check_kernels(scheduled.ir())


def test_dq_in_place_across_key_blocks_is_a_race(script: ModuleType) -> None:
    """Without the partial tiles, blocks of the key loop would add into the same dQ: the
    block binding refuses it (why the schedule keeps dQ_part in the workspace)."""
    p, nests = script._fa2_nest(script.attention_backward, 64, 32)
    p, _ = scope(p, nests["P"].keys.as_block(), "dkdv", target="cuda")
    with pytest.raises(BindRaceError):
        bind_loop(p, nests["P"].keys, "blockIdx.x")


@pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
def test_compiles_with_nvcc(scheduled: Proc) -> None:
    from cursched.codegen.cuda import kernel_resources

    res = kernel_resources(scheduled.cuda_source())
    assert set(res) == {"drow", "dkdv", "dq_sum"}
    assert res["dkdv"].shared_bytes == 3 * 32 * 64 * 4


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("importlib").util.find_spec("cupy"), reason="no cupy")
def test_on_the_gpu(script: ModuleType, scheduled: Proc) -> None:
    if not script.gpu_available():
        pytest.skip("no GPU")
    g = scheduled.compile(target="cuda")
    for nq, nk in ((333, 333), (1000, 77), (64, 64)):
        assert script.check(g, nq, nk, gpu=True) == [], (nq, nk)


def test_un_expanded_partial_tile_read_is_a_tombstone(script: ModuleType) -> None:
    """The seed's failure mode on this derivation: a cursor to the read of the partial dQ tile
    taken before ``expand_dim`` gives it its key-block dimension is dead afterwards, and using
    it names the step; the returned cursors point into the new proc."""
    from cursched import expand_dim, stage_mem
    from cursched.errors import StaleCursorError

    p, nests = script._fa2_nest(script.attention_backward, 64, 32)
    rows = p.forward(nests["dQ"].head).parent().parent()
    window = "dQ[32 * it:32 * it + 32, 0:64]"
    p, part = stage_mem(p, rows.as_block(), window, "dQ_part", accum=True)
    old_read = part.store.body()[0].body()[0].body()[0].rhs()
    assert old_read.name() == "dQ_part"
    p, ex = expand_dim(p, part.alloc, "(Nk + 63) / 64", "jt")
    assert ex.alloc.proc() is p and all(a.proc() is p for a in ex.accesses)
    dead = p.forward(old_read)
    assert not dead
    with pytest.raises(StaleCursorError, match="expand_dim"):
        dead.name()
