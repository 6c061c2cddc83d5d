"""Coverage checks for the buffer primitives: does one write fill a whole region?

``stage_mem`` may leave out its load stage only when the staged block overwrites every element
of the window before the store stage copies it back (otherwise the store would write garbage
over memory the block never touched: Exo issue 527 / 318). ``sink_alloc`` needs the same
question per loop iteration: every read of the buffer must see a value written earlier in the
same iteration.

A *region* is one entry per dimension: ``(lo, hi)`` for the half-open range ``lo <= i < hi``
or ``(pt, None)`` for the single index ``pt``. The question "is every element of the region
written by this access?" has a quantifier alternation (for every element there is an
iteration), which we do not hand to the solver: instead an access covers a region when its
index in each ranged dimension is ``base + v`` for a loop variable ``v`` of its own (used in
no other dimension, its bounds and ``base`` free of the access's loop variables), so that the
set of indices it writes is the box ``[base + v.lo, base + v.hi)``; the containment of the
region in that box is then a quantifier-free question. This is sufficient, not necessary: a
write it cannot see through makes the check fail, never pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.checks import SafetyError
from cursched.analysis.context import loop_props
from cursched.analysis.effects import Access
from cursched.errors import NotProvenError
from cursched.ir.symbols import Sym

Region: TypeAlias = tuple[tuple[af.Aff, af.Aff | None], ...]
Limits: TypeAlias = tuple[af.Aff | None, ...] | None


class NotCoveredError(SafetyError, NotProvenError):
    """A region is not provably overwritten by the writes of a block."""


def _loop_syms(a: Access) -> set[Sym]:
    return {lp.iter for lp in a.loops}


def _free(x: af.Aff, syms: set[Sym]) -> bool:
    return not (x.syms() & syms)


def _loop_range(a: Access, v: Sym) -> tuple[af.Aff, af.Aff] | None:
    for lp in a.loops:
        if lp.iter is v:
            lo, hi = af.to_aff(lp.lo), af.to_aff(lp.hi)
            if lo is None or hi is None:
                return None
            return lo, hi
    return None


def region_of(a: Access) -> Region | None:
    """The box of indices ``a`` touches as its own loops range (None: not a box we can see).

    The box over-approximates nothing: each ranged dimension is exactly ``base + v`` with
    ``v``'s range, each other dimension is free of the access's loop variables.
    """
    mine = _loop_syms(a)
    out: list[tuple[af.Aff, af.Aff | None]] = []
    used: set[Sym] = set()
    for i in a.idx:
        x = af.to_aff(i)
        if x is None:
            return None
        vs = [v for v in x.syms() & mine]
        if not vs:
            out.append((x, None))
            continue
        if len(vs) != 1 or vs[0] in used or x.coeff(vs[0]) != 1:
            return None
        v = vs[0]
        used.add(v)
        base = x - af.Aff.var(v)
        rng = _loop_range(a, v)
        if rng is None or not _free(base, mine):
            return None
        lo, hi = rng
        if not (_free(lo, mine) and _free(hi, mine)):
            return None
        out.append((base + lo, base + hi))
    return tuple(out)


def cover_goal(a: Access, region: Region, limits: Limits = None) -> af.Prop | None:
    """A quantifier-free fact that implies "``a`` writes every element of ``region``"
    (None when ``a`` is not of the shape this module can reason about).

    With ``limits`` (the buffer's shape, one size per dimension), only the elements of the
    region inside ``0 <= i < size`` need to be written.
    """
    if a.conds or a.kind == "read":
        return None
    box = region_of(a)
    if box is None or len(box) != len(region):
        return None
    goals: list[af.Prop] = []
    lims = limits if limits is not None else (None,) * len(region)
    for (blo, bhi), (rlo, rhi), limit in zip(box, region, lims, strict=True):
        if rhi is None:
            if bhi is None:
                goals.append(af.Eq(blo - rlo))
            else:
                goals.append(af.And((af.le(blo, rlo), af.lt(rlo, bhi))))
        else:
            goals.append(_range_goal(blo, bhi, rlo, rhi, limit))
    # a loop whose variable no index uses must still run at least once
    for lp in a.loops:
        if not any(lp.iter is v for v in _used_loop_vars(a)):
            lo, hi = af.to_aff(lp.lo), af.to_aff(lp.hi)
            mine = _loop_syms(a)
            if lo is None or hi is None or not (_free(lo, mine) and _free(hi, mine)):
                return None
            goals.append(af.lt(lo, hi))
    return af.And(tuple(goals))


def _range_goal(
    blo: af.Aff, bhi: af.Aff | None, rlo: af.Aff, rhi: af.Aff, limit: af.Aff | None
) -> af.Prop:
    """The box side ``[blo, bhi)`` (one index when ``bhi`` is None) holds the part of
    ``[rlo, rhi)`` inside ``[0, limit)``."""
    lo_ok = [af.le(blo, rlo)]
    hi_ok = [af.le(rhi, bhi if bhi is not None else blo + 1)]
    empty = [af.le(rhi, rlo)]
    if limit is not None:
        lo_ok.append(af.le(blo, af.Aff.num(0)))
        hi_ok.append(af.le(limit, bhi if bhi is not None else blo + 1))
        empty += [af.le(limit, rlo), af.le(rhi, af.Aff.num(0))]
    if bhi is None:
        # a single index covers a range only when the range has at most that element
        lo_ok = [af.And((x, af.le(rlo, blo))) for x in lo_ok]
    return af.Or((*empty, af.And((af.Or(tuple(lo_ok)), af.Or(tuple(hi_ok))))))


def _used_loop_vars(a: Access) -> set[Sym]:
    out: set[Sym] = set()
    for i in a.idx:
        x = af.to_aff(i)
        if x is not None:
            out |= x.syms()
    return out & _loop_syms(a)


def covered(
    writes: Sequence[Access], region: Region, context: Sequence[af.Prop], limits: Limits = None
) -> bool:
    """Whether one of ``writes`` provably writes every element of ``region`` (inside
    ``limits``, see ``cover_goal``)."""
    for a in writes:
        goal = cover_goal(a, region, limits)
        if goal is not None and smt.valid(goal, context).ok:
            return True
    return False


def _cond_props(a: Access, env: af.Rename | None = None) -> list[af.Prop] | None:
    """``a``'s guards as facts (None when one is not affine)."""
    out: list[af.Prop] = []
    for cond, taken in a.conds:
        p = af.to_prop(cond, env)
        if p is None:
            return None
        out.append(p if taken else af.Not(p))
    return out


def covers_read(write: Access, read: Access, context: Sequence[af.Prop]) -> bool:
    """Whether ``write`` provably writes every element ``read`` reads, element by element:
    the guarded counterpart of ``covered`` (a write under ``if 16 * io + ii < n`` covers the
    reads under the same guard, which no box of the write's can show).

    For each instance of the read (its loops' ranges and its guards are facts), the write's
    instance that would write the element is unique (each of its loop variables is the index
    of one dimension with coefficient 1, every loop variable used), so "some instance of the
    write writes it" is quantifier-free: that instance's loop variables, renamed fresh, are
    fixed by equalities, and they must lie in the write's loop ranges and satisfy its guards.
    """
    if write.kind != "write" or len(write.idx) != len(read.idx):
        return False
    mine = _loop_syms(write)
    env: dict[Sym, Sym] = {v: Sym(f"{v.name}_w") for v in mine}
    hyps: list[af.Prop] = list(context)
    for lp in read.loops:
        hyps.extend(loop_props(lp))
    rconds = _cond_props(read)
    wconds = _cond_props(write, env)
    if rconds is None or wconds is None:
        return False
    hyps.extend(rconds)
    used: set[Sym] = set()
    for wi, ri in zip(write.idx, read.idx, strict=True):
        x, y = af.to_aff(wi), af.to_aff(ri)
        if x is None or y is None:
            return False
        vs = list(x.syms() & mine)
        if len(vs) > 1 or (vs and (vs[0] in used or x.coeff(vs[0]) != 1)):
            return False
        used.update(vs)
        renamed = af.to_aff(wi, env)
        assert renamed is not None
        hyps.append(af.Eq(renamed - y))  # the write's instance writing the read element
    if used != mine:
        return False
    goals = [*wconds]
    for lp in write.loops:
        lo, hi = af.to_aff(lp.lo), af.to_aff(lp.hi)
        if lo is None or hi is None or not (_free(lo, mine) and _free(hi, mine)):
            return False
        goals.extend(loop_props(lp, env))
    return smt.valid(af.And(tuple(goals)), hyps).ok


def uncovered_point(
    writes: Sequence[Access],
    region: Region,
    context: Sequence[af.Prop],
    name: str,
    limits: Limits = None,
) -> smt.Model | None:
    """Values of the context and an index of ``region`` that no write in ``writes`` touches
    (None when there is none, or when a write is not a box and so could touch any index).

    The index variables are named ``<name>_index<d>``. A write under a condition writes a
    subset of its box, so an index outside every box is a genuine witness.
    """
    boxes = [region_of(a) for a in writes]
    if any(b is None or len(b) != len(region) for b in boxes):
        return None
    point = [af.Aff.var(Sym(f"{name}_index{d}")) for d in range(len(region))]
    props: list[af.Prop] = list(context)
    for w, (lo, hi) in zip(point, region, strict=True):
        props.append(af.Eq(w - lo) if hi is None else af.And((af.le(lo, w), af.lt(w, hi))))
    for w, limit in zip(point, limits or (), strict=False):
        if limit is not None:
            props.append(af.And((af.le(af.Aff.num(0), w), af.lt(w, limit))))
    for box in boxes:
        assert box is not None
        inside: list[af.Prop] = []
        for w, (lo, hi) in zip(point, box, strict=True):
            inside.append(af.Eq(w - lo) if hi is None else af.And((af.le(lo, w), af.lt(w, hi))))
        props.append(af.Not(af.And(tuple(inside))))
    return smt.satisfiable(props)


__all__ = [
    "NotCoveredError",
    "Region",
    "cover_goal",
    "covered",
    "covers_read",
    "region_of",
    "uncovered_point",
]
