"""lift_alloc, sink_alloc, delete_buffer, reuse_buffer: golden output, one negative test per
precondition, forwarding, differential equivalence (interpreter; C for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    DRAM,
    delete_buffer,
    expand_dim,
    lift_alloc,
    proc,
    reuse_buffer,
    sink_alloc,
    stage_mem,
)
from cursched.cursors import AllocCursor
from cursched.errors import StaleCursorError
from cursched.primitives.buffers.allocs import (
    DeleteBufferNotAllocError,
    DeleteBufferUsedError,
    LiftAllocCountError,
    LiftAllocEmptyError,
    LiftAllocScopeError,
    LiftAllocShapeError,
    LiftAllocTopError,
    ReuseBufferNotAllocError,
    ReuseBufferNotDeadError,
    ReuseBufferScopeError,
    ReuseBufferTypeError,
    SinkAllocCarriedError,
    SinkAllocNoScopeError,
    SinkAllocUsedAfterError,
)
from cursched.testing import assert_equivalent


@proc
def rows(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM):
    for i in seq(0, n):
        if n > 2:
            t: f32[4] @ DRAM
            for j in seq(0, 4):
                t[j] = x[i, j] * 2.0
            for j in seq(0, 4):
                y[i, j] = t[j] + 1.0


@proc
def tri(n: size, x: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, i):
            x[i, j] = 1.0


@proc
def parallel(n: size, x: f32[n] @ DRAM):
    for i in par(0, n):
        t: f32 @ DRAM
        t = x[i]
        x[i] = t * t


@proc
def lonely(n: size):
    for i in seq(0, n):  # noqa: B007
        t: f32 @ DRAM  # noqa: F842


@proc
def running(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    s: f32 @ DRAM
    for i in seq(0, n):
        s = x[i]
        y[i] = s
    for i in seq(0, n):
        s += x[i]


@proc
def carried(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    s: f32[2] @ DRAM
    for i in seq(0, n):
        y[i] = s[0]
        s[0] = x[i]
        s[1] = x[i]


@proc
def two(x: f32[4] @ DRAM, y: f32[4] @ DRAM):
    a: f32[2] @ DRAM
    for j in seq(0, 2):
        a[j] = x[j]
    for j in seq(0, 2):
        y[j] = a[j]
    b: f32[2] @ DRAM
    for j in seq(0, 2):
        b[j] = x[j + 2]
    for j in seq(0, 2):
        y[j + 2] = b[j]
    c: f32[3] @ DRAM
    for j in seq(0, 3):
        c[j] = 0.0
    u: f32 @ DRAM  # noqa: F842


@proc
def clobber(x: f32[2] @ DRAM, y: f32[2] @ DRAM):
    a: f32 @ DRAM
    a = x[0]
    b: f32 @ DRAM
    b = x[1]
    a = 0.0
    y[0] = b
    y[1] = a


@proc
def loop_reads(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    a: f32 @ DRAM
    a = 0.0
    for i in seq(0, n):
        y[i] = a
        b: f32 @ DRAM
        b = x[i]
        y[i] += b


# ------------------------------------------------------------------------------ lift_alloc


def test_lift_alloc_two_levels(golden) -> None:  # type: ignore[no-untyped-def]
    t = rows.find_alloc_or_arg("t")
    p, c = lift_alloc(rows, t, n_lifts=2)
    golden.check(p)
    assert isinstance(c.alloc, AllocCursor) and c.alloc.path() == (("body", 0),)
    assert p.forward(t) == c.alloc
    assert_equivalent(rows, p, trials=3)


def test_lift_then_sink_round_trips() -> None:
    p, c = lift_alloc(rows, "t")
    p2, c2 = sink_alloc(p, c.alloc)
    assert str(p2) == str(rows)
    assert p2.forward(c.alloc) == c2.alloc


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_lift_alloc_bad_count(n: object) -> None:
    with pytest.raises(LiftAllocCountError):
        lift_alloc(rows, "t", n)


def test_lift_alloc_past_the_top() -> None:
    with pytest.raises(LiftAllocTopError):
        lift_alloc(rows, "t", 3)


def test_lift_alloc_out_of_par() -> None:
    with pytest.raises(LiftAllocScopeError, match="carries a dependence"):
        lift_alloc(parallel, "t")
    # once each iteration has its own element, the loop stays parallel
    p, c = expand_dim(parallel, "t", "n", "i")
    p2, _ = lift_alloc(p, c.alloc)
    assert "for i in par(0, n):" in str(p2) and str(p2).index("t: f32[n]") < str(p2).index("for i")
    assert_equivalent(parallel, p2, trials=2)


def test_lift_alloc_shape_uses_loop() -> None:
    # the frontend only writes size-shaped allocations; staging makes a loop-shaped one
    p, c = stage_mem(tri, "for j in _: _", "x[i, 0:i]", "t")
    assert "t: f32[i] @ DRAM" in str(p)
    with pytest.raises(LiftAllocShapeError, match="uses i"):
        lift_alloc(p, c.alloc)


def test_lift_alloc_only_statement() -> None:
    with pytest.raises(LiftAllocEmptyError):
        lift_alloc(lonely, "t")


# ------------------------------------------------------------------------------ sink_alloc


def test_sink_alloc_into_loop(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = lift_alloc(rows, "t", 2)
    p, c = sink_alloc(p, c.alloc)
    golden.check(p)
    assert c.alloc.parent().name() == "i"
    assert_equivalent(rows, p, trials=3)


def test_sink_alloc_no_scope_after() -> None:
    with pytest.raises(SinkAllocNoScopeError):
        sink_alloc(two, "u")


def test_sink_alloc_used_after() -> None:
    with pytest.raises(SinkAllocUsedAfterError):
        sink_alloc(running, "s")


def test_sink_alloc_loop_carried_value() -> None:
    with pytest.raises(SinkAllocCarriedError, match=r"y\[i\] = s\[0\]"):
        sink_alloc(carried, "s")


@proc
def guarded_tiles(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    t: f32[n]
    for io in seq(0, (n + 3) / 4):
        for ii in seq(0, 4):
            if 4 * io + ii < n:
                t[4 * io + ii] = x[4 * io + ii]
        for ii in seq(0, 4):
            if 4 * io + ii < n:
                y[4 * io + ii] = 2.0 * t[4 * io + ii]


@proc
def guarded_tiles_overread(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM):
    t: f32[n + 1]
    for io in seq(0, (n + 3) / 4):
        for ii in seq(0, 4):
            if 4 * io + ii < n:
                t[4 * io + ii] = x[4 * io + ii]
        for ii in seq(0, 4):
            if 4 * io + ii < n:
                y[4 * io + ii] = 2.0 * t[4 * io + ii + 1]


def test_sink_alloc_guarded_fill() -> None:
    """A ragged tile's guarded fill covers the reads under the same guard (element by
    element: no box of the write shows it)."""
    p, c = sink_alloc(guarded_tiles, "t")
    assert c.alloc.parent().name() == "io"
    assert_equivalent(guarded_tiles, p, trials=3, sizes={"n": 7})


def test_sink_alloc_guarded_fill_misses_a_read() -> None:
    # the read of t[4 io + ii + 1] at ii = 3 is written by the next tile's iteration
    with pytest.raises(SinkAllocCarriedError):
        sink_alloc(guarded_tiles_overread, "t")


# --------------------------------------------------------------------------- delete_buffer


def test_delete_buffer() -> None:
    u = two.find_alloc_or_arg("u")
    p, c = delete_buffer(two, u)
    assert "u:" not in str(p) and len(c) == 0
    with pytest.raises(StaleCursorError, match="deleted by delete_buffer"):
        delete_buffer(p, u)
    assert_equivalent(two, p, trials=2)


def test_delete_buffer_only_statement_leaves_pass() -> None:
    p, _ = delete_buffer(lonely, "t")
    assert "pass" in str(p)


def test_delete_buffer_argument() -> None:
    with pytest.raises(DeleteBufferNotAllocError):
        delete_buffer(two, "x")


def test_delete_buffer_used() -> None:
    with pytest.raises(DeleteBufferUsedError):
        delete_buffer(two, "a")


# --------------------------------------------------------------------------- reuse_buffer


def test_reuse_buffer(golden) -> None:  # type: ignore[no-untyped-def]
    a, b = two.find_alloc_or_arg("a"), two.find_alloc_or_arg("b")
    p, c = reuse_buffer(two, a, b)
    golden.check(p)
    assert c.buffer == p.forward(a)
    assert not p.forward(b)
    assert_equivalent(two, p, trials=3)
    f = p.compile()
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, dtype=np.float32)
    f(x, y)
    np.testing.assert_array_equal(x, y)


def test_reuse_buffer_argument() -> None:
    with pytest.raises(ReuseBufferNotAllocError):
        reuse_buffer(two, "x", "b")


def test_reuse_buffer_different_shape() -> None:
    with pytest.raises(ReuseBufferTypeError):
        reuse_buffer(two, "a", "c")


def test_reuse_buffer_not_visible() -> None:
    with pytest.raises(ReuseBufferScopeError):
        reuse_buffer(two, "b", "a")


def test_reuse_buffer_written_later_is_not_dead() -> None:
    # `a = 0.0` after b's allocation would clobber b's value
    with pytest.raises(ReuseBufferNotDeadError, match="used after"):
        reuse_buffer(clobber, "a", "b")


def test_reuse_buffer_read_by_next_iteration_is_not_dead() -> None:
    with pytest.raises(ReuseBufferNotDeadError, match="read later"):
        reuse_buffer(loop_reads, "a", "b")
