"""Loop-nest primitives: ``reorder_loops``, ``fission``, ``fuse``.

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``); the
dependence questions are answered by ``cursched.analysis.checks``.
"""

from __future__ import annotations

from cursched.analysis.checks import (
    FissionError,
    FusionError,
    NotEqualError,
    ParallelError,
    ReorderLoopsError,
    check_expr_equal,
    check_fission,
    check_fuse,
    check_parallel,
    check_reorder_loops,
)
from cursched.cursors import (
    BlockCursor,
    BlockLoc,
    Editor,
    ForCursor,
    GapCursor,
    GapLoc,
    NodeLoc,
    StmtCursor,
)
from cursched.cursors.edits import Rewrite
from cursched.errors import DependenceError, NotProvenError, ShapeMismatchError
from cursched.ir.nodes import For, If, ProcDef, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.traversal import free_syms_expr
from cursched.primitives.loops.loop_common import rename_stmt, safety, same_pairs
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ---------------------------------------------------------------------------- reorder_loops


class ReorderNotNestedError(ShapeMismatchError):
    """reorder_loops, precondition 1: the loop's body is not exactly one loop."""


class ReorderBoundsError(ShapeMismatchError):
    """reorder_loops, precondition 2: the inner loop's bounds use the outer variable."""


class ReorderDependenceError(DependenceError):
    """reorder_loops, precondition 3: swapping the loops reverses a dependence."""


@prim_cursors
class ReorderLoopsCursors(PrimCursors):
    """What ``reorder_loops`` returns.

    Attributes:
        outer: the loop now outside (the old inner loop).
        inner: the loop now inside (the old outer loop).
    """

    outer: ForCursor
    inner: ForCursor


@primitive
def reorder_loops(proc: Proc, loop: ForCursor) -> Rewrite[ReorderLoopsCursors]:
    """Interchange a loop with the single loop directly inside it.

    Args:
        proc: the proc to rewrite.
        loop: the outer loop of the pair (a cursor or a loop name such as ``"i"``).

    Returns:
        The new proc and ``ReorderLoopsCursors``:
        ``outer``: the loop now outside (the old inner one);
        ``inner``: the loop now inside (the old outer one).

    Preconditions:
        1. ``loop``'s body is exactly one loop (``ReorderNotNestedError``).
        2. the inner loop's bounds do not use the outer loop's variable
           (``ReorderBoundsError``).
        3. no two iterations ``(i1, j1)``, ``(i2, j2)`` with ``i1 < i2`` and ``j1 > j2``
           touch one element with conflicting accesses (``ReorderDependenceError``, proven
           by ``check_reorder_loops``, with a counterexample).

    Forwards/Kills:
        Both loops keep their identity by iteration variable: a cursor to ``loop`` follows it
        inside, a cursor to the inner loop follows it outside. The body is untouched and keeps
        its identity. Nothing dies.

    Example:
        ``reorder_loops(p, "i")``::

            for i in seq(0, n):         ->    for j in seq(0, m):
                for j in seq(0, m):               for i in seq(0, n):
                    A[i, j] = 0.0                     A[i, j] = 0.0
    """
    name = "reorder_loops"
    outer = loop.loop()
    if len(outer.body) != 1 or not isinstance(outer.body[0], For):
        msg = f"the body of loop {outer.iter.name} is not exactly one loop"
        raise fail(ReorderNotNestedError, name, msg, loop)
    inner = outer.body[0]
    if outer.iter in free_syms_expr(inner.lo) | free_syms_expr(inner.hi):
        msg = f"the bounds of loop {inner.iter.name} use {outer.iter.name}"
        raise fail(ReorderBoundsError, name, msg, loop)
    try:
        check_reorder_loops(proc.ir(), loop.path(), primitive=name)
    except ReorderLoopsError as e:
        raise safety(ReorderDependenceError, name, e, loop) from e
    swapped = inner.replace(body=(outer.replace(body=inner.body),))
    checks_passed()
    ed = Editor(proc.ir())
    out = ed.replace(loop.as_block().block(), (swapped,))
    path = out.stmt_paths()[0]
    return ed.done(ReorderLoopsCursors, outer=NodeLoc(path), inner=NodeLoc((*path, ("body", 0))))


# ---------------------------------------------------------------------------------- fission


class FissionNotInLoopError(ShapeMismatchError):
    """fission, precondition 1: one of the ``n_lifts`` levels around the gap is neither a
    loop nor an ``if`` without ``else``."""


class FissionAtEdgeError(ShapeMismatchError):
    """fission, precondition 2: the gap is at the start or end of the innermost body, so
    one of the two loops would be empty."""


class FissionDependenceError(DependenceError):
    """fission, precondition 3: running every statement before the gap first changes the
    result (or the second part uses a name the first part defines)."""


@prim_cursors
class FissionCursors(PrimCursors):
    """What ``fission`` returns.

    Attributes:
        first: the outermost new loop (or if) holding the statements before the gap.
        second: the outermost new loop (or if) holding the statements after the gap.
        gap: the gap between ``first`` and ``second``.
    """

    first: StmtCursor
    second: StmtCursor
    gap: GapCursor


Level = tuple[Path, For | If, int]
"""(path of a lifted loop or if, the node, index of the split in its ``body``)."""


def fission_levels(p: ProcDef, gap: Path, n_lifts: int) -> list[Level] | None:
    """The ``n_lifts`` levels around ``gap`` (a path ending in ``("body", k)``), innermost
    first; None when one is neither a loop nor an ``if`` without ``else``.

    At an outer level the index is the position just after the level below it.
    """
    out: list[Level] = []
    cur = gap
    for _ in range(n_lifts):
        parent, (attr, k) = cur[:-1], cur[-1]
        node = get_at(p, parent) if parent else None
        # an else branch would run between the two parts: not supported (as in the check)
        has_else = isinstance(node, If) and bool(node.orelse)
        if not isinstance(node, For | If) or attr != "body" or has_else:
            return None
        out.append((parent, node, k))
        *up, (up_attr, up_k) = parent
        cur = (*up, (up_attr, up_k + 1))
    return out


@primitive
def fission(proc: Proc, gap: GapCursor, n_lifts: int = 1) -> Rewrite[FissionCursors]:
    """Split the ``n_lifts`` loops (or ifs) around a gap into two nests: one running everything
    before the gap, then one running everything after it.

    Args:
        proc: the proc to rewrite.
        gap: the gap (``c.after()``, ``c.before()``) inside the innermost loop to split.
        n_lifts: how many enclosing loops or ifs to split (1: only the innermost). An ``if``
            (without ``else``) is split into two ``if`` statements with the same condition.

    Returns:
        The new proc and ``FissionCursors``:
        ``first``: the outermost loop (or if) of the first nest;
        ``second``: the outermost loop (or if) of the second nest;
        ``gap``: the gap between them.

    Preconditions:
        1. ``n_lifts >= 1`` and each of the ``n_lifts`` levels around the gap is a loop or
           an ``if`` without ``else`` (``FissionNotInLoopError``).
        2. the gap is neither at the start nor at the end of the innermost body
           (``FissionAtEdgeError``).
        3. every instance of a statement after the gap may run after every instance of a
           statement before it, and the statements after the gap use nothing the ones
           before define (``FissionDependenceError``, proven by ``check_fission``, with a
           counterexample).

    Forwards/Kills:
        The split loops forward to the first nest (they keep their iteration variables; the
        second nest's loops get fresh copies of them). Every statement of the bodies keeps
        its identity (statements after the gap forward into the second nest). ``gap``
        forwards to the same gap, now at the end of the innermost first loop. Nothing dies.

    Example:
        ``fission(p, p.find("x[_] = _").after())``::

            for i in seq(0, n):        ->    for i in seq(0, n):
                x[i] = 1.0                       x[i] = 1.0
                y[i] = 2.0                   for i in seq(0, n):
                                                 y[i] = 2.0
    """
    name = "fission"
    ir = proc.ir()
    parent, attr, pos = gap.position()
    gap_path = (*parent, (attr, pos))
    levels = fission_levels(ir, gap_path, n_lifts) if n_lifts >= 1 else None
    if levels is None:
        msg = f"the {n_lifts} level(s) around the gap are not all loops or if bodies"
        raise fail(FissionNotInLoopError, name, msg, gap)
    _, innermost, k = levels[0]
    if k == 0 or k == len(innermost.body):
        msg = "the gap is at an edge of the body: one part would be empty"
        raise fail(FissionAtEdgeError, name, msg, gap)
    try:
        check_fission(ir, gap_path, n_lifts, primitive=name)
    except FissionError as e:
        raise safety(FissionDependenceError, name, e, gap) from e
    first: Stmt | None = None
    second: Stmt | None = None
    for _, node, k in levels:
        if first is None or second is None:  # the innermost level: split at the gap
            first = node.replace(body=node.body[:k])
            body: tuple[Stmt, ...] = node.body[k:]
        else:  # an outer level: body[k - 1] is the level split one step down
            first = node.replace(body=(*node.body[: k - 1], first))
            body = (second, *node.body[k:])
        if isinstance(node, For):
            second = For(node.iter, node.lo, node.hi, body, node.mode)
        else:
            second = If(node.cond, body, ())
    assert first is not None and second is not None
    fresh = {lv[1].iter: lv[1].iter.copy() for lv in levels if isinstance(lv[1], For)}
    renamed = rename_stmt(second, fresh)
    top_path = levels[-1][0]
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(
        BlockLoc(top_path[:-1], top_path[-1][0], top_path[-1][1], top_path[-1][1] + 1),
        (first, renamed),
        same=_second_pairs(levels, renamed),
    )
    p1, p2 = out.stmt_paths()
    return ed.done(FissionCursors, first=NodeLoc(p1), second=NodeLoc(p2), gap=GapLoc(p1, "after"))


def _second_pairs(levels: list[Level], renamed: Stmt) -> list[tuple[Stmt, Stmt]]:
    """Pair each statement moved into the second nest with its renamed copy."""
    pairs: list[tuple[Stmt, Stmt]] = []
    cur = renamed
    for depth in range(len(levels) - 1, -1, -1):
        _, loop, k = levels[depth]
        assert isinstance(cur, For | If)
        moved = loop.body[k:]
        if depth == 0:
            pairs += same_pairs(moved, cur.body)
        else:
            pairs += same_pairs(moved, cur.body[1:])
            cur = cur.body[0]
    return pairs


# -------------------------------------------------------------------------------------- fuse


class FuseKindError(ShapeMismatchError):
    """fuse, precondition 1: the statements are not two loops or two ifs."""


class FuseNotAdjacentError(ShapeMismatchError):
    """fuse, precondition 2: the second statement does not directly follow the first."""


class FuseBoundsError(NotProvenError):
    """fuse, precondition 3 (loops): the bounds are not provably equal."""


class FuseConditionError(NotProvenError):
    """fuse, precondition 3 (ifs): the conditions are not provably equivalent."""


class FuseDependenceError(DependenceError):
    """fuse, precondition 4: an iteration of the second loop depends on a later iteration
    of the first one (or, for two ``par`` loops, the fused loop is not race-free)."""


class FuseAxisError(ShapeMismatchError):
    """fuse, precondition 5 (loops): the loops are bound to different CUDA axes, or one is
    bound and the other not (the fused loop would be one bound ``seq`` loop, or the second
    body would silently move to another axis)."""


def _check_fuse_axes(n1: For, n2: For, first: StmtCursor) -> None:
    """Precondition 5: a bound loop fuses only with a loop bound to the same axis (campaign
    finding, seed 2026 schedule 542: a bound loop fused with a ``seq`` one became a ``seq``
    loop still bound, which ``verify_proc`` rejects)."""
    if n1.axis != n2.axis:
        msg = f"the loops are bound to {n1.axis or 'no axis'} and {n2.axis or 'no axis'}"
        raise fail(FuseAxisError, "fuse", msg, first)


@prim_cursors
class FuseCursors(PrimCursors):
    """What ``fuse`` returns.

    Attributes:
        fused: the fused loop or if.
        first_body: the statements that came from the first one's body.
        second_body: the statements that came from the second one's body.
    """

    fused: StmtCursor
    first_body: BlockCursor
    second_body: BlockCursor


@primitive
def fuse(proc: Proc, first: StmtCursor, second: StmtCursor) -> Rewrite[FuseCursors]:
    """Fuse two consecutive loops with equal bounds (or two ifs with equivalent conditions).

    Args:
        proc: the proc to rewrite.
        first: the first loop or if.
        second: the loop or if right after it.

    Returns:
        The new proc and ``FuseCursors``:
        ``fused``: the fused statement (the first one, grown);
        ``first_body``: the block of the first one's body statements;
        ``second_body``: the block of the second one's body statements (for ifs, both refer
        to the ``body`` branch; the ``orelse`` branches are concatenated too).

    Preconditions:
        1. both are loops or both are ifs (``FuseKindError``).
        2. ``second`` directly follows ``first`` (``FuseNotAdjacentError``).
        3. loops: equal bounds, proven (``FuseBoundsError``, with a counterexample); ifs:
           equivalent conditions, proven (``FuseConditionError``).
        4. loops: no instance of the second body at iteration ``i2`` conflicts with an
           instance of the first body at a later iteration ``i1 > i2``; two ``par`` loops
           fuse into a race-free ``par`` loop (``FuseDependenceError``, with a
           counterexample). A ``seq`` and a ``par`` loop fuse into a ``seq`` loop.
        5. loops: both bound to the same CUDA axis, or neither bound (``FuseAxisError``).

    Forwards/Kills:
        ``first`` forwards to ``fused``; ``second`` dies (hint: "fused into `fused`"). The
        statements of both bodies keep their identity (the second's forward to their
        renamed copies).

    Example:
        ``fuse(p, "for i in _: _", "for j in _: _")``::

            for i in seq(0, n):        ->    for i in seq(0, n):
                x[i] = 1.0                       x[i] = 1.0
            for j in seq(0, n):                  y[i] = x[i]
                y[j] = x[j]
    """
    name = "fuse"
    ir = proc.ir()
    n1, n2 = first.node(), second.node()
    loops = isinstance(n1, For) and isinstance(n2, For)
    ifs = isinstance(n1, If) and isinstance(n2, If)
    if not (loops or ifs):
        msg = f"wants two loops or two ifs, got {first.describe()} and {second.describe()}"
        raise fail(FuseKindError, name, msg, first)
    p1, p2 = first.path(), second.path()
    if p1[:-1] != p2[:-1] or p1[-1][0] != p2[-1][0] or p2[-1][1] != p1[-1][1] + 1:
        msg = "the second statement does not directly follow the first"
        raise fail(FuseNotAdjacentError, name, msg, second)
    if isinstance(n1, For) and isinstance(n2, For):
        for what, e1, e2 in (("lower", n1.lo, n2.lo), ("upper", n1.hi, n2.hi)):
            try:
                check_expr_equal(ir, p1, e1, e2, primitive=name)
            except NotEqualError as e:
                e.message = f"{what} bounds differ: {e.message}"
                raise safety(FuseBoundsError, name, e, first) from e
        _check_fuse_axes(n1, n2, first)
        try:
            check_fuse(ir, p1, p2, primitive=name)
        except FusionError as e:
            raise safety(FuseDependenceError, name, e, first) from e
        body2 = tuple(rename_stmt(s, {n2.iter: n1.iter}) for s in n2.body)
        mode = n1.mode if n1.mode == n2.mode else "seq"
        fused: Stmt = n1.replace(body=(*n1.body, *body2), mode=mode)
        pairs = same_pairs(n2.body, body2)
        len1, len2 = len(n1.body), len(body2)
    else:
        assert isinstance(n1, If) and isinstance(n2, If)
        try:
            check_fuse(ir, p1, p2, primitive=name)
        except FusionError as e:
            raise safety(FuseConditionError, name, e, first) from e
        fused = n1.replace(body=(*n1.body, *n2.body), orelse=(*n1.orelse, *n2.orelse))
        pairs = []
        len1, len2 = len(n1.body), len(n2.body)
    ed = Editor(ir)
    loc = BlockLoc(p1[:-1], p1[-1][0], p1[-1][1], p1[-1][1] + 2)
    out = ed.replace(loc, (fused,), same=[(n1, fused), *pairs], hint="fused into `fused`")
    path = out.stmt_paths()[0]
    if isinstance(fused, For) and fused.mode == "par":
        try:
            check_parallel(ed.ir, path, primitive=name)
        except ParallelError as e:
            raise safety(FuseDependenceError, name, e, first) from e
    return ed.done(
        FuseCursors,
        fused=NodeLoc(path),
        first_body=BlockLoc(path, "body", 0, len1),
        second_body=BlockLoc(path, "body", len1, len1 + len2),
    )
