"""``add_unsafe_guard``: wrap a block in an ``if`` (Exo 1.0's primitive of that name).

Exo adds the guard without any check (hence the name). cursched keeps the name and the
arguments so that Exo schedules run, but, as for every primitive (docs/architecture.md, contract 7),
proves that the condition holds wherever the block runs, unless the caller passes
``unsafe_skip_checks=True``. A guard proven redundant is still useful: later primitives
(``lift_scope``, ``fission``, ``specialize``) and hand-written instructions may want the
condition spelled out as a statement.

Registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

from typing import Any

from cursched.analysis.conditions import ConditionError, check_always
from cursched.cursors import BlockCursor, BlockLoc, Editor
from cursched.cursors.edits import Rewrite
from cursched.cursors.stmts import IfCursor
from cursched.errors import BadArgumentError, NotProvenError, ScopeError
from cursched.ir.nodes import Expr, If, Stmt
from cursched.primitives.loops.loop_common import safety
from cursched.primitives.loops.loop_wrap import escaping_names
from cursched.primitives.loops.scopes import SpecializeBadConditionError, condition_expr
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc


class GuardConditionError(BadArgumentError):
    """add_unsafe_guard, precondition 1: the condition is not a control condition over the
    names visible at the block."""


class GuardScopeError(ScopeError):
    """add_unsafe_guard, precondition 2: the block declares names that later statements use."""


class GuardNotAlwaysTrueError(NotProvenError):
    """add_unsafe_guard, precondition 3: the condition may be false where the block runs."""


@prim_cursors
class AddUnsafeGuardCursors(PrimCursors):
    """What ``add_unsafe_guard`` returns.

    Attributes:
        guard: the new ``if``.
        body: the block inside it (the former block).
    """

    guard: IfCursor
    body: BlockCursor


def _check_condition(proc: Proc, block: BlockCursor, cond: Any) -> Expr:
    try:
        return condition_expr(proc.ir(), block.paths()[0], cond, "add_unsafe_guard", block)
    except SpecializeBadConditionError as e:
        msg = str(e).removeprefix("add_unsafe_guard: ").splitlines()[0]
        raise fail(GuardConditionError, "add_unsafe_guard", msg, block) from e


def _check_scope(proc: Proc, block: BlockCursor) -> None:
    hidden = escaping_names(proc.ir(), block.block())
    if hidden:
        names = ", ".join(sorted(s.name for s in hidden))
        msg = f"the block declares {names}, used after it"
        raise fail(GuardScopeError, "add_unsafe_guard", msg, block)


def _check_always_true(proc: Proc, block: BlockCursor, cond: Expr) -> None:
    try:
        check_always(proc.ir(), block.paths()[0], cond, primitive="add_unsafe_guard")
    except ConditionError as e:
        raise safety(GuardNotAlwaysTrueError, "add_unsafe_guard", e, block) from e


@primitive
def add_unsafe_guard(
    proc: Proc, block: BlockCursor, cond: Any, unsafe_skip_checks: bool = False
) -> Rewrite[AddUnsafeGuardCursors]:
    """Wrap a block in ``if cond:``.

    Args:
        proc: the proc to rewrite.
        block: the statements to guard (a block, a statement or a pattern).
        cond: the condition: its text (``"i < n"``), a bool control expression or an
            expression cursor of this version.
        unsafe_skip_checks: skip precondition 3 (Exo's behaviour: you promise that the
            condition holds wherever the block runs, or that the block does nothing where it
            does not).

    Returns:
        The new proc and ``AddUnsafeGuardCursors``:
        ``guard``: the new ``if``; ``body``: the former block inside it.

    Preconditions:
        1. ``cond`` is a comparison of quasi-affine expressions over the sizes and enclosing
           loop variables, a bool parameter, or ``and``/``or`` of those
           (``GuardConditionError``).
        2. the block declares no allocation or window used after it (``GuardScopeError``).
        3. ``cond`` holds wherever the block runs (``GuardNotAlwaysTrueError``, proven by
           ``cursched.analysis.conditions.check_always``, with a counterexample).

    Forwards/Kills:
        ``block`` forwards to ``body``; its statements keep their identity. Nothing dies.

    Example:
        ``add_unsafe_guard(p, "x[_] = _", "i < n")``::

            for i in seq(0, n):       ->    for i in seq(0, n):
                x[i] = 0.0                      if i < n:
                                                    x[i] = 0.0
    """
    e = _check_condition(proc, block, cond)
    _check_scope(proc, block)
    if not unsafe_skip_checks:
        _check_always_true(proc, block, e)
    loc = block.block()

    def make(stmts: tuple[Stmt, ...]) -> Stmt:
        return If(e, stmts, ())

    ed = Editor(proc.ir())
    at = ed.wrap(loc, make)
    return ed.done(AddUnsafeGuardCursors, guard=at, body=BlockLoc(at.path, "body", 0, len(block)))


__all__ = [
    "AddUnsafeGuardCursors",
    "GuardConditionError",
    "GuardNotAlwaysTrueError",
    "GuardScopeError",
    "add_unsafe_guard",
]
