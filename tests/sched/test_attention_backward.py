"""sched/attention_backward.py: the flash attention 2 backward derived from the naive backward:
golden printout, the loop structure of flash attention 2, float32 gradients against float64
(the numpy formula always, torch autograd of SDPA when torch is installed), equivalence with
the naive proc in the interpreter, the history replays, patterns only at the start, and the
forwarding of the seed's failure mode (a read of the un-expanded accumulator, a statement of
an unrolled tile)."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import numpy as np
import pytest

from cursched import Memory, Proc, bind_expr, insert_pass, split, unroll_loop
from cursched.cursors import Tombstone
from cursched.errors import StaleCursorError
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays

SCRIPT = ROOT / "sched" / "attention_backward.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def fa2(script: ModuleType) -> Proc:
    """The schedule (run once for the module)."""
    p = script.schedule(script.attention_backward)
    assert isinstance(p, Proc)
    return p


@pytest.fixture(scope="module")
def fa2_loops(script: ModuleType) -> Proc:
    """The schedule without its AVX2 steps (9 and 10): the loop structure on any machine."""
    p = script.schedule(script.attention_backward, vector=False)
    assert isinstance(p, Proc)
    return p


@pytest.fixture(scope="module")
def fa2_guarded(script: ModuleType) -> Proc:
    """The guarded schedule (steps 1-6 at any sequence lengths)."""
    p = script.schedule_guarded(script.without_asserts(script.attention_backward))
    assert isinstance(p, Proc)
    return p


def test_guarded_flash_attention_2_backward(script: ModuleType, fa2_guarded: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    """The same loop nest as the whole-tile schedule's steps 1-6, the ragged tiles' elements
    under guards; equal to the naive program without its asserts at lengths that are not
    multiples of the tiles (interpreter, and compiled against the float64 formula)."""
    golden.check(fa2_guarded)
    text = str(fa2_guarded)
    assert text.index("for jt in seq(0, (Nk + 63) / 64):") < text.index(
        "for it in seq(0, (Nq + 63) / 64):"
    )
    assert "[Nq, Nk]" not in text and text.count("if 64 * jt + jj < Nk:") >= 5
    naive = script.without_asserts(script.attention_backward)
    assert_equivalent(naive, fa2_guarded, sizes={"Nq": 70, "Nk": 40, "D": 3}, trials=1)
    for nq, nk, d in ((100, 77, 5), (64, 130, 8)):
        assert script.check(fa2_guarded, nq, nk, d, compiled=True, torch=False) == []


def test_flash_attention_2_backward(fa2_loops: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(fa2_loops)
    text = str(fa2_loops)
    # Drow and the zeroing of dQ first, then the key tiles outermost, the query tiles inside
    assert text.index("Drow[i] += dO[i, d] * O[i, d]") < text.index("dQ[i, d] = 0.0")
    assert text.index("dQ[i, d] = 0.0") < text.index("for jt in seq(0, Nk / 64):")
    assert text.index("for jt in seq(0, Nk / 64):") < text.index("for it in seq(0, Nq / 64):")
    assert text.count("for jt in") == 1 and text.count("for it in") == 1
    # P, dP and dS one tile each, allocated in the query loop: nothing Nq x Nk
    queries = text.split("for it in seq(0, Nq / 64):", 1)[1]
    for buf in ("P", "dP", "dS"):
        assert f"{buf}: f32[64, 64] @ DRAM" in queries
    assert "[Nq, Nk]" not in text
    # dK and dV accumulated in a local tile zeroed in place (no load), written once after
    # the query loop; dQ accumulated in place
    for out in ("dK", "dV"):
        assert f"{out}_acc: f32[64, D] @ DRAM" in text
        assert len(re.findall(rf"\b{out}\[", text)) == 1  # the one store
        assert f"= {out}[" not in text
        assert text.index(f"{out}[64 * jt + ") > text.rindex(f"{out}_acc[jj, d] +=")
    assert "dQ[64 * it + ii, d] += dS[ii, jj] * K[64 * jt + jj, d]" in text
    # the scores and dP summed over rows of the transposed K and V tiles
    assert "s[jj] += Q[64 * it + ii, d] * Kt[d, jj]" in text
    assert "dP[ii, jj] += dO[64 * it + ii, d] * Vt[d, jj]" in text


def test_avx2_micro_kernels(script: ModuleType, fa2: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    """Steps 9 and 10: each of the five products a 2 x 32 register tile of fused
    multiply-adds, the weights' exp in vectors; correct in C with head columns in the cut tail
    (67) and without (64)."""
    if script.isa() is None:
        pytest.skip("the CPU has no AVX2: the schedule stops before its vector steps")
    golden.check(fa2)
    text = str(fa2)
    for c in ("s", "dP", "dV_acc", "dK_acc", "dQ"):
        assert f"{c}_reg: f32[2, 4, 8] @ AVX2" in text and f"{c}_b: f32[4, 8] @ AVX2" in text
        assert f"mm256_fmadd_ps_broadcast({c}_reg[" in text
    assert text.count("mm256_fmadd_ps_broadcast(") == 5
    assert "mm256_exp_ps(exp_v[0:8], arg_v[0:8])" in text and " exp(" not in text
    for d in (64, 67):
        assert script.check(fa2, 128, 64, d, compiled=True, seed=d, torch=False) == []


def test_the_histories_replay(script: ModuleType, fa2: Proc, fa2_loops: Proc) -> None:
    # the instructions and memories the history names
    names = {
        k: v
        for k, v in vars(script).items()
        if (isinstance(v, Proc) and v.is_instr()) or (isinstance(v, type) and issubclass(v, Memory))
    }
    for p in (fa2, fa2_loops):
        assert_history_replays(p, attention_backward=script.attention_backward, **names)
    naive = script.without_asserts(script.attention_backward)
    assert_history_replays(script.schedule_guarded(naive), attention_backward=naive)


def test_equivalent_to_the_naive_backward(script: ModuleType, fa2: Proc) -> None:
    assert_equivalent(script.attention_backward, fa2, sizes={"Nq": 64, "Nk": 128, "D": 3}, trials=2)


def test_gradients_against_the_float64_formula(script: ModuleType, fa2: Proc) -> None:
    """Always runs (no torch needed): the interpreter on the naive and the scheduled proc,
    and the compiled kernel, within 1e-3 relative of the float64 formula."""
    assert script.check(script.attention_backward, 64, 64, 3, compiled=False, torch=False) == []
    # head 33: one micro-kernel column block (32) and the tail, in the interpreter
    assert script.check(fa2, 64, 64, 33, compiled=False, seed=1, torch=False) == []
    assert script.check(fa2, 128, 192, 67, compiled=True, seed=2, torch=False) == []


def test_the_float64_formula_is_torch_autograd(script: ModuleType) -> None:
    """The numpy formula the other checks use agrees with torch autograd (float64), and an
    error past the tolerance is reported."""
    if not HAS_TORCH:
        pytest.skip("torch is not installed (pip install -e '.[dev]')")
    x = script.inputs(64, 128, 5, seed=3)
    ref, want = script.torch_reference(x), script.reference(x)
    assert max(script.errors(ref, want).values()) < 1e-6
    wrong = dict(ref, dK=ref["dK"] * (1 + 2 * script.TOLERANCE))
    assert script.errors(wrong, want)["dK"] > script.TOLERANCE


@pytest.mark.parametrize(
    ("which", "nq", "nk", "d"),
    [
        ("whole", 64, 64, 64),
        ("whole", 128, 192, 16),
        ("whole", 192, 128, 67),
        ("guarded", 100, 77, 67),
    ],
)
def test_gradients_against_torch_autograd(
    script: ModuleType, fa2: Proc, fa2_guarded: Proc, which: str, nq: int, nk: int, d: int
) -> None:
    """The compiled kernels' dQ, dK, dV within 1e-3 relative (float32) of torch autograd of
    ``scaled_dot_product_attention`` in float64: the whole-tile schedule at three sizes (one
    with an odd head dimension, one with the head in the micro-kernels' scalar tail only),
    the guarded one at odd sequence lengths and head."""
    if not HAS_TORCH:
        pytest.skip("torch is not installed (pip install -e '.[dev]')")
    x = script.inputs(nq, nk, d, seed=nq + d)
    got = script.run(fa2 if which == "whole" else fa2_guarded, x, compiled=True)
    ref = script.torch_reference(x)
    errors = script.errors(got, ref)
    assert all(e <= script.TOLERANCE for e in errors.values()), errors
    assert all(np.isfinite(got[n]).all() for n in script.OUTPUTS)


def test_patterns_only_at_the_start() -> None:
    """In each schedule function the patterns come before its first step (``# 1.``,
    ``# 7.``): every later step uses cursors found there or returned by a primitive."""
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule(", 1)[1].split("# -- inputs and references", 1)[0]
    starts = 0
    for fn in body.split("\ndef "):
        head, *steps = re.split(r"\n    # \d+\. ", fn, maxsplit=1)
        assert not re.search(r"\b(find\w*|at)\(|#\d", "".join(steps)), fn.split("(", 1)[0]
        starts += bool(steps) and "find" in head
    assert starts == 2  # schedule (steps 7-10) and _fa2_nest (steps 1-6)


def test_a_read_of_the_unexpanded_accumulator_is_a_tombstone(script: ModuleType, fa2: Proc) -> None:
    """The seed's failure mode: the consumer's read of the score accumulator ``s`` (the MMA
    result, here the read in ``exp(s - L)``) taken before step 8's ``expand_dim`` of ``s``
    does not silently go on naming the un-expanded value: it is a tombstone, and using it
    raises ``StaleCursorError`` naming the step."""
    naive = script.attention_backward
    read = naive.find("exp(_)").args()[0].lhs()
    assert read.name() == "s"
    dead = fa2.forward(read)
    assert isinstance(dead, Tombstone) and not dead
    assert "expand_dim" in str(dead)
    with pytest.raises(StaleCursorError, match="killed by expand_dim"):
        bind_expr(fa2, read, "score")
    # what to use instead: the statement keeps its identity, its read is the expanded one
    loops = script.schedule(naive, vector=False)
    assert "s[jj] - L[64 * it + ii]" in str(loops.forward(naive.find("P[_] = exp(_)")).rhs())


def test_a_statement_of_an_unrolled_tile_is_a_tombstone(script: ModuleType, fa2: Proc) -> None:
    """A cursor to the dS statement taken on the naive proc forwards through the whole
    schedule; after a 4-way unroll of its key tile it is a tombstone naming unroll_loop."""
    naive = script.attention_backward
    ds = naive.find("dS[_] = _")
    live = fa2.forward(ds)
    assert live and "dS[ii, jj] = P[ii, jj]" in str(live.parent())
    p, tiles = split(fa2, live.parent(), 4, ("jq", "jr"), tail="perfect")
    p, copies = unroll_loop(p, tiles.inner)
    assert len(copies.copies) == 4
    dead = p.forward(ds)
    assert not dead and "unroll_loop" in str(dead)
    with pytest.raises(StaleCursorError, match="killed by unroll_loop"):
        insert_pass(p, ds.after())
    with pytest.raises(StaleCursorError, match="killed by unroll_loop"):
        dead.rhs()


def test_fission_forwards_a_loop_to_the_first_nest(script: ModuleType, fa2_loops: Proc) -> None:
    """``fission`` kills nothing, and a cursor to a split loop follows the first nest: the dQ
    head loop of the naive proc is, in the final proc, the loop zeroing dQ (not the one
    summing into it), while the sum statement follows into the second nest."""
    naive = script.attention_backward
    head = naive.find("dQ[_] = 0.0").parent()
    loop = fa2_loops.forward(head)
    assert loop and "dQ[i, d] = 0.0" in str(loop.body()[0]) and len(loop.body()) == 1
    total = fa2_loops.forward(naive.find("dQ[_] += _"))
    assert total and not loop.is_ancestor_of(total)
