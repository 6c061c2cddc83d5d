"""Type rules of the language, shared by the expression and statement parsers.

The typing of expressions (docs/semantics.md is the contract):

- Control expressions have a ``ControlType``. Integer literals are ``int``; reads of
  parameters and loop variables have the variable's type (``size``, ``index``, ``int``,
  ``bool``); ``stride(A, d)`` is an ``index``; ``+ - * / %`` give ``int`` when both operands
  are ``int`` and ``index`` otherwise; unary minus keeps ``int`` and gives ``index`` otherwise;
  comparisons, ``and`` and ``or`` give ``bool``.
- Control arithmetic is quasi-affine: ``*`` needs an operand without variables (a constant),
  ``/`` and ``%`` (floor division and modulo) a constant, positive divisor.
- Data expressions: a read has the element type of the buffer it reads; every other data
  expression (a literal, an operation, an extern call) has the type of the statement's
  destination, because docs/semantics.md computes every data operation in the destination's
  precision.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import assert_never

from cursched.errors import SrcInfo
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
from cursched.ir.symbols import Sym
from cursched.ir.types import INDEX, INT, ControlType, TensorType, Type

CONTROL_ARITH = frozenset({"+", "-", "*", "/", "%"})


def arith_type(lhs: Type, rhs: Type) -> ControlType:
    """The type of a control ``lhs op rhs`` for an arithmetic ``op``."""
    return INT if lhs == INT and rhs == INT else INDEX


def const_eval(e: Expr, env: Mapping[Sym, Expr] | None = None) -> int | None:
    """The integer value of a control expression, or None when it is not constant.

    Reads of symbols in ``env`` are replaced by their (evaluated) expressions; this is how a
    callee's shape ``n`` is compared with the caller's argument for ``n``.
    """
    match e:
        case Const(value=bool()):
            return None
        case Const(value=int() as v):
            return v
        case Const():
            return None
        case Read(sym=sym, idx=()):
            bound = env.get(sym) if env is not None else None
            return const_eval(bound) if bound is not None else None
        case Read():
            return None
        case USub(arg=arg):
            neg = const_eval(arg, env)
            return None if neg is None else -neg
        case BinOp(op=op, lhs=lhs, rhs=rhs) if op in CONTROL_ARITH:
            a, b = const_eval(lhs, env), const_eval(rhs, env)
            if a is None or b is None:
                return None
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if b <= 0:
                return None
            return a // b if op == "/" else a % b
        case BinOp() | Extern() | WindowExpr() | StrideExpr():
            return None
        case _:
            assert_never(e)


def has_vars(e: Expr) -> bool:
    """Whether a control expression reads any variable (or a stride)."""
    match e:
        case Const():
            return False
        case Read() | StrideExpr() | WindowExpr():
            return True
        case USub(arg=arg):
            return has_vars(arg)
        case BinOp(lhs=lhs, rhs=rhs):
            return has_vars(lhs) or has_vars(rhs)
        case Extern(args=args):
            return any(has_vars(a) for a in args)
        case _:
            assert_never(e)


def fresh(e: Expr) -> Expr:
    """A copy of ``e`` made of new node objects (the symbols stay the same).

    The frontend never puts one node object in two places of a proc (a comparison chain's
    middle operand, a window's implicit bound, a window's extent): cursors and forwarding
    identify expressions by node.
    """
    match e:
        case Const() | StrideExpr():
            return dataclasses.replace(e)
        case Read():
            return dataclasses.replace(e, idx=tuple(fresh(i) for i in e.idx))
        case BinOp():
            return dataclasses.replace(e, lhs=fresh(e.lhs), rhs=fresh(e.rhs))
        case USub():
            return dataclasses.replace(e, arg=fresh(e.arg))
        case Extern():
            return dataclasses.replace(e, args=tuple(fresh(a) for a in e.args))
        case WindowExpr():
            idx = tuple(
                Point(fresh(w.pt), srcinfo=w.srcinfo)
                if isinstance(w, Point)
                else Interval(fresh(w.lo), fresh(w.hi), srcinfo=w.srcinfo)
                for w in e.idx
            )
            return dataclasses.replace(e, idx=idx)
        case _:
            assert_never(e)


def fresh_type(t: TensorType) -> TensorType:
    """A copy of a tensor type whose shape expressions are new node objects."""
    return TensorType(t.elem, tuple(fresh(s) for s in t.shape), t.window)


def extent(lo: Expr, hi: Expr, srcinfo: SrcInfo | None) -> Expr:
    """The length ``hi - lo`` of a window interval, folded when it is simple."""
    a, b = const_eval(lo), const_eval(hi)
    if a is not None and b is not None:
        return Const(b - a, INT, srcinfo=srcinfo)
    if a == 0:
        return fresh(hi)
    return BinOp("-", fresh(hi), fresh(lo), arith_type(hi.type, lo.type), srcinfo=srcinfo)


def control_reads(e: Expr) -> list[Expr]:
    """The variable reads and strides inside a control expression."""
    match e:
        case Const():
            return []
        case Read() | StrideExpr() | WindowExpr():
            return [e]
        case USub(arg=arg):
            return control_reads(arg)
        case BinOp(lhs=lhs, rhs=rhs):
            return control_reads(lhs) + control_reads(rhs)
        case Extern(args=args):
            return [r for a in args for r in control_reads(a)]
        case _:
            assert_never(e)
