"""Primitives that make, remove or reshape whole loops: ``unroll_loop``, ``mult_loops``,
``remove_loop``, ``add_loop``, ``parallelize_loop`` (issue 6, part B).

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``); the
semantics follow Exo 1.0's primitives of the same names.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import Any

from cursched.analysis import affine as af
from cursched.analysis.affine_tidy import tidy_expr
from cursched.analysis.checks import (
    NotBoundedError,
    NotDivisibleError,
    ParallelError,
    check_divides,
    check_le,
    check_parallel,
)
from cursched.analysis.checks_loops import NotIdempotentError, check_idempotent
from cursched.analysis.context import context_of
from cursched.cursors import BlockCursor, BlockLoc, Editor, ForCursor, NodeLoc, NoLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.kinds import Cursor
from cursched.cursors.stmts import IfCursor
from cursched.cursors.tree import stmt_list
from cursched.errors import SchedulingError
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Expr,
    For,
    If,
    LoopMode,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr, map_stmt_children, walk_exprs, walk_stmts
from cursched.ir.types import BOOL, INDEX
from cursched.primitives.loop_common import (
    aff,
    expr_of,
    fresh_copy,
    index_expr,
    int_const,
    safety,
    same_pairs,
    subst_simplify,
)
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------- helpers


def valid_name(name: object) -> bool:
    """Whether ``name`` can name a new variable (an identifier, not a Python keyword)."""
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def escaping_names(ir: ProcDef, block: BlockLoc) -> set[Sym]:
    """Names that ``block`` declares at its top level (allocations, windows) and that
    statements after it use: wrapping the block in a loop or an ``if`` would hide them."""
    stmts = stmt_list(ir, block.parent, block.attr)
    declared = {s.sym for s in stmts[block.lo : block.hi] if isinstance(s, Alloc | WindowStmt)}
    if not declared:
        return set()
    rest = stmts[block.hi :]
    used = {sym for e in walk_exprs(rest) for sym in free_syms_expr(e)}
    used |= {s.sym for s in walk_stmts(rest) if isinstance(s, Assign | Reduce)}
    return declared & used


def _tidy_uses(s: Stmt, sym: Sym, ranges: Mapping[Sym, af.Bound]) -> Stmt:
    """``s`` with each expression that uses ``sym`` tidied (``4 * (k / 4) + k % 4`` is
    ``k``); other expressions keep their text and identity."""

    def fe(e: Expr) -> Expr:
        return tidy_expr(e, ranges) if sym in free_syms_expr(e) else e

    def fs(x: Stmt) -> Stmt:
        return map_stmt_children(x, fs, fe)

    return fs(s)


def _exact_divs(ir: ProcDef, path: Path, a: af.Aff) -> af.Aff:
    """``a`` with each ``m * k * (x / k)`` replaced by ``m * x`` where ``k`` provably divides
    ``x`` (``4 * (n / 4)`` is ``n`` under ``assert n % 4 == 0``)."""
    for atom, c in a.terms:
        if isinstance(atom, af.Div) and c % atom.k == 0:
            try:
                check_divides(ir, path, atom.k, expr_of(atom.num))
            except NotDivisibleError:
                continue
            rest = a - af.Aff(((atom, c),), 0)
            return _exact_divs(ir, path, rest + atom.num.scale(c // atom.k))
    return a


def _body_paths(loop: ForCursor) -> tuple[tuple[tuple[str, int], ...], ...]:
    return tuple((*loop.path(), ("body", k)) for k in range(len(loop.loop().body)))


# ------------------------------------------------------------------------------ unroll_loop


class UnrollNotConstantError(SchedulingError):
    """unroll_loop, precondition 1: the loop's bounds are not constants."""


@prim_cursors
class UnrollLoopCursors(PrimCursors):
    """What ``unroll_loop`` returns.

    Attributes:
        copies: one block per iteration, in order (empty when the loop ran no iteration).
    """

    copies: tuple[BlockCursor, ...]


@primitive
def unroll_loop(proc: Proc, loop: ForCursor) -> Rewrite[UnrollLoopCursors]:
    """Replace a loop with constant bounds by one copy of its body per iteration.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor or a loop name).

    Returns:
        The new proc and ``UnrollLoopCursors``:
        ``copies``: a tuple with one block per iteration, the loop variable replaced by the
        iteration's value (indices simplified).

    Preconditions:
        1. ``lo`` and ``hi`` simplify to integer constants (``UnrollNotConstantError``).

    Forwards/Kills:
        Kills the loop and every statement of its body (hint: "unrolled; use .copies[k]"):
        each copy holds fresh statements, so no old cursor silently picks one iteration.
        A loop with no iteration disappears (a ``pass`` takes its place when it was the
        only statement of its block).

    Example:
        ``unroll_loop(p, "j")``::

            for j in seq(0, 2):        ->    x[0] = 0.0
                x[j] = 0.0                   x[1] = 0.0
    """
    name = "unroll_loop"
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    ranges = context_of(ir, path).ranges()
    lo, hi = af.simplify_aff(aff(L.lo), ranges), af.simplify_aff(aff(L.hi), ranges)
    if not lo.is_const() or not hi.is_const():
        msg = "the loop bounds are not constants; cut or split the loop first"
        raise fail(UnrollNotConstantError, name, msg, loop)
    copies = [fresh_copy(L.body, {L.iter: int_const(k)}, ranges) for k in range(lo.const, hi.const)]
    new: list[Stmt] = [s for c in copies for s in c]
    block = loop.as_block().block()
    if not new and len(stmt_list(ir, block.parent, block.attr)) == 1:
        new = [Pass()]
    ed = Editor(ir)
    out = ed.replace(block, new, hint="unrolled; use .copies[k]")
    n = len(L.body)
    locs = tuple(
        BlockLoc(out.parent, out.attr, out.lo + k * n, out.lo + (k + 1) * n)
        for k in range(len(copies))
    )
    return ed.done(UnrollLoopCursors, copies=locs)


# ------------------------------------------------------------------------------- mult_loops


class MultNotNestedError(SchedulingError):
    """mult_loops, precondition 1: the loop's body is not exactly one loop."""


class MultBoundsError(SchedulingError):
    """mult_loops, precondition 2: a loop does not start at 0, or the inner loop's upper
    bound is not a positive constant."""


class MultNameError(SchedulingError):
    """mult_loops, precondition 3: the new name is not an identifier."""


@prim_cursors
class MultLoopsCursors(PrimCursors):
    """What ``mult_loops`` returns.

    Attributes:
        loop: the merged loop.
    """

    loop: ForCursor


@primitive
def mult_loops(proc: Proc, nested: ForCursor, name: str) -> Rewrite[MultLoopsCursors]:
    """Merge a loop and the one loop in its body into one loop (the inverse of ``split``).

    Args:
        proc: the proc to rewrite.
        nested: the outer loop, whose body is exactly one loop.
        name: the name of the merged loop's iteration variable.

    Returns:
        The new proc and ``MultLoopsCursors``:
        ``loop``: the loop ``seq(0, e * c)`` replacing ``i`` by ``k / c`` and ``j`` by
        ``k % c`` (simplified).

    Preconditions:
        1. the body of ``nested`` is exactly one loop (``MultNotNestedError``).
        2. both loops start at 0 and the inner loop's upper bound is a constant ``c > 0``
           (``MultBoundsError``), as in Exo.
        3. ``name`` is an identifier (``MultNameError``).

    Forwards/Kills:
        Kills both loops (hint: "merged into `loop`"). Statements of the inner body forward
        to their rewritten selves; rewritten index expressions die. The merged loop is
        ``par`` only when both loops were.

    Example:
        ``mult_loops(p, "io", "i")``::

            for io in seq(0, n):          ->    for i in seq(0, 4 * n):
                for ii in seq(0, 4):                x[i] = 0.0
                    x[4 * io + ii] = 0.0
    """
    prim = "mult_loops"
    ir, path, outer = proc.ir(), nested.path(), nested.loop()
    if len(outer.body) != 1 or not isinstance(outer.body[0], For):
        msg = f"the body of loop {outer.iter.name} is not exactly one loop"
        raise fail(MultNotNestedError, prim, msg, nested)
    inner = outer.body[0]
    ranges = dict(context_of(ir, path).ranges())
    lo1, lo2 = af.simplify_aff(aff(outer.lo), ranges), af.simplify_aff(aff(inner.lo), ranges)
    c = af.simplify_aff(aff(inner.hi), ranges)
    if lo1 != af.Aff.num(0) or lo2 != af.Aff.num(0):
        raise fail(MultBoundsError, prim, "both loops must start at 0", nested)
    if not c.is_const() or c.const < 1:
        msg = f"the inner loop's upper bound must be a positive constant, got {inner.hi}"
        raise fail(MultBoundsError, prim, msg, nested)
    if not valid_name(name):
        raise fail(MultNameError, prim, f"{name!r} is not a valid name", nested)
    k = Sym(name)
    hi = _exact_divs(ir, path, af.simplify_aff(aff(outer.hi).scale(c.const), ranges))
    top = af.aff_range(hi, ranges)[1]
    ranges[k] = (0, None if top is None else top - 1)
    kv = af.Aff.var(k)
    env = {
        outer.iter: expr_of(af.div(kv, c.const)),
        inner.iter: expr_of(af.mod(kv, c.const)),
    }
    body = tuple(_tidy_uses(subst_simplify(s, env, ranges), k, ranges) for s in inner.body)
    mode: LoopMode = "par" if outer.mode == inner.mode == "par" else "seq"
    merged = For(k, int_const(0), expr_of(hi), body, mode)
    ed = Editor(ir)
    out = ed.replace(
        nested.as_block().block(),
        (merged,),
        same=same_pairs(inner.body, body),
        hint="merged into `loop`",
    )
    return ed.done(MultLoopsCursors, loop=NodeLoc(out.stmt_paths()[0]))


# ------------------------------------------------------------------------------ remove_loop


class RemoveLoopUsesIterError(SchedulingError):
    """remove_loop, precondition 1: the body uses the loop variable."""


class RemoveLoopNotIdempotentError(SchedulingError):
    """remove_loop, precondition 2: the body is not provably idempotent."""


@prim_cursors
class RemoveLoopCursors(PrimCursors):
    """What ``remove_loop`` returns.

    Attributes:
        body: the former body (inside the guard ``if hi > lo`` when one was needed).
    """

    body: BlockCursor


@primitive
def remove_loop(
    proc: Proc, loop: ForCursor, unsafe_skip_checks: bool = False
) -> Rewrite[RemoveLoopCursors]:
    """Remove a loop whose body does the same thing in every iteration.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor or a loop name).
        unsafe_skip_checks: skip precondition 2 (you promise the body is idempotent).

    Returns:
        The new proc and ``RemoveLoopCursors``:
        ``body``: the block of the former body statements.

    Preconditions:
        1. the body does not use the loop variable (``RemoveLoopUsesIterError``).
        2. the body is idempotent: it reduces into no outside buffer and reads no buffer it
           writes (``RemoveLoopNotIdempotentError``, from
           ``cursched.analysis.checks_loops.check_idempotent``).
        When ``lo < hi`` is not proven, the body is kept under a guard ``if hi > lo:`` (as in
        Exo) so that a loop that ran no iteration still does nothing.

    Forwards/Kills:
        Kills the loop (hint: "removed by remove_loop; use .body"); the body statements keep
        their identity.

    Example:
        ``remove_loop(p, "i")`` (with ``n`` a size, so the loop runs)::

            for i in seq(0, n):        ->    x[0] = 0.0
                x[0] = 0.0
    """
    name = "remove_loop"
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    uses = {sym for e in walk_exprs(L.body) for sym in free_syms_expr(e)}
    if L.iter in uses:
        msg = f"the body uses the loop variable {L.iter.name}"
        raise fail(RemoveLoopUsesIterError, name, msg, loop)
    if not unsafe_skip_checks:
        try:
            check_idempotent(ir, _body_paths(loop), primitive=name)
        except NotIdempotentError as e:
            raise safety(RemoveLoopNotIdempotentError, name, e, loop) from e
    try:
        check_le(ir, path, L.lo, L.hi, strict=True)
        new: tuple[Stmt, ...] = L.body
        guarded = False
    except NotBoundedError:
        new = (If(BinOp(">", L.hi, L.lo, BOOL), L.body, ()),)
        guarded = True
    ed = Editor(ir)
    out = ed.replace(loop.as_block().block(), new, hint="removed by remove_loop; use .body")
    if guarded:
        g = out.stmt_paths()[0]
        body = BlockLoc(g, "body", 0, len(L.body))
    else:
        body = out
    return ed.done(RemoveLoopCursors, body=body)


# --------------------------------------------------------------------------------- add_loop


class AddLoopNameError(SchedulingError):
    """add_loop, precondition 1: the new name is not an identifier."""


class AddLoopBoundError(SchedulingError):
    """add_loop, precondition 3: the new loop's upper bound is not provably positive."""


class AddLoopNotIdempotentError(SchedulingError):
    """add_loop, precondition 4: the block is not provably idempotent (and no guard)."""


class AddLoopScopeError(SchedulingError):
    """add_loop, precondition 5: the block declares names that later statements use."""


@prim_cursors
class AddLoopCursors(PrimCursors):
    """What ``add_loop`` returns.

    Attributes:
        loop: the new loop.
        guard: the ``if name == 0:`` inside it (``guard=True``); invalid otherwise.
    """

    loop: ForCursor
    guard: IfCursor | Cursor


@primitive
def add_loop(
    proc: Proc,
    block: BlockCursor,
    name: str,
    hi: Any,
    guard: bool = False,
    unsafe_skip_checks: bool = False,
) -> Rewrite[AddLoopCursors]:
    """Wrap a block in a new loop ``for name in seq(0, hi)``.

    Args:
        proc: the proc to rewrite.
        block: the statements to wrap (a block, a statement or a pattern).
        name: the new loop's iteration variable.
        hi: the upper bound: an int, an integer control expression or its text (``"n"``).
        guard: run the block only in iteration 0 (``if name == 0:``), as in Exo; then the
            block need not be idempotent.
        unsafe_skip_checks: skip precondition 4 (you promise the block is idempotent).

    Returns:
        The new proc and ``AddLoopCursors``:
        ``loop``: the new loop; ``guard``: the ``if`` inside it, or an invalid cursor.

    Preconditions:
        1. ``name`` is an identifier (``AddLoopNameError``).
        2. ``hi`` is a quasi-affine expression of the sizes and enclosing loop variables
           (``BadIndexExpressionError``).
        3. ``hi > 0`` is proven (``AddLoopBoundError``, with a counterexample): otherwise the
           block would not run at all.
        4. without ``guard``, the block is idempotent (``AddLoopNotIdempotentError``).
        5. the block declares no allocation or window used after it
           (``AddLoopScopeError``).

    Forwards/Kills:
        ``block`` forwards to the loop's body (inside the guard); its statements keep their
        identity. Nothing dies.

    Example:
        ``add_loop(p, "x[0] = _", "i", "n")``::

            x[0] = 0.0           ->    for i in seq(0, n):
                                           x[0] = 0.0
    """
    prim = "add_loop"
    ir, loc = proc.ir(), block.block()
    first = block.paths()[0]
    if not valid_name(name):
        raise fail(AddLoopNameError, prim, f"{name!r} is not a valid name", block)
    bound = index_expr(ir, first, hi, prim, block, "upper bound")
    try:
        check_le(ir, first, 1, bound, primitive=prim)
    except NotBoundedError as e:
        raise safety(AddLoopBoundError, prim, e, block) from e
    if not guard and not unsafe_skip_checks:
        try:
            check_idempotent(ir, block.paths(), primitive=prim)
        except NotIdempotentError as e:
            raise safety(AddLoopNotIdempotentError, prim, e, block) from e
    hidden = escaping_names(ir, loc)
    if hidden:
        names = ", ".join(sorted(s.name for s in hidden))
        msg = f"the block declares {names}, used after it"
        raise fail(AddLoopScopeError, prim, msg, block)
    it = Sym(name)

    def make(stmts: tuple[Stmt, ...]) -> Stmt:
        if guard:
            first_iter = BinOp("==", Read(it, (), INDEX), int_const(0), BOOL)
            stmts = (If(first_iter, stmts, ()),)
        return For(it, int_const(0), bound, stmts)

    ed = Editor(ir)
    at = ed.wrap(loc, make)
    g = NodeLoc((*at.path, ("body", 0))) if guard else NoLoc("add_loop made no guard")
    return ed.done(AddLoopCursors, loop=at, guard=g)


# ------------------------------------------------------------------------- parallelize_loop


class ParallelizeRaceError(SchedulingError):
    """parallelize_loop, precondition 1: two iterations may touch one element (a race)."""


@prim_cursors
class ParallelizeLoopCursors(PrimCursors):
    """What ``parallelize_loop`` returns.

    Attributes:
        loop: the loop, now ``par``.
    """

    loop: ForCursor


@primitive
def parallelize_loop(proc: Proc, loop: ForCursor) -> Rewrite[ParallelizeLoopCursors]:
    """Make a loop parallel (``par``; an OpenMP loop in C).

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor or a loop name).

    Returns:
        The new proc and ``ParallelizeLoopCursors``:
        ``loop``: the ``par`` loop.

    Preconditions:
        1. no two different iterations touch one element with a write or a reduction
           against any other access (``ParallelizeRaceError``, proven by
           ``cursched.analysis.checks.check_parallel``, with a counterexample); buffers
           allocated in the body are private to an iteration.

    Forwards/Kills:
        ``loop`` forwards to ``loop``; everything inside keeps its identity. Nothing dies.

    Example:
        ``parallelize_loop(p, "i")``::

            for i in seq(0, n):        ->    for i in par(0, n):
                y[i] = x[i]                      y[i] = x[i]
    """
    name = "parallelize_loop"
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    try:
        check_parallel(ir, path, primitive=name)
    except ParallelError as e:
        raise safety(ParallelizeRaceError, name, e, loop) from e
    ed = Editor(ir)
    out = ed.replace(loop.as_block().block(), (L.replace(mode="par"),))
    return ed.done(ParallelizeLoopCursors, loop=NodeLoc(out.stmt_paths()[0]))


__all__ = [
    "AddLoopBoundError",
    "AddLoopNameError",
    "AddLoopNotIdempotentError",
    "AddLoopScopeError",
    "MultBoundsError",
    "MultNameError",
    "MultNotNestedError",
    "ParallelizeRaceError",
    "RemoveLoopNotIdempotentError",
    "RemoveLoopUsesIterError",
    "UnrollNotConstantError",
    "add_loop",
    "mult_loops",
    "parallelize_loop",
    "remove_loop",
    "unroll_loop",
]
