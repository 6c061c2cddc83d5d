"""reorder_loops, fission, fuse: golden output, one negative test per precondition,
forwarding, differential equivalence (interpreter, and the C backend for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, bind_loop, fission, fuse, proc, reorder_loops, scope
from cursched.cursors import ForCursor, GapCursor, IfCursor, Tombstone
from cursched.errors import StaleCursorError
from cursched.primitives.loops.loop_nests import (
    FissionAtEdgeError,
    FissionDependenceError,
    FissionNotInLoopError,
    FuseAxisError,
    FuseBoundsError,
    FuseConditionError,
    FuseDependenceError,
    FuseKindError,
    FuseNotAdjacentError,
    ReorderBoundsError,
    ReorderDependenceError,
    ReorderNotNestedError,
)
from cursched.testing import assert_equivalent

# --------------------------------------------------------------------------- reorder_loops


@proc
def transpose(n: size, m: size, A: f32[n, m] @ DRAM, B: f32[m, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            B[j, i] = A[i, j] * 2.0


@proc
def triangle(n: size, A: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, i):
            A[i, j] = 0.0


@proc
def stencil(n: size, A: f32[n, n] @ DRAM):
    for i in seq(1, n):
        for j in seq(0, n - 1):
            A[i, j] = A[i - 1, j + 1]


@proc
def not_nested(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 0.0
        for j in seq(0, 2):  # noqa: B007
            x[i] += 1.0


def test_reorder_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    i_loop, j_loop = transpose.find_loop("i"), transpose.find_loop("j")
    body = transpose.find("B[_] = _")
    p, c = reorder_loops(transpose, i_loop)
    golden.check(p)
    assert c.outer.name() == "j" and c.inner.name() == "i"
    assert p.forward(i_loop) == c.inner and p.forward(j_loop) == c.outer
    assert p.forward(body) == c.inner.body()[0]
    assert_equivalent(transpose, p, trials=3)


def test_reorder_forwards_an_old_cursor_and_history_replays() -> None:
    # the second argument is a cursor of version 0 used on version 1: it is forwarded before
    # the step is recorded, so history() names the right loop
    i_loop, j_loop = transpose.find_loop("i"), transpose.find_loop("j")
    p, _ = reorder_loops(transpose, i_loop)
    p, c = reorder_loops(p, j_loop)  # j moved from body[0].body[0] to body[0]
    assert str(p) == str(transpose) and c.outer == p.forward(i_loop)
    env: dict[str, object] = {"transpose": transpose}
    exec(p.history(), env)
    assert str(env["p"]) == str(p)


def test_reorder_stale_cursor() -> None:
    p, _ = fuse(
        producer_consumer, producer_consumer.find_loop("i"), producer_consumer.find_loop("j")
    )
    with pytest.raises(StaleCursorError, match="fused into `fused`"):
        reorder_loops(p, producer_consumer.find_loop("j"))


def test_reorder_not_nested() -> None:
    with pytest.raises(ReorderNotNestedError, match="not exactly one loop"):
        reorder_loops(not_nested, "i")


def test_reorder_bounds_depend_on_outer() -> None:
    with pytest.raises(ReorderBoundsError, match="use i"):
        reorder_loops(triangle, "i")


def test_reorder_dependence_has_counterexample() -> None:
    with pytest.raises(ReorderDependenceError) as e:
        reorder_loops(stencil, "i")
    assert e.value.counterexample is not None  # type: ignore[attr-defined]
    assert "counterexample" in str(e.value) and "# <--" in str(e.value)


# ---------------------------------------------------------------------------------- fission


@proc
def two_stmts(n: size, m: size, x: f32[n] @ DRAM, y: f32[n, m] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
        for j in seq(0, m):
            y[i, j] = 2.0
            y[i, j] += x[i]


@proc
def carried(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i]
        x[i + 1] = 3.0


@proc
def uses_local(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        t: f32
        t = 2.0
        x[i] = t


@proc
def in_if(n: size, x: f32[n + 2] @ DRAM):
    if n > 2:
        x[0] = 1.0
        x[1] = 2.0


@proc
def if_else(n: size, x: f32[n + 2] @ DRAM):
    for i in seq(0, n):
        if i == 0:
            x[1] = 1.0
            x[0] = 1.0
        else:
            x[i + 1] = x[0]


@proc
def loop_if(n: size, x: f32[n + 1] @ DRAM, y: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        if i > 0:
            y[i] = x[i]
            x[i] = y[i] * 2.0


@proc
def loop_if_carried(n: size, x: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        if i > 0:
            x[i - 1] = x[i]
            x[i] = 2.0


def test_fission_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop = two_stmts.find_loop("i")
    first = two_stmts.find("y[_] = _")
    second = two_stmts.find("y[_] += _")
    gap = first.after()
    p, c = fission(two_stmts, gap, n_lifts=2)
    golden.check(p)
    assert isinstance(c.first, ForCursor) and isinstance(c.second, ForCursor)
    assert c.first.next() == c.second
    assert isinstance(c.gap, GapCursor) and c.gap.anchor() == c.first
    assert p.forward(loop) == c.first
    assert p.forward(first).parent().parent() == c.first
    assert p.forward(second).parent().parent() == c.second
    fwd_gap = p.forward(gap)
    assert isinstance(fwd_gap, GapCursor) and fwd_gap.anchor() == p.forward(first)
    assert_equivalent(two_stmts, p, trials=3)


def test_fission_one_level_keeps_outer_loop(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = fission(two_stmts, two_stmts.find("y[_] = _").after())
    golden.check(p)
    assert c.first.parent() == p.forward(two_stmts.find_loop("i"))
    assert_equivalent(two_stmts, p, trials=3)


def test_fission_of_an_if(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = fission(in_if, in_if.find("x[0] = 1.0").after())
    golden.check(p)
    assert isinstance(c.first, IfCursor) and isinstance(c.second, IfCursor)
    assert_equivalent(in_if, p, trials=3)


def test_fission_through_loop_and_if(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = fission(loop_if, loop_if.find("y[_] = _").after(), n_lifts=2)
    golden.check(p)
    assert isinstance(c.first, ForCursor) and isinstance(c.second, ForCursor)
    assert isinstance(c.second.body()[0], IfCursor)
    assert_equivalent(loop_if, p, trials=3)


def test_fission_through_if_checks_dependences() -> None:
    with pytest.raises(FissionDependenceError):
        fission(loop_if_carried, loop_if_carried.find("x[_] = x[_]").after(), n_lifts=2)


def test_fission_not_in_loop() -> None:
    # an else branch (here reading x[0] at i >= 1, written by the then branch at i == 0)
    # would run before the second part
    with pytest.raises(FissionNotInLoopError):
        fission(if_else, if_else.find("x[1] = 1.0").after(), n_lifts=2)
    with pytest.raises(FissionNotInLoopError):
        fission(two_stmts, two_stmts.find("y[_] = _").after(), n_lifts=3)


def test_fission_at_edge() -> None:
    with pytest.raises(FissionAtEdgeError, match="edge"):
        fission(two_stmts, two_stmts.find("y[_] = _").before())


def test_fission_dependence_has_counterexample() -> None:
    with pytest.raises(FissionDependenceError) as e:
        fission(carried, carried.find("y[_] = _").after())
    assert e.value.counterexample is not None  # type: ignore[attr-defined]
    assert "counterexample" in str(e.value)


@proc
def window_before_gap(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        w = x[i : i + 2]
        w[1] += y[i]


def test_fission_window_defined_before_gap_and_written_after() -> None:
    with pytest.raises(FissionDependenceError, match="use w, defined before"):
        fission(window_before_gap, window_before_gap.find_loop("i").body()[0].after())


def test_fission_local_defined_before_gap() -> None:
    with pytest.raises(FissionDependenceError, match="t"):
        fission(uses_local, uses_local.find("t = _").after())


# ------------------------------------------------------------------------------------- fuse


@proc
def producer_consumer(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
    for j in seq(0, n):
        y[j] = x[j] * 2.0


@proc
def backwards(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
    for j in seq(0, n):
        y[j] = x[j + 1]


@proc
def other_bounds(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
    for j in seq(0, n - 1):
        x[j] += 1.0


@proc
def two_ifs(n: size, x: f32[n] @ DRAM):
    if n > 3:
        x[0] = 1.0
    else:
        x[0] = 2.0
    if 3 < n:  # noqa: SIM300
        x[1] = 1.0
    if n > 4:
        x[2] = 1.0


@proc
def par_loops(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM):
    for i in par(0, n):
        x[i + 1] = 1.0
    for j in par(0, n):
        y[j] = x[j]


def test_fuse_loops_golden_forwarding(golden) -> None:  # type: ignore[no-untyped-def]
    a, b = producer_consumer.find_loop("i"), producer_consumer.find_loop("j")
    use = producer_consumer.find("y[_] = _")
    p, c = fuse(producer_consumer, a, b)
    golden.check(p)
    assert p.forward(a) == c.fused
    assert len(c.first_body) == 1 and len(c.second_body) == 1
    assert p.forward(use) == c.second_body[0]
    dead = p.forward(b)
    assert isinstance(dead, Tombstone) and not dead
    assert dead.killer == "fuse" and dead.hint == "fused into `fused`"
    with pytest.raises(StaleCursorError, match="fused into `fused`"):
        fuse(p, c.fused, b)
    assert_equivalent(producer_consumer, p, trials=3)


def test_fuse_ifs_golden(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = fuse(two_ifs, "if n > 3: _", "if 3 < n: _")
    golden.check(p)
    assert isinstance(c.fused, IfCursor)
    assert len(c.first_body) == 1 and len(c.second_body) == 1
    assert_equivalent(two_ifs, p, trials=3)


def test_fuse_kind() -> None:
    with pytest.raises(FuseKindError):
        fuse(not_nested, "x[_] = _", "for j in _: _")


def test_fuse_not_adjacent() -> None:
    with pytest.raises(FuseNotAdjacentError):
        fuse(producer_consumer, producer_consumer.find_loop("j"), producer_consumer.find_loop("i"))


def test_fuse_bounds_differ_has_counterexample() -> None:
    with pytest.raises(FuseBoundsError, match="upper bounds differ") as e:
        fuse(other_bounds, other_bounds.find_loop("i"), other_bounds.find_loop("j"))
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


def test_fuse_conditions_differ() -> None:
    with pytest.raises(FuseConditionError, match="conditions differ"):
        fuse(two_ifs, "if 3 < n: _", "if n > 4: _")


def test_fuse_dependence_has_counterexample() -> None:
    with pytest.raises(FuseDependenceError) as e:
        fuse(backwards, backwards.find_loop("i"), backwards.find_loop("j"))
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


def test_fuse_par_loops_must_stay_race_free() -> None:
    # fusable as seq loops (y[j] reads x[j], written by the earlier iteration i = j - 1),
    # but one par loop would race on it
    with pytest.raises(FuseDependenceError, match="carries a dependence"):
        fuse(par_loops, par_loops.find_loop("i"), par_loops.find_loop("j"))


@proc
def two_thread_loops(n: size, x: f32[n + 1] @ DRAM, z: f32[4, n] @ DRAM):
    for b in seq(0, n):
        for t in seq(0, 4):
            z[t, b] = x[b] * 0.5
        for u in seq(0, 4):
            z[u, b] += x[b + 1]


def test_fuse_bound_loops_need_the_same_axis() -> None:
    """Campaign finding (seed 2026, schedule 542): a loop bound to threadIdx.y fused with a
    seq loop became a bound seq loop, and verify_proc refused fuse's own result."""
    k, _ = scope(two_thread_loops, two_thread_loops.body(), "k", target="cuda")
    one, _ = bind_loop(k, k.find_loop("t"), "threadIdx.y")
    with pytest.raises(FuseAxisError, match=r"threadIdx\.y and no axis"):
        fuse(one, one.find_loop("t"), one.find_loop("u"))
    other, _ = bind_loop(one, one.find_loop("u"), "threadIdx.x")
    with pytest.raises(FuseAxisError, match=r"threadIdx\.y and threadIdx\.x"):
        fuse(other, other.find_loop("t"), other.find_loop("u"))
    both, _ = bind_loop(one, one.find_loop("u"), "threadIdx.y")
    fused, c = fuse(both, both.find_loop("t"), both.find_loop("u"))
    assert c.fused.node().axis == "threadIdx.y" and c.fused.node().mode == "par"
    assert_equivalent(two_thread_loops, fused, trials=3)


@proc
def copy4(a: [f32][4] @ DRAM, b: [f32][4] @ DRAM):
    for k in seq(0, 4):
        a[k] = b[k]


@proc
def window_loops(n: size, x: f32[4 * n] @ DRAM, y: f32[4 * n] @ DRAM):
    for i in seq(0, n):
        copy4(x[4 * i : 4 * i + 4], y[4 * i : 4 * i + 4])
    for j in seq(0, n):
        w = y[4 * j : 4 * j + 4]
        copy4(w, x[4 * j : 4 * j + 4])


def test_fuse_renames_inside_window_types() -> None:
    p, c = fuse(window_loops, window_loops.find_loop("i"), window_loops.find_loop("j"))
    assert "w = y[4 * i:4 * i + 4]" in str(p)
    assert len(c.second_body) == 2
    assert_equivalent(window_loops, p, trials=3)


def test_fused_nest_compiles() -> None:
    p, _ = fuse(
        producer_consumer, producer_consumer.find_loop("i"), producer_consumer.find_loop("j")
    )
    f = p.compile()
    n = 9
    x, y = np.zeros(n, np.float32), np.zeros(n, np.float32)
    f(n, x, y)
    np.testing.assert_array_equal(y, np.full(n, 2.0, np.float32))
