"""scope, unscope, bind_loop, insert_barrier, insert_barriers and the barrier checker: golden,
one negative test per precondition, forwarding, differential (interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    GLOBAL,
    SHARED,
    Proc,
    bind_loop,
    insert_barrier,
    insert_barriers,
    proc,
    scope,
    unscope,
)
from cursched.analysis.races import (
    DivergentBarrierError,
    MissingBarrierError,
    UniformWriteError,
    check_kernels,
)
from cursched.cursors import CallCursor, ForCursor, ScopeCursor, Tombstone
from cursched.errors import PatternError
from cursched.primitives.gpu.barriers import (
    BarrierDivergentError,
    BarrierOutsideKernelError,
    BarriersUnfixableError,
    NotAKernelError,
)
from cursched.primitives.gpu.bind import (
    BindAxisError,
    BindAxisTwiceError,
    BindBlockNestingError,
    BindGridBoundsError,
    BindOutsideKernelError,
    BindRaceError,
    BindThreadLimitError,
    BindTripCountError,
)
from cursched.primitives.gpu.scopes import (
    NotAScopeError,
    ScopeEscapeError,
    ScopeNameError,
    ScopeNameTakenError,
    ScopeNestedKernelError,
    ScopeTargetError,
    UnscopeBoundLoopsError,
)
from cursched.testing import assert_equivalent
from cursched.testing.plugin import Golden


@proc
def rev(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):
    assert n % 64 == 0
    for b in seq(0, n / 64):
        s: f32[64] @ SHARED
        for t in seq(0, 64):
            s[t] = x[64 * b + t]
        for t in seq(0, 64):
            y[64 * b + t] = s[63 - t]


@proc
def scale(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):
    for i in seq(0, n):
        y[i] = 2.0 * x[i]


@proc
def prefix(n: size, x: f32[n] @ GLOBAL):
    for i in seq(1, n):
        x[i] += x[i - 1]


@proc
def grid(n: size, x: f32[n, 32, 2048] @ GLOBAL):
    for b in seq(0, n):
        for c in seq(0, 32):
            for t in seq(0, 2048):
                x[b, c, t] = 0.0
        for u in seq(0, b + 1):  # noqa: B007
            x[b, 0, 0] = 1.0


def kernel(p: Proc) -> Proc:
    """``rev`` as a kernel: one block per 64 elements, one thread per element."""
    p, _ = scope(p, p.body(), "rev", target="cuda")
    p, _ = bind_loop(p, "b", "blockIdx.x")
    p, _ = bind_loop(p, "t", "threadIdx.x")
    p, _ = bind_loop(p, "t #1", "threadIdx.x")
    return p


# ------------------------------------------------------------------------------ scope


def test_scope_golden_and_equivalent(golden: Golden) -> None:
    p, c = scope(rev, rev.body(), "rev", target="cuda")
    golden.check(p)
    assert isinstance(c.scope, ScopeCursor) and c.scope.name() == "rev"
    assert c.scope.target() == "cuda"
    assert_equivalent(rev, p, sizes={"n": 128})


def test_scope_forwarding() -> None:
    block = rev.body()
    loop = rev.find_loop("t #1")
    p, c = scope(rev, block, "region")
    assert p.forward(block) == c.body
    assert p.forward(loop).path() == (("body", 0), ("body", 0), ("body", 2))
    assert c.scope.proc() is p and c.body.proc() is p
    assert p.find_scope("region") == c.scope
    assert p.find("with scope(_): _") == c.scope


def test_scope_needs_a_name() -> None:
    with pytest.raises(ScopeNameError):
        scope(rev, rev.body(), "")


def test_scope_name_taken() -> None:
    p, _ = scope(rev, "for b in _: _", "k")
    with pytest.raises(ScopeNameTakenError):
        scope(p, p.find_loop("t"), "k")


def test_scope_target() -> None:
    with pytest.raises(ScopeTargetError):
        scope(rev, rev.body(), "k", target="opencl")


def test_scope_kernels_do_not_nest() -> None:
    p, _ = scope(rev, rev.body(), "outer", target="cuda")
    with pytest.raises(ScopeNestedKernelError):
        scope(p, p.find_loop("t"), "inner", target="cuda")
    q, _ = scope(rev, "for t in _: _", "inner", target="cuda")
    with pytest.raises(ScopeNestedKernelError):
        scope(q, q.find_loop("b"), "outer", target="cuda")


def test_scope_escape() -> None:
    with pytest.raises(ScopeEscapeError):
        scope(rev, rev.find("s: _").as_block(), "k")


def test_find_scope_missing() -> None:
    with pytest.raises(PatternError, match="no scope named"):
        rev.find_scope("nope")


# ---------------------------------------------------------------------------- unscope


def test_unscope_golden_forwarding_equivalent(golden: Golden) -> None:
    p, c = scope(rev, rev.body(), "plain")
    loop = p.find_loop("b")
    q, u = unscope(p, c.scope)
    golden.check(q)
    assert not q.forward(c.scope) and isinstance(q.forward(c.scope), Tombstone)
    assert q.forward(loop) == u.block[0]
    assert u.block.proc() is q
    assert_equivalent(p, q, sizes={"n": 64})


def test_unscope_not_a_scope() -> None:
    with pytest.raises(NotAScopeError):
        unscope(rev, rev.find_loop("b"))


def test_unscope_bound_loops() -> None:
    p = kernel(rev)
    with pytest.raises(UnscopeBoundLoopsError):
        unscope(p, p.find_scope("rev"))


# --------------------------------------------------------------------------- bind_loop


def test_bind_loop_golden_forwarding_equivalent(golden: Golden) -> None:
    p, _ = scope(rev, rev.body(), "rev", target="cuda")
    loop = p.find_loop("t")
    q, c = bind_loop(p, loop, "threadIdx.x")
    assert isinstance(c.loop, ForCursor) and c.loop.proc() is q
    assert q.forward(loop) == c.loop
    assert c.loop.loop().axis == "threadIdx.x" and c.loop.loop().mode == "par"
    golden.check(kernel(rev))
    assert_equivalent(rev, kernel(rev), sizes={"n": 128})


def test_bind_loop_axis() -> None:
    p, _ = scope(rev, rev.body(), "rev", target="cuda")
    with pytest.raises(BindAxisError):
        bind_loop(p, "t", "warpIdx.x")


def test_bind_loop_outside_kernel() -> None:
    with pytest.raises(BindOutsideKernelError):
        bind_loop(rev, "t", "threadIdx.x")
    p, _ = scope(rev, rev.body(), "plain")  # not a cuda scope
    with pytest.raises(BindOutsideKernelError):
        bind_loop(p, "t", "threadIdx.x")


def test_bind_loop_axis_twice() -> None:
    p, _ = scope(grid, grid.body(), "g", target="cuda")
    p, _ = bind_loop(p, "c", "threadIdx.x")
    with pytest.raises(BindAxisTwiceError):
        bind_loop(p, "t", "threadIdx.x")


def test_bind_loop_block_nesting() -> None:
    p, _ = scope(grid, grid.body(), "g", target="cuda")
    with pytest.raises(BindBlockNestingError):
        bind_loop(p, "u", "blockIdx.x")
    q, _ = bind_loop(p, "c", "threadIdx.y")
    with pytest.raises(BindBlockNestingError):
        bind_loop(q, "t", "blockIdx.x")


def test_bind_loop_grid_bounds() -> None:
    p, _ = scope(grid, grid.body(), "g", target="cuda")
    p, _ = bind_loop(p, "b", "blockIdx.x")
    with pytest.raises(BindGridBoundsError):
        bind_loop(p, "u", "blockIdx.y", unsafe_skip_checks=True)


def test_bind_loop_trip_count() -> None:
    p, _ = scope(scale, scale.body(), "k", target="cuda")
    with pytest.raises(BindTripCountError):
        bind_loop(p, "i", "threadIdx.x")


def test_bind_loop_thread_limit() -> None:
    p, _ = scope(grid, grid.body(), "g", target="cuda")
    with pytest.raises(BindThreadLimitError):
        bind_loop(p, "t", "threadIdx.x")
    p, _ = bind_loop(p, "c", "threadIdx.y")
    q, _ = scope(rev, rev.body(), "k", target="cuda")
    q, _ = bind_loop(q, "t", "threadIdx.x")  # 64 threads: fine
    assert q.find_loop("t").loop().axis == "threadIdx.x"


def test_bind_loop_race() -> None:
    p, _ = scope(prefix, prefix.body(), "k", target="cuda")
    with pytest.raises(BindRaceError) as e:
        bind_loop(p, "i", "blockIdx.x")
    assert "counterexample" in str(e.value)


# ------------------------------------------------------------------------ barriers


def test_insert_barrier_golden_forwarding_equivalent(golden: Golden) -> None:
    p = kernel(rev)
    second = p.find_loop("t #1")
    q, c = insert_barrier(p, second.before())
    golden.check(q)
    assert isinstance(c.barrier, CallCursor) and c.barrier.proc() is q
    assert q.forward(second).path() == (("body", 0), ("body", 0), ("body", 3))
    check_kernels(q.ir())
    assert_equivalent(p, q, sizes={"n": 64})


def test_insert_barrier_outside_kernel() -> None:
    with pytest.raises(BarrierOutsideKernelError):
        insert_barrier(rev, rev.find_loop("t #1").before())


def test_insert_barrier_divergent() -> None:
    p = kernel(rev)
    with pytest.raises(BarrierDivergentError):
        insert_barrier(p, p.find("y[_] = _").before())


def test_insert_barriers_places_the_one_needed(golden: Golden) -> None:
    p = kernel(rev)
    loops = p.find_loop("t", many=True)
    q, c = insert_barriers(p, p.find_scope("rev"))
    golden.check(q)
    assert len(c.barriers) == 1 and c.barriers[0].proc() is q
    assert [q.forward(x).path() for x in loops] == [
        (("body", 0), ("body", 0), ("body", 1)),
        (("body", 0), ("body", 0), ("body", 3)),
    ]
    check_kernels(q.ir())
    assert_equivalent(rev, q, sizes={"n": 128})
    # already enough: no more
    r, again = insert_barriers(q, q.find_scope("rev"))
    assert again.barriers == () and str(r) == str(q)


@proc
def same_thread(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):
    assert n % 64 == 0
    with scope("k", target="cuda"):
        for b in par(0, n / 64, axis="blockIdx.x"):
            s: f32[64] @ SHARED
            for t in par(0, 64, axis="threadIdx.x"):
                s[t] = x[64 * b + t]
            for t in par(0, 64, axis="threadIdx.x"):
                y[64 * b + t] = s[t] * 2.0


def test_insert_barriers_none_when_each_thread_reads_its_own() -> None:
    p, c = insert_barriers(same_thread, same_thread.find_scope("k"))
    assert c.barriers == ()
    check_kernels(p.ir())


@proc
def tiles(n: size, x: f32[n, 16] @ GLOBAL, y: f32[16] @ GLOBAL):
    with scope("k", target="cuda"):
        acc: f32[16] @ SHARED
        for t in par(0, 16, axis="threadIdx.x"):
            acc[t] = 0.0
        for r in seq(0, n):
            s: f32[16] @ SHARED
            for t in par(0, 16, axis="threadIdx.x"):
                s[t] = x[r, t]
            for t in par(0, 16, axis="threadIdx.x"):
                acc[t] += s[15 - t]
        for t in par(0, 16, axis="threadIdx.x"):
            y[t] = acc[t]


def test_insert_barriers_across_iterations(golden: Golden) -> None:
    p, c = insert_barriers(tiles, tiles.find_scope("k"))
    golden.check(p)
    # after the load (s read by other threads) and before the next load (reads of s done)
    assert len(c.barriers) == 2
    check_kernels(p.ir())
    assert_equivalent(tiles, p, sizes={"n": 3})


@proc
def fold(n: size, x: f32[n, 16] @ GLOBAL, y: f32[n, 16] @ GLOBAL):
    with scope("k", target="cuda"):
        for b in par(0, n, axis="blockIdx.x"):
            part: f32[16] @ SHARED
            for t in par(0, 16, axis="threadIdx.x"):
                part[t] = 2.0 * x[b, t]
            total: f32 @ REGISTER
            total = 0.0
            for k in seq(0, 16):
                total += part[k]
            for t in par(0, 16, axis="threadIdx.x"):
                y[b, t] = x[b, t] / total


def test_insert_barriers_before_a_serial_loop_not_in_it() -> None:
    """Every thread folds the shared partials itself (a uniform serial loop): the barrier
    goes before the loop, where it runs once, not before the read inside it."""
    p, c = insert_barriers(fold, fold.find_scope("k"))
    assert len(c.barriers) == 1
    assert c.barriers[0].next().node() is p.find_loop("k").node()
    check_kernels(p.ir())
    assert_equivalent(fold, p, sizes={"n": 3})
    x = np.random.default_rng(1).random((3, 16), dtype=np.float32) + 0.5
    y = np.zeros((3, 16), np.float32)
    p.compile(target="cuda-emulated", check_races=True)(3, x, y)
    np.testing.assert_allclose(y, x / (2 * x.sum(axis=1, keepdims=True)), rtol=1e-6)


def test_insert_barriers_not_a_kernel() -> None:
    p, c = scope(rev, rev.body(), "plain")
    with pytest.raises(NotAKernelError):
        insert_barriers(p, c.scope)


@proc
def uniform_write(n: size, y: f32[n] @ GLOBAL):
    with scope("k", target="cuda"):
        s: f32[1] @ SHARED
        s[0] = 1.0
        for t in par(0, 32, axis="threadIdx.x"):  # noqa: B007
            y[0] = s[0]


def test_insert_barriers_unfixable() -> None:
    with pytest.raises(BarriersUnfixableError):
        insert_barriers(uniform_write, uniform_write.find_scope("k"))


# ------------------------------------------------------------------- the checker


def test_checker_missing_barrier_names_both_accesses() -> None:
    with pytest.raises(MissingBarrierError) as e:
        check_kernels(kernel(rev).ir())
    msg = str(e.value)
    assert "write of s in `s[t] = x[64 * b + t]`" in msg
    assert "read of s in `y[64 * b + t] = s[63 - t]`" in msg
    assert "counterexample" in msg


@proc
def tiles_one_barrier(n: size, x: f32[n, 16] @ GLOBAL, y: f32[16] @ GLOBAL):
    with scope("k", target="cuda"):
        acc: f32[16] @ SHARED
        for t in par(0, 16, axis="threadIdx.x"):
            acc[t] = 0.0
        for r in seq(0, n):
            s: f32[16] @ SHARED
            for t in par(0, 16, axis="threadIdx.x"):
                s[t] = x[r, t]
            sync_threads()
            for t in par(0, 16, axis="threadIdx.x"):
                acc[t] += s[15 - t]
        for t in par(0, 16, axis="threadIdx.x"):
            y[t] = acc[t]


def test_checker_missing_barrier_across_iterations() -> None:
    with pytest.raises(MissingBarrierError, match="previous iteration"):
        check_kernels(tiles_one_barrier.ir())


@proc
def divergent(n: size, x: f32[n] @ GLOBAL):
    assert n >= 32
    with scope("k", target="cuda"):
        for t in par(0, 32, axis="threadIdx.x"):
            if t < 16:
                sync_threads()
            x[t] = 0.0


def test_checker_divergent_barrier() -> None:
    with pytest.raises(DivergentBarrierError):
        check_kernels(divergent.ir())


def test_checker_uniform_write() -> None:
    with pytest.raises(UniformWriteError):
        check_kernels(uniform_write.ir())
