"""rewrite_expr, commute_expr, left_reassociate_expr: golden, negative, forwarding, differential."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import commute_expr, insert_pass, left_reassociate_expr, proc, rewrite_expr
from cursched.cursors import ExprCursor, Tombstone
from cursched.errors import StaleCursorError
from cursched.ir.nodes import BinOp, Const, Read
from cursched.ir.types import DataType
from cursched.primitives.exprs.exprs import (
    BadNewExpressionError,
    ExprNotEqualError,
    NotAssociativeError,
    NotCommutativeError,
    NotInBodyError,
    OverlappingExprsError,
    RhsNotSameOpError,
)
from cursched.testing import assert_equivalent
from cursched.testing.plugin import Golden


@proc
def blocked(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n / 4 * 4):
        if i < n / 4 * 4:
            y[i] = x[i] * 2.0 + (x[i] + (y[i] + 1.0))


@proc
def ints(n: size, a: i32[n] @ DRAM, b: i32[n] @ DRAM, c: i32[n] @ DRAM):
    for i in seq(0, n):
        c[i] = a[i] * (b[i] * c[i])
        c[i] += a[i] + (b[i] + a[i])


# ------------------------------------------------------------------------------ rewrite_expr


def test_rewrite_expr_bound_golden(golden: Golden) -> None:
    p, c = rewrite_expr(blocked, "n / 4 * 4", "n")
    golden.check(p)
    assert isinstance(c.expr, ExprCursor) and c.expr.node() == blocked.find("n").node()
    assert c.expr.path() == (("body", 0), ("hi", -1))
    assert_equivalent(blocked, p, trials=3)


def test_rewrite_expr_condition_and_forwarding() -> None:
    cond = blocked.find("i < _")
    old_hi = cond.rhs()
    stmt = blocked.find("y[_] = _")
    p, c = rewrite_expr(blocked, cond, "i < n and n >= 4")
    assert "if i < n and n >= 4:" in str(p)
    assert c.expr == p.find("if _: _").cond()
    assert p.forward(stmt) == p.find("y[_] = _")  # statements keep their identity
    for old in (cond, old_hi):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and "rewrite_expr" in dead.story()
        assert "use .expr" in dead.story()
    assert_equivalent(blocked, p, trials=3)


def test_rewrite_expr_data_indices_proven() -> None:
    e = blocked.find("x[_] * 2.0")
    node = e.node()
    i = node.lhs.idx[0]
    shifted = Read(
        node.lhs.sym,
        (BinOp("-", BinOp("+", i, Const(1, i.type), i.type), Const(1, i.type), i.type),),
        node.lhs.type,
    )
    p, c = rewrite_expr(blocked, e, BinOp("*", shifted, node.rhs, node.type))
    assert "x[i + 1 - 1] * 2.0" in str(p)
    assert c.expr.node().lhs.idx[0].op == "-"
    assert_equivalent(blocked, p, trials=2)


def test_rewrite_expr_not_equal_has_counterexample() -> None:
    with pytest.raises(ExprNotEqualError, match="counterexample: n = ") as e:
        rewrite_expr(blocked, "n / 4 * 4", "n - 4")
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


def test_rewrite_expr_data_not_equal() -> None:
    e = blocked.find("x[_] * 2.0")
    node = e.node()
    other = BinOp("*", node.rhs, node.lhs, node.type)  # equal as reals, not as a tree
    with pytest.raises(ExprNotEqualError, match="not provably equal"):
        rewrite_expr(blocked, e, other)


def test_rewrite_expr_bad_new() -> None:
    with pytest.raises(BadNewExpressionError):
        rewrite_expr(blocked, "n / 4 * 4", "m + 1")  # no such name
    with pytest.raises(BadNewExpressionError):
        rewrite_expr(blocked, "n / 4 * 4", "i < n")  # a condition for an integer
    with pytest.raises(BadNewExpressionError):
        rewrite_expr(blocked, "x[_] * 2.0", "2.0 * x[i]")  # data comes as IR
    with pytest.raises(BadNewExpressionError):
        rewrite_expr(blocked, "n / 4 * 4", "n * n")  # not quasi-affine
    with pytest.raises(BadNewExpressionError):
        rewrite_expr(blocked, "i < _", "(i < n) + 1 < 2")  # arithmetic on a bool
    with pytest.raises(BadNewExpressionError):
        rewrite_expr(blocked, "n / 4 * 4", ints.find("n"))  # another proc's n


def test_not_in_body() -> None:
    with pytest.raises(NotInBodyError):
        rewrite_expr(blocked, blocked.find("n % 4 == 0"), "n % 2 == 0")

    @proc
    def asserted(n: size, x: f32[n] @ DRAM):
        assert n + 1 > 2 * n - 8
        for i in seq(0, n):
            x[i] = 1.0

    with pytest.raises(NotInBodyError):
        commute_expr(asserted, ["n + 1"])
    with pytest.raises(NotInBodyError):
        left_reassociate_expr(asserted, "2 * n")


# ------------------------------------------------------------------------------ commute_expr


def test_commute_expr_golden(golden: Golden) -> None:
    p, c = commute_expr(blocked, ["x[_] * 2.0", "y[_] + 1.0"])
    golden.check(p)
    assert [x.node().op for x in c.expr] == ["*", "+"]
    assert isinstance(c.expr[0].lhs().node(), Const)
    assert_equivalent(blocked, p, trials=3, rtol=0, atol=0)  # commuting is exact


def test_commute_expr_operand_cursor_is_a_tombstone() -> None:
    # Exo 1.0 re-targets a cursor to `x[i]` in `x[i] * 2.0` to `2.0` after the commute.
    mul = blocked.find("x[_] * 2.0")
    lhs, rhs = mul.lhs(), mul.rhs()
    p, c = commute_expr(blocked, [mul])
    for old in (mul, lhs, rhs):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and not dead
        assert "commuted by commute_expr; use .expr" in dead.story()
    assert p.forward(lhs) != c.expr[0].lhs()  # never the other operand
    with pytest.raises(StaleCursorError, match="commute_expr"):
        commute_expr(p, [lhs])


def test_commute_expr_pattern_and_find_all() -> None:
    @proc
    def pairs(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            y[i] = x[i] * 2.0
            y[i] += x[i] * 2.0

    p, c = commute_expr(pairs, "x[_] * 2.0")  # a pattern: its first match
    assert len(c.expr) == 1 and str(p).count("2.0 * x[i]") == 1
    old = pairs.find_all("x[_] * 2.0")
    q, _ = insert_pass(pairs, pairs.find("y[_] = _").before())
    q, d = commute_expr(q, old)  # every match; cursors of an older version forward
    assert len(d.expr) == 2 and str(q).count("2.0 * x[i]") == 2
    assert "commute_expr(p, [p.at('body[0].body[1].rhs'), p.at('body[0].body[2].rhs')])" in (
        q.history()
    )  # the history names the forwarded places


def test_commute_expr_not_commutative() -> None:
    with pytest.raises(NotCommutativeError):
        commute_expr(blocked, ["n / 4"])
    with pytest.raises(NotCommutativeError):
        commute_expr(blocked, ["x[_]"])


def test_commute_expr_overlapping() -> None:
    outer = blocked.find("x[_] * 2.0 + _")
    with pytest.raises(OverlappingExprsError):
        commute_expr(blocked, [outer, outer.lhs()])
    with pytest.raises(OverlappingExprsError):
        commute_expr(blocked, [outer, outer])


def test_commute_expr_integers_compile() -> None:
    p, _ = commute_expr(ints, ["a[_] * _", "a[_] + _"])
    assert "c[i] = b[i] * c[i] * a[i]" in str(p)
    f = p.compile()
    rng = np.random.default_rng(1)
    a, b = rng.integers(-50, 50, 7, dtype=np.int32), rng.integers(-50, 50, 7, dtype=np.int32)
    c1 = rng.integers(-50, 50, 7, dtype=np.int32)
    c2 = c1.copy()
    f(7, a, b, c1)
    ints.interpret(7, a, b, c2)
    np.testing.assert_array_equal(c1, c2)


# --------------------------------------------------------------------- left_reassociate_expr


def test_left_reassociate_golden(golden: Golden) -> None:
    p, c = left_reassociate_expr(blocked, "x[_] + (y[_] + 1.0)")
    golden.check(p)
    node = c.expr.node()
    assert isinstance(node, BinOp) and isinstance(node.lhs, BinOp) and node.lhs.op == "+"
    assert isinstance(node.type, DataType)
    assert_equivalent(blocked, p, trials=3)  # floats: within the default tolerance


def test_left_reassociate_forwarding_and_integers_exact() -> None:
    e = ints.find("a[_] * (b[_] * c[_])")
    inner = e.rhs()
    p, c = left_reassociate_expr(ints, e)
    assert "c[i] = a[i] * b[i] * c[i]" in str(p)
    assert c.expr == p.find("c[_] = _").rhs()
    assert isinstance(p.forward(inner), Tombstone)
    assert "reassociated by left_reassociate_expr" in p.forward(e).story()  # type: ignore[union-attr]
    p, _ = left_reassociate_expr(p, "a[_] + (b[_] + a[_])")
    assert_equivalent(ints, p, trials=3, rtol=0, atol=0)


def test_left_reassociate_not_associative() -> None:
    with pytest.raises(NotAssociativeError):
        left_reassociate_expr(blocked, "x[_]")


def test_left_reassociate_rhs_not_same_op() -> None:
    with pytest.raises(RhsNotSameOpError):
        left_reassociate_expr(blocked, "x[_] * 2.0")
