"""cut_loop, shift_loop, join_loops: golden output, one negative test per precondition,
forwarding, differential equivalence (interpreter, and the C backend for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, bind_loop, cut_loop, join_loops, proc, scope, shift_loop
from cursched.cursors import ForCursor, Tombstone
from cursched.ir.nodes import BinOp, Const, Read
from cursched.ir.types import INT
from cursched.primitives.loops.loop_common import BadIndexExpressionError
from cursched.primitives.loops.loop_ranges import (
    CutOutOfRangeError,
    JoinAxisError,
    JoinBodiesDifferError,
    JoinNotAdjacentError,
    JoinNotContiguousError,
    JoinParallelError,
    ShiftNegativeError,
)
from cursched.testing import assert_equivalent


@proc
def fill(n: size, x: f32[n] @ DRAM):
    assert n >= 4
    for i in seq(0, n):
        x[i] = 1.0
        for j in seq(0, 2):  # noqa: B007
            x[i] += 2.0


@proc
def offset(n: size, x: f32[n + 2] @ DRAM):
    for i in seq(2, n + 2):
        x[i] = x[i - 2] * 0.5


@proc
def pieces(n: size, x: f32[n] @ DRAM):
    assert n >= 3
    for i in seq(0, 3):
        x[i] = 1.0
    for j in seq(3, n):
        x[j] = 1.0
    for k in seq(3, n):
        x[k] = 2.0


@proc
def gapped(n: size, x: f32[n + 2] @ DRAM):
    for i in seq(0, 1):
        x[i] = 1.0
    for j in seq(2, n + 2):
        x[j] = 1.0


@proc
def par_pieces(x: f32[4] @ DRAM):
    # each loop alone is race-free; joined, iterations i and i + 4 write one element
    for i in par(0, 4):
        x[i % 4] = 1.0
    for j in par(4, 8):
        x[j % 4] = 1.0


# -------------------------------------------------------------------------------- cut_loop


def test_cut_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt = fill.find_loop("i"), fill.find("x[_] = _")
    inner = fill.find_loop("j")
    p, c = cut_loop(fill, loop, "n - 2")
    golden.check(p)
    assert isinstance(c.first, ForCursor) and isinstance(c.second, ForCursor)
    assert c.first.next() == c.second
    assert p.forward(loop) == c.first
    assert p.forward(stmt) == c.first.body()[0]
    assert p.forward(inner) == c.first.body()[1]
    assert_equivalent(fill, p, trials=3)


@pytest.mark.parametrize("at", [2, "2", "n / 2", "n - 4"])
def test_cut_points(at: object) -> None:
    p, c = cut_loop(fill, "i", at)
    assert_equivalent(fill, p, trials=2)
    assert c.second.hi().node() == fill.find_loop("i").hi().node()


def test_cut_point_as_ir_expression() -> None:
    n = fill.find_loop("i").loop().hi
    assert isinstance(n, Read)
    p, _ = cut_loop(fill, "i", BinOp("-", n, Const(1, INT), n.type))
    assert "for i in seq(0, n - 1):" in str(p)
    assert_equivalent(fill, p, trials=2)


def test_cut_point_as_expression_cursor() -> None:
    p, _ = cut_loop(offset, "i", offset.find_loop("i").lo())
    assert "for i in seq(2, 2):" in str(p)
    assert_equivalent(offset, p, trials=2)


def test_cut_point_cursor_of_another_version() -> None:
    p, _ = shift_loop(offset, "i", 2)  # a new version
    with pytest.raises(BadIndexExpressionError, match="another version"):
        cut_loop(p, "i", offset.find_loop("i").lo())


@pytest.mark.parametrize("at", ["m", "n * n", "i", "n +", 1.5, None])
def test_cut_bad_expression(at: object) -> None:
    with pytest.raises(BadIndexExpressionError, match="cut point"):
        cut_loop(fill, "i", at)


@pytest.mark.parametrize("at", ["n + 1", -1, "n - 5"])
def test_cut_out_of_range_has_counterexample(at: object) -> None:
    with pytest.raises(CutOutOfRangeError, match="does not provably hold") as e:
        cut_loop(fill, "i", at)
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ shift_loop


def test_shift_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt = offset.find_loop("i"), offset.find("x[_] = _")
    p, c = shift_loop(offset, loop, 0)
    golden.check(p)
    assert p.forward(loop) == c.loop
    assert p.forward(stmt) == c.loop.body()[0]
    assert_equivalent(offset, p, trials=3)


def test_shift_to_a_size() -> None:
    p, _ = shift_loop(offset, "i", "n")
    assert "for i in seq(n, 2 * n):" in str(p)
    assert_equivalent(offset, p, trials=3)


def test_shift_negative() -> None:
    with pytest.raises(ShiftNegativeError):
        shift_loop(offset, "i", -1)
    with pytest.raises(ShiftNegativeError):
        shift_loop(offset, "i", "1 - n")


def test_shift_bad_expression() -> None:
    with pytest.raises(BadIndexExpressionError, match="new lower bound"):
        shift_loop(offset, "i", "k")


# ------------------------------------------------------------------------------ join_loops


def test_join_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    a, b = pieces.find_loop("i"), pieces.find_loop("j")
    stmt = pieces.find("x[_] = _")
    p, c = join_loops(pieces, a, b)
    golden.check(p)
    assert p.forward(a) == c.loop and p.forward(stmt) == c.loop.body()[0]
    dead = p.forward(b)
    assert isinstance(dead, Tombstone) and dead.hint == "joined into `loop`"
    assert_equivalent(pieces, p, trials=3)


def test_join_undoes_cut() -> None:
    p, c = cut_loop(fill, "i", "n / 2")
    p2, _ = join_loops(p, c.first, c.second)
    assert str(p2) == str(fill)
    assert_equivalent(fill, p2, trials=2)


def test_join_not_adjacent() -> None:
    with pytest.raises(JoinNotAdjacentError):
        join_loops(pieces, pieces.find_loop("i"), pieces.find_loop("k"))


def test_join_bodies_differ() -> None:
    with pytest.raises(JoinBodiesDifferError):
        join_loops(pieces, pieces.find_loop("j"), pieces.find_loop("k"))


def test_join_not_contiguous_has_counterexample() -> None:
    with pytest.raises(JoinNotContiguousError) as e:
        join_loops(gapped, gapped.find_loop("i"), gapped.find_loop("j"))
    assert e.value.counterexample is not None or "not provably" in str(e.value)  # type: ignore[attr-defined]


def test_join_par_loops_must_stay_race_free() -> None:
    with pytest.raises(JoinParallelError, match="carries a dependence"):
        join_loops(par_pieces, par_pieces.find_loop("i"), par_pieces.find_loop("j"))


@proc
def thread_rows(n: size, x: f32[n + 1] @ DRAM, z: f32[4, n] @ DRAM):
    for b in seq(0, n):
        for t in seq(0, 4):
            z[t, b] = x[b] * 0.5


def test_join_bound_loops_need_the_same_axis() -> None:
    """Campaign finding (seed 2026, schedule 10217): a thread loop cut at 0, its first
    (empty) piece bound to threadIdx.y and joined with the unbound second piece, became a
    bound seq loop, and verify_proc refused join_loops' own result."""
    k, _ = scope(thread_rows, thread_rows.body(), "k", target="cuda")
    k, c = cut_loop(k, k.find_loop("t"), 2)
    one, _ = bind_loop(k, c.first, "threadIdx.y")
    first, second = one.find_loop("t #0"), one.find_loop("t #1")
    with pytest.raises(JoinAxisError, match=r"threadIdx\.y and no axis"):
        join_loops(one, first, second)
    other, _ = bind_loop(one, second, "threadIdx.x")
    with pytest.raises(JoinAxisError, match=r"threadIdx\.y and threadIdx\.x"):
        join_loops(other, other.find_loop("t #0"), other.find_loop("t #1"))
    both, _ = bind_loop(one, second, "threadIdx.y")
    joined, j = join_loops(both, both.find_loop("t #0"), both.find_loop("t #1"))
    assert j.loop.node().axis == "threadIdx.y" and j.loop.node().mode == "par"
    assert_equivalent(thread_rows, joined, trials=3)


def test_cut_then_shift_compiles() -> None:
    p, c = cut_loop(offset, "i", "n + 1")
    p, _ = shift_loop(p, c.second, 0)
    f = p.compile()
    rng = np.random.default_rng(2)
    n = 7
    x1 = rng.standard_normal(n + 2).astype(np.float32)
    x2 = x1.copy()
    f(n, x1)
    offset.interpret(n, x2)
    np.testing.assert_array_equal(x1, x2)
