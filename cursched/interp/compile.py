"""The reference interpreter's compiler: a ``ProcDef`` -> a tree of nested Python closures.

Each proc is compiled once (``cursched.interp`` caches the result). Expressions are compiled by
``ExprCompiler`` (``cursched.interp.exprs``); this module adds statements, allocations and
calls, and the ``CompiledProc`` that ``cursched.interp`` runs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, assert_never

import numpy as np

from cursched.errors import InterpreterError
from cursched.interp.exprs import ExprCompiler, Fn, Frame
from cursched.interp.values import cast_scalar, fmt_expr
from cursched.ir.config import ConfigField, fresh_state
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Call,
    Expr,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import written_args
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["CONFIG_STATE", "CompiledProc", "Compiler", "new_buffer"]

StmtFn = Callable[[Frame], None]

#: The configuration state of the current run (``cursched.ir.config``): one 0-d array per
#: field, shared by a proc and its callees; ``interpret`` clears it at every top-level run,
#: so a field read before any write holds the unspecified value of ``fresh_state``.
CONFIG_STATE: dict[ConfigField, np.ndarray[Any, Any]] = {}

#: Fill value of fresh integer buffers: the low bytes of 0xDEADBEEF, so that a read before a
#: write shows up as a recognisable garbage value in differential tests.
_GARBAGE = 0xDEADBEEF


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
    configs: tuple[tuple[int, ConfigField], ...] = ()

    def bind_configs(self, frame: Frame) -> None:
        """Put the run's configuration state (``CONFIG_STATE``) in the frame's config slots."""
        for slot, f in self.configs:
            v = CONFIG_STATE.get(f)
            if v is None:
                v = CONFIG_STATE[f] = fresh_state(f)
            frame[slot] = v

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


class Compiler(ExprCompiler):
    """Compiles one ``ProcDef``; ``callee`` compiles (and caches) the procs it calls."""

    def __init__(self, pd: ProcDef, callee: Callable[[ProcDef], CompiledProc]) -> None:
        super().__init__(pd)
        self.callee = callee

    def compile(self) -> CompiledProc:
        """Compile the whole proc: shapes, asserts, body."""
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
            written=written_args(pd, lambda q: self.callee(q).written),
            body=body,
            configs=tuple((i, f) for f, i in self.slots.items() if isinstance(f, ConfigField)),
        )

    # -- statements ----------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...]) -> StmtFn:
        """One closure running the statements of ``body`` in order."""
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
        """The closure running statement ``s``."""
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
        t = sym.type if isinstance(sym, ConfigField) else self.types.get(sym)
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
            callee.bind_configs(inner)
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
