"""Barriers: ``insert_barrier`` places one ``sync_threads()``, ``insert_barriers`` every one a
kernel needs.

Barriers are statements of the IR (``cursched.ir.barrier``): the code generators insert none
of their own, so what runs is what prints, and the barrier checker
(``cursched.analysis.races``) proves at compile time that the ones there are enough.
"""

from __future__ import annotations

from cursched.analysis.kernels import is_thread_loop, scope_of
from cursched.analysis.races import Race, kernel_race
from cursched.cursors import Editor, GapCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.stmts import CallCursor, StmtCursor
from cursched.cursors.tree import walk_stmts
from cursched.errors import RaceError, ShapeMismatchError
from cursched.ir.barrier import barrier
from cursched.ir.nodes import Scope
from cursched.ir.paths import Path, get_at
from cursched.primitives.registry import (
    PrimCursors,
    checks_passed,
    fail,
    prim_cursors,
    primitive,
)
from cursched.proc import Proc

# --------------------------------------------------------------------------- insert_barrier


class BarrierOutsideKernelError(ShapeMismatchError):
    """insert_barrier, precondition 1: the gap is not inside a ``target="cuda"`` scope."""


class BarrierDivergentError(ShapeMismatchError):
    """insert_barrier, precondition 2: the gap is inside a thread loop (thread-divergent)."""


@prim_cursors
class InsertBarrierCursors(PrimCursors):
    """What ``insert_barrier`` returns.

    Attributes:
        barrier: the new ``sync_threads()``.
    """

    barrier: CallCursor


@primitive
def insert_barrier(proc: Proc, gap: GapCursor) -> Rewrite[InsertBarrierCursors]:
    """Insert one block barrier ``sync_threads()`` at a gap of a kernel.

    Args:
        proc: the proc to rewrite.
        gap: where (``c.before()``, ``c.after()``), at the uniform level of a cuda scope.

    Returns:
        The new proc and ``InsertBarrierCursors``:
        ``barrier``: the new barrier statement.

    Preconditions:
        1. the gap is inside a ``target="cuda"`` scope (``BarrierOutsideKernelError``).
        2. it is not inside a thread loop, where only some threads would reach it
           (``BarrierDivergentError``).

    Forwards/Kills:
        Every statement keeps its identity; ``gap`` forwards to the same gap. Nothing dies.
        A barrier changes no value (the interpreter runs it as ``pass``).

    Example:
        ``insert_barrier(p, p.find_loop("t #1").before())``::

            for t in par(0, 64, axis="threadIdx.x"):  ->  for t in par(0, 64, ...):
                s[t] = x[t]                                  s[t] = x[t]
            for t in par(0, 64, axis="threadIdx.x"):      sync_threads()
                y[t] = s[63 - t]                           for t in par(0, 64, ...):
                                                               y[t] = s[63 - t]
    """
    ir = proc.ir()
    parent, attr, pos = gap.position()
    probe = (*parent, (attr, pos))  # a path at the gap: its ancestors are the gap's
    if scope_of(ir, probe) is None:
        raise fail(BarrierOutsideKernelError, "insert_barrier", "not inside a cuda scope", gap)
    for k in range(1, len(parent) + 1):
        if is_thread_loop(get_at(ir, parent[:k])):
            msg = "inside a thread loop: only some threads would reach the barrier"
            raise fail(BarrierDivergentError, "insert_barrier", msg, gap)
    checks_passed()
    ed = Editor(ir)
    new = ed.insert(gap.gap(), (barrier(),))
    return ed.done(InsertBarrierCursors, barrier=NodeLoc(new.stmt_paths()[0]))


# -------------------------------------------------------------------------- insert_barriers


class NotAKernelError(ShapeMismatchError):
    """insert_barriers, precondition 1: the statement is not a ``target="cuda"`` scope."""


class BarriersUnfixableError(RaceError):
    """insert_barriers, precondition 2: the kernel has a problem no barrier fixes (a barrier
    inside a thread loop, or a SHARED/GLOBAL write outside every thread loop)."""


@prim_cursors
class InsertBarriersCursors(PrimCursors):
    """What ``insert_barriers`` returns.

    Attributes:
        barriers: the new barriers, in program order (empty when none was needed).
    """

    barriers: tuple[CallCursor, ...]


def _barrier_gap(race: Race) -> tuple[Path, str, int]:
    """Where ``insert_barriers`` puts the barrier ordering ``race``: before the statement of
    the innermost block holding both accesses that holds the later one (for a race within
    one iteration), else before the later access's thread loop or statement."""
    first, second = race.first_path, race.second_path
    *parent, (attr, pos) = second
    if race.carried:  # the later access comes first in the loop body: order it there
        return tuple(parent), attr, pos
    n = 0
    while n < min(len(first), len(second)) and first[n] == second[n]:
        n += 1
    # diverging in one block, the earlier access in an earlier statement of it
    diverge = n < min(len(first), len(second)) and first[n][0] == second[n][0]
    if diverge and first[n][1] < second[n][1]:
        return tuple(second[:n]), second[n][0], second[n][1]
    return tuple(parent), attr, pos


@primitive
def insert_barriers(proc: Proc, scope: StmtCursor) -> Rewrite[InsertBarriersCursors]:
    """Insert every barrier a kernel needs, and no more.

    A barrier is needed where a SHARED (or GLOBAL) element written by one thread is read or
    overwritten by another, including across iterations of a serial loop at the block level
    (the next tile's load after this tile's reads). Each race found by the barrier checker
    gets a barrier right before the later access's thread loop, the latest point that orders
    it, or, when block-level serial loops (or ``if``s) hold the later access but not the
    earlier one, right before the outermost of them, so that it runs once instead of once
    per iteration; the checker then runs again, so one barrier serves every race it orders.

    Args:
        proc: the proc to rewrite.
        scope: the kernel (``p.find_scope(name)``, a cursor or a pattern).

    Returns:
        The new proc and ``InsertBarriersCursors``:
        ``barriers``: the new ``sync_threads()`` statements.

    Preconditions:
        1. ``scope`` is a ``target="cuda"`` scope (``NotAKernelError``).
        2. the kernel has no barrier inside a thread loop and no SHARED/GLOBAL write outside
           every thread loop (``BarriersUnfixableError``).

    Forwards/Kills:
        Every statement keeps its identity. Nothing dies.

    Example:
        ``insert_barriers(p, p.find_scope("k"))``::

            for t in par(0, 64, axis="threadIdx.x"):  ->  for t in par(0, 64, ...):
                s[t] = x[t]                                  s[t] = x[t]
            for t in par(0, 64, axis="threadIdx.x"):      sync_threads()
                y[t] = s[63 - t]                           for t in par(0, 64, ...):
                                                               y[t] = s[63 - t]
    """
    node = scope.node()
    if not (isinstance(node, Scope) and node.target == "cuda"):
        msg = f"{scope.describe()} is not a scope with target='cuda'"
        raise fail(NotAKernelError, "insert_barriers", msg, scope)
    path = scope.path()
    ed = Editor(proc.ir())
    made: set[int] = set()
    while True:
        kernel = get_at(ed.ir, path)
        w = kernel_race(ed.ir, path, kernel)
        if w.divergent is not None or w.uniform_write is not None:
            why = "a barrier inside a thread loop" if w.divergent else "a write by every thread"
            msg = f"kernel {node.name} has {why}; no barrier fixes that"
            raise fail(BarriersUnfixableError, "insert_barriers", msg, scope)
        if w.race is None:
            break
        b = barrier()
        made.add(id(b))
        ed.insert(_barrier_gap(w.race), (b,))
    found = [NodeLoc(p) for p, s in walk_stmts(get_at(ed.ir, path).body, path) if id(s) in made]
    return ed.done(InsertBarriersCursors, barriers=tuple(found))
