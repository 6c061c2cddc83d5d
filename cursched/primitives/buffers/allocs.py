"""Where allocations live: ``lift_alloc``, ``sink_alloc``, ``delete_buffer``, ``reuse_buffer``.

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

from cursched.analysis.checks import (
    BufferNotDeadError,
    ParallelError,
    check_dead_after,
    check_parallel,
)
from cursched.analysis.checks_buffers import covered, covers_read, region_of
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.effects import Access, block_effects
from cursched.cursors import AllocCursor, BlockLoc, Editor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.locs import format_path
from cursched.cursors.tree import stmt_list
from cursched.errors import (
    BadArgumentError,
    DependenceError,
    RaceError,
    ScopeError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.nodes import For, If, Pass, Scope, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr
from cursched.ir.types import TensorType
from cursched.primitives.buffers.buffer_common import buffer_scope, scope_stmts, uses_of
from cursched.primitives.loops.loop_common import rename_stmt, safety, same_pairs
from cursched.primitives.registry import (
    Buffer,
    PrimCursors,
    checks_passed,
    fail,
    prim_cursors,
    primitive,
)
from cursched.proc import Proc


@prim_cursors
class AllocCursors(PrimCursors):
    """What ``lift_alloc`` and ``sink_alloc`` return.

    Attributes:
        alloc: the moved allocation.
    """

    alloc: AllocCursor


def _shape_syms(alloc: AllocCursor) -> set[Sym]:
    t = alloc.alloc().type
    out: set[Sym] = set()
    if isinstance(t, TensorType):
        for d in t.shape:
            out |= free_syms_expr(d)
    return out


def _used_after(ir: object, parent: Path, attr: str, start: int, sym: Sym) -> bool:
    stmts = stmt_list(ir, parent, attr)[start:]  # type: ignore[arg-type]
    paths = tuple((*parent, (attr, k)) for k in range(start, start + len(stmts)))
    return bool(uses_of(stmts, paths, sym))


# ------------------------------------------------------------------------------ lift_alloc


class LiftAllocCountError(BadArgumentError):
    """lift_alloc, precondition 1: ``n_lifts`` is not a positive integer."""


class LiftAllocTopError(ShapeMismatchError):
    """lift_alloc, precondition 2: there is no enclosing loop, ``if`` or scope to lift out of."""


class LiftAllocScopeError(RaceError):
    """lift_alloc, precondition 3: the enclosing statement is a kernel scope (its memory is
    per-kernel), or a ``par`` loop whose iterations would then share buffer elements."""


class LiftAllocShapeError(ScopeError):
    """lift_alloc, precondition 4: the buffer's shape uses the variable of the loop it leaves."""


class LiftAllocEmptyError(ShapeMismatchError):
    """lift_alloc, precondition 5: the allocation is the only statement of the body it leaves."""


@primitive
def lift_alloc(proc: Proc, alloc: AllocCursor, n_lifts: int = 1) -> Rewrite[AllocCursors]:
    """Move an allocation out of its enclosing loops, ``if``s or scopes, ``n_lifts`` times.

    Args:
        proc: the proc to rewrite.
        alloc: the allocation (a cursor or a buffer name).
        n_lifts: how many enclosing statements to leave.

    Returns:
        The new proc and ``AllocCursors``: ``alloc``: the allocation in its new place (right
        before the outermost statement it left).

    Preconditions:
        1. ``n_lifts`` is a positive integer (``LiftAllocCountError``).
        2. there are ``n_lifts`` enclosing statements (``LiftAllocTopError``).
        3. none is a scope with a target, and the iterations of a ``par`` loop it leaves touch
           disjoint elements of the buffer (after ``expand_dim``), proven by
           ``check_parallel`` (``LiftAllocScopeError``, with a counterexample).
        4. the shape does not use a variable of a loop it leaves (``LiftAllocShapeError``).
        5. the allocation is not the only statement of a body it leaves
           (``LiftAllocEmptyError``).

    Forwards/Kills:
        ``alloc`` forwards to ``alloc``; every statement keeps its identity. Nothing dies.
        (Buffers are uninitialised, so a program reading the buffer before writing it in an
        iteration had no defined result before either.)

    Example:
        ``lift_alloc(p, "t")``::

            for i in seq(0, n):          ->    t: f32[4] @ DRAM
                t: f32[4] @ DRAM               for i in seq(0, n):
                t[0] = x[i]                        t[0] = x[i]
                y[i] = t[0]                        y[i] = t[0]
    """
    name = "lift_alloc"
    if isinstance(n_lifts, bool) or not isinstance(n_lifts, int) or n_lifts < 1:
        raise fail(LiftAllocCountError, name, f"n_lifts must be >= 1, got {n_lifts!r}", alloc)
    ir = proc.ir()
    ed = Editor(ir)
    path = alloc.path()
    shape = _shape_syms(alloc)
    for _ in range(n_lifts):
        *parent, (attr, k) = path
        if not parent:
            raise fail(LiftAllocTopError, name, "no enclosing statement to lift out of", alloc)
        owner = get_at(ed.ir, tuple(parent))
        if isinstance(owner, Scope) and owner.target is not None:
            raise fail(LiftAllocScopeError, name, "cannot lift out of a kernel scope", alloc)
        if isinstance(owner, For) and owner.iter in shape:
            raise fail(
                LiftAllocShapeError,
                name,
                f"the shape uses {owner.iter.name}, the variable of the loop it would leave",
                alloc,
            )
        if len(stmt_list(ed.ir, tuple(parent), attr)) == 1:
            raise fail(LiftAllocEmptyError, name, "it is the only statement of its body", alloc)
        *pp, (pattr, pk) = parent
        ed.move(BlockLoc(tuple(parent), attr, k, k + 1), (tuple(pp), pattr, pk))
        path = (*pp, (pattr, pk))
        if isinstance(owner, For) and owner.mode == "par":
            try:
                check_parallel(ed.ir, (*pp, (pattr, pk + 1)), primitive=name)
            except ParallelError as e:
                raise safety(LiftAllocScopeError, name, e, alloc) from e
    return ed.done(AllocCursors, alloc=NodeLoc(path))


# ------------------------------------------------------------------------------ sink_alloc


class SinkAllocNoScopeError(ShapeMismatchError):
    """sink_alloc, precondition 1: the next statement is not a loop, an ``if`` or a scope."""


class SinkAllocUsedAfterError(DependenceError):
    """sink_alloc, precondition 2: the buffer is used after that statement."""


class SinkAllocCarriedError(DependenceError):
    """sink_alloc, precondition 3: a loop iteration may read what an earlier one wrote into
    the buffer (each iteration would get a fresh buffer)."""


def _first_unfilled_read(body: tuple[Stmt, ...], buf: Sym, ctx: PathContext) -> Access | None:
    """A read of ``buf`` in ``body`` not provably preceded, in the same run of ``body``, by a
    write of everything it reads (None: every read sees a value written in this run)."""
    effs = [a for a in block_effects(body, ctx.windows) if a.buf is buf]
    order = {id(s): k for k, s in enumerate(body)}
    props = ctx.props()
    for k, s in enumerate(body):
        reads = [a for a in effs if a.stmt is s and a.kind != "write"]
        if not reads:
            continue
        earlier = [a for a in effs if a.kind == "write" and order[id(a.stmt)] < k]
        bad = []
        for r in reads:
            region = region_of(r)
            if region is not None and covered(earlier, region, props):
                continue
            if not any(covers_read(w, r, props) for w in earlier):
                bad.append(r)
        if not bad:
            continue
        if _fills_inside(s, buf, ctx):
            continue
        return bad[0]
    return None


def _fills_inside(s: Stmt, buf: Sym, ctx: PathContext) -> bool:
    """Whether every run of each body nested in ``s`` writes before it reads (an inner loop's
    every iteration, both branches of an ``if``)."""
    match s:
        case For():
            return _first_unfilled_read(s.body, buf, ctx.enter_loop(s)) is None
        case If():
            ok = _first_unfilled_read(s.body, buf, ctx.enter_if(s.cond, True)) is None
            return ok and _first_unfilled_read(s.orelse, buf, ctx.enter_if(s.cond, False)) is None
        case Scope():
            return _first_unfilled_read(s.body, buf, ctx) is None
        case _:
            return False


@primitive
def sink_alloc(proc: Proc, alloc: AllocCursor) -> Rewrite[AllocCursors]:
    """Move an allocation into the loop, ``if`` or scope right after it.

    Args:
        proc: the proc to rewrite.
        alloc: the allocation (a cursor or a buffer name).

    Returns:
        The new proc and ``AllocCursors``: ``alloc``: the allocation, first statement of the
        body (of the ``if``'s body; an ``else`` branch that uses the buffer gets its own copy).

    Preconditions:
        1. the next statement is a loop, an ``if`` or a scope (``SinkAllocNoScopeError``).
        2. the buffer is not used after it (``SinkAllocUsedAfterError``).
        3. for a loop, every read of the buffer in an iteration is preceded in that iteration
           by writes covering it (``SinkAllocCarriedError``; sufficient check: an earlier
           statement of the body, or of an inner loop's body, writes a box holding it).

    Forwards/Kills:
        ``alloc`` forwards to ``alloc``; every statement keeps its identity. The ``else``
        copy is new.

    Example:
        ``sink_alloc(p, "t")``::

            t: f32[4] @ DRAM           ->    for i in seq(0, n):
            for i in seq(0, n):                  t: f32[4] @ DRAM
                t[0] = x[i]                      t[0] = x[i]
                y[i] = t[0]                      y[i] = t[0]
    """
    name = "sink_alloc"
    ir = proc.ir()
    *parent_l, (attr, k) = alloc.path()
    parent = tuple(parent_l)
    lst = stmt_list(ir, parent, attr)
    target = lst[k + 1] if k + 1 < len(lst) else None
    if not isinstance(target, For | If | Scope):
        raise fail(
            SinkAllocNoScopeError, name, "the next statement is not a loop, if or scope", alloc
        )
    sym = alloc.alloc().sym
    if _used_after(ir, parent, attr, k + 2, sym):
        raise fail(SinkAllocUsedAfterError, name, f"{sym.name} is used after the scope", alloc)
    tpath = (*parent, (attr, k + 1))
    if isinstance(target, For):
        ctx = context_of(ir, (*tpath, ("body", 0)))
        bad = _first_unfilled_read(target.body, sym, ctx)
        if bad is not None:
            line = print_stmt(bad.stmt).splitlines()[0].strip()
            raise fail(
                SinkAllocCarriedError,
                name,
                f"`{line}` may read {sym.name} as written by an earlier iteration",
                alloc,
            )
    checks_passed()
    ed = Editor(ir)
    moved = ed.move(alloc.as_block().block(), (tpath, "body", 0))
    tpath_after = (*parent, (attr, k))
    if isinstance(target, If) and target.orelse:
        else_paths = tuple((*tpath_after, ("orelse", j)) for j in range(len(target.orelse)))
        if uses_of(target.orelse, else_paths, sym):
            copy = sym.copy()
            a = alloc.alloc()
            new_else = tuple(rename_stmt(s, {sym: copy}) for s in target.orelse)
            ed.replace(
                BlockLoc(tpath_after, "orelse", 0, len(target.orelse)),
                (a.replace(sym=copy), *new_else),
                same=same_pairs(target.orelse, new_else),
            )
    return ed.done(AllocCursors, alloc=NodeLoc(moved.stmt_paths()[0]))


# --------------------------------------------------------------------------- delete_buffer


class DeleteBufferNotAllocError(ShapeMismatchError):
    """delete_buffer, precondition 1: the buffer is a parameter, not an allocation."""


class DeleteBufferUsedError(DependenceError):
    """delete_buffer, precondition 2: the buffer is used."""


@prim_cursors
class DeleteBufferCursors(PrimCursors):
    """What ``delete_buffer`` returns: no cursors."""


@primitive
def delete_buffer(proc: Proc, buf: Buffer) -> Rewrite[DeleteBufferCursors]:
    """Delete an allocation nothing uses.

    Args:
        proc: the proc to rewrite.
        buf: the allocation (a cursor or a buffer name).

    Returns:
        The new proc and ``DeleteBufferCursors`` (no fields).

    Preconditions:
        1. ``buf`` is an allocation (``DeleteBufferNotAllocError``; a parameter given by name
           is found as an argument and rejected).
        2. nothing reads, writes or windows it (``DeleteBufferUsedError``).

    Forwards/Kills:
        Kills the allocation (hint: "deleted by delete_buffer"); when it was the only
        statement of its body, a ``pass`` takes its place.

    Example:
        ``delete_buffer(p, "t")``::

            t: f32[4] @ DRAM      ->    x[0] = 1.0
            x[0] = 1.0
    """
    name = "delete_buffer"
    if not isinstance(buf, AllocCursor):
        raise fail(DeleteBufferNotAllocError, name, f"{buf.describe()} is not an allocation", buf)
    ir = proc.ir()
    scope = buffer_scope(ir, buf)
    stmts, paths = scope_stmts(ir, scope)
    used = uses_of(stmts[1:], paths[1:], buf.alloc().sym)
    if used:
        raise fail(
            DeleteBufferUsedError, name, f"{buf.name()} is used at {format_path(used[0].path)}", buf
        )
    checks_passed()
    ed = Editor(ir)
    block = buf.as_block().block()
    ed.delete(block, hint="deleted by delete_buffer")  # (the only statement leaves a pass)
    return ed.done(DeleteBufferCursors)


# --------------------------------------------------------------------------- reuse_buffer


class ReuseBufferNotAllocError(ShapeMismatchError):
    """reuse_buffer, precondition 1: one of the two buffers is not an allocation."""


class ReuseBufferTypeError(TypeMismatchError):
    """reuse_buffer, precondition 2: the two allocations differ in type, shape or memory."""


class ReuseBufferScopeError(ScopeError):
    """reuse_buffer, precondition 3: ``buf`` is not visible where ``replace`` is allocated."""


class ReuseBufferNotDeadError(DependenceError):
    """reuse_buffer, precondition 4: ``buf`` is used after ``replace``'s allocation (or read
    again by a later loop iteration)."""


@prim_cursors
class ReuseBufferCursors(PrimCursors):
    """What ``reuse_buffer`` returns.

    Attributes:
        buffer: the reused allocation (``buf``), now holding ``replace``'s values too.
    """

    buffer: AllocCursor


@primitive
def reuse_buffer(proc: Proc, buf: Buffer, replace: Buffer) -> Rewrite[ReuseBufferCursors]:
    """Use the dead buffer ``buf`` instead of allocating ``replace``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation to reuse.
        replace: the later allocation to remove; its uses become uses of ``buf``.

    Returns:
        The new proc and ``ReuseBufferCursors``: ``buffer``: ``buf``'s allocation.

    Preconditions:
        1. both are allocations (``ReuseBufferNotAllocError``).
        2. same element type, shape and memory (``ReuseBufferTypeError``).
        3. ``buf`` is visible at ``replace``: allocated earlier in the same or an enclosing
           body (``ReuseBufferScopeError``).
        4. ``buf`` is dead there: not used after ``replace``'s allocation, and not read by
           statements that run again later in an enclosing loop (``ReuseBufferNotDeadError``,
           via ``check_dead_after``).

    Forwards/Kills:
        ``buf`` forwards to ``buffer``; kills ``replace``'s allocation (hint: "replaced by
        reuse_buffer"); other statements keep their identity.

    Example:
        ``reuse_buffer(p, "a", "b")``::

            a: f32 @ DRAM        ->    a: f32 @ DRAM
            a = x[0]                   a = x[0]
            y[0] = a                   y[0] = a
            b: f32 @ DRAM              a = x[1]
            b = x[1]                   y[1] = a
            y[1] = b
    """
    name = "reuse_buffer"
    if not isinstance(buf, AllocCursor) or not isinstance(replace, AllocCursor):
        raise fail(ReuseBufferNotAllocError, name, "both buffers must be allocations", replace)
    a, b = buf.alloc(), replace.alloc()
    if a.type != b.type or a.mem is not b.mem:
        raise fail(
            ReuseBufferTypeError,
            name,
            f"{a.sym.name} and {b.sym.name} differ in type, shape or memory",
            replace,
        )
    ir = proc.ir()
    bpath, rpath = buf.path(), replace.path()
    *bparent, (battr, bk) = bpath
    inside = len(rpath) >= len(bpath) and rpath[: len(bparent)] == tuple(bparent)
    if not inside or rpath[len(bparent)][0] != battr or rpath[len(bparent)][1] <= bk:
        raise fail(
            ReuseBufferScopeError, name, f"{a.sym.name} is not visible at {b.sym.name}", replace
        )
    # no use of buf from replace's allocation to the end of buf's scope
    cur = rpath
    while len(cur) > len(bparent):
        *par, (at, k) = cur
        if _used_after(ir, tuple(par), at, k + 1, a.sym):
            raise fail(
                ReuseBufferNotDeadError, name, f"{a.sym.name} is used after {b.sym.name}", replace
            )
        cur = tuple(par)
    try:
        check_dead_after(ir, rpath, a.sym, primitive=name)
    except BufferNotDeadError as e:
        raise safety(ReuseBufferNotDeadError, name, e, replace) from e
    *rparent_l, (rattr, rk) = rpath
    rparent = tuple(rparent_l)
    lst = stmt_list(ir, rparent, rattr)
    rest = lst[rk + 1 :]
    renamed = tuple(rename_stmt(s, {b.sym: a.sym}) for s in rest)
    checks_passed()
    ed = Editor(ir)
    ed.replace(
        BlockLoc(rparent, rattr, rk, len(lst)),
        renamed if renamed or rk > 0 else (Pass(),),
        same=same_pairs(rest, renamed),
        hint="replaced by reuse_buffer",
    )
    return ed.done(ReuseBufferCursors, buffer=NodeLoc(bpath))


__all__ = [
    "AllocCursors",
    "DeleteBufferCursors",
    "DeleteBufferNotAllocError",
    "DeleteBufferUsedError",
    "LiftAllocCountError",
    "LiftAllocEmptyError",
    "LiftAllocScopeError",
    "LiftAllocShapeError",
    "LiftAllocTopError",
    "ReuseBufferCursors",
    "ReuseBufferNotAllocError",
    "ReuseBufferNotDeadError",
    "ReuseBufferScopeError",
    "ReuseBufferTypeError",
    "SinkAllocCarriedError",
    "SinkAllocNoScopeError",
    "SinkAllocUsedAfterError",
    "delete_buffer",
    "lift_alloc",
    "reuse_buffer",
    "sink_alloc",
]
