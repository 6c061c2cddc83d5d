"""``split``: divide a loop into an outer and an inner loop (Exo's ``divide_loop``).

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from cursched.analysis import affine as af
from cursched.analysis.checks import (
    NotBoundedError,
    NotDivisibleError,
    check_divides,
    check_le,
)
from cursched.analysis.context import context_of
from cursched.cursors import BlockLoc, Editor, ForCursor, NodeLoc, NoLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.kinds import Cursor
from cursched.cursors.stmts import BlockCursor, IfCursor
from cursched.errors import BadArgumentError, BadNameError, NotProvenError
from cursched.ir.nodes import BinOp, For, If, ProcDef, Stmt
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL
from cursched.primitives.arguments import NewName
from cursched.primitives.loops.loop_common import (
    Memo,
    aff,
    expr_of,
    fresh_copy,
    int_const,
    safety,
    same_pairs,
    subst_simplify,
)
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

Tail = Literal["guard", "cut", "cut_and_guard", "perfect"]
TAILS = ("guard", "cut", "cut_and_guard", "perfect")


class SplitFactorError(BadArgumentError):
    """split, precondition 1: the factor is not an integer greater than 1."""


class SplitNamesError(BadNameError):
    """split, precondition 2: the new names are not two different identifiers."""


class SplitTailError(BadArgumentError):
    """split, precondition 3: ``tail`` is not one of guard, cut, cut_and_guard, perfect."""


class SplitNotPerfectError(NotProvenError):
    """split, precondition 4: ``tail="perfect"`` but the factor does not provably divide the
    loop's trip count."""


class SplitTripCountError(NotProvenError):
    """split, precondition 5: a ``cut`` tail needs ``lo <= hi`` proven (with a negative trip
    count, ``(hi - lo) % factor`` would run the tail on iterations the loop never had)."""


@prim_cursors
class SplitCursors(PrimCursors):
    """What ``split`` returns.

    Attributes:
        outer: the outer loop (the original loop's cursors forward here).
        inner: the inner loop, ``seq(0, factor)``.
        tail: the tail loop (``cut``, ``cut_and_guard``); invalid otherwise.
        guard: the ``if`` in the inner loop (``guard``) or around the tail loop
            (``cut_and_guard``); invalid otherwise.
        body: the rewritten body in the main loops (inside the guard for ``guard``).
    """

    outer: ForCursor
    inner: ForCursor
    tail: ForCursor | Cursor
    guard: IfCursor | Cursor
    body: BlockCursor


@primitive
def split(
    proc: Proc,
    loop: ForCursor,
    factor: int,
    names: Annotated[tuple[str, str] | None, NewName(SplitNamesError, at="loop", count=2)] = None,
    tail: Tail = "guard",
    perfect: bool = False,
) -> Rewrite[SplitCursors]:
    """Divide a loop into an outer loop and an inner loop of ``factor`` iterations.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor, or a loop name such as ``"i"`` / ``"i #1"``).
        factor: the inner trip count, an integer > 1.
        names: the names of the outer and inner iteration variables (default: the loop's
            name with ``o`` and ``i`` appended).
        tail: what to do with the iterations left over when ``factor`` does not divide the
            trip count: ``"guard"`` rounds the outer trip count up and wraps the body in an
            ``if``; ``"cut"`` adds a tail loop after the nest; ``"cut_and_guard"`` puts that
            tail loop in an ``if`` that skips it when it is empty; ``"perfect"`` proves that
            there are none. When the remainder is syntactically zero (a constant trip count
            that ``factor`` divides), every mode makes no tail and no guard.
        perfect: Exo's spelling of ``tail="perfect"`` (``divide_loop(..., perfect=True)``).

    Returns:
        The new proc and ``SplitCursors``:
        ``outer``: the outer loop; ``inner``: the inner loop; ``tail``: the tail loop or an
        invalid cursor; ``guard``: the ``if`` of the guard or an invalid cursor; ``body``: the
        block of the rewritten body in the main nest.

    Preconditions:
        1. ``factor`` is an integer greater than 1 (``SplitFactorError``).
        2. ``names`` are two different identifiers (``SplitNamesError``).
        3. ``tail`` is one of the four modes (``SplitTailError``).
        4. with ``tail="perfect"``, ``factor`` divides ``hi - lo`` wherever the loop runs,
           proven from the asserts and enclosing loops (``SplitNotPerfectError``, with a
           counterexample).
        5. with ``tail="cut"`` or ``"cut_and_guard"`` (and a remainder not syntactically
           zero), ``lo <= hi`` is proven (``SplitTripCountError``, with a counterexample).

    Forwards/Kills:
        ``loop`` forwards to ``outer``. Statements of the body forward to their rewritten
        copies in the main nest (the tail holds fresh copies that nothing forwards to);
        loops nested in the body keep their identity. Rewritten index expressions die.

    Example:
        ``split(p, "i", 4, ("io", "ii"), tail="cut")``::

            for i in seq(0, n):        ->    for io in seq(0, n / 4):
                x[i] = 0.0                       for ii in seq(0, 4):
                                                     x[4 * io + ii] = 0.0
                                             for ii in seq(0, n % 4):
                                                 x[ii + 4 * (n / 4)] = 0.0
    """
    L = loop.loop()
    _check_factor(factor, loop)
    oname, iname = _check_names(proc, loop, names)
    tail = _check_tail("perfect" if perfect else tail, loop)
    exact = _check_trip_count(proc.ir(), loop, factor, tail)
    checks_passed()
    new, body, guarded = _rewrite(proc.ir(), loop, factor, (oname, iname), tail, exact)
    ed = Editor(proc.ir())
    out = ed.replace(
        loop.as_block().block(),
        new,
        same=[(L, new[0]), *same_pairs(L.body, body)],
        hint="split by split",
        # the tail (or its guard) is built anew throughout: fresh_copy, a new loop variable,
        # new bounds; the survivor search need not index it
        fresh=new[1:],
    )
    opath = out.stmt_paths()[0]
    ipath = (*opath, ("body", 0))
    bpath = (*ipath, ("body", 0)) if guarded else ipath
    tail_loc: NodeLoc | NoLoc = NoLoc("no tail: only tail='cut' or 'cut_and_guard' make one")
    guard_loc: NodeLoc | NoLoc = NoLoc("no guard: only tail='guard' or 'cut_and_guard' make one")
    if len(new) == 2:
        tpath = out.stmt_paths()[1]
        if tail == "cut":
            tail_loc = NodeLoc(tpath)
        else:
            guard_loc, tail_loc = NodeLoc(tpath), NodeLoc((*tpath, ("body", 0)))
    if guarded:
        guard_loc = NodeLoc(bpath)
    return ed.done(
        SplitCursors,
        outer=NodeLoc(opath),
        inner=NodeLoc(ipath),
        tail=tail_loc,
        guard=guard_loc,
        body=BlockLoc(bpath, "body", 0, len(body)),
    )


# ------------------------------------------------------------------------- preconditions

NAME = "split"


def _check_factor(factor: object, loop: ForCursor) -> None:
    """Precondition 1: the factor is an integer greater than 1."""
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 2:
        raise fail(SplitFactorError, NAME, f"factor must be an integer > 1, got {factor!r}", loop)


def _check_names(proc: Proc, loop: ForCursor, names: tuple[str, str] | None) -> tuple[str, str]:
    """Precondition 2: two different usable names (the registry checked given ones; the
    default ones, the loop's name with ``o`` and ``i`` appended, get the same check)."""
    if names is not None:
        return names
    it = loop.loop().iter.name
    spec = NewName(SplitNamesError, at="loop", count=2)
    oname, iname = spec.resolve(proc.ir(), (f"{it}o", f"{it}i"), loop, NAME)
    return oname, iname


def _check_tail(tail: object, loop: ForCursor) -> Tail:
    """Precondition 3: ``tail`` is one of ``TAILS``."""
    if tail not in TAILS:
        raise fail(SplitTailError, NAME, f"tail must be one of {TAILS}, got {tail!r}", loop)
    return tail  # type: ignore[return-value]


def _check_trip_count(ir: ProcDef, loop: ForCursor, q: int, tail: Tail) -> bool:
    """Preconditions 4 and 5: a perfect split's factor divides the trip count; a cut tail's
    loop has ``lo <= hi``. Returns whether the factor provably divides the trip count."""
    L, path = loop.loop(), loop.path()
    ext = aff(L.hi) - aff(L.lo)
    rem = af.mod(ext, q)
    if not rem.is_const() and _has_divmod(ext):
        # only a division or a modulo inside ``ext`` can simplify away (with no ranges,
        # ``n % 4`` of a plain size stays as it is)
        rem = af.simplify_aff(rem)
    exact = rem.is_const() and rem.const == 0
    if tail == "perfect" and not exact:
        try:
            check_divides(ir, path, q, expr_of(ext), primitive=NAME)
        except NotDivisibleError as e:
            raise safety(SplitNotPerfectError, NAME, e, loop) from e
        exact = True
    if tail in ("cut", "cut_and_guard") and not exact and not _nonneg(ext):
        try:
            check_le(ir, path, L.lo, L.hi, primitive=NAME)
        except NotBoundedError as e:
            raise safety(SplitTripCountError, NAME, e, loop) from e
    return exact


def _has_divmod(a: af.Aff) -> bool:
    return any(isinstance(x, af.Div | af.Mod) for x in a.atoms())


def _nonneg(ext: af.Aff) -> bool:
    """``ext >= 0`` from constant bounds alone (sizes are at least 1, constants are what
    they are): ``hi - lo`` of ``seq(0, n)`` needs no look at the context (``check_le``)."""
    lo, _ = af.aff_range(ext, {})
    return lo is not None and lo >= 0


# ------------------------------------------------------------------------------- rewrite


def _rewrite(
    ir: ProcDef,
    loop: ForCursor,
    q: int,
    names: tuple[str, str],
    tail: Tail,
    exact: bool,
) -> tuple[list[Stmt], tuple[Stmt, ...], bool]:
    """The outer loop (and the tail loop or its guard, for a cut tail), the body rewritten
    in them, and whether that body sits under a guard."""
    L, path = loop.loop(), loop.path()
    oname, iname = names
    lo, hi = aff(L.lo), aff(L.hi)
    ext = hi - lo
    io, ii = Sym(oname), Sym(iname)
    ranges = dict(context_of(ir, path).ranges())
    _, ext_hi = af.aff_range(ext, ranges)
    ranges[ii] = (0, q - 1)
    ranges[io] = (0, None if ext_hi is None else max(ext_hi // q, 0))
    idx = lo + af.Aff.var(io).scale(q) + af.Aff.var(ii)
    env = {L.iter: expr_of(idx)}
    memo: Memo = {}  # one simplification per distinct index expression of the body
    body = tuple(subst_simplify(s, env, ranges, memo) for s in L.body)
    guarded = tail == "guard" and not exact
    whole = af.div(ext, q)  # the full rounds of ``q``
    if guarded:
        cond = BinOp("<", expr_of(idx), L.hi, BOOL)
        outer_hi = af.div(ext + (q - 1), q)
        inner_body: tuple[Stmt, ...] = (If(cond, body, ()),)
    else:
        outer_hi = whole
        inner_body = body
    inner = For(ii, int_const(0), int_const(q), inner_body, L.mode)
    outer = For(io, int_const(0), expr_of(outer_hi), (inner,), L.mode)
    new: list[Stmt] = [outer]
    if tail in ("cut", "cut_and_guard") and not exact:
        ti = Sym(iname)
        n_tail = af.mod(ext, q)
        base = lo + whole.scale(q)
        tranges = {**ranges, ti: (0, q - 2)}
        tbody = fresh_copy(L.body, {L.iter: expr_of(base + af.Aff.var(ti))}, tranges)
        tail_loop = For(ti, int_const(0), expr_of(n_tail), tbody, L.mode)
        if tail == "cut":
            new.append(tail_loop)
        else:
            cond = BinOp(">", expr_of(n_tail), int_const(0), BOOL)
            new.append(If(cond, (tail_loop,), ()))
    return new, body, guarded
