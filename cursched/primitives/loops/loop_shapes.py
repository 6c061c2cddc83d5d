"""Primitives that reshape whole loops: ``unroll_loop``, ``mult_loops``,
``parallelize_loop`` (issue 6, part B).

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``); the
semantics follow Exo 1.0's primitives of the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from cursched.analysis import affine as af
from cursched.analysis.affine_tidy import tidy_expr
from cursched.analysis.checks import (
    NotDivisibleError,
    ParallelError,
    check_divides,
    check_parallel,
)
from cursched.analysis.context import context_of
from cursched.cursors import BlockCursor, BlockLoc, Editor, ForCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import stmt_list, with_field
from cursched.errors import BadNameError, RaceError, ShapeMismatchError
from cursched.ir.nodes import (
    Expr,
    For,
    LoopMode,
    Pass,
    ProcDef,
    Stmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr, map_stmt_children
from cursched.primitives.arguments import NewName
from cursched.primitives.loops.loop_common import (
    aff,
    expr_of,
    int_const,
    safety,
    same_pairs,
    subst_simplify,
    unroll_copies,
)
from cursched.primitives.loops.loop_wrap import fresh
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------- helpers


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


# ------------------------------------------------------------------------------ unroll_loop


class UnrollNotConstantError(ShapeMismatchError):
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
    values = range(lo.const, hi.const)
    # two copies or more share the expressions that do not read the loop variable (see
    # ``unroll_copies``); a single one is a copy sharing nothing, so that nothing forwards
    copies = (
        unroll_copies(L.body, L.iter, values, ranges)
        if len(values) >= 2
        else [fresh(L.body, {L.iter: int_const(k)}, ranges) for k in values]
    )
    new: list[Stmt] = [s for c in copies for s in c]
    block = loop.as_block().block()
    if not new and len(stmt_list(ir, block.parent, block.attr)) == 1:
        new = [Pass()]
    checks_passed()
    ed = Editor(ir)
    # no old node lives on: the copies' nodes are new or shared by two copies or more, and
    # their loops have fresh variables (``unroll_copies``, ``fresh``)
    out = ed.replace(block, new, hint="unrolled; use .copies[k]", kill_all=True)
    n = len(L.body)
    locs = tuple(
        BlockLoc(out.parent, out.attr, out.lo + k * n, out.lo + (k + 1) * n)
        for k in range(len(copies))
    )
    return ed.done(UnrollLoopCursors, copies=locs)


# ------------------------------------------------------------------------------- mult_loops


class MultNotNestedError(ShapeMismatchError):
    """mult_loops, precondition 1: the loop's body is not exactly one loop."""


class MultBoundsError(ShapeMismatchError):
    """mult_loops, precondition 2: a loop does not start at 0, or the inner loop's upper
    bound is not a positive constant."""


class MultNameError(BadNameError):
    """mult_loops, precondition 3: the new name is not an identifier."""


@prim_cursors
class MultLoopsCursors(PrimCursors):
    """What ``mult_loops`` returns.

    Attributes:
        loop: the merged loop.
    """

    loop: ForCursor


@primitive
def mult_loops(
    proc: Proc, nested: ForCursor, name: Annotated[str, NewName(MultNameError, at="nested")]
) -> Rewrite[MultLoopsCursors]:
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
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(
        nested.as_block().block(),
        (merged,),
        same=same_pairs(inner.body, body),
        hint="merged into `loop`",
    )
    return ed.done(MultLoopsCursors, loop=NodeLoc(out.stmt_paths()[0]))


# ------------------------------------------------------------------------- parallelize_loop


class ParallelizeRaceError(RaceError):
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
    checks_passed()
    ed = Editor(ir)
    ed.retag(NodeLoc(path), with_field(L, "mode", "par"))  # the same loop, body untouched
    return ed.done(ParallelizeLoopCursors, loop=NodeLoc(path))


__all__ = [
    "MultBoundsError",
    "MultNameError",
    "MultNotNestedError",
    "ParallelizeRaceError",
    "UnrollNotConstantError",
    "mult_loops",
    "parallelize_loop",
    "unroll_loop",
]
