"""Small constructors for hand-built IR in the tests of cursched.ir (printer, alpha, verify)."""

from __future__ import annotations

from cursched.ir.memory import DRAM, Memory
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    BinOpName,
    Const,
    Expr,
    FnArg,
    For,
    Interval,
    Point,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    WAccess,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.types import (
    BOOL,
    F32,
    INDEX,
    INT,
    SIZE,
    ControlType,
    DataType,
    TensorType,
    Type,
)


def c(v: int | float | bool, t: Type | None = None) -> Const:
    """A constant; ints default to ``int``, floats to ``f32``, bools to ``bool``."""
    if t is None:
        t = BOOL if isinstance(v, bool) else INT if isinstance(v, int) else F32
    return Const(v, t)


def v(sym: Sym, t: Type = INDEX) -> Read:
    """A read of a control variable (or data scalar when ``t`` is a data type)."""
    return Read(sym, (), t)


def ld(sym: Sym, *idx: Expr, t: DataType = F32) -> Read:
    """A read of a tensor element."""
    return Read(sym, idx, t)


def op(o: BinOpName, a: Expr, b: Expr, t: Type | None = None) -> BinOp:
    """A binary operation; the type defaults to bool for comparisons and and/or, else to
    the left operand's type."""
    if t is None:
        t = BOOL if o in ("<", ">", "<=", ">=", "==", "!=", "and", "or") else a.type
    return BinOp(o, a, b, t)


def tensor(elem: DataType, *shape: Expr, window: bool = False) -> TensorType:
    return TensorType(elem, shape, window)


def arg(sym: Sym, t: Type, mem: type[Memory] | None = None) -> FnArg:
    """A parameter; tensors and data scalars get DRAM unless told otherwise."""
    if mem is None and not isinstance(t, ControlType):
        mem = DRAM
    return FnArg(sym, t, mem)


def loop(i: Sym, lo: Expr, hi: Expr, *body: Stmt, mode: str = "seq") -> For:
    assert mode in ("seq", "par")
    return For(i, lo, hi, body, "seq" if mode == "seq" else "par")


def assign(sym: Sym, idx: tuple[Expr, ...], rhs: Expr) -> Assign:
    return Assign(sym, idx, rhs)


def reduce(sym: Sym, idx: tuple[Expr, ...], rhs: Expr) -> Reduce:
    return Reduce(sym, idx, rhs)


def alloc(sym: Sym, t: DataType | TensorType, mem: type[Memory] = DRAM) -> Alloc:
    return Alloc(sym, t, mem)


def win(sym: Sym, elem: DataType, *idx: WAccess, shape: tuple[Expr, ...]) -> WindowExpr:
    return WindowExpr(sym, idx, TensorType(elem, shape, True))


def pt(e: Expr) -> Point:
    return Point(e)


def iv(lo: Expr, hi: Expr) -> Interval:
    return Interval(lo, hi)


def mkproc(name: str, args: list[FnArg], body: list[Stmt], preds: tuple[Expr, ...] = ()) -> ProcDef:
    return ProcDef(name, tuple(args), preds, tuple(body))


__all__ = [
    "BOOL",
    "F32",
    "INDEX",
    "INT",
    "SIZE",
    "alloc",
    "arg",
    "assign",
    "c",
    "iv",
    "ld",
    "loop",
    "mkproc",
    "op",
    "pt",
    "reduce",
    "tensor",
    "v",
    "win",
]
