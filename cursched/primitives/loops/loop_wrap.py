"""Primitives that put a loop around a block or take it away: ``remove_loop`` and
``add_loop`` (issue 6, part B), with the helpers they share with ``specialize``.

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``); the
semantics follow Exo 1.0's primitives of the same names: the block must be idempotent
(``cursched.analysis.checks_loops.check_idempotent``) unless a guard makes it run once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from cursched.analysis import affine as af
from cursched.analysis.checks import (
    NotBoundedError,
    check_le,
)
from cursched.analysis.checks_loops import NotIdempotentError, check_idempotent
from cursched.cursors import BlockCursor, BlockLoc, Editor, ForCursor, NodeLoc, NoLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.kinds import Cursor
from cursched.cursors.stmts import IfCursor
from cursched.cursors.tree import stmt_list
from cursched.errors import (
    BadNameError,
    NotProvenError,
    ScopeError,
    ShapeMismatchError,
)
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Expr,
    For,
    If,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import defined_syms, free_syms_expr, walk_exprs, walk_stmts
from cursched.ir.types import BOOL, INDEX
from cursched.primitives.arguments import Index, NewName, name_problem
from cursched.primitives.loops.loop_common import (
    aff,
    expr_of,
    fresh_copy,
    int_const,
    safety,
)
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------- helpers


def valid_name(name: object) -> bool:
    """Whether ``name`` can name a new variable (``arguments.name_problem`` finds nothing)."""
    return name_problem(name) is None


def fresh(
    stmts: Sequence[Stmt],
    env: Mapping[Sym, Expr] | None = None,
    ranges: Mapping[Sym, af.Bound] | None = None,
) -> tuple[Stmt, ...]:
    """``loop_common.fresh_copy`` with the new symbols made in program order, so that the
    copies' affine normal forms order their terms as the original's do (``16 * io + ii``,
    never ``ii + 16 * io``): terms are ordered by symbol creation."""
    syms: set[Sym] = set()
    for s in stmts:
        syms |= defined_syms(s)
    order: dict[Sym, Expr | Sym] = {x: x.copy() for x in sorted(syms, key=lambda x: x.id)}
    return fresh_copy(stmts, {**order, **(env or {})}, ranges)


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


def positive(d: af.Aff) -> Expr:
    """The condition ``d > 0`` as a reader would write it: positive terms on the left,
    negative ones on the right, the constant on the side where it is positive
    (``m - 2 > 0`` reads ``m > 2``)."""
    pos = af.Aff(tuple(t for t in d.terms if t[1] > 0), max(d.const, 0))
    neg = af.Aff(tuple((a, -c) for a, c in d.terms if c < 0), max(-d.const, 0))
    return BinOp(">", expr_of(pos), expr_of(neg), BOOL)


def _body_paths(loop: ForCursor) -> tuple[tuple[tuple[str, int], ...], ...]:
    return tuple((*loop.path(), ("body", k)) for k in range(len(loop.loop().body)))


# ------------------------------------------------------------------------------ remove_loop


class RemoveLoopUsesIterError(ShapeMismatchError):
    """remove_loop, precondition 1: the body uses the loop variable."""


class RemoveLoopNotIdempotentError(NotProvenError):
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
        2. the body is idempotent: every element it reads or reduces into, of a buffer it
           writes, was written before in the same run (``RemoveLoopNotIdempotentError``, from
           ``cursched.analysis.checks_loops.check_idempotent``).
        When ``lo < hi`` is not proven, the body is kept under a guard ``if hi > lo:`` (as in
        Exo; written simplified, ``if m > 2:`` for ``seq(0, m - 2)``) so that a loop that ran
        no iteration still does nothing.

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
        new = (If(positive(aff(L.hi) - aff(L.lo)), L.body, ()),)
        guarded = True
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(loop.as_block().block(), new, hint="removed by remove_loop; use .body")
    if guarded:
        g = out.stmt_paths()[0]
        body = BlockLoc(g, "body", 0, len(L.body))
    else:
        body = out
    return ed.done(RemoveLoopCursors, body=body)


# --------------------------------------------------------------------------------- add_loop


class AddLoopNameError(BadNameError):
    """add_loop, precondition 1: the new name is not an identifier."""


class AddLoopBoundError(NotProvenError):
    """add_loop, precondition 3: the new loop's upper bound is not provably positive."""


class AddLoopNotIdempotentError(NotProvenError):
    """add_loop, precondition 4: the block is not provably idempotent (and no guard)."""


class AddLoopScopeError(ScopeError):
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
    name: Annotated[str, NewName(AddLoopNameError, at="block")],
    hi: Annotated[Any, Index(at="block", what="upper bound")],
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
    bound = hi  # resolved by the registry (arguments.Index)
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

    checks_passed()
    ed = Editor(ir)
    at = ed.wrap(loc, make)
    g = NodeLoc((*at.path, ("body", 0))) if guard else NoLoc("add_loop made no guard")
    return ed.done(AddLoopCursors, loop=at, guard=g)


__all__ = [
    "AddLoopBoundError",
    "AddLoopNameError",
    "AddLoopNotIdempotentError",
    "AddLoopScopeError",
    "RemoveLoopNotIdempotentError",
    "RemoveLoopUsesIterError",
    "add_loop",
    "escaping_names",
    "fresh",
    "positive",
    "remove_loop",
    "valid_name",
]
