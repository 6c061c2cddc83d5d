"""``extract_subproc``: move a block into a new proc and call it where the block was.

Registered with ``@primitive`` (``cursched.primitives.registry``); the inverse of ``inline``
(``calls.py``): inlining the call it makes gives back an alpha-equal proc.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Any

from cursched.analysis import affine as af
from cursched.analysis.bounds import check_bounds
from cursched.analysis.context import PathContext, context_of
from cursched.cursors import BlockCursor, BlockLoc, CallCursor, Editor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import stmt_list
from cursched.errors import BadNameError, BoundsError, OutOfBoundsError, ScopeError
from cursched.ir.config import ConfigField
from cursched.ir.memory import Memory
from cursched.ir.nodes import (
    Assign,
    BinOp,
    Call,
    Expr,
    FnArg,
    For,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import (
    defined_syms,
    free_syms_expr,
    stmt_blocks,
    stmt_exprs,
    walk_stmts,
)
from cursched.ir.types import BOOL, INDEX, ControlType, TensorType
from cursched.primitives.arguments import NewName
from cursched.primitives.loops.loop_common import fresh_copy, rename_expr
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc


class ExtractNameError(BadNameError):
    """extract_subproc, precondition 1: the name is not a Python identifier."""


class ExtractEscapeError(ScopeError):
    """extract_subproc, precondition 2: the block defines a name (allocation, window) that
    statements after it use."""


class ExtractBoundsError(OutOfBoundsError):
    """extract_subproc, precondition 3: an access of the block is not provably in bounds
    from what the new proc's asserts can say over its parameters."""


class ExtractBoundLoopError(ScopeError):
    """extract_subproc, precondition 4: the block holds a loop bound to a CUDA axis outside
    any cuda scope of the block (the new proc would have a bound loop outside a kernel)."""


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
    # configuration fields are global (cursched.ir.config): the subproc uses them directly
    return {x for x in out if not isinstance(x, ConfigField)}


def _defined(stmts: Sequence[Stmt]) -> set[Sym]:
    out: set[Sym] = set()
    for s in walk_stmts(tuple(stmts)):
        out |= defined_syms(s)
    return out


def _param_of(sym: Sym, ctx: PathContext) -> tuple[Any, type[Memory] | None]:
    """The parameter type (and memory) standing for the caller's ``sym``."""
    for a in ctx.proc.args:
        if a.sym is sym:
            return a.type, a.mem
    if sym in ctx.allocs:
        return ctx.allocs[sym].type, ctx.allocs[sym].mem
    if sym in ctx.windows:
        return ctx.windows[sym].rhs.type, ctx.memory_of(sym)
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
def extract_subproc(
    proc: Proc,
    block: BlockCursor,
    name: Annotated[str, NewName(ExtractNameError, scope="none", what="proc name")],
) -> Rewrite[ExtractSubprocCursors]:
    """Move a block into a new proc and call it where the block was.

    The new proc's parameters are the names the block uses but does not define, in this
    order: the proc's parameters (in their order), the enclosing loop variables (outermost
    first, as ``index``), then allocations and windows (in declaration order). Sizes that a
    used buffer's shape or a used loop variable's bounds mention are parameters too. Its
    asserts are the proc's asserts, the enclosing loops' ranges and the enclosing ``if``
    conditions that can be said over its parameters; the call satisfies them by
    construction.

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
        4. no loop of the block is bound to a CUDA axis unless a cuda scope of the block
           holds it: a binding means something only inside its kernel, which the new proc
           would not have (``ExtractBoundLoopError``; extract the whole scope instead).

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
                                                       assert 0 <= i
                                                       assert i < n
                                                       for j in seq(0, 8):
                                                           A[i, j] = 0.0
    """
    prim = "extract_subproc"
    ir = proc.ir()
    loc = block.block()
    stmts = block.stmts()
    ctx = context_of(ir, block.paths()[0])
    _check_no_bound_loop(stmts, block)
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
        # A loop variable brings the names of its bounds, so that its range is an assert.
        for lp in ctx.loops:
            if lp.iter is sym:
                todo.extend((free_syms_expr(lp.lo) | free_syms_expr(lp.hi)) - set(types))
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
    checks_passed()
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


def _bound_outside_kernels(stmts: Sequence[Stmt]) -> For | None:
    """A loop of ``stmts`` bound to a CUDA axis and not inside a cuda scope of ``stmts``."""
    for s in stmts:
        if isinstance(s, Scope) and s.target == "cuda":
            continue  # the kernel moves whole: its bindings keep their meaning
        if isinstance(s, For) and s.axis is not None:
            return s
        for _, body in stmt_blocks(s):
            found = _bound_outside_kernels(body)
            if found is not None:
                return found
    return None


def _check_no_bound_loop(stmts: Sequence[Stmt], block: BlockCursor) -> None:
    """Precondition 4: every bound loop of the block is inside a cuda scope of the block."""
    bound = _bound_outside_kernels(stmts)
    if bound is not None:
        msg = (
            f"loop {bound.iter.name} is bound to {bound.axis}; the new proc would hold it "
            "outside a kernel (extract the whole cuda scope, or the body of the innermost "
            "bound loop)"
        )
        raise fail(ExtractBoundLoopError, "extract_subproc", msg, block)


def _arg_read(sym: Sym, t: Any) -> Read:
    return Read(sym, (), t)


def _after(ir: ProcDef, loc: BlockLoc) -> set[Sym]:
    """Names used after the block, in its block and every enclosing one."""
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
    "extract_subproc",
]
