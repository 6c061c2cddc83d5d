"""Analyses of loop nests and of generated source text that the interpreter's compiler uses
to version a nest (check the bounds of its affine accesses once, at the corners of the box
of loop ranges) and to decide literal conditions when compiling.

Split out of ``compile.py``: pure functions over the IR and over source text, no state.
"""

from __future__ import annotations

import re

from cursched.ir.nodes import BinOp, Const, Expr, For, Read, Stmt, StrideExpr, USub
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_expr, walk_stmts
from cursched.ir.types import ControlType


def innermost(body: tuple[Stmt, ...]) -> bool:
    return not any(isinstance(s, For) for s in walk_stmts(body))


def invariant(e: Expr, syms: set[Sym] | frozenset[Sym]) -> bool:
    """``e`` names none of ``syms`` (as a variable, or in a ``stride``)."""
    return not any(isinstance(y, Read | StrideExpr) and y.sym in syms for y in walk_expr(e))


def coef(e: Expr, v: Sym) -> int | None:
    """The coefficient of ``v`` in affine ``e`` when it is a known integer (else None)."""
    match e:
        case Read():
            return 1 if e.sym is v else 0
        case USub():
            c = coef(e.arg, v)
            return None if c is None else -c
        case BinOp() if e.op in ("+", "-"):
            a, b = coef(e.lhs, v), coef(e.rhs, v)
            if a is None or b is None:
                return None
            return a + b if e.op == "+" else a - b
        case BinOp() if e.op == "*":
            a, b = coef(e.lhs, v), coef(e.rhs, v)
            if a == 0 and b == 0:
                return 0
            if a == 0 and b is not None and isinstance(e.lhs, Const):
                return int(e.lhs.value) * b
            if b == 0 and a is not None and isinstance(e.rhs, Const):
                return int(e.rhs.value) * a
            return None
        case _:
            # constants, strides, and divisions (only in invariant parts: affine_in)
            return 0 if invariant(e, {v}) else None


def corners(
    e: Expr, ranges: dict[Sym, tuple[str, str]]
) -> tuple[list[dict[Sym, str]], list[dict[Sym, str]]]:
    """Substitutions of the loop variables of affine ``e`` by their first or last value
    that give ``e``'s least and its greatest values over the box of ``ranges``: one each
    where the coefficients' signs are known, every corner of the unknown ones otherwise."""
    low: list[dict[Sym, str]] = [{}]
    high: list[dict[Sym, str]] = [{}]
    for v, (first, last) in ranges.items():
        if invariant(e, {v}):
            continue
        c = coef(e, v)
        lo_pick = (
            [first] if c is not None and c >= 0 else [last] if c is not None else [first, last]
        )
        hi_pick = (
            [last] if c is not None and c >= 0 else [first] if c is not None else [first, last]
        )
        low = [{**sub, v: x} for sub in low for x in lo_pick]
        high = [{**sub, v: x} for sub in high for x in hi_pick]
    return low, high


def affine_in(e: Expr, vs: Sym | frozenset[Sym], inside: set[Sym]) -> bool:
    """``e`` is a control expression affine in the loop variables ``vs``: a sum of terms
    ``a * v`` with ``a`` invariant in the loops, plus an invariant part (so its extremes
    over the loops' ranges are at the ends), and computing it cannot fail."""
    vars_ = frozenset({vs}) if isinstance(vs, Sym) else vs

    def invariant(x: Expr) -> bool:
        return not any(
            (isinstance(y, Read) and y.sym in vars_)
            or (isinstance(y, StrideExpr) and y.sym in inside)
            for y in walk_expr(x)
        )

    def ok(x: Expr) -> bool:
        match x:
            case Const():
                return isinstance(x.value, int) and not isinstance(x.value, bool)
            case Read():
                return not x.idx and isinstance(x.type, ControlType)
            case USub():
                return ok(x.arg)
            case BinOp():
                if x.op in ("+", "-"):
                    return ok(x.lhs) and ok(x.rhs)
                if x.op == "*":
                    return ok(x.lhs) and ok(x.rhs) and (invariant(x.lhs) or invariant(x.rhs))
                if x.op in ("/", "%"):
                    # floor division is monotone but not affine: only in invariant parts
                    return (
                        isinstance(x.rhs, Const) and x.rhs.value != 0 and invariant(x) and ok(x.lhs)
                    )
                return False
            case StrideExpr():
                return x.sym not in inside
            case _:
                return False

    return ok(e)


_LITERAL = re.compile(r"[0-9 ()+\-*/%<=>]+")


def literal_value(text: str) -> int | None:
    """The value of integer expression or condition ``text`` when it is made of integer
    literals only (computed as the generated code would: Python's ``//`` and ``%`` are the
    control operations; a condition's value is 0 or 1), else None."""
    if not _LITERAL.fullmatch(text) or "/" in text.replace("//", ""):
        return None
    try:
        return int(eval(text, {"__builtins__": {}}))
    except (ArithmeticError, SyntaxError):
        return None


def holds(cond: str) -> bool | None:
    """``literal_value`` of a condition, as a bool."""
    v = literal_value(cond)
    return None if v is None else bool(v)


def is_name(text: str) -> bool:
    return text.isidentifier() or is_int_literal(text)


def is_int_literal(text: str) -> bool:
    return text.lstrip("-").isdigit()
