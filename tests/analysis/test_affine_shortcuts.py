"""The shortcuts that make ``simplify`` fast decide exactly what the full computation does.

``affine.matches_from_aff(a, e)`` is ``from_aff(a) == e`` without building the expression;
``affine_tidy.tidy_expr`` returns an expression it can tell is already tidy without running
the rewrite; both are compared here with the plain computation on random inputs.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cursched.analysis import affine as af
from cursched.analysis import affine_tidy as at
from cursched.ir.nodes import BinOp, Const, Expr, Read, StrideExpr, USub
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children
from cursched.ir.types import F32, INDEX, INT, SIZE

SYMS = [Sym("i"), Sym("j"), Sym("n")]
TYPES = {SYMS[0]: INDEX, SYMS[1]: INDEX, SYMS[2]: SIZE}
BUF = Sym("x")


@st.composite
def affs(draw: st.DrawFn) -> af.Aff:
    """Affine forms over variables and strides, no division or modulo."""
    parts: dict[af.Atom, int] = {}
    for s in draw(st.lists(st.sampled_from(SYMS), max_size=3, unique=True)):
        parts[af.Var(s, TYPES[s])] = draw(st.integers(-4, 4))
    if draw(st.booleans()):
        parts[af.Stride(BUF, draw(st.integers(0, 1)))] = draw(st.integers(-3, 3))
    return af.Aff.of(parts, draw(st.integers(-6, 6)))


def _leaf(draw: st.DrawFn) -> Expr:
    s = draw(st.sampled_from(SYMS))
    return draw(
        st.sampled_from(
            [
                Read(s, (), TYPES[s]),
                Read(s, (), INT),  # a type the normal form would not give it
                Const(draw(st.integers(-6, 6)), INT),
                Const(draw(st.integers(-6, 6)), INDEX),
                StrideExpr(BUF, draw(st.integers(0, 1)), INDEX),
            ]
        )
    )


@st.composite
def int_exprs(draw: st.DrawFn, depth: int = 3) -> Expr:
    """Integer control expressions, printed normal forms among them."""
    if draw(st.booleans()):
        return af.from_aff(draw(affs()))
    if depth == 0 or draw(st.booleans()):
        return _leaf(draw)
    if draw(st.integers(0, 4)) == 0:
        return USub(draw(int_exprs(depth - 1)), INDEX)
    op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
    lhs = draw(int_exprs(depth - 1))
    rhs = Const(draw(st.integers(1, 5)), INT) if op in "*/%" else draw(int_exprs(depth - 1))
    if op == "*" and draw(st.booleans()):
        lhs, rhs = rhs, lhs
    return BinOp(op, lhs, rhs, draw(st.sampled_from([INDEX, INDEX, INT])))


@settings(max_examples=400, deadline=None)
@given(affs(), int_exprs())
def test_matches_from_aff_is_from_aff_equality(a: af.Aff, e: Expr) -> None:
    assert af.matches_from_aff(a, e) == (af.from_aff(a) == e)
    assert af.matches_from_aff(a, af.from_aff(a))
    for near in _near_misses(af.from_aff(a)):
        assert af.matches_from_aff(a, near) == (af.from_aff(a) == near)


def _near_misses(e: Expr) -> list[Expr]:
    """``e`` with every read typed ``int``, every constant typed ``index``, every
    operation typed ``int``, and ``+``/``-`` swapped: equal to ``e`` only by accident."""

    def retype(x: Expr, how: str) -> Expr:
        x = map_expr_children(x, lambda c: retype(c, how))
        match x:
            case Read() if how == "read":
                return x.replace(type=INT)
            case Const() if how == "const":
                return x.replace(type=INDEX)
            case BinOp() if how == "op":
                return x.replace(type=INT)
            case BinOp() if how == "sign" and x.op in ("+", "-"):
                return x.replace(op="-" if x.op == "+" else "+")
            case USub() if how == "sign":
                return x.arg
            case _:
                return x

    return [retype(e, how) for how in ("read", "const", "op", "sign")]


def test_matches_from_aff_declines_division_and_modulo() -> None:
    i = af.Aff.var(SYMS[0])
    assert af.matches_from_aff(af.div(i, 4), Read(SYMS[0], (), INDEX)) is None
    assert af.matches_from_aff(af.mod(i, 4), Read(SYMS[0], (), INDEX)) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(int_exprs(), min_size=1, max_size=3), st.integers(0, 3))
def test_a_shortcut_tidy_expression_is_one_the_rewrite_leaves_alone(
    idx: list[Expr], hi: int
) -> None:
    for e in (*idx, BinOp("*", Read(BUF, tuple(idx), F32), Const(2.0, F32), F32)):
        if at._already_tidy(e):
            # under any ranges: none here, and ranges that decide divisions and modulos
            assert at._tidy(e, None) is e
            assert at._tidy(e, {SYMS[0]: (0, hi), SYMS[1]: (hi, hi + 3)}) is e


@settings(max_examples=100, deadline=None)
@given(affs())
def test_printed_normal_forms_take_the_shortcut(a: af.Aff) -> None:
    e = af.from_aff(a)
    assert at._already_tidy(e)
    assert at._already_tidy(BinOp("+", Read(BUF, (e, e), F32), Const(1.0, F32), F32))
    assert at.tidy_expr(e) is e
