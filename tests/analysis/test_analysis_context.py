"""Path contexts, the cheap-before-SMT order of the checks, and the query cache."""

from __future__ import annotations

import pytest
from corpus.procs_kernels import sgemm

from cursched import DRAM, proc
from cursched.analysis import affine as af
from cursched.analysis import checks as ck
from cursched.analysis import smt
from cursched.analysis.context import context_of
from cursched.ir.nodes import BinOp, Const, Read
from cursched.ir.printer import print_expr
from cursched.ir.types import INDEX, INT


@proc
def nest(n: size, A: f32[n, 8] @ DRAM):
    assert n % 2 == 0
    for i in seq(0, n):
        w = A[i, 0:8]
        for j in seq(0, 8):
            if j < 4:
                w[j] = 1.0
            else:
                w[j] = 2.0


def test_context_of_a_nested_statement() -> None:
    p = nest.ir()
    ctx = context_of(p, (("body", 0), ("body", 1), ("body", 0), ("orelse", 0)))
    assert [lp.iter.name for lp in ctx.loops] == ["i", "j"]
    assert [(print_expr(c), taken) for c, taken in ctx.conds] == [("j < 4", False)]
    assert [s.name for s in ctx.windows] == ["w"]
    i, j = ctx.loops[0].iter, ctx.loops[1].iter
    assert ctx.ranges()[j] == (0, 7)
    assert ctx.ranges()[i] == (0, None)
    # sizes positive + assert + 2 per loop + the negated condition
    assert len(ctx.props()) == 1 + 1 + 4 + 1
    # the facts prove j >= 4 in the else branch
    assert smt.valid(af.Ge(af.Aff.var(j) - 4), ctx.props()).ok


def test_context_of_a_loop_excludes_its_own_variable() -> None:
    p = nest.ir()
    ctx = context_of(p, (("body", 0),))
    assert ctx.loops == () and ctx.conds == ()
    inner = context_of(p, (("body", 0), ("body", 1)))
    assert [lp.iter.name for lp in inner.loops] == ["i"]
    assert [s.name for s in inner.windows] == ["w"]


def test_simplify_with_a_path_context() -> None:
    p = nest.ir()
    ctx = context_of(p, (("body", 0), ("body", 1), ("body", 0)))
    j = ctx.loops[1].iter
    e = BinOp("/", Read(j, (), INDEX), Const(8, INT), INDEX)
    assert print_expr(af.simplify_expr(e, ctx)) == "0"


def test_cheap_checks_decide_sgemm_without_smt() -> None:
    smt.reset()
    ck.check_reorder_loops(sgemm.ir(), (("body", 0),))
    ck.check_reorder_loops(sgemm.ir(), (("body", 0), ("body", 0)))
    assert smt.stats().queries == 0  # two reductions and reads: no query needed


@proc
def copies(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM, C: f32[n] @ DRAM):
    for i in seq(0, n):
        B[i] = A[i]
    for i in seq(0, n):
        C[i] = B[n - 1 - i]
    for i in seq(0, n):
        A[i] = C[n - 1 - i]


def test_repeated_schedule_hits_the_cache() -> None:
    p = copies.ir()
    smt.reset()
    for _ in range(2):
        for k in range(3):
            ck.check_parallel(p, (("body", k),))
        for k in range(2):  # mirrored reads: fusing is illegal, and only SMT can tell
            with pytest.raises(ck.FusionError):
                ck.check_fuse(p, (("body", k),), (("body", k + 1),))
    st = smt.stats()
    assert st.queries > 0
    assert st.solver_calls < st.queries / 2  # same shapes, renamed: answered from the cache
    assert st.hit_rate() > 0.5


@proc
def forward_only(n: size, A: f32[n + 2, n + 2] @ DRAM, B: f32[2 * n + 2] @ DRAM):
    for i in seq(1, n + 1):
        for j in seq(1, n + 1):
            A[i, j] = A[i - 1, j - 1] + A[i - 1, j]
    for i in seq(0, n):
        B[2 * i] = B[2 * i + 1]


def test_distance_and_gcd_tests_decide_without_smt() -> None:
    smt.reset()
    # distances (1, 1) and (1, 0) agree with any interchange order: no query reaches z3
    ck.check_reorder_loops(forward_only.ir(), (("body", 0),))
    # even and odd elements never meet (gcd test)
    ck.check_parallel(forward_only.ir(), (("body", 1),))
    assert smt.stats().queries == 0
    # the outer loop carries the (1, 0) distance: found (by SMT, with values)
    with pytest.raises(ck.ParallelError):
        ck.check_parallel(forward_only.ir(), (("body", 0),))
    assert smt.stats().queries > 0
