"""Analyses of loop nests and of generated source text that the interpreter's compiler uses
to version a nest (check the bounds of its affine accesses once, at the corners of the box
of loop ranges) and to decide literal conditions when compiling.

Split out of ``compile.py``: pure functions over the IR and over source text, no state.
"""

from __future__ import annotations

import ast
import functools
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
_NAME = re.compile(r"[A-Za-z_]\w*")


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


def proved(cond: str, positive: frozenset[str]) -> bool:
    """Whether condition ``cond`` (generated source: comparisons of integer expressions
    joined by ``and``) holds for every value of its names, knowing that the names in
    ``positive`` are at least 1 (size arguments, which ``_run`` checked): each comparison's
    difference is affine, with non-negative coefficients on ``positive`` names only, and its
    least value satisfies it. False when it cannot tell."""
    if not set(_NAME.findall(cond)) - {"and"} <= positive:
        return False  # a loop variable or another name: nothing to prove it from
    return _proved(cond, positive)


@functools.lru_cache(maxsize=4096)
def _proved(cond: str, positive: frozenset[str]) -> bool:
    try:
        tree = ast.parse(cond, mode="eval").body
    except SyntaxError:
        return False
    parts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    return all(_compare_proved(p, positive) for p in parts)


def _compare_proved(node: ast.expr, positive: frozenset[str]) -> bool:
    if not isinstance(node, ast.Compare):
        return False
    left = node.left
    for op, right in zip(node.ops, node.comparators, strict=True):
        lo, hi = _affine(left, positive), _affine(right, positive)
        if lo is None or hi is None:
            return False
        diff = dict(hi)
        for k, c in lo.items():
            diff[k] = diff.get(k, 0) - c
        const = diff.pop("", 0)
        if any(c < 0 for c in diff.values()):
            return False
        least = const + sum(diff.values())  # every positive name at its least, 1
        strict = {ast.Lt: True, ast.LtE: False}.get(type(op))
        if strict is None or least < (1 if strict else 0):
            return False
        left = right
    return True


def _affine(node: ast.expr, positive: frozenset[str]) -> dict[str, int] | None:
    """``node`` as {name: coefficient, "": constant}, the names among ``positive``; None
    if it is not affine in them."""
    match node:
        case ast.Constant(value=int() as v) if not isinstance(v, bool):
            return {"": v}
        case ast.Name(id=name) if name in positive:
            return {name: 1}
        case ast.UnaryOp(op=ast.USub(), operand=x):
            a = _affine(x, positive)
            return None if a is None else {k: -c for k, c in a.items()}
        case ast.BinOp(left=x, op=ast.Add() | ast.Sub() as op, right=y):
            a, b = _affine(x, positive), _affine(y, positive)
            if a is None or b is None:
                return None
            sign = 1 if isinstance(op, ast.Add) else -1
            out = dict(a)
            for k, c in b.items():
                out[k] = out.get(k, 0) + sign * c
            return out
        case ast.BinOp(left=x, op=ast.Mult(), right=y):
            a, b = _affine(x, positive), _affine(y, positive)
            if a is None or b is None:
                return None
            for p, q in ((a, b), (b, a)):
                if set(q) <= {""}:
                    factor = q.get("", 0)
                    return {name: c * factor for name, c in p.items()}
            return None
        case _:
            return None
