"""Scalar helpers of the reference interpreter: casts with wrap-around, C integer division,
and the text of its error messages.
"""

from __future__ import annotations

import math
from typing import Any, assert_never

import numpy as np

from cursched.errors import InterpreterError
from cursched.ir.nodes import (
    BinOp,
    Const,
    Expr,
    Extern,
    Interval,
    Point,
    Read,
    StrideExpr,
    USub,
    WindowExpr,
)


def wrap_int(v: int, dt: np.dtype[Any]) -> Any:
    """The Python int ``v`` as a numpy scalar of integer dtype ``dt``, two's complement wrapped.

    numpy refuses out-of-range Python ints (OverflowError); C wraps, so we do the modulo here.
    """
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return dt.type(v)


def cast_scalar(value: Any, dt: np.dtype[Any]) -> Any:
    """``value`` (Python or numpy number) converted to a numpy scalar of ``dt`` as C would:
    integers wrap, floats to integers truncate toward zero (NaN and infinities go through
    numpy's cast, whose result C leaves undefined).
    """
    if dt.kind in "iu":
        if isinstance(value, bool | np.bool_):
            return dt.type(int(value))
        if isinstance(value, int | np.integer):
            return wrap_int(int(value), dt)
        f = float(value)
        if math.isfinite(f):
            return wrap_int(int(f), dt)
    return dt.type(value)


def int_div(a: Any, b: Any, dt: np.dtype[Any]) -> Any:
    """Integer data ``/``: C division, truncating toward zero."""
    x, y = int(a), int(b)
    if y == 0:
        raise InterpreterError(f"integer division by zero ({x} / 0)")
    q = abs(x) // abs(y)
    return wrap_int(-q if (x < 0) != (y < 0) else q, dt)


def int_rem(a: Any, b: Any, dt: np.dtype[Any]) -> Any:
    """Integer data ``%``: C remainder, with the sign of the dividend."""
    x, y = int(a), int(b)
    if y == 0:
        raise InterpreterError(f"integer remainder by zero ({x} % 0)")
    q = abs(x) // abs(y)
    q = -q if (x < 0) != (y < 0) else q
    return wrap_int(x - q * y, dt)


# --------------------------------------------------------------------------------- text

_PREC = {"or": 1, "and": 2, "<": 3, ">": 3, "<=": 3, ">=": 3, "==": 3, "!=": 3}
_PREC.update({"+": 4, "-": 4, "*": 5, "/": 5, "%": 5})


def fmt_expr(e: Expr, prec: int = 0) -> str:
    """A short surface-syntax rendering of ``e`` for error messages."""
    match e:
        case Const():
            return repr(e.value) if not isinstance(e.value, float) else str(e.value)
        case Read():
            if not e.idx:
                return e.sym.name
            return f"{e.sym.name}[{', '.join(fmt_expr(i) for i in e.idx)}]"
        case BinOp():
            p = _PREC[e.op]
            # a right operand of equal precedence needs parentheses: a - (b - c)
            text = f"{fmt_expr(e.lhs, p)} {e.op} {fmt_expr(e.rhs, p + 1)}"
            return f"({text})" if p < prec else text
        case USub():
            return f"-{fmt_expr(e.arg, 6)}"
        case Extern():
            return f"{e.name}({', '.join(fmt_expr(a) for a in e.args)})"
        case WindowExpr():
            parts = []
            for w in e.idx:
                match w:
                    case Point():
                        parts.append(fmt_expr(w.pt))
                    case Interval():
                        parts.append(f"{fmt_expr(w.lo)}:{fmt_expr(w.hi)}")
                    case _:
                        assert_never(w)
            return f"{e.sym.name}[{', '.join(parts)}]"
        case StrideExpr():
            return f"stride({e.sym.name}, {e.dim})"
        case _:
            assert_never(e)


def oob_error(
    kind: str, text: str, index: Any, shape: tuple[int, ...], where: str, dim: int | None = None
) -> InterpreterError:
    """The error for an out-of-bounds ``kind`` ("read", "write", "window") of ``text``;
    ``where`` names the proc and source position.
    """
    in_dim = "" if dim is None else f" in dimension {dim}"
    return InterpreterError(
        f"out-of-bounds {kind} {text}: index {index}{in_dim} outside shape {tuple(shape)} {where}"
    )
