"""``insert_noop_call``: insert a call of a proc that changes nothing (Exo 1.0's primitive).

The use is instructions whose meaning is "nothing" as far as the program's values go but
that matter to the hardware: prefetches, fences, configuration of a unit that no proc reads.
The callee's body must write no buffer the caller can see; its arguments are parsed at the
gap, as Exo parses them (names, windows ``A[i, 0:8]``, control expressions).

Registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from cursched.analysis.conditions import CallPreconditionError, check_call_preconditions
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.effects import proc_effects
from cursched.cursors import Editor, GapCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.stmts import CallCursor
from cursched.errors import BadArgumentError, DependenceError, NotProvenError, SchedulingError
from cursched.frontend.typecheck import extent
from cursched.ir.nodes import (
    Call,
    Const,
    Expr,
    FnArg,
    Interval,
    Node,
    Pass,
    Point,
    ProcDef,
    Read,
    WAccess,
    WindowExpr,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL, ControlType, DataType, TensorType, Type
from cursched.primitives.loops.loop_common import index_expr, safety
from cursched.primitives.loops.scopes import condition_expr
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc


class NoopCallNotProcError(BadArgumentError):
    """insert_noop_call, precondition 1: the callee is not a proc."""


class NoopCallHasEffectError(DependenceError):
    """insert_noop_call, precondition 2: the callee writes a buffer the caller can see."""


class NoopCallArityError(BadArgumentError):
    """insert_noop_call, precondition 3: not one argument per parameter of the callee."""


class NoopCallArgumentError(BadArgumentError):
    """insert_noop_call, precondition 4: an argument does not fit its parameter (not a name,
    window or expression of the parameter's kind visible at the gap)."""


class NoopCallPreconditionError(NotProvenError):
    """insert_noop_call, precondition 5: the arguments do not provably satisfy the callee's
    asserts, shapes or bounds."""


@prim_cursors
class InsertNoopCallCursors(PrimCursors):
    """What ``insert_noop_call`` returns.

    Attributes:
        call: the new call.
    """

    call: CallCursor


def _buffers(ctx: PathContext) -> dict[str, tuple[Sym, Type]]:
    out: dict[str, tuple[Sym, Type]] = {a.sym.name: (a.sym, a.type) for a in ctx.proc.args}
    for sym, al in ctx.allocs.items():
        out[sym.name] = (sym, al.type)
    for sym, w in ctx.windows.items():
        out[sym.name] = (sym, w.rhs.type)
    return out


class _ArgParser:
    """Turns one user argument into the call argument for one parameter, at a position."""

    def __init__(self, ir: ProcDef, path: Path, where: GapCursor) -> None:
        self.ir, self.path, self.where = ir, path, where
        self.bufs = _buffers(context_of(ir, path))

    def bad(self, param: FnArg, value: Any, why: str) -> SchedulingError:
        msg = f"argument {value!r} for parameter {param.sym.name}: {why}"
        return fail(NoopCallArgumentError, "insert_noop_call", msg, self.where)

    def index(self, value: Any) -> Expr:
        return index_expr(self.ir, self.path, value, "insert_noop_call", self.where, "index")

    def arg(self, param: FnArg, value: Any) -> Expr:
        t = param.type
        try:
            match t:
                case ControlType() if t == BOOL and isinstance(value, bool):
                    return Const(value, BOOL)
                case ControlType() if t == BOOL:
                    return condition_expr(self.ir, self.path, value, "insert_noop_call", self.where)
                case ControlType():
                    return self.index(value)
                case DataType():
                    return self._element(param, value)
                case TensorType():
                    return self._tensor(param, value, t)
        except SchedulingError as e:
            if isinstance(e, NoopCallArgumentError):
                raise
            why = str(e).splitlines()[0].removeprefix("insert_noop_call: ")
            raise self.bad(param, value, why) from e
        raise self.bad(param, value, f"parameter type {t} is not supported")

    def _name(self, param: FnArg, node: ast.expr, value: Any) -> tuple[Sym, Type]:
        if not isinstance(node, ast.Name) or node.id not in self.bufs:
            raise self.bad(param, value, "not a buffer visible at the gap")
        return self.bufs[node.id]

    def _parse(self, param: FnArg, value: Any) -> ast.expr:
        if isinstance(value, Node) or not isinstance(value, str):
            raise self.bad(param, value, "give a buffer name or a window as text")
        try:
            return ast.parse(value.strip(), mode="eval").body
        except SyntaxError as e:
            raise self.bad(param, value, "not an expression") from e

    def _element(self, param: FnArg, value: Any) -> Expr:
        node = self._parse(param, value)
        assert isinstance(param.type, DataType)
        if isinstance(node, ast.Subscript):
            sym, t = self._name(param, node.value, value)
            sl = node.slice
            coords = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if not isinstance(t, TensorType) or len(coords) != t.rank():
                raise self.bad(param, value, "not one index per dimension of a tensor")
            if any(isinstance(c, ast.Slice) for c in coords):
                raise self.bad(param, value, "a data scalar parameter takes one element")
            elem = t.elem
            idx = tuple(self.index(ast.unparse(c)) for c in coords)
        else:
            sym, t = self._name(param, node, value)
            if not isinstance(t, DataType):
                raise self.bad(param, value, "a data scalar parameter takes a scalar")
            elem, idx = t, ()
        if elem != param.type:
            raise self.bad(param, value, f"element type {elem}, not {param.type}")
        return Read(sym, idx, elem)

    def _tensor(self, param: FnArg, value: Any, want: TensorType) -> Expr:
        node = self._parse(param, value)
        if isinstance(node, ast.Subscript):
            sym, t = self._name(param, node.value, value)
            if not isinstance(t, TensorType):
                raise self.bad(param, value, "not a tensor")
            if not want.window:
                raise self.bad(param, value, "a window goes only to a [type][...] parameter")
            sl = node.slice
            coords = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if len(coords) != t.rank():
                raise self.bad(param, value, f"{sym.name} has rank {t.rank()}")
            accesses: list[WAccess] = []
            shape: list[Expr] = []
            for c, dim in zip(coords, t.shape, strict=True):
                if not isinstance(c, ast.Slice):
                    accesses.append(Point(self.index(ast.unparse(c))))
                    continue
                lo = self.index(0 if c.lower is None else ast.unparse(c.lower))
                hi = dim if c.upper is None else self.index(ast.unparse(c.upper))
                accesses.append(Interval(lo, hi))
                shape.append(extent(lo, hi, None))
            e: Expr = WindowExpr(sym, tuple(accesses), TensorType(t.elem, tuple(shape), True))
            rank, elem = len(shape), t.elem
        else:
            sym, t = self._name(param, node, value)
            if not isinstance(t, TensorType):
                raise self.bad(param, value, "not a tensor")
            if t.window and not want.window:
                raise self.bad(param, value, "a window goes only to a [type][...] parameter")
            e = Read(sym, (), t)
            rank, elem = t.rank(), t.elem
        if rank != want.rank() or elem != want.elem:
            raise self.bad(param, value, f"a {elem} tensor of rank {rank}, not {want}")
        return e


def _check_callee(callee: Any, gap: GapCursor) -> ProcDef:
    if not isinstance(callee, Proc):
        msg = f"the callee must be a Proc, got {type(callee).__name__}"
        raise fail(NoopCallNotProcError, "insert_noop_call", msg, gap)
    return callee.ir()


def _check_no_effect(callee: ProcDef, gap: GapCursor) -> None:
    for a in proc_effects(callee):
        if a.kind != "read" and not a.local:
            what = "accumulates into" if a.kind == "reduce" else "writes"
            msg = f"the callee {callee.name} {what} {a.buf.name}, so the call is not a no-op"
            raise fail(NoopCallHasEffectError, "insert_noop_call", msg, gap)


def _check_arity(callee: ProcDef, args: Sequence[Any], gap: GapCursor) -> None:
    if isinstance(args, str) or len(args) != len(callee.args):
        n = 1 if isinstance(args, str) else len(args)
        msg = f"{callee.name} takes {len(callee.args)} arguments, got {n}"
        raise fail(NoopCallArityError, "insert_noop_call", msg, gap)


@primitive
def insert_noop_call(
    proc: Proc, gap: GapCursor, instr: Any, args: Sequence[Any]
) -> Rewrite[InsertNoopCallCursors]:
    """Insert a call of a proc that changes no value the caller can see.

    Args:
        proc: the proc to rewrite.
        gap: where to insert (``c.before()``, ``c.after()``).
        instr: the callee (a ``Proc``, usually an instruction such as a prefetch).
        args: one argument per parameter of the callee, as text in the names visible at the
            gap: a buffer name, a window ``"A[i, 0:8]"``, an element ``"x[i]"`` for a data
            scalar, a control expression ``"n - 1"`` (ints too).

    Returns:
        The new proc and ``InsertNoopCallCursors``:
        ``call``: the new call.

    Preconditions:
        1. ``instr`` is a ``Proc`` (``NoopCallNotProcError``).
        2. the callee writes (or accumulates into) no buffer the caller can see: its effects
           are reads and writes of its own allocations (``NoopCallHasEffectError``; Exo 1.0
           asks for a body that is a single ``pass``).
        3. ``args`` has one argument per parameter (``NoopCallArityError``).
        4. each argument is of its parameter's kind, element type and rank, and names only
           what is visible at the gap (``NoopCallArgumentError``).
        5. the arguments satisfy the callee's asserts and shapes, and windows lie in their
           buffers (``NoopCallPreconditionError``, from
           ``cursched.analysis.conditions.check_call_preconditions``, with a counterexample).

    Forwards/Kills:
        Every statement keeps its identity; ``gap`` forwards to the same gap. Nothing dies.

    Example:
        ``insert_noop_call(p, p.find("y[_] = _").before(), prefetch, ["x[i:i + 8]"])``::

            for i in seq(0, n):          ->    for i in seq(0, n):
                y[i] = x[i]                        prefetch(x[i:i + 8])
                                                   y[i] = x[i]
    """
    name = "insert_noop_call"
    callee = _check_callee(instr, gap)
    _check_no_effect(callee, gap)
    _check_arity(callee, args, gap)
    ed = Editor(proc.ir())
    # a placeholder `pass` at the gap gives the arguments the context (enclosing loops,
    # visible allocations) of the place the call will be
    spot = ed.insert(gap.gap(), (Pass(),))
    path = spot.stmt_paths()[0]
    parser = _ArgParser(ed.ir, path, gap)
    cargs = tuple(parser.arg(prm, v) for prm, v in zip(callee.args, args, strict=True))
    at = ed.replace_node(NodeLoc(path), Call(callee, cargs))
    try:
        check_call_preconditions(ed.ir, at.path, primitive=name)
    except CallPreconditionError as e:
        raise safety(NoopCallPreconditionError, name, e, gap) from e
    return ed.done(InsertNoopCallCursors, call=at)


__all__ = [
    "InsertNoopCallCursors",
    "NoopCallArgumentError",
    "NoopCallArityError",
    "NoopCallHasEffectError",
    "NoopCallNotProcError",
    "NoopCallPreconditionError",
    "insert_noop_call",
]
