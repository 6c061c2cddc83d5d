"""Readable control expressions: ``affine.simplify_expr`` plus the identities it leaves.

``simplify_expr`` rebuilds quasi-affine expressions in normal form but keeps ``k * (x / k) +
x % k`` as written (the two atoms are independent in the normal form). Merging loops
(``mult_loops``) and ``simplify`` produce exactly that shape, so this module folds it back to
``x``, and folds ``and``/``or`` with a constant operand.
"""

from __future__ import annotations

from collections.abc import Mapping

from cursched.analysis import affine as af
from cursched.ir.nodes import BinOp, Const, Expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children
from cursched.ir.types import BOOL, ControlType


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


# ``tidy_expr`` results per (expression node, ranges): ``simplify`` runs over the whole proc
# after most steps, and the nodes it meets are mostly shared with the previous version, at
# the same loop ranges. Keyed by ``id`` with the node kept alive in the entry (the id cannot
# be reused while the entry exists); cleared when full, which only costs recomputation.
_TIDY_MEMO: dict[tuple[int, tuple[tuple[Sym, af.Bound], ...]], tuple[Expr, Expr]] = {}
_TIDY_MEMO_LIMIT = 1 << 14


def tidy_expr(e: Expr, ranges: Mapping[Sym, af.Bound] | None = None) -> Expr:
    """``e`` simplified for reading: ``simplify_expr`` under ``ranges``, ``k * (x / k) +
    x % k`` folded to ``x``, ``and``/``or`` with a constant operand folded.

    Returns ``e`` itself (the same object) when the result is equal to it, so callers keep
    node identity for unchanged expressions.
    """
    key = (id(e), tuple(ranges.items()) if ranges else ())
    hit = _TIDY_MEMO.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    out = _tidy(e, ranges)
    if len(_TIDY_MEMO) >= _TIDY_MEMO_LIMIT:
        _TIDY_MEMO.clear()
    _TIDY_MEMO[key] = (e, out)
    return out


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
