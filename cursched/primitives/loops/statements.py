"""Statement primitives: ``insert_pass``, ``delete_pass``, ``reorder_stmts``.

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``): the
framework coerces and forwards the cursor arguments, records the step and verifies the result.
"""

from __future__ import annotations

from cursched.analysis.checks import check_commute
from cursched.cursors import (
    BlockCursor,
    BlockLoc,
    Editor,
    GapCursor,
    NodeLoc,
    PassCursor,
    StmtCursor,
)
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import stmt_list, walk_stmts
from cursched.errors import DependenceError, SchedulingError, ShapeMismatchError
from cursched.ir.nodes import Pass
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ------------------------------------------------------------------------------ insert_pass


@prim_cursors
class InsertPassCursors(PrimCursors):
    """What ``insert_pass`` returns.

    Attributes:
        stmt: the new ``pass`` statement.
    """

    stmt: PassCursor


@primitive
def insert_pass(proc: Proc, gap: GapCursor) -> Rewrite[InsertPassCursors]:
    """Insert a ``pass`` statement at a gap.

    Args:
        proc: the proc to rewrite.
        gap: where to insert (``c.before()``, ``c.after()``).

    Returns:
        The new proc and ``InsertPassCursors``:
        ``stmt``: the new ``pass``.

    Preconditions:
        1. ``gap`` is a gap cursor of ``proc`` or of an ancestor version (always satisfiable;
           a wrong cursor raises a ``CursorError``).

    Forwards/Kills:
        Every statement keeps its identity; ``gap`` forwards to the same gap (still next to
        its anchor statement). Nothing dies.

    Example:
        ``insert_pass(p, p.find("x = _").after())``::

            x = 1.0            ->    x = 1.0
            y = 2.0                  pass
                                     y = 2.0
    """
    checks_passed()
    ed = Editor(proc.ir())
    new = ed.insert(gap.gap(), (Pass(),))
    return ed.done(InsertPassCursors, stmt=NodeLoc(new.stmt_paths()[0]))


# ------------------------------------------------------------------------------ delete_pass


class NotAPassError(ShapeMismatchError):
    """delete_pass, precondition 1: the statement is not ``pass``."""


class EmptyBodyError(ShapeMismatchError):
    """delete_pass, precondition 2: the ``pass`` is the only statement of its body."""


@prim_cursors
class DeletePassCursors(PrimCursors):
    """What ``delete_pass`` returns: no cursors."""


@primitive
def delete_pass(proc: Proc, stmt: StmtCursor | None = None) -> Rewrite[DeletePassCursors]:
    """Delete a ``pass`` statement, or (without ``stmt``, as Exo's ``delete_pass(p)``) every
    ``pass`` that is not needed to keep a body non-empty.

    Args:
        proc: the proc to rewrite.
        stmt: the ``pass`` (a cursor or a pattern such as ``"pass #1"``); ``None`` for all.

    Returns:
        The new proc and ``DeletePassCursors`` (no fields).

    Preconditions:
        1. ``stmt`` is a ``pass`` (``NotAPassError``).
        2. it is not the only statement of its body, which would become empty
           (``EmptyBodyError``). Without ``stmt``, a body made only of ``pass`` keeps its
           first one (a body of the language is never empty).

    Forwards/Kills:
        Kills the deleted ``pass`` statements (hint: "deleted by delete_pass"); every other
        statement keeps its identity. Gaps anchored to them die with them.

    Example:
        ``delete_pass(p, "pass")``::

            x = 1.0            ->    x = 1.0
            pass                     y = 2.0
            y = 2.0
    """
    if stmt is None:
        return _delete_all_passes(proc)
    if not isinstance(stmt, PassCursor):
        raise fail(NotAPassError, "delete_pass", f"{stmt.describe()} is not `pass`", stmt)
    block = stmt.as_block().block()
    if len(stmt_list(proc.ir(), block.parent, block.attr)) == 1:
        raise fail(
            EmptyBodyError,
            "delete_pass",
            "the `pass` is the only statement of its body, which would become empty",
            stmt,
        )
    checks_passed()
    ed = Editor(proc.ir())
    ed.delete(block, hint="deleted by delete_pass")
    return ed.done(DeletePassCursors)


def _delete_all_passes(proc: Proc) -> Rewrite[DeletePassCursors]:
    ir = proc.ir()
    doomed: list[BlockLoc] = []
    for path, s in walk_stmts(ir.body, ()):
        if not isinstance(s, Pass):
            continue
        *parent, (attr, k) = path
        body = stmt_list(ir, tuple(parent), attr)
        first_pass = next(j for j, x in enumerate(body) if isinstance(x, Pass))
        if all(isinstance(x, Pass) for x in body) and k == first_pass:
            continue  # keeps the body non-empty
        doomed.append(BlockLoc(tuple(parent), attr, k, k + 1))
    ed = Editor(ir)
    # last first: deleting a statement shifts the positions of the ones after it only
    for loc in reversed(doomed):
        ed.delete(loc, hint="deleted by delete_pass")
    return ed.done(DeletePassCursors)


# ---------------------------------------------------------------------------- reorder_stmts


class NotTwoStatementsError(ShapeMismatchError):
    """reorder_stmts, precondition 1: the block does not hold exactly two statements."""


class StmtsDontCommuteError(DependenceError):
    """reorder_stmts, precondition 2: swapping the statements could change the result."""


@prim_cursors
class ReorderStmtsCursors(PrimCursors):
    """What ``reorder_stmts`` returns.

    Attributes:
        first: the statement now first (the old second).
        second: the statement now second (the old first).
    """

    first: StmtCursor
    second: StmtCursor


@primitive
def reorder_stmts(
    proc: Proc, block: BlockCursor, unsafe_skip_checks: bool = False
) -> Rewrite[ReorderStmtsCursors]:
    """Swap two consecutive statements.

    Args:
        proc: the proc to rewrite.
        block: the two statements (a block cursor, ``s.expand(0, 1)``, or a sequence pattern
            such as ``"x = _; y = _"``).
        unsafe_skip_checks: skip precondition 2 (you promise the statements commute).

    Returns:
        The new proc and ``ReorderStmtsCursors``:
        ``first``: the statement now first (the old second);
        ``second``: the statement now second (the old first).

    Preconditions:
        1. ``block`` holds exactly two statements (``NotTwoStatementsError``).
        2. they commute: neither uses a name the other defines, and no write of one conflicts
           with a read or write of the other (``StmtsDontCommuteError``, proven by
           ``cursched.analysis.checks.check_commute``; its error is the ``__cause__``).

    Forwards/Kills:
        Both statements keep their identity (cursors to them follow them); ``block`` forwards
        to the block of the two, in their new order. Nothing dies.

    Example:
        ``reorder_stmts(p, "x = _; y = _")``::

            x = 1.0            ->    y = 2.0
            y = 2.0                  x = 1.0
    """
    loc = block.block()
    if len(block) != 2:
        raise fail(
            NotTwoStatementsError,
            "reorder_stmts",
            f"wants a block of exactly two statements, got {len(block)}",
            block,
        )
    if not unsafe_skip_checks:
        a, b = block.paths()
        try:
            check_commute(proc.ir(), (a,), (b,))
        except SchedulingError as e:
            why = [ln.strip() for ln in str(e).splitlines()[:2] if ln.strip()]
            why = [why[0], *(ln for ln in why[1:] if ln.startswith("counterexample"))]
            raise fail(
                StmtsDontCommuteError,
                "reorder_stmts",
                "the two statements may not commute: " + "; ".join(why),
                block,
            ) from e
    checks_passed()
    ed = Editor(proc.ir())
    moved = ed.move(
        BlockLoc(loc.parent, loc.attr, loc.lo + 1, loc.hi), (loc.parent, loc.attr, loc.lo)
    )
    first, second = moved.stmt_paths()[0], (*loc.parent, (loc.attr, loc.lo + 1))
    return ed.done(ReorderStmtsCursors, first=NodeLoc(first), second=NodeLoc(second))
