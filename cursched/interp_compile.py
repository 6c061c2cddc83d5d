"""The reference interpreter's compiler: IR -> a tree of nested Python closures.

Each proc is compiled once (``cursched.interp`` caches the result) into closures over a
*frame*: a Python list with one slot per symbol. Control values (sizes, indices, bools) live in
the frame as Python ints and bools; buffers (tensors, windows, data scalars) live there as
numpy arrays, data scalars as 0-d arrays, windows as strided views of their base, so every
write through a window lands in the base array.

Data expressions are compiled against the *destination's* dtype (docs/semantics.md): every
read is converted to it at the leaf and every operation is done on numpy scalars of that
dtype, so f32 rounds per operation and integers wrap. The caller runs everything under
``np.errstate`` that silences overflow/invalid/divide warnings, because wrap-around and IEEE
infinities are the defined meaning, not accidents.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, assert_never

import numpy as np

from cursched.errors import InterpreterError, SrcInfo
from cursched.interp_values import (
    cast_scalar,
    fmt_expr,
    int_div,
    int_rem,
    oob_error,
)
from cursched.ir.externs import EXTERNS
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
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_stmts
from cursched.ir.types import ControlType, DataType, TensorType

Frame = list[Any]
Fn = Callable[[Frame], Any]
StmtFn = Callable[[Frame], None]

#: Fill value of fresh integer buffers: the low bytes of 0xDEADBEEF, so that a read before a
#: write shows up as a recognisable garbage value in differential tests.
_GARBAGE = 0xDEADBEEF

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


def _garbage(dt: np.dtype[Any]) -> Any:
    return cast_scalar(_GARBAGE, dt)


def new_buffer(shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """An uninitialised buffer: NaN for floats, the garbage pattern for integers."""
    fill = np.nan if dt.kind == "f" else _garbage(dt)
    return np.full(shape, fill, dtype=dt)


@dataclass(eq=False)
class CompiledProc:
    """A proc compiled to closures.

    Attributes:
        pd: the proc (kept alive so that caches keyed by ``id`` stay valid).
        nslots: frame size; parameters occupy slots ``0 .. len(args) - 1``.
        preds: each assert as (closure, the assert expression).
        shapes: per parameter, closures computing its declared shape (empty for non-tensors).
        written: indices of the parameters the proc may write (directly, through a window or
            by passing them to a callee that writes them).
        body: the body.
    """

    pd: ProcDef
    nslots: int = 0
    preds: tuple[tuple[Fn, Expr], ...] = ()
    shapes: tuple[tuple[Fn, ...], ...] = ()
    written: frozenset[int] = frozenset()
    body: StmtFn = field(default=lambda frame: None)

    def check_preds(self, frame: Frame, where: str) -> None:
        """Raise ``InterpreterError`` naming the first failing assert."""
        for fn, e in self.preds:
            if not fn(frame):
                values = ", ".join(
                    f"{a.sym.name} = {frame[i]}"
                    for i, a in enumerate(self.pd.args)
                    if isinstance(a.type, ControlType)
                )
                at = f" at {e.srcinfo}" if e.srcinfo is not None else ""
                raise InterpreterError(
                    f"assert {fmt_expr(e)} failed {where} proc {self.pd.name} ({values}){at}"
                )

    def check_shape(self, i: int, frame: Frame, where: str) -> None:
        """Check the array in parameter slot ``i`` against its declared shape."""
        want = tuple(f(frame) for f in self.shapes[i])
        got = frame[i].shape
        if got != want:
            raise InterpreterError(
                f"{where} {self.pd.name}: argument {self.pd.args[i].sym.name} has shape "
                f"{got}, expected {want}"
            )


# ------------------------------------------------------------------------------ compiler


class Compiler:
    """Compiles one ``ProcDef``; ``callee`` compiles (and caches) the procs it calls."""

    def __init__(self, pd: ProcDef, callee: Callable[[ProcDef], CompiledProc]) -> None:
        self.pd = pd
        self.callee = callee
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
        if sym not in self.slots:
            self.slots[sym] = len(self.slots)
        return self.slots[sym]

    def compile(self) -> CompiledProc:
        pd = self.pd
        shapes = tuple(
            tuple(self.ctrl(s) for s in a.type.shape) if isinstance(a.type, TensorType) else ()
            for a in pd.args
        )
        preds = tuple((self.ctrl(e), e) for e in pd.preds)
        body = self.block(pd.body)
        return CompiledProc(
            pd=pd,
            nslots=len(self.slots),
            preds=preds,
            shapes=shapes,
            written=self.written_params(),
            body=body,
        )

    def written_params(self) -> frozenset[int]:
        root: dict[Sym, Sym] = {}
        out: set[Sym] = set()
        for s in walk_stmts(self.pd.body):
            match s:
                case WindowStmt():
                    root[s.sym] = root.get(s.rhs.sym, s.rhs.sym)
                case Assign() | Reduce():
                    out.add(root.get(s.sym, s.sym))
                case Call():
                    cw = self.callee(s.proc).written
                    for i, a in enumerate(s.args):
                        if i in cw and isinstance(a, Read | WindowExpr):
                            out.add(root.get(a.sym, a.sym))
                case _:
                    pass
        return frozenset(i for i, a in enumerate(self.pd.args) if a.sym in out)

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
        plain = all(isinstance(i, Read) and not i.idx for i in idx)
        if plain:  # itemgetter runs in C: the common case ``A[i, j]`` costs no Python call
            return operator.itemgetter(*(self.slot(i.sym) for i in idx))  # type: ignore[union-attr]
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
        """(slot, index closure, checker) for ``sym[idx]``; the checker raises on a negative
        index (numpy would wrap it) and is called with the frame before the access.
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
        match e:
            case Const():
                c = cast_scalar(e.value, dt)
                return lambda frame: c
            case Read():
                if isinstance(e.type, ControlType):
                    f = self.ctrl(e)
                    return lambda frame: cast_scalar(f(frame), dt)
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

    # -- statements ----------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...]) -> StmtFn:
        fs = [self.stmt(s) for s in body if not isinstance(s, Pass)]
        if not fs:
            return lambda frame: None
        if len(fs) == 1:
            return fs[0]
        if len(fs) == 2:
            f0, f1 = fs

            def two(frame: Frame) -> None:
                f0(frame)
                f1(frame)

            return two
        stmts = tuple(fs)

        def many(frame: Frame) -> None:
            for f in stmts:
                f(frame)

        return many

    def stmt(self, s: Stmt) -> StmtFn:
        match s:
            case Assign() | Reduce():
                return self._store(s)
            case Pass():
                return lambda frame: None
            case If():
                cond, body, orelse = self.ctrl(s.cond), self.block(s.body), self.block(s.orelse)

                def run_if(frame: Frame) -> None:
                    if cond(frame):
                        body(frame)
                    else:
                        orelse(frame)

                return run_if
            case For():
                return self._for(s)
            case Alloc():
                return self._alloc(s)
            case Call():
                return self._call(s)
            case WindowStmt():
                ws, view = self.slot(s.sym), self.window(s.rhs)

                def bind(frame: Frame) -> None:
                    frame[ws] = view(frame)

                return bind
            case Scope():
                return self.block(s.body)
            case _:
                assert_never(s)

    def _for(self, s: For) -> StmtFn:
        # lo and hi are evaluated once, on entry; par loops run like seq loops
        lo, hi, body, v = self.ctrl(s.lo), self.ctrl(s.hi), self.block(s.body), self.slot(s.iter)

        def run_for(frame: Frame) -> None:
            for i in range(lo(frame), hi(frame)):
                frame[v] = i
                body(frame)

        return run_for

    def _alloc(self, s: Alloc) -> StmtFn:
        slot = self.slot(s.sym)
        if isinstance(s.type, DataType):
            dt = s.type.np_dtype
            return lambda frame: frame.__setitem__(slot, new_buffer((), dt))
        dt = s.type.elem.np_dtype
        shape = tuple(self.ctrl(e) for e in s.type.shape)
        name = s.sym.name

        def alloc(frame: Frame) -> None:
            dims = tuple(f(frame) for f in shape)
            if min(dims, default=0) < 0:
                raise InterpreterError(f"allocation of {name} with negative shape {dims}")
            frame[slot] = new_buffer(dims, dt)

        return alloc

    def _store(self, s: Assign | Reduce) -> StmtFn:
        elem = self._dest_type(s.sym)
        rhs = self.data(s.rhs, elem.np_dtype)
        reduce = isinstance(s, Reduce)
        if not s.idx:
            b = self.slot(s.sym)
            if reduce:
                return lambda frame: frame[b].__setitem__((), frame[b][()] + rhs(frame))
            return lambda frame: frame[b].__setitem__((), rhs(frame))
        b, ix, fail = self.access(s.sym, s.idx, "write", s.srcinfo)
        rank1 = len(s.idx) == 1

        def store(frame: Frame) -> None:
            t = ix(frame)
            if (t if rank1 else min(t)) >= 0:
                buf = frame[b]
                try:
                    if reduce:
                        buf[t] = buf[t] + rhs(frame)
                    else:
                        buf[t] = rhs(frame)
                    return
                except IndexError:
                    pass
            raise fail(frame)

        return store

    def _dest_type(self, sym: Sym) -> DataType:
        """The element type of buffer ``sym`` (parameter, allocation or window)."""
        t = self.types.get(sym)
        if isinstance(t, TensorType):
            return t.elem
        if isinstance(t, DataType):
            return t
        raise InterpreterError(f"{sym.name} is not a data buffer and cannot be written")

    # -- calls ---------------------------------------------------------------------------
    def _call(self, s: Call) -> StmtFn:
        """Control arguments by value; tensors, windows and data scalars by reference."""
        callee = self.callee(s.proc)
        getters = tuple(self._call_arg(a.type, e) for a, e in zip(s.proc.args, s.args, strict=True))
        tensors = tuple(i for i, a in enumerate(s.proc.args) if isinstance(a.type, TensorType))
        n, body = callee.nslots, callee.body

        def call(frame: Frame) -> None:
            inner: Frame = [None] * n
            for i, g in enumerate(getters):
                inner[i] = g(frame)
            for i in tensors:
                callee.check_shape(i, inner, "call to")
            callee.check_preds(inner, "at a call to")
            body(inner)

        return call

    def _call_arg(self, t: DataType | ControlType | TensorType, e: Expr) -> Fn:
        match t:
            case ControlType():
                return self.ctrl(e)
            case TensorType():
                if isinstance(e, WindowExpr):
                    return self.window(e)
                if isinstance(e, Read) and not e.idx:
                    return operator.itemgetter(self.slot(e.sym))
                raise InterpreterError(f"{fmt_expr(e)} passed for a tensor parameter")
            case DataType():
                if isinstance(e, Read) and isinstance(e.type, DataType):
                    return self._scalar_ref(e)
                # not an lvalue: pass a fresh one-element buffer holding the value
                f, dt = self.data(e, t.np_dtype), t.np_dtype
                return lambda frame: np.array(f(frame), dtype=dt)
            case _:
                assert_never(t)

    def _scalar_ref(self, e: Read) -> Fn:
        """A 0-d view of the element ``e`` reads (data scalars are passed by reference)."""
        if not e.idx:
            return operator.itemgetter(self.slot(e.sym))
        s, ix, fail = self.access(e.sym, e.idx, "read", e.srcinfo)
        rank1 = len(e.idx) == 1

        def ref(frame: Frame) -> Any:
            t = (ix(frame),) if rank1 else ix(frame)
            if min(t) >= 0:
                try:
                    return frame[s][(*t, Ellipsis)]
                except IndexError:
                    pass
            raise fail(frame)

        return ref
