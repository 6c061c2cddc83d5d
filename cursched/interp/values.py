"""Scalar helpers of the reference interpreter: casts with wrap-around, C integer division,
the text of its error messages, and the runtime helpers its generated code calls.

The generated code (``cursched.interp.compile``) holds data values as plain Python floats and
ints. Float values are always exact values of their declared type (a double holding an f32
value); after every operation the result is rounded back to the type, which for ``+ - * /`` and
``sqrt`` gives the correctly rounded result of the type (a double has more than twice the
digits of an f32 or f16, so rounding twice is harmless). Integers wrap to their width.
"""

from __future__ import annotations

import importlib
import math
import struct
import threading
from array import array
from contextvars import ContextVar, Token
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


def to_python(value: Any, dt: np.dtype[Any]) -> int | float:
    """``value`` cast to ``dt`` (``cast_scalar``) as the plain Python number the generated
    code works on."""
    v = cast_scalar(value, dt)
    return int(v) if dt.kind in "iu" else float(v)


def int_div(a: Any, b: Any, dt: np.dtype[Any]) -> Any:
    """Integer data ``/``: C division, truncating toward zero."""
    return wrap_int(c_div(int(a), int(b)), dt)


def int_rem(a: Any, b: Any, dt: np.dtype[Any]) -> Any:
    """Integer data ``%``: C remainder, with the sign of the dividend."""
    return wrap_int(c_rem(int(a), int(b)), dt)


# ------------------------------------------------------------- helpers of generated code


def c_div(x: int, y: int) -> int:
    """C's ``x / y`` on Python ints (truncating toward zero); the caller wraps the result."""
    if y == 0:
        raise InterpreterError(f"integer division by zero ({x} / 0)")
    q = abs(x) // abs(y)
    return -q if (x < 0) != (y < 0) else q


def c_rem(x: int, y: int) -> int:
    """C's ``x % y`` on Python ints (the sign of the dividend)."""
    if y == 0:
        raise InterpreterError(f"integer remainder by zero ({x} % 0)")
    q = abs(x) // abs(y)
    q = -q if (x < 0) != (y < 0) else q
    return x - q * y


def float_div(a: float, b: float) -> float:
    """IEEE ``a / b`` (Python raises on a zero divisor; IEEE gives an infinity or NaN)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def float_mod(a: float, b: float) -> float:
    """C's ``fmod`` (numpy's ``fmod``): NaN where ``math.fmod`` raises (zero divisor, inf)."""
    try:
        return math.fmod(a, b)
    except ValueError:
        return math.nan


_F32 = array("f", [0.0])


def round_f32(x: float) -> float:
    """``x`` rounded to the nearest f32 (as a double); overflow gives an infinity.

    The generated code inlines the same trick (a store into a one-element ``array('f')``,
    which converts with C's ``(float)`` cast) instead of calling this function.
    """
    _F32[0] = x
    return _F32[0]


_LOCAL = threading.local()


def rounder() -> memoryview[float]:
    """This thread's one-element f32 memoryview through which generated code rounds
    (``_R[0] = x; y = _R[0]``: the two statements are adjacent, so code running in the same
    thread between them, a callee, cannot disturb it; another thread has its own)."""
    try:
        r: memoryview[float] = _LOCAL.r
    except AttributeError:
        r = _LOCAL.r = memoryview(bytearray(4)).cast("f")
    return r


_PACK16 = struct.Struct("e").pack
_UNPACK16 = struct.Struct("e").unpack


def round_f16(x: float) -> float:
    """``x`` rounded to the nearest f16 (as a double); overflow gives an infinity."""
    try:
        return float(_UNPACK16(_PACK16(x))[0])
    except OverflowError:
        # struct refuses what IEEE rounds to infinity (|x| >= 65520)
        return math.copysign(math.inf, x)


def float_to_int(x: float, dt: np.dtype[Any]) -> int:
    """A float converted to integer type ``dt`` as C would (``cast_scalar``)."""
    if math.isfinite(x):
        return int(wrap_int(int(x), dt))
    with np.errstate(invalid="ignore", over="ignore"):
        return int(np.array(x).astype(dt))


def sqrt_float(x: float) -> float:
    """IEEE ``sqrt`` of a float (NaN below zero; ``-0.0`` stays ``-0.0``)."""
    return math.sqrt(x) if x >= 0 else math.nan


# ------------------------------------------------------------- numpy's error state


def _error_state() -> tuple[ContextVar[Any] | None, Any]:
    """numpy's context variable of floating-point error handling, and its value with every
    error ignored (None when this numpy keeps the state elsewhere)."""
    try:
        cv = importlib.import_module("numpy._core._ufunc_config")._extobj_contextvar
    except (ImportError, AttributeError):
        return None, None
    if not isinstance(cv, ContextVar):
        return None, None
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        return cv, cv.get()


_ERRSTATE, _IGNORE_ALL = _error_state()


def quiet_numpy() -> Any:
    """Ignore numpy's floating-point errors until ``restore_numpy(token)``.

    What ``np.errstate(all="ignore")`` does on entry, at a tenth of its cost (it builds the
    state anew on each entry; this one is built once): the interpreter enters it on each run
    of a proc calling numpy externs.
    """
    if _ERRSTATE is None:
        ctx = np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore")
        ctx.__enter__()
        return ctx
    return _ERRSTATE.set(_IGNORE_ALL)


def restore_numpy(token: Any) -> None:
    """Undo ``quiet_numpy`` (``token`` is what it returned)."""
    if isinstance(token, Token):
        assert _ERRSTATE is not None
        _ERRSTATE.reset(token)
    else:
        token.__exit__(None, None, None)


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
