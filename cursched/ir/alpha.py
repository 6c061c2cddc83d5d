"""Alpha-equivalence of procs: equal up to the renaming of bound symbols.

Two procs are alpha-equal when they have the same name, the same instruction info, parameters
with the same names, types and memories, and bodies of the same shape in which each bound
symbol of one (a loop variable, an allocation, a window) corresponds one to one to a bound
symbol of the other. Parameter names count (callers may pass arguments by name); the names of
every other symbol do not. Source locations are ignored. Callees are compared the same way,
recursively. Constants compare by kind and value (``1``, ``1.0`` and ``True`` differ, and so do
``0.0`` and ``-0.0``; NaN equals NaN).

``alpha_diff`` says where the first difference is, for test messages.
"""

from __future__ import annotations

import math
from typing import assert_never

from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    For,
    If,
    Interval,
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.types import ControlType, DataType, TensorType, Type

__all__ = ["alpha_diff", "alpha_equal"]


class _Differ(Exception):
    """Internal: the first difference found, with its place."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")


def _const_key(v: int | float | bool) -> tuple[str, object]:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    f = float(v)
    if math.isnan(f):
        return ("float", "nan")
    return ("float", (f, math.copysign(1.0, f)))


class _Compare:
    def __init__(self, done: set[tuple[int, int]]) -> None:
        self.fwd: dict[Sym, Sym] = {}
        self.rev: dict[Sym, Sym] = {}
        # Callee pairs already proven equal in this comparison (by object identity).
        self.done = done

    def bind(self, a: Sym, b: Sym) -> None:
        self.fwd[a] = b
        self.rev[b] = a

    def sym(self, a: Sym, b: Sym, where: str) -> None:
        # An unbound symbol (free in both) must be the very same variable, and must not
        # correspond to something bound on the other side.
        ok = self.fwd[a] is b if a in self.fwd else (a is b and b not in self.rev)
        if not ok:
            raise _Differ(where, f"symbol {a.name!r} vs {b.name!r}")

    def eq(self, x: object, y: object, where: str, what: str) -> None:
        if x != y:
            raise _Differ(where, f"{what} {x!r} vs {y!r}")

    # -- types ----------------------------------------------------------------------------
    def type_(self, a: Type, b: Type, where: str) -> None:
        match a:
            case DataType() | ControlType():
                self.eq(a, b, where, "type")
            case TensorType():
                if not isinstance(b, TensorType):
                    raise _Differ(where, f"type {a} vs {b}")
                self.eq(a.elem, b.elem, where, "element type")
                self.eq(a.window, b.window, where, "window flag")
                self.exprs(a.shape, b.shape, f"{where}.shape")
            case _:
                assert_never(a)

    # -- expressions ----------------------------------------------------------------------
    def exprs(self, a: tuple[Expr, ...], b: tuple[Expr, ...], where: str) -> None:
        self.eq(len(a), len(b), where, "length")
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            self.expr(x, y, f"{where}[{k}]")

    def expr(self, a: Expr, b: Expr, where: str) -> None:
        if type(a) is not type(b):
            raise _Differ(where, f"{type(a).__name__} vs {type(b).__name__}")
        self.type_(a.type, b.type, f"{where}.type")
        match a:
            case Const():
                assert isinstance(b, Const)
                self.eq(_const_key(a.value), _const_key(b.value), where, "constant")
            case Read():
                assert isinstance(b, Read)
                self.sym(a.sym, b.sym, where)
                self.exprs(a.idx, b.idx, f"{where}.idx")
            case BinOp():
                assert isinstance(b, BinOp)
                self.eq(a.op, b.op, where, "operator")
                self.expr(a.lhs, b.lhs, f"{where}.lhs")
                self.expr(a.rhs, b.rhs, f"{where}.rhs")
            case USub():
                assert isinstance(b, USub)
                self.expr(a.arg, b.arg, f"{where}.arg")
            case Extern():
                assert isinstance(b, Extern)
                self.eq(a.name, b.name, where, "extern")
                self.exprs(a.args, b.args, f"{where}.args")
            case WindowExpr():
                assert isinstance(b, WindowExpr)
                self.sym(a.sym, b.sym, where)
                self.eq(len(a.idx), len(b.idx), where, "window rank")
                for k, (x, y) in enumerate(zip(a.idx, b.idx, strict=True)):
                    self.waccess(x, y, f"{where}.idx[{k}]")
            case StrideExpr():
                assert isinstance(b, StrideExpr)
                self.sym(a.sym, b.sym, where)
                self.eq(a.dim, b.dim, where, "stride dimension")
            case _:
                assert_never(a)

    def waccess(self, a: WAccess, b: WAccess, where: str) -> None:
        match a:
            case Point():
                if not isinstance(b, Point):
                    raise _Differ(where, "point vs interval")
                self.expr(a.pt, b.pt, f"{where}.pt")
            case Interval():
                if not isinstance(b, Interval):
                    raise _Differ(where, "interval vs point")
                self.expr(a.lo, b.lo, f"{where}.lo")
                self.expr(a.hi, b.hi, f"{where}.hi")
            case _:
                assert_never(a)

    # -- statements -----------------------------------------------------------------------
    def block(self, a: tuple[Stmt, ...], b: tuple[Stmt, ...], where: str) -> None:
        for k, (x, y) in enumerate(zip(a, b, strict=False)):
            self.stmt(x, y, f"{where}[{k}]")
        if len(a) != len(b):
            raise _Differ(where, f"{len(a)} statements vs {len(b)}")

    def stmt(self, a: Stmt, b: Stmt, where: str) -> None:
        if type(a) is not type(b):
            raise _Differ(where, f"{type(a).__name__} vs {type(b).__name__}")
        match a:
            case Assign() | Reduce():
                assert isinstance(b, Assign | Reduce)
                self.sym(a.sym, b.sym, where)
                self.exprs(a.idx, b.idx, f"{where}.idx")
                self.expr(a.rhs, b.rhs, f"{where}.rhs")
            case Pass():
                pass
            case If():
                assert isinstance(b, If)
                self.expr(a.cond, b.cond, f"{where}.cond")
                self.block(a.body, b.body, f"{where}.body")
                self.block(a.orelse, b.orelse, f"{where}.orelse")
            case For():
                assert isinstance(b, For)
                self.eq(a.mode, b.mode, where, "loop mode")
                self.eq(a.axis, b.axis, where, "loop axis")
                self.expr(a.lo, b.lo, f"{where}.lo")
                self.expr(a.hi, b.hi, f"{where}.hi")
                self.bind(a.iter, b.iter)
                self.block(a.body, b.body, f"{where}.body")
            case Alloc():
                assert isinstance(b, Alloc)
                self.type_(a.type, b.type, f"{where}.type")
                self.eq(a.mem, b.mem, where, "memory")
                self.bind(a.sym, b.sym)
            case Call():
                assert isinstance(b, Call)
                self.callee(a.proc, b.proc, f"{where}.proc")
                self.exprs(a.args, b.args, f"{where}.args")
            case WindowStmt():
                assert isinstance(b, WindowStmt)
                self.expr(a.rhs, b.rhs, f"{where}.rhs")
                self.bind(a.sym, b.sym)
            case Scope():
                assert isinstance(b, Scope)
                self.eq(a.name, b.name, where, "scope name")
                self.eq(a.target, b.target, where, "scope target")
                self.block(a.body, b.body, f"{where}.body")
            case _:
                assert_never(a)

    def callee(self, a: ProcDef, b: ProcDef, where: str) -> None:
        key = (id(a), id(b))
        if a is b or key in self.done:
            return
        try:
            _Compare(self.done).proc(a, b)
        except _Differ as e:
            raise _Differ(where, f"callees differ ({e})") from None
        self.done.add(key)

    def proc(self, a: ProcDef, b: ProcDef) -> None:
        self.eq(a.name, b.name, "proc", "name")
        self.eq(a.instr, b.instr, "proc", "instr")
        self.eq(len(a.args), len(b.args), "args", "count")
        for k, (x, y) in enumerate(zip(a.args, b.args, strict=True)):
            where = f"args[{k}]"
            self.eq(x.sym.name, y.sym.name, where, "name")
            self.type_(x.type, y.type, f"{where}.type")
            self.eq(x.mem, y.mem, where, "memory")
            self.bind(x.sym, y.sym)
        self.exprs(a.preds, b.preds, "preds")
        self.block(a.body, b.body, "body")


def alpha_diff(a: ProcDef, b: ProcDef) -> str | None:
    """The first difference between ``a`` and ``b`` up to renaming, or None when alpha-equal.

    The text names the place (``body[1].body[0].rhs.lhs``) and the two things that differ.
    """
    try:
        _Compare(set()).proc(a, b)
    except _Differ as e:
        return str(e)
    return None


def alpha_equal(a: ProcDef, b: ProcDef) -> bool:
    """Whether ``a`` and ``b`` are the same proc up to renaming of bound symbols."""
    return alpha_diff(a, b) is None
