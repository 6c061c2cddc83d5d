"""Primitives on control scopes: ``lift_scope``, ``specialize``, ``eliminate_dead_code``
(issue 6, part B).

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``); the
semantics follow Exo 1.0's primitives of the same names.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Annotated, Any

from cursched.analysis.checks import (
    NotBoundedError,
    ReorderLoopsError,
    check_le,
    check_reorder_loops,
)
from cursched.analysis.conditions import decide_condition
from cursched.cursors import BlockCursor, BlockLoc, Editor, ForCursor, NodeLoc, NoLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.kinds import Cursor
from cursched.cursors.stmts import IfCursor, StmtCursor
from cursched.cursors.tree import iter_nodes, stmt_list
from cursched.errors import (
    BadArgumentError,
    DependenceError,
    NotProvenError,
    ScopeError,
    ShapeMismatchError,
)
from cursched.ir.nodes import Expr, For, If, Pass, ProcDef, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.traversal import free_syms_expr, subst_stmt, walk_expr
from cursched.primitives.arguments import Condition, Conditions
from cursched.primitives.arguments import condition_expr as _condition_expr
from cursched.primitives.loops.copies import shared_copies
from cursched.primitives.loops.loop_common import safety, same_pairs
from cursched.primitives.loops.loop_wrap import escaping_names, fresh
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ------------------------------------------------------------------------------ lift_scope


class LiftNotScopeError(ShapeMismatchError):
    """lift_scope, precondition 1: the statement is not a loop or an ``if``."""


class LiftNoParentError(ShapeMismatchError):
    """lift_scope, precondition 2: the statement is not directly inside a loop or an ``if``."""


class LiftNotAloneError(ShapeMismatchError):
    """lift_scope, precondition 3: the statement is not alone in its enclosing block."""


class LiftConditionUsesLoopError(ShapeMismatchError):
    """lift_scope, precondition 4: an ``if`` lifted out of a loop tests the loop variable."""


class LiftLoopFromElseError(ShapeMismatchError):
    """lift_scope, precondition 5: a loop cannot leave an ``if`` that has an ``else``."""


class LiftReorderError(DependenceError):
    """lift_scope, precondition 6: a loop lifted out of a loop cannot be interchanged."""


@prim_cursors
class LiftScopeCursors(PrimCursors):
    """What ``lift_scope`` returns.

    Attributes:
        outer: the lifted statement, now enclosing its former parent.
        inner: the former parent, now inside ``outer``'s body (the copy in the ``if``'s
            body when the parent was split in two).
        orelse: the copy of the former parent in ``outer``'s ``else``; invalid when there
            is none.
    """

    outer: ForCursor | IfCursor
    inner: ForCursor | IfCursor
    orelse: ForCursor | IfCursor | Cursor


def _if_or(cond: Expr, body: tuple[Stmt, ...], orelse: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``if cond: body else: orelse`` as a block (``pass`` fills an empty ``body``)."""
    if not body and not orelse:
        return ()
    return (If(cond, body or (Pass(),), orelse),)


@primitive
def lift_scope(proc: Proc, scope: StmtCursor) -> Rewrite[LiftScopeCursors]:
    """Lift a loop or an ``if`` out of the loop or ``if`` that directly encloses it.

    Args:
        proc: the proc to rewrite.
        scope: the inner loop or ``if`` (a cursor or a pattern).

    Returns:
        The new proc and ``LiftScopeCursors``:
        ``outer``: the lifted statement; ``inner``: the former parent inside it;
        ``orelse``: the former parent's copy in the ``else`` branch, or an invalid cursor.

    Preconditions:
        1. ``scope`` is a loop or an ``if`` (``LiftNotScopeError``).
        2. its parent is a loop or an ``if`` (``LiftNoParentError``).
        3. it is the only statement of its parent's block (``LiftNotAloneError``).
        4. an ``if`` lifted out of a loop does not test the loop variable
           (``LiftConditionUsesLoopError``).
        5. a loop is lifted only out of the body of an ``if`` without ``else``
           (``LiftLoopFromElseError``).
        6. a loop lifted out of a loop can be interchanged with it (``LiftReorderError``,
           proven by ``check_reorder_loops``, with a counterexample).

    The four cases (``s3`` is the parent ``if``'s other branch, copied when needed)::

        for i: if c: s1 else: s2      ->  if c: (for i: s1) else: (for i: s2)
        if a: (if c: s1 else: s2)     ->  if c: (if a: s1 else: s3) else: (if a: s2 else: s3)
             else: s3
        if a: for i: s                ->  for i: if a: s
        for i: for j: s               ->  for j: for i: s

    Forwards/Kills:
        ``scope`` forwards to ``outer``; the former parent to ``inner``; statements of the
        branches keep their identity (the second copy of a duplicated branch is fresh, so
        nothing forwards there). Nothing dies.

    Example:
        ``lift_scope(p, "if _: _")``::

            for i in seq(0, n):        ->    if n > 4:
                if n > 4:                        for i in seq(0, n):
                    x[i] = 0.0                       x[i] = 0.0
    """
    name = "lift_scope"
    ir, path, node = proc.ir(), scope.path(), scope.node()
    first: Stmt
    same: list[tuple[Stmt, Stmt | None]]
    if not isinstance(node, For | If):
        raise fail(LiftNotScopeError, name, f"{scope.describe()} is not a loop or an if", scope)
    parent_path, attr = path[:-1], path[-1][0]
    parent = get_at(ir, parent_path) if parent_path else None
    if not isinstance(parent, For | If):
        msg = "the statement is not directly inside a loop or an if"
        raise fail(LiftNoParentError, name, msg, scope)
    if len(getattr(parent, attr)) != 1:
        msg = "the statement is not the only one in its enclosing block"
        raise fail(LiftNotAloneError, name, msg, scope)
    match parent, node:
        case For(), If():
            if parent.iter in free_syms_expr(node.cond):
                msg = f"the condition uses the loop variable {parent.iter.name}"
                raise fail(LiftConditionUsesLoopError, name, msg, scope)
            first = parent.replace(body=node.body)
            second: tuple[Stmt, ...] = ()
            same = [(node, None), (parent, first)]
            if node.orelse:
                it2 = parent.iter.copy()
                body2 = tuple(subst_stmt(s, {parent.iter: it2}) for s in node.orelse)
                second = (For(it2, parent.lo, parent.hi, body2, parent.mode),)
                same += same_pairs(node.orelse, body2)
            new: Stmt = If(node.cond, (first,), second)
        case If(), If():
            s3 = parent.orelse if attr == "body" else parent.body
            copy3 = fresh(s3)
            if attr == "body":
                one = _if_or(parent.cond, node.body, s3)
                two = _if_or(parent.cond, node.orelse, copy3)
            else:
                one = _if_or(parent.cond, s3, node.body)
                two = _if_or(parent.cond, copy3, node.orelse)
            first = one[0]
            same = [(node, None), (parent, first)]
            new = If(node.cond, one, two)
        case If(), For():
            if attr != "body" or parent.orelse:
                msg = "a loop can only be lifted out of the body of an if without else"
                raise fail(LiftLoopFromElseError, name, msg, scope)
            first = parent.replace(body=node.body)
            same = [(parent, first)]
            new = node.replace(body=(first,))
        case For(), For():
            try:
                check_reorder_loops(ir, parent_path, primitive=name)
            except ReorderLoopsError as e:
                raise safety(LiftReorderError, name, e, scope) from e
            first = parent.replace(body=node.body)
            same = []
            new = node.replace(body=(first,))
        case _:
            raise AssertionError("unreachable: both are loops or ifs")
    pairs = [(a, new if b is None else b) for a, b in same]
    checks_passed()
    ed = Editor(ir)
    pattr, pk = parent_path[-1]
    out = ed.replace(BlockLoc(parent_path[:-1], pattr, pk, pk + 1), (new,), same=pairs)
    top = out.stmt_paths()[0]
    orelse: NodeLoc | NoLoc = NoLoc("lift_scope made no else branch")
    if isinstance(new, If) and new.orelse:
        orelse = NodeLoc((*top, ("orelse", 0)))
    return ed.done(
        LiftScopeCursors, outer=NodeLoc(top), inner=NodeLoc((*top, ("body", 0))), orelse=orelse
    )


# ------------------------------------------------------------------------------ specialize


class SpecializeNoConditionsError(BadArgumentError):
    """specialize, precondition 1: no condition was given."""


class SpecializeBadConditionError(BadArgumentError):
    """specialize, precondition 2: a condition is not a control condition over the names
    visible at the block."""


class SpecializeScopeError(ScopeError):
    """specialize, precondition 3: the block declares names that later statements use."""


@prim_cursors
class SpecializeCursors(PrimCursors):
    """What ``specialize`` returns.

    Attributes:
        branches: one ``if`` per condition, in order (each later one in the ``else`` of the
            one before).
        fallback: the copy of the block run when no condition holds.
    """

    branches: tuple[IfCursor, ...]
    fallback: BlockCursor


_CMP = {ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def condition_expr(ir: ProcDef, path: Path, value: Any, primitive: str, where: Cursor) -> Expr:
    """``arguments.condition_expr`` raising ``SpecializeBadConditionError``."""
    return _condition_expr(ir, path, value, primitive, where, SpecializeBadConditionError)


def _fresh_conditions(conds: Sequence[Expr], stmts: tuple[Stmt, ...]) -> bool:
    """Whether no condition shares a node with the block: then nothing of the block lives
    on in the ``if`` (its copies are fresh or shared by every copy), so the editor's search
    for survivors is skipped. A condition given as an expression cursor into the block is
    the old node, which that search forwards to its place in the ``if``. The block is
    walked as that search walks it (``cursors.tree.iter_nodes``), only when a condition was
    given as a node (``conds`` holds those: one parsed from text is built of new nodes)."""
    if not conds:
        return True
    ids = {id(x) for c in conds for x in walk_expr(c)}
    return not any(id(x) in ids for x in iter_nodes(stmts))


@primitive
def specialize(
    proc: Proc,
    block: BlockCursor,
    conds: Annotated[Any, Condition(SpecializeBadConditionError, at="block", many=True)],
) -> Rewrite[SpecializeCursors]:
    """Copy a block once per condition, each copy under its condition, plus a fallback.

    Args:
        proc: the proc to rewrite.
        block: the statements to specialize (a block, a statement or a pattern).
        conds: one condition or a sequence of them: text over the sizes, bool parameters and
            enclosing loop variables (``"n % 4 == 0"``), or bool control expressions.

    Returns:
        The new proc and ``SpecializeCursors``:
        ``branches``: one ``if`` per condition (``elif`` chain); ``fallback``: the block in
        the last ``else``.

    Preconditions:
        1. at least one condition (``SpecializeNoConditionsError``).
        2. each is a control condition over names visible at the block
           (``SpecializeBadConditionError``).
        3. the block declares no allocation or window used after it
           (``SpecializeScopeError``).
        Each copy is the same code, so the rewrite never changes behaviour.

    Forwards/Kills:
        Kills the block's statements and expressions (hint: "specialized; use
        .branches[k].body() or .fallback"): every copy holds new statements (sharing the
        block's expressions that read no symbol bound in it, which then occur in every
        copy), so no old cursor silently picks one branch. A condition given as an
        expression cursor into the block forwards to its ``if``'s condition.

    Example:
        ``specialize(p, "for i in _: _", "n == 4")``::

            for i in seq(0, n):        ->    if n == 4:
                x[i] = 0.0                       for i in seq(0, n):
                                                     x[i] = 0.0
                                             else:
                                                 for i in seq(0, n):
                                                     x[i] = 0.0
    """
    name = "specialize"
    ir, loc = proc.ir(), block.block()
    exprs: list[Expr] = list(conds)  # resolved by the registry (arguments.Condition)
    if not exprs:
        raise fail(SpecializeNoConditionsError, name, "no condition given", block)
    hidden = escaping_names(ir, loc)
    if hidden:
        names = ", ".join(sorted(s.name for s in hidden))
        raise fail(SpecializeScopeError, name, f"the block declares {names}, used after it", block)
    stmts = block.stmts()
    # the copies share the expressions that read no symbol bound in the block; each occurs
    # in every copy, so forwarding kills it as it kills a copied node (``shared_copies``),
    # unless a condition is a node of the block: it lives on as its ``if``'s condition, so
    # the copies share nothing then. Made in the order of the branches' old one-by-one
    # copies (the last condition's, the fallback, then the others from the last): the
    # fresh symbols' ids keep their order
    given = conds.given if isinstance(conds, Conditions) else exprs
    fresh_conds = _fresh_conditions(given, stmts)
    n = len(exprs) + 1
    copies = shared_copies(stmts, n) if fresh_conds else [fresh(stmts) for _ in range(n)]
    node = If(exprs[-1], copies[0], copies[1])
    for e, copy in zip(reversed(exprs[:-1]), copies[2:], strict=True):
        node = If(e, copy, (node,))
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(
        loc,
        (node,),
        hint="specialized; use .branches[k].body() or .fallback",
        kill_all=fresh_conds,
    )
    p = out.stmt_paths()[0]
    branches = []
    for _ in exprs:
        branches.append(NodeLoc(p))
        p = (*p, ("orelse", 0))
    last = branches[-1].path
    fallback = BlockLoc(last, "orelse", 0, len(stmts))
    return ed.done(SpecializeCursors, branches=tuple(branches), fallback=fallback)


# --------------------------------------------------------------------- eliminate_dead_code


class DeadCodeKindError(ShapeMismatchError):
    """eliminate_dead_code, precondition 1: the statement is not an ``if`` or a loop."""


class DeadCodeUndecidedError(NotProvenError):
    """eliminate_dead_code, precondition 2: the ``if``'s condition is neither always true nor
    always false where it stands."""


class DeadLoopMayRunError(NotProvenError):
    """eliminate_dead_code, precondition 3: the loop may run an iteration."""


@prim_cursors
class EliminateDeadCodeCursors(PrimCursors):
    """What ``eliminate_dead_code`` returns.

    Attributes:
        kept: the statements of the branch that always runs; invalid when nothing is kept.
    """

    kept: BlockCursor | Cursor


@primitive
def eliminate_dead_code(proc: Proc, stmt: StmtCursor) -> Rewrite[EliminateDeadCodeCursors]:
    """Remove the branch of an ``if`` that never runs, or a loop that runs no iteration.

    Args:
        proc: the proc to rewrite.
        stmt: the ``if`` or the loop.

    Returns:
        The new proc and ``EliminateDeadCodeCursors``:
        ``kept``: the block of the branch kept in place of the ``if``, or an invalid cursor
        (a dead loop, or an ``if`` that is always false and has no ``else``).

    Preconditions:
        1. ``stmt`` is an ``if`` or a loop (``DeadCodeKindError``).
        2. for an ``if``: its condition always holds, or never holds, where it stands
           (asserts, enclosing loops and conditions; ``DeadCodeUndecidedError``).
        3. for a loop: ``hi <= lo`` is proven (``DeadLoopMayRunError``, with a
           counterexample).

    Forwards/Kills:
        Kills the ``if`` or loop and the deleted branch (hint: "eliminated as dead code");
        the kept statements keep their identity. A ``pass`` takes the place of a statement
        that leaves its block empty.

    Example:
        ``eliminate_dead_code(p, "if _: _")`` (with ``assert n > 4``)::

            if n > 4:                  ->    x[0] = 0.0
                x[0] = 0.0
            else:
                x[0] = 1.0
    """
    name = "eliminate_dead_code"
    ir, path, node = proc.ir(), stmt.path(), stmt.node()
    kept: tuple[Stmt, ...]
    match node:
        case If():
            decided = decide_condition(ir, path, node.cond)
            if decided is None:
                msg = "the condition is neither always true nor always false here"
                raise fail(DeadCodeUndecidedError, name, msg, stmt)
            kept = node.body if decided else node.orelse
        case For():
            try:
                check_le(ir, path, node.hi, node.lo, primitive=name)
            except NotBoundedError as e:
                raise safety(DeadLoopMayRunError, name, e, stmt) from e
            kept = ()
        case _:
            raise fail(DeadCodeKindError, name, f"{stmt.describe()} is not an if or a loop", stmt)
    loc = stmt.as_block().block()
    new = kept
    if not new and len(stmt_list(ir, loc.parent, loc.attr)) == 1:
        new = (Pass(),)
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(loc, new, hint="eliminated as dead code")
    k: BlockLoc | NoLoc = out if kept else NoLoc("eliminate_dead_code kept no statement")
    return ed.done(EliminateDeadCodeCursors, kept=k)


__all__ = [
    "DeadCodeKindError",
    "DeadCodeUndecidedError",
    "DeadLoopMayRunError",
    "LiftConditionUsesLoopError",
    "LiftLoopFromElseError",
    "LiftNoParentError",
    "LiftNotAloneError",
    "LiftNotScopeError",
    "LiftReorderError",
    "SpecializeBadConditionError",
    "SpecializeNoConditionsError",
    "SpecializeScopeError",
    "condition_expr",
    "eliminate_dead_code",
    "lift_scope",
    "specialize",
]
