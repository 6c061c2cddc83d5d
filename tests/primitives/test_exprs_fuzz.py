"""Property tests of the expression and write primitives on random expressions (hypothesis).

On ``i32`` data every rewrite here is exact (wrapping arithmetic is commutative, associative
and distributive), so the interpreter must agree bit for bit; and every cursor to a node of a
rewritten expression must be a tombstone afterwards, never another node.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursched import (
    DRAM,
    Proc,
    bind_expr,
    commute_expr,
    inline_assign,
    left_reassociate_expr,
    merge_writes,
    split_write,
)
from cursched.cursors import ExprCursor, NodeLoc, Tombstone
from cursched.cursors.tree import walk
from cursched.frontend import parse_source
from cursched.ir.nodes import BinOp
from cursched.ir.paths import Path
from cursched.testing import assert_equivalent

EXACT = {"rtol": 0.0, "atol": 0.0}

leaves = st.sampled_from(["a[i]", "b[i]", "c[i]", "3", "7"])


def _exprs(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return leaves
    sub = _exprs(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(sub, st.sampled_from(["+", "*", "-"]), sub).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
    )


def _proc(rhs: str) -> Proc:
    text = f"""
def rand(n: size, a: i32[n] @ DRAM, b: i32[n] @ DRAM, c: i32[n] @ DRAM, d: i32[n] @ DRAM):
    for i in seq(0, n):
        d[i] = {rhs}
        d[i] += {rhs}
"""
    return Proc(parse_source(text, {"DRAM": DRAM}))


def _cursor(p: Proc, path: Path) -> ExprCursor:
    return ExprCursor(p, NodeLoc(path))


def _ops(p: Proc, ops: set[str]) -> list[ExprCursor]:
    """Cursors to every operation ``ops`` in the body."""
    return [
        _cursor(p, path)
        for path, node in walk(p.ir())
        if isinstance(node, BinOp) and node.op in ops and path[0][0] == "body"
    ]


FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(_exprs(3), st.data())
def test_commute_and_reassociate_are_exact_and_kill(rhs: str, data: st.DataObject) -> None:
    p0 = _proc(rhs)
    p = p0
    ops = _ops(p, {"+", "*"})
    if ops:
        pick = data.draw(st.sampled_from(ops))
        inside = [_cursor(p, path) for path, _ in walk(pick.node(), pick.path())]
        p, c = commute_expr(p, [pick])
        for old in inside:
            assert isinstance(p.forward(old), Tombstone)
        assert c.expr[0].node().lhs == pick.node().rhs
    reassoc = [
        e
        for e in _ops(p, {"+", "*"})
        if isinstance(e.node().rhs, BinOp) and e.node().rhs.op == e.node().op
    ]
    if reassoc:
        p, _ = left_reassociate_expr(p, data.draw(st.sampled_from(reassoc)))
    assert_equivalent(p0, p, trials=2, **EXACT)


@FUZZ
@given(_exprs(2))
def test_bind_then_inline_round_trips(rhs: str) -> None:
    p0 = _proc(rhs)
    first = _cursor(p0, (("body", 0), ("body", 0), ("rhs", -1)))
    second = _cursor(p0, (("body", 0), ("body", 1), ("rhs", -1)))
    p, c = bind_expr(p0, [first, second], "tmp")
    assert_equivalent(p0, p, trials=2, **EXACT)
    q, r = inline_assign(p, c.assign)
    assert len(r.reads) == 2
    assert str(q).replace("        tmp: i32 @ DRAM\n", "") == str(p0)


@FUZZ
@given(_exprs(2), _exprs(2))
def test_split_then_merge_round_trips(lhs: str, rhs: str) -> None:
    p0 = _proc(f"{lhs} + {rhs}")
    for k in (0, 1):  # the assignment, then the reduction
        stmt = p0.find_loop("i").body()[k]
        p, c = split_write(p0, stmt)
        assert_equivalent(p0, p, trials=2, **EXACT)
        q, m = merge_writes(p, c.first.expand(0, 1))
        assert str(q) == str(p0)  # the same tree: `lhs + rhs` is BinOp(+, lhs, rhs)
        assert m.stmt.kind() == ("Assign" if k == 0 else "Reduce")
