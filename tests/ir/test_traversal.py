"""Substitution follows symbols into the shapes held by window types."""

from __future__ import annotations

from cursched import DRAM, proc
from cursched.ir.nodes import For, WindowExpr, WindowStmt
from cursched.ir.traversal import free_syms_expr, subst_stmt


@proc
def window_in_loop(n: size, A: f32[n, 8] @ DRAM):
    for i in seq(0, n):
        w = A[i, i % 4 : i % 4 + 4]
        w[0] = 1.0


def test_renaming_a_loop_variable_reaches_window_shapes() -> None:
    loop = window_in_loop.ir().body[0]
    assert isinstance(loop, For)
    j = loop.iter.copy()
    new = subst_stmt(loop.body[0], {loop.iter: j})
    assert isinstance(new, WindowStmt)
    assert isinstance(new.rhs, WindowExpr)
    shape_syms = set().union(*(free_syms_expr(s) for s in new.rhs.type.shape))
    assert loop.iter not in shape_syms
    idx_syms = set().union(*(free_syms_expr(e) for e in (new.rhs.idx[0].pt,)))  # type: ignore[union-attr]
    assert idx_syms == {j}
