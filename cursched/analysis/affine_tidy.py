"""Readable control expressions: ``affine.simplify_expr`` plus the identities it leaves.

``simplify_expr`` rebuilds quasi-affine expressions in normal form but keeps ``k * (x / k) +
x % k`` as written (the two atoms are independent in the normal form). Merging loops
(``mult_loops``) and ``simplify`` produce exactly that shape, so this module folds it back to
``x``, and folds ``and``/``or`` with a constant operand.
"""

from __future__ import annotations

from collections.abc import Mapping

from cursched.analysis import affine as af
from cursched.ir.nodes import BinOp, Const, Expr, Extern, Read, USub
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children
from cursched.ir.types import BOOL, ControlType, DataType


def fold_divmod(a: af.Aff) -> af.Aff:
    """``a`` with every ``m * k * (x / k) + m * (x % k)`` replaced by ``m * x`` (floor
    division and modulo: ``x == k * (x / k) + x % k`` for every integer ``x``), nested
    divisions and modulos included."""
    if not any(isinstance(atom, af.Div | af.Mod) for atom, _ in a.terms):
        return a  # nothing to fold
    out = af.Aff.num(a.const)
    for atom, c in a.terms:
        if isinstance(atom, af.Div):
            out = out + af.div(fold_divmod(atom.num), atom.k).scale(c)
        elif isinstance(atom, af.Mod):
            out = out + af.mod(fold_divmod(atom.num), atom.k).scale(c)
        else:
            out = out + af.Aff(((atom, 1),), 0).scale(c)
    while True:
        coeffs = dict(out.terms)
        for atom, c in out.terms:
            if not isinstance(atom, af.Mod):
                continue
            d = af.Div(atom.num, atom.k)
            if coeffs.get(d, 0) == c * atom.k:
                both = af.Aff.of({atom: c, d: c * atom.k})
                out = out - both + atom.num.scale(c)
                break
        else:
            return out


def _fold_bool(e: BinOp) -> Expr:
    for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if isinstance(a, Const) and a.type == BOOL:
            absorbing = e.op == "or"
            return Const(absorbing, BOOL) if bool(a.value) == absorbing else b
    return e


# Expressions known to be left unchanged by ``tidy_expr`` under given ranges, compared by
# structure: ``simplify`` runs over the whole proc after most steps, and most expressions it
# meets are already tidy, though often rebuilt by the steps in between. ``tidy_expr`` is a
# function of the structure (symbols by identity) and the ranges, so an equal expression is
# unchanged too, and the answer for it is the expression itself (its own node and source
# location). Only unchanged outcomes are kept: a changed result is built afresh each time,
# never shared between two places. Cleared when full, which only costs recomputation.
_TIDY_FIXED: set[tuple[Expr, tuple[tuple[Sym, af.Bound], ...]]] = set()
_TIDY_FIXED_LIMIT = 1 << 13


def tidy_expr(e: Expr, ranges: Mapping[Sym, af.Bound] | None = None) -> Expr:
    """``e`` simplified for reading: ``simplify_expr`` under ``ranges``, ``k * (x / k) +
    x % k`` folded to ``x``, ``and``/``or`` with a constant operand folded.

    Returns ``e`` itself (the same object) when the result is equal to it, so callers keep
    node identity for unchanged expressions.
    """
    if _already_tidy(e):
        return e
    key = (e, tuple(ranges.items()) if ranges else ())
    if key in _TIDY_FIXED:
        return e
    out = _tidy(e, ranges)
    if out is e:
        if len(_TIDY_FIXED) >= _TIDY_FIXED_LIMIT:
            _TIDY_FIXED.clear()
        _TIDY_FIXED.add(key)
    return out


def _already_tidy(e: Expr) -> bool:
    """A sufficient test that ``tidy_expr`` leaves ``e`` as it is, under any ranges: ``e``
    is a data expression of reads, constants, arithmetic and externs (rebuilt around its
    indices only) or an integer expression, and each integer part is the printed normal
    form of an affine form without division or modulo (which no rule changes)."""
    parts: list[Expr] = []

    def visit(x: Expr) -> bool:
        t = x.type
        if isinstance(t, ControlType):
            if not t.is_integer():
                return False
            parts.append(x)
            return True
        if not isinstance(t, DataType):
            return False
        match x:
            case Const():
                return True
            case Read():
                return all(visit(i) for i in x.idx)
            case BinOp():
                return visit(x.lhs) and visit(x.rhs)
            case USub():
                return visit(x.arg)
            case Extern():
                return all(visit(a) for a in x.args)
            case _:
                return False

    if not visit(e):
        return False
    for x in parts:
        a = af.to_aff(x)
        if a is None or not af.matches_from_aff(a, x):
            return False
    return True


def _tidy(e: Expr, ranges: Mapping[Sym, af.Bound] | None) -> Expr:

    def go(x: Expr) -> Expr:
        t = getattr(x, "type", None)
        if isinstance(t, ControlType) and t.is_integer():
            a = af.to_aff(x)
            if a is not None:
                return af.from_aff(af.simplify_aff(fold_divmod(a), ranges or {}))
        x = map_expr_children(x, go)
        if isinstance(x, BinOp) and x.op in ("and", "or"):
            return _fold_bool(x)
        return x

    new = go(af.simplify_expr(e, ranges or {}))
    return e if new == e else new
