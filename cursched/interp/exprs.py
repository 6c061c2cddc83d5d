"""The reference interpreter's expression compiler: expressions -> nested Python closures.

Closures run over a *frame*: a Python list with one slot per symbol. Control values (sizes,
indices, bools) live in the frame as Python ints and bools; buffers (tensors, windows, data
scalars) as numpy arrays, data scalars as 0-d arrays, windows as strided views of their base,
so that every write through a window lands in the base array.

Data expressions are compiled against the *destination's* dtype (docs/semantics.md): every
read is converted to it at the leaf and every operation is done on numpy scalars of that
dtype, so f32 rounds per operation and integers wrap. ``cursched.interp`` runs everything
under ``np.errstate`` that silences overflow/invalid/divide warnings, because wrap-around and
IEEE infinities are the defined meaning, not accidents.

Every element access checks its indices: numpy would silently wrap a negative index, so a
negative one is caught before the access and a too-large one by numpy's ``IndexError``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, assert_never

import numpy as np

from cursched.errors import InterpreterError, SrcInfo
from cursched.interp.values import cast_scalar, fmt_expr, int_div, int_rem, oob_error
from cursched.ir.config import ConfigField
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import (
    Alloc,
    BinOp,
    Const,
    Expr,
    Extern,
    Interval,
    Point,
    ProcDef,
    Read,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_stmts
from cursched.ir.types import ControlType, DataType, TensorType

Frame = list[Any]
Fn = Callable[[Frame], Any]

CTRL_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.floordiv,  # control division is floor division (Python's //)
    "%": operator.mod,  # and floor modulo (Python's %)
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


class ExprCompiler:
    """Compiles the expressions of one ``ProcDef``; assigns the frame slots."""

    def __init__(self, pd: ProcDef) -> None:
        self.pd = pd
        self.slots: dict[Sym, int] = {a.sym: i for i, a in enumerate(pd.args)}
        self.types: dict[Sym, DataType | TensorType] = {}
        for a in pd.args:
            if isinstance(a.type, DataType | TensorType):
                self.types[a.sym] = a.type
        for st in walk_stmts(pd.body):
            if isinstance(st, Alloc):
                self.types[st.sym] = st.type
            elif isinstance(st, WindowStmt):
                self.types[st.sym] = st.rhs.type

    def where(self, loc: SrcInfo | None) -> str:
        """Where an error happened: the proc, and the source position when known."""
        return f"in proc {self.pd.name}" + (f" ({loc})" if loc is not None else "")

    def slot(self, sym: Sym) -> int:
        """The frame slot of ``sym`` (a new one on first sight)."""
        if sym not in self.slots:
            self.slots[sym] = len(self.slots)
            if isinstance(sym, ConfigField):
                # global state: the run puts the field's shared 0-d array in this slot
                self.types[sym] = sym.type
        return self.slots[sym]

    # -- control expressions -------------------------------------------------------------
    def ctrl(self, e: Expr) -> Fn:
        """A closure computing control expression ``e`` as a Python int or bool."""
        match e:
            case Const():
                v = e.value
                return lambda frame: v
            case Read():
                if e.idx or not isinstance(e.type, ControlType):
                    raise InterpreterError(f"{fmt_expr(e)} is not a control expression")
                return operator.itemgetter(self.slot(e.sym))
            case BinOp():
                return self._ctrl_binop(e)
            case USub():
                f = self.ctrl(e.arg)
                return lambda frame: -f(frame)
            case StrideExpr():
                s, d = self.slot(e.sym), e.dim
                return lambda frame: frame[s].strides[d] // frame[s].itemsize
            case Extern() | WindowExpr():
                raise InterpreterError(f"{fmt_expr(e)} is not a control expression")
            case _:
                assert_never(e)

    def _ctrl_binop(self, e: BinOp) -> Fn:
        fl, fr = self.ctrl(e.lhs), self.ctrl(e.rhs)
        if e.op == "and":
            return lambda frame: fl(frame) and fr(frame)
        if e.op == "or":
            return lambda frame: fl(frame) or fr(frame)
        op = CTRL_OPS[e.op]
        if isinstance(e.rhs, Const):
            c = e.rhs.value
            if e.op in ("/", "%") and c == 0:
                raise InterpreterError(f"division by zero in {fmt_expr(e)}")
            return lambda frame: op(fl(frame), c)
        if e.op in ("/", "%"):

            def div(frame: Frame) -> Any:
                b = fr(frame)
                if b == 0:
                    raise InterpreterError(f"division by zero in {fmt_expr(e)}")
                return op(fl(frame), b)

            return div
        return lambda frame: op(fl(frame), fr(frame))

    # -- element access ------------------------------------------------------------------
    def index(self, idx: tuple[Expr, ...]) -> Fn:
        """A closure computing an index: an int for rank 1, else a tuple of ints."""
        plain = [self.slot(i.sym) for i in idx if isinstance(i, Read) and not i.idx]
        if len(plain) == len(idx):
            # itemgetter runs in C: the common case ``A[i, j]`` costs no Python call
            return operator.itemgetter(*plain)
        fs = tuple(self.ctrl(i) for i in idx)
        if len(fs) == 1:
            return fs[0]
        if len(fs) == 2:
            f0, f1 = fs
            return lambda frame: (f0(frame), f1(frame))
        return lambda frame: tuple(f(frame) for f in fs)

    def access(
        self, sym: Sym, idx: tuple[Expr, ...], kind: str, loc: SrcInfo | None
    ) -> tuple[int, Fn, Fn]:
        """(slot, index closure, error builder) for an access ``sym[idx]``.

        The caller checks for a negative index (numpy would wrap it) and catches numpy's
        ``IndexError`` for a too-large one; either way it raises what the error builder makes
        of the frame: the access, its index values and the buffer's shape.
        """
        s, ix = self.slot(sym), self.index(idx)
        text = f"{sym.name}[{', '.join(fmt_expr(i) for i in idx)}]"
        where = self.where(loc)

        def fail(frame: Frame) -> InterpreterError:
            return oob_error(kind, text, ix(frame), frame[s].shape, where)

        return s, ix, fail

    def elem_read(self, e: Read) -> Fn:
        """A closure reading one element (numpy scalar of the buffer's own dtype)."""
        s = self.slot(e.sym)
        if not e.idx:
            return lambda frame: frame[s][()]
        s, ix, fail = self.access(e.sym, e.idx, "read", e.srcinfo)
        if len(e.idx) == 1:

            def read1(frame: Frame) -> Any:
                i = ix(frame)
                if i >= 0:
                    try:
                        return frame[s][i]
                    except IndexError:
                        pass
                raise fail(frame)

            return read1

        def read(frame: Frame) -> Any:
            t = ix(frame)
            if min(t) >= 0:
                try:
                    return frame[s][t]
                except IndexError:
                    pass
            raise fail(frame)

        return read

    # -- data expressions ----------------------------------------------------------------
    def data(self, e: Expr, dt: np.dtype[Any]) -> Fn:
        """A closure computing data expression ``e`` as a numpy scalar of dtype ``dt``."""
        conv = dt.type
        if not isinstance(e, Const) and isinstance(e.type, ControlType):
            # a control value used as data (an index in select): computed with control
            # semantics (floor / and %), then converted
            f = self.ctrl(e)
            return lambda frame: cast_scalar(f(frame), dt)
        match e:
            case Const():
                c = cast_scalar(e.value, dt)
                return lambda frame: c
            case Read():
                rd = self.elem_read(e)
                # the buffer's declared type decides whether a conversion is needed
                declared = self.types.get(e.sym)
                src = declared.elem if isinstance(declared, TensorType) else declared or e.type
                if isinstance(src, DataType) and src.np_dtype == dt:
                    return rd
                return lambda frame: conv(rd(frame))
            case BinOp():
                return self._data_binop(e, dt)
            case USub():
                f = self.data(e.arg, dt)
                return lambda frame: -f(frame)
            case Extern():
                return self._extern(e, dt)
            case StrideExpr():
                f = self.ctrl(e)
                return lambda frame: cast_scalar(f(frame), dt)
            case WindowExpr():
                raise InterpreterError(f"window {fmt_expr(e)} used as a value")
            case _:
                assert_never(e)

    def _data_binop(self, e: BinOp, dt: np.dtype[Any]) -> Fn:
        fl, fr = self.data(e.lhs, dt), self.data(e.rhs, dt)
        is_int = dt.kind in "iu"
        match e.op:
            case "+" | "-" | "*":
                op = CTRL_OPS[e.op]
            case "/":
                op = (lambda a, b: int_div(a, b, dt)) if is_int else operator.truediv
            case "%":
                op = (lambda a, b: int_rem(a, b, dt)) if is_int else np.fmod
            case _:
                raise InterpreterError(f"{fmt_expr(e)}: '{e.op}' is not a data operation")
        return lambda frame: op(fl(frame), fr(frame))

    def _extern(self, e: Extern, dt: np.dtype[Any]) -> Fn:
        fs = tuple(self.data(a, dt) for a in e.args)
        if e.name == "select":
            a, b, c, d = fs
            # every operand is evaluated (as C does) before choosing
            return lambda frame: (lambda x, y, t, f: t if x < y else f)(
                a(frame), b(frame), c(frame), d(frame)
            )
        spec = EXTERNS.get(e.name)
        if spec is None or spec.arity != len(fs):
            raise InterpreterError(f"unknown extern {e.name}/{len(fs)}")
        fn, conv = spec.numpy, dt.type

        def call(frame: Frame) -> Any:
            r = fn(*(f(frame) for f in fs))
            # numpy may promote (exp of an int is a float): results take the destination type
            return r if type(r) is conv else conv(r)

        return call

    # -- windows -------------------------------------------------------------------------
    def window(self, w: WindowExpr) -> Fn:
        """A closure returning a numpy view for window ``w`` (bounds-checked)."""
        s = self.slot(w.sym)
        parts: list[tuple[bool, Fn, Fn]] = []
        for a in w.idx:
            match a:
                case Point():
                    f = self.ctrl(a.pt)
                    parts.append((True, f, f))
                case Interval():
                    parts.append((False, self.ctrl(a.lo), self.ctrl(a.hi)))
                case _:
                    assert_never(a)
        text, where = fmt_expr(w), self.where(w.srcinfo)

        def view(frame: Frame) -> Any:
            buf = frame[s]
            key: list[Any] = []
            for d, (is_pt, flo, fhi) in enumerate(parts):
                n = buf.shape[d]
                if is_pt:
                    i = flo(frame)
                    if not 0 <= i < n:
                        raise oob_error("window", text, i, buf.shape, where, dim=d)
                    key.append(i)
                else:
                    lo, hi = flo(frame), fhi(frame)
                    if not 0 <= lo <= hi <= n:
                        raise oob_error("window", text, (lo, hi), buf.shape, where, dim=d)
                    key.append(slice(lo, hi))
            key.append(Ellipsis)  # an Ellipsis makes numpy return a view even if all are points
            return buf[tuple(key)]

        return view
