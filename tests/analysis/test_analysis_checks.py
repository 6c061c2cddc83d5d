# ruff: noqa: F841, F842, B007, SIM300
"""Positive and negative cases of every scheduling check (issue 5)."""

from __future__ import annotations

import pytest

from cursched import DRAM, proc
from cursched.analysis import checks as ck
from cursched.ir.nodes import Const, Interval, Point, ProcDef, Read, WindowExpr
from cursched.ir.paths import Path
from cursched.ir.types import INDEX, INT, SIZE, TensorType

B0: Path = (("body", 0),)
B1: Path = (("body", 1),)
B2: Path = (("body", 2),)


def _in(*steps: int) -> Path:
    """The path of nested ``body`` statements: ``_in(0, 1)`` is ``body[0].body[1]``."""
    return tuple(("body", k) for k in steps)


def _sym(p: ProcDef, name: str):  # type: ignore[no-untyped-def]
    for a in p.args:
        if a.sym.name == name:
            return a.sym
    raise LookupError(name)


# ------------------------------------------------------------------------------ commute


@proc
def two_buffers(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM):
    for i in seq(0, n):
        A[i] = 1.0
    for i in seq(0, n):
        B[i] = 2.0


def test_commute_different_buffers() -> None:
    ck.check_commute(two_buffers.ir(), [B0], [B1])


@proc
def write_then_read(n: size, A: f32[n] @ DRAM, x: f32):
    A[0] = 1.0
    x = A[0]


def test_commute_write_then_read_same_element() -> None:
    with pytest.raises(ck.CommuteError, match="write of A"):
        ck.check_commute(write_then_read.ir(), [B0], [B1])


@proc
def const_distance(n: size, A: f32[n] @ DRAM, x: f32):
    assert n >= 2
    A[0] = 1.0
    x = A[1]


def test_commute_constant_distance() -> None:
    ck.check_commute(const_distance.ir(), [B0], [B1])


@proc
def two_reductions(n: size, A: f32[n] @ DRAM, s: f32):
    for i in seq(0, n):
        s += A[i]
    for i in seq(0, n):
        s = s + 2.0 * A[i]


def test_commute_reductions() -> None:
    ck.check_commute(two_reductions.ir(), [B0], [B1])


@proc
def reduce_then_read(n: size, A: f32[n] @ DRAM, s: f32, t: f32):
    s += A[0]
    t = s


def test_commute_reduce_vs_read() -> None:
    with pytest.raises(ck.CommuteError, match="reduce of s"):
        ck.check_commute(reduce_then_read.ir(), [B0], [B1])


@proc
def incr_vs_read(a: f32, b: f32):
    a = a + 1.0
    b = a


def test_commute_increment_vs_read() -> None:
    with pytest.raises(ck.CommuteError) as info:
        ck.check_commute(incr_vs_read.ir(), [B0], [B1])
    assert "a = a + 1.0" in str(info.value)


@proc
def disjoint_halves(n: size, A: f32[2 * n] @ DRAM):
    for i in seq(0, n):
        A[i] = 1.0
    for i in seq(n, 2 * n):
        A[i] = A[i] * 2.0


def test_commute_disjoint_loop_ranges() -> None:
    ck.check_commute(disjoint_halves.ir(), [B0], [B1])


@proc
def overlapping_loops(n: size, A: f32[n] @ DRAM, x: f32):
    for i in seq(0, n):
        A[i] = 1.0
    x = A[n - 1]


def test_commute_loop_overlaps_read_with_counterexample() -> None:
    with pytest.raises(ck.CommuteError) as info:
        ck.check_commute(overlapping_loops.ir(), [B0], [B1])
    assert info.value.counterexample is not None
    assert "counterexample:" in str(info.value)


@proc
def alloc_then_use(n: size, A: f32[n] @ DRAM):
    t: f32 @ DRAM
    A[0] = 0.0


@proc
def def_use(n: size, A: f32[n] @ DRAM):
    t: f32 @ DRAM
    t = 1.0
    A[0] = t


def test_commute_alloc_used_later() -> None:
    with pytest.raises(ck.CommuteError, match="uses t"):
        ck.check_commute(def_use.ir(), [B0], [B1])


def test_commute_unused_alloc() -> None:
    ck.check_commute(alloc_then_use.ir(), [B0], [B1])


@proc
def guarded_same_iter(A: f32[16] @ DRAM, B: f32[16] @ DRAM):
    for i in seq(0, 8):
        if i < 4:
            A[i] = 1.0
        B[i] = A[i + 4]


def test_commute_guard_makes_disjoint() -> None:
    ck.check_commute(guarded_same_iter.ir(), [_in(0, 0)], [_in(0, 1)])


@proc
def unguarded_same_iter(A: f32[16] @ DRAM, B: f32[16] @ DRAM):
    for i in seq(0, 8):
        A[i] = 1.0
        B[i] = A[i]


def test_commute_same_iteration_element() -> None:
    with pytest.raises(ck.CommuteError):
        ck.check_commute(unguarded_same_iter.ir(), [_in(0, 0)], [_in(0, 1)])


@proc
def multi_groups(A: f32[8] @ DRAM, B: f32[8] @ DRAM, C: f32[8] @ DRAM):
    A[0] = 1.0
    A[1] = 2.0
    B[0] = C[0]
    C[0] = 3.0


def test_commute_groups_of_two() -> None:
    ck.check_commute(multi_groups.ir(), [B0, B1], [B2, (("body", 3),)])


def test_commute_groups_of_two_conflict() -> None:
    with pytest.raises(ck.CommuteError, match="read of C"):
        ck.check_commute(multi_groups.ir(), [B1, B2], [(("body", 3),)])
    ck.check_commute(multi_groups.ir(), [B0, B1], [B2])


@proc
def fill(n: size, dst: [f32][n] @ DRAM):
    for i in seq(0, n):
        dst[i] = 0.0


@proc
def call_then_read(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM, x: f32):
    assert n >= 8
    fill(4, A[0:4])
    x = A[5]
    x = A[3]
    x = B[0]


def test_commute_call_outside_its_window() -> None:
    ck.check_commute(call_then_read.ir(), [B0], [B1])
    ck.check_commute(call_then_read.ir(), [B0], [(("body", 3),)])


def test_commute_call_inside_its_window() -> None:
    with pytest.raises(ck.CommuteError, match="fill"):
        ck.check_commute(call_then_read.ir(), [B0], [B2])


@proc
def window_alias(n: size, A: f32[n] @ DRAM, x: f32):
    assert n >= 8
    w = A[2:6]
    w[0] = 1.0
    x = A[2]
    x = A[6]


def test_commute_through_window_alias() -> None:
    with pytest.raises(ck.CommuteError, match="write of A"):
        ck.check_commute(window_alias.ir(), [B1], [B2])


def test_commute_through_window_disjoint() -> None:
    ck.check_commute(window_alias.ir(), [B1], [(("body", 3),)])
    with pytest.raises(ck.CommuteError, match="write of x"):
        ck.check_commute(window_alias.ir(), [B2], [(("body", 3),)])


# ------------------------------------------------------------------------ reorder loops


@proc
def counter(n: size, m: size, a: f32):
    for i in seq(0, n):
        for j in seq(0, m):
            a = a + 1.0


def test_reorder_increment_is_legal() -> None:
    ck.check_reorder_loops(counter.ir(), B0)


@proc
def sum2d(n: size, m: size, A: f32[n, m] @ DRAM, s: f32):
    for i in seq(0, n):
        for j in seq(0, m):
            s += A[i, j]


def test_reorder_sum_reduction_is_legal() -> None:
    ck.check_reorder_loops(sum2d.ir(), B0)


@proc
def stencil(n: size, A: f32[n + 2, n + 2] @ DRAM):
    for i in seq(1, n + 1):
        for j in seq(1, n + 1):
            A[i, j] = A[i - 1, j + 1] + A[i, j]


def test_reorder_stencil_reading_what_it_writes_is_illegal() -> None:
    with pytest.raises(ck.ReorderLoopsError) as info:
        ck.check_reorder_loops(stencil.ir(), B0, primitive="reorder_loops")
    text = str(info.value)
    assert text.startswith("reorder_loops:")
    assert "i@1" in text and "j@2" in text
    assert "# <--" in text


@proc
def stencil_diag(n: size, A: f32[n + 2, n + 2] @ DRAM):
    for i in seq(1, n + 1):
        for j in seq(1, n + 1):
            A[i, j] = A[i - 1, j - 1] + A[i, j - 1] + A[i - 1, j]


def test_reorder_forward_distances_are_legal() -> None:
    ck.check_reorder_loops(stencil_diag.ir(), B0)


@proc
def matmul(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def test_reorder_matmul_levels() -> None:
    ck.check_reorder_loops(matmul.ir(), B0)
    ck.check_reorder_loops(matmul.ir(), _in(0, 0))


@proc
def transpose(n: size, m: size, A: f32[n, m] @ DRAM, B: f32[m, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            B[j, i] = A[i, j]


def test_reorder_transpose() -> None:
    ck.check_reorder_loops(transpose.ir(), B0)


@proc
def shared_temp(n: size, A: f32[n, n] @ DRAM, B: f32[n, n] @ DRAM, t: f32):
    for i in seq(0, n):
        for j in seq(0, n):
            t = A[i, j]
            B[i, j] = t


@proc
def private_temp(n: size, A: f32[n, n] @ DRAM, B: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, n):
            t: f32 @ DRAM
            t = A[i, j]
            B[i, j] = t


def test_reorder_shared_scalar_temp_is_illegal() -> None:
    with pytest.raises(ck.ReorderLoopsError, match="of t"):
        ck.check_reorder_loops(shared_temp.ir(), B0)


def test_reorder_private_temp_is_legal() -> None:
    ck.check_reorder_loops(private_temp.ir(), B0)


@proc
def imperfect(n: size, A: f32[n, n] @ DRAM):
    for i in seq(0, n):
        A[i, 0] = 0.0
        for j in seq(0, n):
            A[i, j] = 1.0


@proc
def triangular(n: size, A: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, i):
            A[i, j] = 1.0


def test_reorder_imperfect_nest() -> None:
    with pytest.raises(ck.ReorderLoopsError, match="exactly one loop"):
        ck.check_reorder_loops(imperfect.ir(), B0)


def test_reorder_triangular_bounds() -> None:
    with pytest.raises(ck.ReorderLoopsError, match="depend on i"):
        ck.check_reorder_loops(triangular.ir(), B0)


def test_reorder_not_a_loop() -> None:
    with pytest.raises(ck.ReorderLoopsError, match="not a loop"):
        ck.check_reorder_loops(write_then_read.ir(), B0)


@proc
def row_dependence(n: size, A: f32[n, n + 1] @ DRAM):
    for i in seq(0, n):
        for j in seq(1, n + 1):
            A[i, j] = A[i, j - 1]


def test_reorder_dependence_within_a_row_is_legal() -> None:
    ck.check_reorder_loops(row_dependence.ir(), B0)


# ---------------------------------------------------------------------------- parallel


@proc
def prefix_sum(n: size, x: f32[n] @ DRAM):
    for i in seq(1, n):
        x[i] = x[i - 1] + x[i]


def test_parallel_prefix_sum_is_illegal() -> None:
    with pytest.raises(ck.ParallelError, match="carries a dependence"):
        ck.check_parallel(prefix_sum.ir(), B0)


@proc
def saxpy(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] += a * x[i]


def test_parallel_saxpy() -> None:
    ck.check_parallel(saxpy.ir(), B0)


def test_parallel_scalar_sum_is_a_race() -> None:
    with pytest.raises(ck.ParallelError, match="reduce of s"):
        ck.check_parallel(sum2d.ir(), B0)


@proc
def row_sums(n: size, m: size, A: f32[n, m] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            y[i] += A[i, j]


def test_parallel_reductions_into_disjoint_rows() -> None:
    ck.check_parallel(row_sums.ir(), B0)
    with pytest.raises(ck.ParallelError):
        ck.check_parallel(row_sums.ir(), _in(0, 0))


def test_parallel_private_and_shared_temps() -> None:
    ck.check_parallel(private_temp.ir(), B0)
    with pytest.raises(ck.ParallelError, match="of t"):
        ck.check_parallel(shared_temp.ir(), B0)


@proc
def even_odd(n: size, A: f32[2 * n] @ DRAM):
    for i in seq(0, n):
        A[2 * i] = A[2 * i + 1]


@proc
def mirror(n: size, A: f32[n] @ DRAM):
    for i in seq(0, n):
        A[i] = A[n - 1 - i]


def test_parallel_even_odd_disjoint() -> None:
    ck.check_parallel(even_odd.ir(), B0)


def test_parallel_mirror_is_illegal() -> None:
    with pytest.raises(ck.ParallelError) as info:
        ck.check_parallel(mirror.ir(), B0)
    cex = info.value.counterexample
    assert cex is not None
    vals = {s.name: v for s, v in cex.items()}
    assert vals["i@1"] + vals["i@2"] == vals["n"] - 1


# ----------------------------------------------------------------------------- fission


@proc
def war_gap(n: size, A: f32[n + 1] @ DRAM, B: f32[n] @ DRAM):
    for i in seq(0, n):
        A[i] = 0.0
        B[i] = A[i + 1]


def test_fission_write_after_read_across_gap_is_illegal() -> None:
    with pytest.raises(ck.FissionError, match="across the gap"):
        ck.check_fission(war_gap.ir(), _in(0, 1))


@proc
def raw_gap(n: size, A: f32[n + 1] @ DRAM, B: f32[n + 1] @ DRAM):
    for i in seq(1, n + 1):
        A[i] = 1.0
        B[i] = A[i] + A[i - 1]


def test_fission_forward_dependence_is_legal() -> None:
    ck.check_fission(raw_gap.ir(), _in(0, 1))


@proc
def raw_backward(n: size, A: f32[n + 1] @ DRAM, B: f32[n] @ DRAM):
    for i in seq(0, n):
        B[i] = A[i]
        A[i + 1] = 1.0


def test_fission_backward_dependence_is_illegal() -> None:
    with pytest.raises(ck.FissionError):
        ck.check_fission(raw_backward.ir(), _in(0, 1))


@proc
def alloc_across(n: size, A: f32[n] @ DRAM):
    for i in seq(0, n):
        t: f32 @ DRAM
        t = 1.0
        A[i] = t


def test_fission_alloc_used_after_gap() -> None:
    with pytest.raises(ck.FissionError, match="defined before"):
        ck.check_fission(alloc_across.ir(), _in(0, 2))


@proc
def nest2(n: size, A: f32[n + 1, n] @ DRAM, B: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, n):
            A[i, j] = 1.0
            B[i, j] = A[i, j]


@proc
def nest2_bad(n: size, A: f32[n + 1, n] @ DRAM, B: f32[n, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, n):
            A[i, j] = 1.0
            B[i, j] = A[i + 1, j]


def test_fission_two_levels() -> None:
    ck.check_fission(nest2.ir(), _in(0, 0, 1), n_lifts=2)
    ck.check_fission(nest2_bad.ir(), _in(0, 0, 1), n_lifts=1)
    with pytest.raises(ck.FissionError):
        ck.check_fission(nest2_bad.ir(), _in(0, 0, 1), n_lifts=2)


def test_fission_not_in_loop() -> None:
    with pytest.raises(ck.FissionError, match="not inside a loop"):
        ck.check_fission(write_then_read.ir(), B1)


# -------------------------------------------------------------------------------- fuse


@proc
def shifted(n: size, A: f32[n + 1] @ DRAM, B: f32[n] @ DRAM):
    for i in seq(0, n):
        A[i] = 0.0
    for j in seq(0, n):
        B[j] = A[j + 1]


def test_fuse_shifted_dependence_is_illegal() -> None:
    with pytest.raises(ck.FusionError, match="cannot fuse"):
        ck.check_fuse(shifted.ir(), B0, B1)


@proc
def aligned(n: size, A: f32[n + 1] @ DRAM, B: f32[n] @ DRAM):
    for i in seq(0, n):
        A[i] = 0.0
    for j in seq(0, n):
        B[j] = A[j]


@proc
def backward(n: size, A: f32[n + 1] @ DRAM, B: f32[n] @ DRAM):
    for i in seq(1, n):
        A[i] = 0.0
    for j in seq(1, n):
        B[j] = A[j - 1]


def test_fuse_aligned_and_backward_are_legal() -> None:
    ck.check_fuse(aligned.ir(), B0, B1)
    ck.check_fuse(backward.ir(), B0, B1)


@proc
def diff_bounds(n: size, m: size, A: f32[n] @ DRAM, B: f32[m] @ DRAM):
    for i in seq(0, n):
        A[i] = 0.0
    for j in seq(0, m):
        B[j] = 1.0


@proc
def eq_bounds(n: size, m: size, A: f32[n] @ DRAM, B: f32[m] @ DRAM):
    assert n == m
    for i in seq(0, n):
        A[i] = 0.0
    for j in seq(0, m):
        B[j] = 1.0


def test_fuse_bounds() -> None:
    with pytest.raises(ck.FusionError, match="upper bounds differ"):
        ck.check_fuse(diff_bounds.ir(), B0, B1)
    ck.check_fuse(eq_bounds.ir(), B0, B1)


@proc
def two_ifs(n: size, A: f32[n] @ DRAM):
    if n > 4:
        A[0] = 1.0
    if 4 < n:
        A[1] = 1.0
    if n > 5:
        A[2] = 1.0


def test_fuse_ifs() -> None:
    ck.check_fuse(two_ifs.ir(), B0, B1)
    with pytest.raises(ck.FusionError, match="conditions differ"):
        ck.check_fuse(two_ifs.ir(), B1, B2)


def test_fuse_reductions_into_one_scalar() -> None:
    ck.check_fuse(two_reductions.ir(), B0, B1)


# ----------------------------------------------------------------------------- values


@proc
def tiled(n: size, A: f32[n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n):
        if i < 4:
            A[i] = 0.0


@proc
def untiled(n: size, A: f32[n] @ DRAM):
    for i in seq(0, n):
        A[i] = 0.0


def _n(p: ProcDef) -> Read:
    return Read(_sym(p, "n"), (), SIZE)


def _i(p: ProcDef) -> Read:
    loop = p.body[0]
    return Read(loop.iter, (), INDEX)  # type: ignore[union-attr]


def _c(v: int) -> Const:
    return Const(v, INT)


def _bin(op: str, a, b):  # type: ignore[no-untyped-def]
    from cursched.ir.nodes import BinOp

    return BinOp(op, a, b, INDEX)


def test_expr_equal_under_assert() -> None:
    p = tiled.ir()
    n = _n(p)
    ck.check_expr_equal(p, B0, _bin("*", _c(4), _bin("/", n, _c(4))), n)
    q = untiled.ir()
    with pytest.raises(ck.NotEqualError) as info:
        ck.check_expr_equal(q, B0, _bin("*", _c(4), _bin("/", _n(q), _c(4))), _n(q))
    assert info.value.counterexample is not None
    assert info.value.counterexample[_sym(q, "n")] % 4 != 0


def test_expr_equal_under_if_condition() -> None:
    p = tiled.ir()
    i = _i(p)
    ck.check_expr_equal(p, _in(0, 0, 0), _bin("%", i, _c(4)), i)
    with pytest.raises(ck.NotEqualError):
        ck.check_expr_equal(p, _in(0, 0), _bin("%", i, _c(4)), i)


def test_expr_equal_commuted() -> None:
    p = untiled.ir()
    i = _i(p)
    ck.check_expr_equal(p, _in(0, 0), _bin("+", i, _c(1)), _bin("+", _c(1), i))


def test_divides() -> None:
    p, q = tiled.ir(), untiled.ir()
    ck.check_divides(p, B0, 4, _n(p))
    ck.check_divides(p, B0, 2, _n(p))
    ck.check_divides(q, B0, 4, _bin("*", _c(8), _n(q)))
    with pytest.raises(ck.NotDivisibleError, match="4 does not provably divide n"):
        ck.check_divides(q, B0, 4, _n(q))
    with pytest.raises(ck.NotDivisibleError):
        ck.check_divides(p, B0, 8, _n(p))


def test_le() -> None:
    p = untiled.ir()
    i, n = _i(p), _n(p)
    ck.check_le(p, _in(0, 0), i, n, strict=True)
    ck.check_le(p, B0, _bin("*", _c(4), _bin("/", n, _c(4))), n)
    with pytest.raises(ck.NotBoundedError, match="i \\+ 1 < n"):
        ck.check_le(p, _in(0, 0), _bin("+", i, _c(1)), n, strict=True)
    with pytest.raises(ck.NotBoundedError):
        ck.check_le(p, B0, n, 4)


# ----------------------------------------------------------------------------- buffers


@proc
def temp_use(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM):
    t: f32[n] @ DRAM
    for i in seq(0, n):
        t[i] = A[i]
    for i in seq(0, n):
        B[i] = t[i]
    for i in seq(0, n):
        A[i] = 0.0


def test_dead_after() -> None:
    p = temp_use.ir()
    t = p.body[0].sym  # type: ignore[union-attr]
    ck.check_dead_after(p, (("body", 3),), t)
    with pytest.raises(ck.BufferNotDeadError, match="B\\[i\\] = t\\[i\\]"):
        ck.check_dead_after(p, (("body", 2),), t)
    with pytest.raises(ck.BufferNotDeadError, match="parameter"):
        ck.check_dead_after(p, (("body", 3),), _sym(p, "A"))


@proc
def loop_temp(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM):
    t: f32 @ DRAM
    s: f32 @ DRAM
    s = 0.0
    for i in seq(0, n):
        t = A[i]
        B[i] = t + s
        s = A[i]


def test_dead_after_inside_loop() -> None:
    p = loop_temp.ir()
    t, s = p.body[0].sym, p.body[1].sym  # type: ignore[union-attr]
    # t is overwritten at the top of every iteration: dead after its last read
    ck.check_dead_after(p, _in(3, 2), t)
    # s is read by the next iteration before being overwritten
    with pytest.raises(ck.BufferNotDeadError):
        ck.check_dead_after(p, _in(3, 3), s)


def _window(p: ProcDef, buf: str, *coords: tuple[int, int] | int) -> WindowExpr:
    sym = _sym(p, buf)
    idx = tuple(
        Point(_c(c)) if isinstance(c, int) else Interval(_c(c[0]), _c(c[1])) for c in coords
    )
    return WindowExpr(sym, idx, TensorType(p.args[1].type.elem, ()))  # type: ignore[union-attr]


@proc
def block4(A: f32[8, 8] @ DRAM, B: f32[8] @ DRAM):
    for i in seq(0, 4):
        B[i] = A[2, i + 1]


def test_in_window() -> None:
    p = block4.ir()
    ck.check_in_window(p, [B0], _sym(p, "A"), _window(p, "A", 2, (1, 5)))
    ck.check_in_window(p, [B0], _sym(p, "A"), _window(p, "A", (0, 3), (0, 8)))
    with pytest.raises(ck.OutsideWindowError, match="leaves the window"):
        ck.check_in_window(p, [B0], _sym(p, "A"), _window(p, "A", 2, (1, 4)))
    with pytest.raises(ck.OutsideWindowError):
        ck.check_in_window(p, [B0], _sym(p, "A"), _window(p, "A", 3, (0, 8)))


@proc
def window_rows(n: size, A: f32[n + 1, n + 1] @ DRAM, B: f32[n, n] @ DRAM):
    for i in seq(0, n):
        w = A[i + 1, 0 : n + 1]
        for j in seq(0, n):
            A[i + 1, j] = 1.0
            B[i, j] = w[j + 1]


def test_fission_sees_windows_of_enclosing_blocks() -> None:
    # B[i, j] reads A[i + 1, j + 1] through w before iteration j + 1 writes it: illegal
    with pytest.raises(ck.FissionError, match="read of A"):
        ck.check_fission(window_rows.ir(), _in(0, 1, 1), n_lifts=1)
    # lifting past the window statement would move w away from its uses
    with pytest.raises(ck.FissionError, match="use w, defined before"):
        ck.check_fission(window_rows.ir(), _in(0, 1, 1), n_lifts=2)


@proc
def guarded_fission(n: size, A: f32[n + 1] @ DRAM, B: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        if i > 0:
            A[i] = 1.0
            B[i] = A[i + 1]


@proc
def guarded_fission_ok(n: size, A: f32[n + 1] @ DRAM, B: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        if i == n - 1:
            A[i] = 1.0
            B[i] = A[i + 1]


def test_fission_through_an_if() -> None:
    ck.check_fission(guarded_fission.ir(), _in(0, 0, 1), n_lifts=1)
    with pytest.raises(ck.FissionError):
        ck.check_fission(guarded_fission.ir(), _in(0, 0, 1), n_lifts=2)
    # the guard leaves a single iteration: nothing crosses the gap
    ck.check_fission(guarded_fission_ok.ir(), _in(0, 0, 1), n_lifts=2)
