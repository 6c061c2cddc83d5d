"""Call primitives: ``inline`` and ``extract_subproc`` (``call_eqv`` is in ``call_eqv.py``,
``replace`` in ``replace.py``).

Registered with ``@primitive`` (``cursched.primitives.registry``). Calls pass control values
by value and tensors, windows and data scalars by reference (docs/semantics.md), so inlining
is substitution: a control parameter becomes its argument expression, an access of a tensor
parameter becomes an access of the argument's buffer through its window, a data scalar
becomes the scalar (or element) passed.
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cursched.analysis import affine as af
from cursched.analysis.bounds import check_bounds
from cursched.analysis.context import PathContext, context_of
from cursched.cursors import BlockCursor, BlockLoc, CallCursor, Editor, NodeLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.errors import BoundsError, SchedulingError
from cursched.ir.memory import Memory
from cursched.ir.nodes import (
    Assign,
    BinOp,
    Call,
    Expr,
    FnArg,
    Interval,
    Point,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    WAccess,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import (
    defined_syms,
    free_syms_expr,
    map_expr_children,
    map_stmt_children,
    stmt_exprs,
    walk_stmts,
)
from cursched.ir.types import BOOL, INDEX, ControlType, DataType, TensorType
from cursched.primitives.loop_common import fresh_copy, rename_expr
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------------- inline


class InlineNotCallError(SchedulingError):
    """inline, precondition 1: the statement is not a call."""


@prim_cursors
class InlineCursors(PrimCursors):
    """What ``inline`` returns.

    Attributes:
        body: the inlined statements (the callee's body, substituted).
    """

    body: BlockCursor


@dataclass(frozen=True)
class _View:
    """A tensor parameter as the call passes it: buffer ``sym`` through ``coords`` (None:
    the whole buffer)."""

    sym: Sym
    coords: tuple[WAccess, ...] | None


def _plus(a: Expr, b: Expr) -> Expr:
    x, y = af.to_aff(a), af.to_aff(b)
    if x is None or y is None:
        return BinOp("+", a, b, INDEX)
    return af.simplify_expr(af.from_aff(x + y))


def _through(view: _View, idx: Sequence[Expr]) -> tuple[Expr, ...]:
    if view.coords is None:
        return tuple(idx)
    out: list[Expr] = []
    k = 0
    for c in view.coords:
        if isinstance(c, Point):
            out.append(c.pt)
        else:
            out.append(_plus(c.lo, idx[k]))
            k += 1
    return tuple(out)


def _window_through(view: _View, idx: Sequence[WAccess]) -> tuple[WAccess, ...]:
    if view.coords is None:
        return tuple(idx)
    out: list[WAccess] = []
    k = 0
    for c in view.coords:
        if isinstance(c, Point):
            out.append(c)
            continue
        w = idx[k]
        k += 1
        if isinstance(w, Point):
            out.append(Point(_plus(c.lo, w.pt)))
        else:
            out.append(Interval(_plus(c.lo, w.lo), _plus(c.lo, w.hi)))
    return tuple(out)


class _Inliner:
    def __init__(
        self, views: Mapping[Sym, _View], scalars: Mapping[Sym, Read], types: Mapping[Sym, Any]
    ) -> None:
        self.views = views
        self.scalars = scalars
        self.types = types  # the declared type of each argument buffer

    def expr(self, e: Expr) -> Expr:
        x = map_expr_children(e, self.expr)
        match x:
            case Read() if x.sym in self.scalars:
                return self.scalars[x.sym]
            case Read() if x.sym in self.views:
                v = self.views[x.sym]
                if x.idx:
                    return Read(v.sym, _through(v, x.idx), x.type)
                if v.coords is None:
                    return Read(v.sym, (), self.types[v.sym])
                assert isinstance(x.type, TensorType)
                return WindowExpr(v.sym, v.coords, dataclasses.replace(x.type, window=True))
            case WindowExpr() if x.sym in self.views:
                v = self.views[x.sym]
                return x.replace(sym=v.sym, idx=_window_through(v, x.idx))
            case StrideExpr() if x.sym in self.views:
                v = self.views[x.sym]
                if v.coords is None:
                    return x.replace(sym=v.sym)
                dims = [d for d, c in enumerate(v.coords) if isinstance(c, Interval)]
                return x.replace(sym=v.sym, dim=dims[x.dim])
            case _:
                return x

    def stmt(self, s: Stmt) -> Stmt:
        x = map_stmt_children(s, self.stmt, self.expr)
        match x:
            case Assign() | Reduce() if x.sym in self.scalars:
                r = self.scalars[x.sym]
                return x.replace(sym=r.sym, idx=r.idx)
            case Assign() | Reduce() if x.sym in self.views:
                v = self.views[x.sym]
                return x.replace(sym=v.sym, idx=_through(v, x.idx))
            case _:
                return x


def _decl_types(ir: ProcDef, ctx: PathContext) -> dict[Sym, Any]:
    out: dict[Sym, Any] = {a.sym: a.type for a in ir.args}
    out.update({s: a.type for s, a in ctx.allocs.items()})
    out.update({s: w.rhs.type for s, w in ctx.windows.items()})
    return out


@primitive
def inline(proc: Proc, call: StmtCursor) -> Rewrite[InlineCursors]:
    """Replace a call by the callee's body, its parameters substituted by the arguments.

    Args:
        proc: the proc to rewrite.
        call: the call statement (a cursor or a pattern such as ``"scal(_)"``).

    Returns:
        The new proc and ``InlineCursors``:
        ``body``: the inlined statements.

    Preconditions:
        1. ``call`` is a call statement (``InlineNotCallError``). Nothing else can fail: the
           call's arguments were proven to fit the callee when the call was made, and the
           callee's asserts held there (they are dropped).

    Forwards/Kills:
        Kills the call (hint: "inlined by inline; use .body"). The callee's symbols defined
        inside its body (loop variables, allocations, windows) are renamed to fresh ones, so
        inlining the same proc twice never shares a variable.

    Example:
        ``inline(p, "scal(_)")`` with ``def scal(n: size, x: [f32][n]): for i in
        seq(0, n): x[i] = x[i] * 2.0``::

            scal(4, A[4 * io:4 * io + 4])    ->    for i in seq(0, 4):
                                                       A[4 * io + i] = A[4 * io + i] * 2.0
    """
    if not isinstance(call, CallCursor):
        raise fail(InlineNotCallError, "inline", f"{call.describe()} is not a call", call)
    s = call.node()
    assert isinstance(s, Call)
    callee = s.proc
    ir = proc.ir()
    ctx = context_of(ir, call.path())
    env: dict[Sym, Expr | Sym] = {}
    views: dict[Sym, _View] = {}
    scalars: dict[Sym, Read] = {}
    for param, arg in zip(callee.args, s.args, strict=True):
        match param.type:
            case ControlType():
                env[param.sym] = arg
            case DataType():
                assert isinstance(arg, Read)
                scalars[param.sym] = arg
            case TensorType():
                if isinstance(arg, WindowExpr):
                    views[param.sym] = _View(arg.sym, arg.idx)
                else:
                    assert isinstance(arg, Read)
                    views[param.sym] = _View(arg.sym, None)
    body = fresh_copy(callee.body, env, ctx.ranges())
    inl = _Inliner(views, scalars, _decl_types(ir, ctx))
    new = tuple(inl.stmt(x) for x in body)
    ed = Editor(ir)
    out = ed.replace(call.as_block().block(), new, hint="inlined by inline; use .body")
    return ed.done(InlineCursors, body=out)


# -------------------------------------------------------------------------- extract_subproc


class ExtractNameError(SchedulingError):
    """extract_subproc, precondition 1: the name is not a Python identifier."""


class ExtractEscapeError(SchedulingError):
    """extract_subproc, precondition 2: the block defines a name (allocation, window) that
    statements after it use."""


class ExtractBoundsError(SchedulingError):
    """extract_subproc, precondition 3: an access of the block is not provably in bounds
    from what the new proc's asserts can say over its parameters."""


@prim_cursors
class ExtractSubprocCursors(PrimCursors):
    """What ``extract_subproc`` returns.

    Attributes:
        call: the call of the new proc, where the block was.
        subproc: the new proc (a ``Proc``, version 0).
        subproc_body: the new proc's body (a cursor of ``subproc``, not of the returned proc).
    """

    call: CallCursor
    subproc: Proc
    subproc_body: BlockCursor | None = None

    def __post_init__(self) -> None:
        # A cursor into another proc: made here, after the framework checked the fields that
        # must point into the returned proc.
        if self.subproc_body is None:
            object.__setattr__(self, "subproc_body", self.subproc.body())


def _used_syms(stmts: Sequence[Stmt]) -> set[Sym]:
    out: set[Sym] = set()
    for s in walk_stmts(tuple(stmts)):
        if isinstance(s, Assign | Reduce):
            out.add(s.sym)
        for e in stmt_exprs(s):
            out |= free_syms_expr(e)
    return out


def _defined(stmts: Sequence[Stmt]) -> set[Sym]:
    out: set[Sym] = set()
    for s in walk_stmts(tuple(stmts)):
        out |= defined_syms(s)
    return out


def _memory_of(sym: Sym, ctx: PathContext) -> type[Memory] | None:
    for _ in range(64):
        if sym not in ctx.windows:
            break
        sym = ctx.windows[sym].rhs.sym
    if sym in ctx.allocs:
        return ctx.allocs[sym].mem
    for a in ctx.proc.args:
        if a.sym is sym:
            return a.mem
    return None


def _param_of(sym: Sym, ctx: PathContext) -> tuple[Any, type[Memory] | None]:
    """The parameter type (and memory) standing for the caller's ``sym``."""
    for a in ctx.proc.args:
        if a.sym is sym:
            return a.type, a.mem
    if sym in ctx.allocs:
        return ctx.allocs[sym].type, ctx.allocs[sym].mem
    if sym in ctx.windows:
        return ctx.windows[sym].rhs.type, _memory_of(sym, ctx)
    if any(lp.iter is sym for lp in ctx.loops):
        return INDEX, None
    raise LookupError(sym)


def _type_syms(t: Any) -> set[Sym]:
    if isinstance(t, TensorType):
        out: set[Sym] = set()
        for d in t.shape:
            out |= free_syms_expr(d)
        return out
    return set()


@primitive
def extract_subproc(proc: Proc, block: BlockCursor, name: str) -> Rewrite[ExtractSubprocCursors]:
    """Move a block into a new proc and call it where the block was.

    The new proc's parameters are the names the block uses but does not define, in this
    order: the proc's parameters (in their order), the enclosing loop variables (outermost
    first, as ``index``), then allocations and windows (in declaration order). Sizes that a
    used buffer's shape mentions are parameters too. Its asserts are the proc's asserts, the
    enclosing loops' ranges and the enclosing ``if`` conditions that can be said over its
    parameters; the call satisfies them by construction.

    Args:
        proc: the proc to rewrite.
        block: the statements to extract.
        name: the new proc's name.

    Returns:
        The new proc and ``ExtractSubprocCursors``:
        ``call``: the call of the new proc;
        ``subproc``: the new proc (a ``Proc``);
        ``subproc_body``: its body (a cursor of ``subproc``).

    Preconditions:
        1. ``name`` is a Python identifier, not a keyword (``ExtractNameError``).
        2. nothing the block defines (allocations, windows) is used after it
           (``ExtractEscapeError``).
        3. every access of the block is provably in bounds in the new proc, from its asserts
           (``ExtractBoundsError``).

    Forwards/Kills:
        Kills the block's statements (hint: "extracted into `name`; use .call or
        .subproc_body"). Other statements keep their identity.

    Example:
        ``extract_subproc(p, "for j in _: _", "row")``::

            for i in seq(0, n):              ->    for i in seq(0, n):
                for j in seq(0, 8):                    row(n, A, i)
                    A[i, j] = 0.0
                                                   def row(n: size, A: f32[n, 8] @ DRAM,
                                                           i: index):
                                                       assert 0 <= i and i < n
                                                       for j in seq(0, 8):
                                                           A[i, j] = 0.0
    """
    prim = "extract_subproc"
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise fail(ExtractNameError, prim, f"{name!r} is not a valid proc name", block)
    ir = proc.ir()
    loc = block.block()
    stmts = block.stmts()
    ctx = context_of(ir, block.paths()[0])
    defined = _defined(stmts)
    after = _after(ir, loc)
    escaping = defined & after
    if escaping:
        names = ", ".join(sorted(s.name for s in escaping))
        raise fail(
            ExtractEscapeError, prim, f"{names}, defined in the block, is used after it", block
        )
    free = _used_syms(stmts) - defined
    types: dict[Sym, tuple[Any, type[Memory] | None]] = {}
    todo = list(free)
    while todo:
        sym = todo.pop()
        if sym in types:
            continue
        types[sym] = _param_of(sym, ctx)
        todo.extend(_type_syms(types[sym][0]) - set(types))
    order = [a.sym for a in ir.args] + [lp.iter for lp in ctx.loops]
    order += list(ctx.allocs) + list(ctx.windows)
    params = [s for s in order if s in types]
    rename = {s: s.copy() for s in params}
    args: list[FnArg] = []
    for s in params:
        t, mem = types[s]
        if isinstance(t, TensorType):
            t = dataclasses.replace(t, shape=tuple(rename_expr(d, rename) for d in t.shape))
        args.append(FnArg(rename[s], t, mem if not isinstance(t, ControlType) else None))
    preds = [rename_expr(p, rename) for p in _facts(ctx, set(params))]
    body = fresh_copy(stmts, dict(rename))
    sub = ProcDef(name, tuple(args), tuple(preds), body)
    try:
        check_bounds(sub)
    except BoundsError as e:
        raise fail(ExtractBoundsError, prim, f"in the new proc {name}: {e}", block) from e
    call_args = tuple(_arg_read(s, types[s][0]) for s in params)
    ed = Editor(ir)
    new = ed.replace(
        loc, (Call(sub, call_args),), hint=f"extracted into `{name}`; use .call or .subproc_body"
    )
    # subproc_body is filled in by the dataclass (a cursor of subproc, which the framework
    # would refuse as a cursor of another version); named here so that history() unpacks it.
    return ed.done(
        ExtractSubprocCursors,
        call=NodeLoc(new.stmt_paths()[0]),
        subproc=Proc(sub),
        subproc_body=None,
    )


def _arg_read(sym: Sym, t: Any) -> Read:
    return Read(sym, (), t)


def _after(ir: ProcDef, loc: BlockLoc) -> set[Sym]:
    """Names used after the block, in its block and every enclosing one."""
    from cursched.cursors.tree import stmt_list

    out: set[Sym] = set()
    parent, attr, hi = loc.parent, loc.attr, loc.hi
    while True:
        out |= _used_syms(stmt_list(ir, parent, attr)[hi:])
        if not parent:
            return out
        (up_attr, up_k) = parent[-1]
        parent, attr, hi = parent[:-1], up_attr, up_k + 1


def _facts(ctx: PathContext, params: set[Sym]) -> list[Expr]:
    """The asserts, loop ranges and conditions at ``ctx`` that mention only ``params``."""
    out: list[Expr] = []
    for p in ctx.proc.preds:
        if free_syms_expr(p) <= params:
            out.append(p)
    for lp in ctx.loops:
        if lp.iter not in params:
            continue
        it = Read(lp.iter, (), INDEX)
        for bound, op in ((lp.lo, "<="), (lp.hi, "<")):
            if free_syms_expr(bound) <= params:
                lhs, rhs = (bound, it) if op == "<=" else (it, bound)
                out.append(BinOp(op, lhs, rhs, BOOL))  # type: ignore[arg-type]
    for cond, taken in ctx.conds:
        if free_syms_expr(cond) <= params and af.to_prop(cond) is not None:
            neg = cond if taken else _negate(cond)
            if neg is not None:
                out.append(neg)
    return out


_FLIP = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}


def _negate(cond: Expr) -> Expr | None:
    """``not cond`` for a comparison (None for other conditions: the fact is dropped)."""
    if isinstance(cond, BinOp) and cond.op in _FLIP:
        return cond.replace(op=_FLIP[cond.op])
    return None


__all__ = [
    "ExtractBoundsError",
    "ExtractEscapeError",
    "ExtractNameError",
    "ExtractSubprocCursors",
    "InlineCursors",
    "InlineNotCallError",
    "extract_subproc",
    "inline",
]
