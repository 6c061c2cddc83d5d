"""merge_writes, split_write, fold_into_reduce, lift_reduce_constant: golden, negative,
forwarding, differential (exact where the rewrite is exact, within rounding where it
reassociates floats)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import fold_into_reduce, lift_reduce_constant, merge_writes, proc, split_write
from cursched.cursors import ForCursor, ReduceCursor, Tombstone
from cursched.primitives.exprs.writes import (
    DifferentTargetsError,
    FactorNotInvariantError,
    FoldNotAssignError,
    NotAnAccumulationError,
    NotAWriteError,
    NotScaledReductionError,
    NotTwoWritesError,
    NotZeroThenLoopError,
    RhsNotAdditionError,
    SecondReadsTargetError,
    SplitReadsTargetError,
)
from cursched.testing import assert_equivalent
from cursched.testing.plugin import Golden

EXACT = {"rtol": 0.0, "atol": 0.0}


@proc
def writes(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: i32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i]
        y[i] += 2.0 * x[i]
        y[i] = y[i] + x[i]
        z[i] += 3
        z[i] += 5 * z[i]
        y[i] = 4.0 * x[i]
        z[i] = 7


@proc
def dot(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM, s: f32, t: i32, u: i32[n] @ DRAM):
    s = 0.0
    for j in seq(0, n):
        s += a * x[j]
        s += a * y[j]
    t = 0
    for k in seq(0, n):
        t += 3 * u[k]
    s = 1.0
    for j in seq(0, n):
        s += a * x[j]
        s += 2.0 * y[j]
    s = 0.0
    for j in seq(0, n):
        s += x[j] * y[j]
        y[j] = 0.0


# ----------------------------------------------------------------------------- merge_writes


def test_merge_assign_then_reduce_golden(golden: Golden) -> None:
    first = writes.find("y[_] = x[_]")
    operand = first.rhs()
    p, c = merge_writes(writes, first.expand(0, 1))
    golden.check(p)
    assert c.stmt.rhs().lhs() == p.forward(operand)  # the right-hand sides live on
    dead = p.forward(first)
    assert isinstance(dead, Tombstone) and "merged by merge_writes; use .stmt" in dead.story()
    assert_equivalent(writes, p, trials=3, **EXACT)  # exact: b is computed in a's precision


def test_merge_overwrite_keeps_the_second() -> None:
    @proc
    def over(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            y[i] += x[i]
            y[i] = 2.0 * x[i]

    second = over.find("y[_] = _")
    p, c = merge_writes(over, over.find("y[_] += _").expand(0, 1))
    assert p.forward(second) == c.stmt and str(c.stmt.node().rhs) != ""
    assert "y[i] += x[i]" not in str(p)
    dead = p.forward(over.find("y[_] += _"))
    assert isinstance(dead, Tombstone) and "overwritten" in dead.story()
    assert_equivalent(over, p, trials=2, **EXACT)


def test_merge_two_reductions_integers_exact() -> None:
    @proc
    def twice(n: size, x: i32[n] @ DRAM, z: i32[n] @ DRAM):
        for i in seq(0, n):
            z[i] += 3 * x[i]
            z[i] += x[i] * x[i]

    p, c = merge_writes(twice, twice.find("z[_] += 3 * _").expand(0, 1))
    assert isinstance(c.stmt, ReduceCursor)
    assert "z[i] += 3 * x[i] + x[i] * x[i]" in str(p)
    assert_equivalent(twice, p, trials=3, **EXACT)
    f = p.compile()
    x = np.arange(-3, 4, dtype=np.int32)
    z1, z2 = np.ones(7, np.int32), np.ones(7, np.int32)
    f(7, x, z1)
    twice.interpret(7, x, z2)
    np.testing.assert_array_equal(z1, z2)


def test_merge_not_two_writes() -> None:
    with pytest.raises(NotTwoWritesError):
        merge_writes(writes, writes.find("y[_] = x[_]").expand(0, 2))
    with pytest.raises(NotTwoWritesError):
        merge_writes(dot, dot.find("s = 0.0").expand(0, 1))  # a loop is not a write


def test_merge_different_targets() -> None:
    with pytest.raises(DifferentTargetsError, match="different elements"):
        merge_writes(writes, writes.find("y[_] = y[_] + _").expand(0, 1))
    with pytest.raises(DifferentTargetsError):
        merge_writes(writes, writes.find("y[_] = 4.0 * _").expand(0, 1))

    @proc
    def neighbours(n: size, y: f32[n + 1] @ DRAM):
        for i in seq(0, n):
            y[i] = 1.0
            y[i + 1] = 2.0

    with pytest.raises(DifferentTargetsError):
        merge_writes(neighbours, neighbours.find("y[_] = 1.0").expand(0, 1))


def test_merge_second_reads_target() -> None:
    with pytest.raises(SecondReadsTargetError, match="counterexample") as e:
        merge_writes(writes, writes.find("y[_] += 2.0 * _").expand(0, 1))
    assert e.value.counterexample is not None  # type: ignore[attr-defined]
    with pytest.raises(SecondReadsTargetError):
        merge_writes(writes, writes.find("z[_] += 3").expand(0, 1))


# ------------------------------------------------------------------------------ split_write


def test_split_write_golden(golden: Golden) -> None:
    merged, _ = merge_writes(writes, writes.find("y[_] = x[_]").expand(0, 1))
    stmt = merged.find("y[_] = x[_] + _")
    p, c = split_write(merged, stmt)
    golden.check(p)
    assert str(p) == str(writes)  # split_write undoes the merge
    assert c.first.next() == c.second and isinstance(c.second, ReduceCursor)
    dead = p.forward(stmt)
    assert isinstance(dead, Tombstone) and "use .first and .second" in dead.story()
    assert_equivalent(merged, p, trials=3, **EXACT)


def test_split_reduce_floats_within_rounding() -> None:
    @proc
    def acc(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            y[i] += x[i] * 3.0 + x[i] * x[i]

    p, c = split_write(acc, "y[_] += _")
    assert "y[i] += x[i] * 3.0\n" in str(p) and "y[i] += x[i] * x[i]" in str(p)
    assert c.first.kind() == "Reduce"
    assert_equivalent(acc, p, trials=3)  # reassociates: equal within rounding


def test_split_write_not_a_write() -> None:
    with pytest.raises(NotAWriteError):
        split_write(dot, "for k in _: _")


def test_split_write_not_addition() -> None:
    with pytest.raises(RhsNotAdditionError):
        split_write(writes, "y[_] = 4.0 * _")


def test_split_write_reads_target() -> None:
    # Exo 1.0 splits this into `y[i] = x[i]; y[i] += y[i] + 1.0`, which reads the new y[i].
    @proc
    def self_ref(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            y[i] = x[i] + (y[i] + 1.0)

    with pytest.raises(SplitReadsTargetError, match="reads what the statement writes"):
        split_write(self_ref, "y[_] = _")


def test_split_and_merge_with_a_neighbour_element() -> None:
    @proc
    def shift(n: size, x: f32[n] @ DRAM, y: f32[n + 1] @ DRAM):
        for i in seq(0, n):
            y[i] = x[i] + y[i + 1]

    p, c = split_write(shift, "y[_] = _")  # y[i + 1] is not the written element
    assert "y[i] += y[i + 1]" in str(p)
    assert_equivalent(shift, p, trials=3, **EXACT)
    q, _ = merge_writes(p, c.first.expand(0, 1))
    assert str(q) == str(shift)
    assert_equivalent(shift, q, trials=3, **EXACT)


# ------------------------------------------------------------------------- fold_into_reduce


def test_fold_into_reduce_golden(golden: Golden) -> None:
    stmt = writes.find("y[_] = y[_] + _")
    p, c = fold_into_reduce(writes, stmt)
    golden.check(p)
    assert isinstance(c.stmt, ReduceCursor) and c.stmt.rhs().name() == "x"
    dead = p.forward(stmt)
    assert isinstance(dead, Tombstone) and "folded by fold_into_reduce" in dead.story()
    assert_equivalent(writes, p, trials=3, **EXACT)


def test_fold_not_assign() -> None:
    with pytest.raises(FoldNotAssignError):
        fold_into_reduce(writes, "y[_] += _")


def test_fold_not_accumulation() -> None:
    with pytest.raises(NotAnAccumulationError):
        fold_into_reduce(writes, "y[_] = x[_]")

    @proc
    def shifted(n: size, y: f32[n + 1] @ DRAM):
        for i in seq(0, n):
            y[i] = y[i + 1] + 1.0

    with pytest.raises(NotAnAccumulationError):
        fold_into_reduce(shifted, "y[_] = _")


# --------------------------------------------------------------------- lift_reduce_constant


def test_lift_reduce_constant_golden(golden: Golden) -> None:
    block = dot.find("s = 0.0").expand(0, 1)
    loop, red = dot.find_loop("j"), dot.find("s += a * x[_]")
    factor = red.rhs().lhs()
    p, c = lift_reduce_constant(dot, block)
    golden.check(p)
    assert c.stmt.prev() == p.forward(loop) and isinstance(p.forward(loop), ForCursor)
    assert p.forward(red) == p.forward(loop).body()[0]  # the reductions keep their identity
    dead = p.forward(factor)
    assert isinstance(dead, Tombstone) and "lift_reduce_constant; use .stmt" in dead.story()
    assert_equivalent(dot, p, trials=3)  # distributes a float product: within rounding


def test_lift_reduce_constant_integers_exact_and_compiled() -> None:
    p, c = lift_reduce_constant(dot, dot.find("t = 0").expand(0, 1))
    assert "    t = 3 * t\n" in str(p) and c.stmt == p.find("t = 3 * t")
    assert_equivalent(dot, p, trials=3, **EXACT)
    f = p.compile()
    x, y = np.ones(5, np.float32), np.ones(5, np.float32)
    s, t = np.zeros(1, np.float32), np.zeros(1, np.int32)
    u = np.arange(5, dtype=np.int32)
    f(5, np.float32(2.0), x, y, s, t, u)
    assert t[0] == 3 * sum(range(5))


def test_lift_reduce_constant_not_zero_then_loop() -> None:
    with pytest.raises(NotZeroThenLoopError):
        lift_reduce_constant(dot, dot.find("s = 1.0").expand(0, 1))


def test_lift_reduce_constant_factors_differ() -> None:
    @proc
    def two(n: size, a: f32, x: f32[n] @ DRAM, s: f32):
        s = 0.0
        for j in seq(0, n):
            s += a * x[j]
            s += 2.0 * x[j]

    with pytest.raises(NotScaledReductionError):
        lift_reduce_constant(two, two.find("s = 0.0").expand(0, 1))


def test_lift_reduce_constant_factor_varies() -> None:
    last = dot.find_all("s = 0.0")[1].expand(0, 1)
    with pytest.raises(NotScaledReductionError):
        lift_reduce_constant(dot, last)  # the loop also writes y

    @proc
    def varies(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, s: f32):
        s = 0.0
        for j in seq(0, n):
            s += x[j] * y[j]

    with pytest.raises(FactorNotInvariantError, match="may change"):
        lift_reduce_constant(varies, varies.find("s = 0.0").expand(0, 1))  # uses j

    @proc
    def feedback(n: size, x: f32[n] @ DRAM, s: f32):
        s = 0.0
        for j in seq(0, n):
            s += s * x[j]

    with pytest.raises(FactorNotInvariantError, match="may change"):
        lift_reduce_constant(feedback, feedback.find("s = 0.0").expand(0, 1))  # reads s
