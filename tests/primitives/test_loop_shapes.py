"""unroll_loop, mult_loops, remove_loop, add_loop, parallelize_loop: golden output, one
negative test per precondition, forwarding, differential equivalence (interpreter, and the C
backend for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    DRAM,
    Proc,
    add_loop,
    mult_loops,
    parallelize_loop,
    proc,
    remove_loop,
    split,
    unroll_loop,
)
from cursched.cursors import BlockCursor, ForCursor, IfCursor, Tombstone
from cursched.errors import StaleCursorError
from cursched.frontend import parse_source
from cursched.primitives.loops.loop_common import BadIndexExpressionError
from cursched.primitives.loops.loop_shapes import (
    MultBoundsError,
    MultNameError,
    MultNotNestedError,
    ParallelizeRaceError,
    UnrollNotConstantError,
)
from cursched.primitives.loops.loop_wrap import (
    AddLoopBoundError,
    AddLoopNameError,
    AddLoopNotIdempotentError,
    AddLoopScopeError,
    RemoveLoopNotIdempotentError,
    RemoveLoopUsesIterError,
)
from cursched.testing import assert_equivalent


@proc
def scale(n: size, x: f32[n, 4] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, 4):
            t: f32
            t = x[i, j]
            x[i, j] = t * 2.0


@proc
def blocked(n: size, x: f32[4 * n] @ DRAM, y: f32[4 * n] @ DRAM):
    for io in seq(0, n):
        for ii in seq(0, 4):
            y[4 * io + ii] = x[4 * io + ii] + 1.0


@proc
def init(n: size, m: size, x: f32[n] @ DRAM, s: f32[1] @ DRAM):
    for k in seq(0, n):  # noqa: B007
        s[0] = 0.0
    for r in seq(0, m - 2):  # noqa: B007
        x[0] = 1.0
    for q in seq(0, n):  # noqa: B007
        x[0] += 1.0
    for w in seq(0, n):  # noqa: B007
        x[0] = x[0] * 2.0
    for v in seq(0, n):
        x[v] = 1.0


@proc
def steps(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    t: f32[n] @ DRAM
    for i in seq(0, n):
        t[i] = x[i] * 2.0
    for i in seq(0, n):
        y[i] = t[i] + 1.0
    x[0] += 1.0


@proc
def recur(n: size, x: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        x[i + 1] = x[i] * 0.5


# ------------------------------------------------------------------------------ unroll_loop


def test_unroll_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt, outer = scale.find_loop("j"), scale.find("t = _"), scale.find_loop("i")
    p, c = unroll_loop(scale, loop)
    golden.check(p)
    assert len(c.copies) == 4
    assert all(isinstance(b, BlockCursor) and len(b) == 3 for b in c.copies)
    assert [b[2].idx()[1].node().value for b in c.copies] == [0, 1, 2, 3]  # type: ignore[union-attr]
    for old in (loop, stmt):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and dead.hint == "unrolled; use .copies[k]"
    assert p.forward(outer) == c.copies[0].parent()
    with pytest.raises(StaleCursorError, match=r"copies\[k\]"):
        unroll_loop(p, loop)
    assert_equivalent(scale, p, trials=3)


def test_unroll_after_split_compiles() -> None:
    p, s = split(blocked, "ii", 2, tail="perfect")
    p, c = unroll_loop(p, s.inner)
    assert len(c.copies) == 2
    assert "y[4 * io + 2 * iio + 1]" in str(p) and "y[4 * io + 2 * iio]" in str(p)
    assert_equivalent(blocked, p, trials=2)
    f = p.compile()
    rng = np.random.default_rng(0)
    n = 3
    x = rng.standard_normal(4 * n).astype(np.float32)
    y1, y2 = np.zeros(4 * n, np.float32), np.zeros(4 * n, np.float32)
    f(n, x, y1)
    blocked.interpret(n, x, y2)
    np.testing.assert_array_equal(y1, y2)


def test_unroll_not_constant() -> None:
    with pytest.raises(UnrollNotConstantError, match="not constants"):
        unroll_loop(scale, "i")


# ------------------------------------------------------------------------------- mult_loops


def test_mult_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    io, ii, stmt = blocked.find_loop("io"), blocked.find_loop("ii"), blocked.find("y[_] = _")
    p, c = mult_loops(blocked, io, "i")
    golden.check(p)
    assert isinstance(c.loop, ForCursor) and c.loop.name() == "i"
    for old in (io, ii):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and dead.hint == "merged into `loop`"
    assert p.forward(stmt) == c.loop.body()[0]
    assert_equivalent(blocked, p, trials=3)


def test_mult_undoes_split() -> None:
    @proc
    def flat(n: size, x: f32[8 * n] @ DRAM):
        for i in seq(0, 8 * n):
            x[i] = 1.0

    p, s = split(flat, "i", 8, ("io", "ii"), tail="perfect")
    p, _ = mult_loops(p, s.outer, "i")
    assert str(p) == str(flat)


def test_mult_with_allocation() -> None:
    p, _ = mult_loops(scale, "i", "k")
    assert "for k in seq(0, 4 * n):" in str(p)
    assert_equivalent(scale, p, trials=2)


def test_mult_par_stays_par_only_when_both() -> None:
    p, _ = parallelize_loop(blocked, "io")
    q, c = mult_loops(p, "io", "i")
    assert c.loop.mode() == "seq"
    p, _ = parallelize_loop(p, "ii")
    q, c = mult_loops(p, "io", "i")
    assert c.loop.mode() == "par"
    assert_equivalent(blocked, q, trials=2)


def test_mult_not_nested() -> None:
    with pytest.raises(MultNotNestedError):
        mult_loops(scale, "j", "k")


def test_mult_bounds() -> None:
    with pytest.raises(MultBoundsError, match="positive constant"):
        mult_loops(_nested_sym, "i", "k")
    with pytest.raises(MultBoundsError, match="start at 0"):
        mult_loops(_nested_lo, "i", "k")


@proc
def _nested_sym(n: size, x: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, n):
            x[i, j] = 0.0


@proc
def _nested_lo(n: size, x: f32[n, 4] @ DRAM):
    for i in seq(0, n):
        for j in seq(1, 4):
            x[i, j] = 0.0


@pytest.mark.parametrize("name", ["", "1k", "for", 3])
def test_mult_name(name: object) -> None:
    with pytest.raises(MultNameError):
        mult_loops(blocked, "io", name)


# ------------------------------------------------------------------------------ remove_loop


def test_remove_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt = init.find_loop("k"), init.find("s[_] = _")
    p, c = remove_loop(init, loop)
    golden.check(p)
    assert p.forward(stmt) == c.body[0]
    dead = p.forward(loop)
    assert isinstance(dead, Tombstone) and "remove_loop" in dead.hint
    assert_equivalent(init, p, trials=3)


def test_remove_guards_a_loop_that_may_not_run() -> None:
    loop, stmt = init.find_loop("r"), init.find("x[_] = 1.0")
    p, c = remove_loop(init, loop)
    assert "if m > 2:" in str(p)
    assert p.forward(stmt) == c.body[0]
    assert isinstance(c.body.parent(), IfCursor)
    assert_equivalent(init, p, trials=6)
    assert_equivalent(init, p, sizes={"m": 1, "n": 3}, trials=1)


def test_remove_uses_iter() -> None:
    with pytest.raises(RemoveLoopUsesIterError):
        remove_loop(init, "v")


@pytest.mark.parametrize("loop", ["q", "w"])
def test_remove_not_idempotent(loop: str) -> None:
    with pytest.raises(RemoveLoopNotIdempotentError):
        remove_loop(init, loop)


def test_remove_unsafe_skip() -> None:
    p, _ = remove_loop(init, "w", unsafe_skip_checks=True)
    assert "for w" not in str(p)


# --------------------------------------------------------------------------------- add_loop


def test_add_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    first = steps.find_loop("i")
    block = first.as_block()
    p, c = add_loop(steps, block, "r", "n")
    golden.check(p)
    assert isinstance(c.loop, ForCursor) and not c.guard
    assert p.forward(block) == c.loop.body()
    assert p.forward(first) == c.loop.body()[0]
    assert_equivalent(steps, p, trials=3)


def test_add_with_guard(golden) -> None:  # type: ignore[no-untyped-def]
    stmt = steps.find("x[_] += _")
    p, c = add_loop(steps, stmt, "r", 4, guard=True)
    golden.check(p)
    assert isinstance(c.guard, IfCursor)
    assert p.forward(stmt) == c.guard.body()[0]
    assert_equivalent(steps, p, trials=3)


def test_add_name() -> None:
    with pytest.raises(AddLoopNameError):
        add_loop(steps, "x[_] += _", "not a name", 4)


def test_add_bad_bound() -> None:
    with pytest.raises(BadIndexExpressionError):
        add_loop(steps, "x[_] += _", "r", "q + 1")


@pytest.mark.parametrize("hi", [0, "n - 1", -3])
def test_add_bound_not_positive(hi: object) -> None:
    with pytest.raises(AddLoopBoundError):
        add_loop(steps, "x[_] += _", "r", hi, guard=True)


def test_add_not_idempotent() -> None:
    with pytest.raises(AddLoopNotIdempotentError, match="accumulates"):
        add_loop(steps, "x[_] += _", "r", 4)


def test_add_scope() -> None:
    block = steps.body()[0].expand(0, 1)
    with pytest.raises(AddLoopScopeError, match="declares t"):
        add_loop(steps, block, "r", 2, unsafe_skip_checks=True)


# ------------------------------------------------------------------------- parallelize_loop


def test_parallelize_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt = scale.find_loop("i"), scale.find("t = _")
    p, c = parallelize_loop(scale, loop)
    golden.check(p)
    assert p.forward(loop) == c.loop and c.loop.mode() == "par"
    assert p.forward(stmt) == c.loop.body()[0].body()[1]
    assert_equivalent(scale, p, trials=2)
    f = p.compile()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f(3, x)
    np.testing.assert_array_equal(x, 2 * np.arange(12, dtype=np.float32).reshape(3, 4))


def test_parallelize_race() -> None:
    with pytest.raises(ParallelizeRaceError, match="carries a dependence") as e:
        parallelize_loop(recur, "i")
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


def test_add_produce_consume_block_is_idempotent() -> None:
    # the second loop reads t only where the first loop wrote it in the same run
    block = steps.find_loop("i").expand(0, 1)
    p, c = add_loop(steps, block, "r", "n")
    assert p.forward(block) == c.loop.body()
    assert_equivalent(steps, p, trials=3)
    p, _ = remove_loop(p, c.loop)
    assert str(p) == str(steps)


@pytest.mark.parametrize(
    "body",
    [
        "t[i] = x[i]\n        y[i] = t[i + 1]",  # reads an element not written yet
        "t[i] = x[i]\n        x[i] = t[i] + 1.0",  # reads x, which it also writes
        "t[0] = 0.0\n        t[i] += x[i]",  # accumulates into elements not reset
    ],
)
def test_idempotence_rejections(body: str) -> None:
    text = (
        "def f(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM, t: f32[n + 1] @ DRAM):\n"
        f"    for i in seq(0, n):\n        {body}\n"
    )
    f = Proc(parse_source(text, {"DRAM": DRAM}))
    with pytest.raises(AddLoopNotIdempotentError):
        add_loop(f, f.find_loop("i"), "r", 2)


def test_idempotence_accepts_reset_accumulator() -> None:
    @proc
    def acc(n: size, x: f32[n] @ DRAM, s: f32[1] @ DRAM):
        s[0] = 0.0
        for i in seq(0, n):
            s[0] += x[i]

    p, _ = add_loop(acc, acc.body(), "r", 3)
    assert_equivalent(acc, p, trials=3)
