"""Dependences between access instances, decided syntactically first and by SMT otherwise.

Two accesses conflict when they touch the same buffer and they are not both reads and not both
reductions (``+=`` commutes with ``+=``). A dependence query asks whether two *instances* of
conflicting accesses can touch the same element: every loop variable that differs between the
instances is renamed to a fresh copy (``i@1``, ``i@2``) and the query conjoins the context, the
ranges of both instances, the equality of their indices and an ordering constraint supplied by
the check (``i@1 < i@2`` ...). A model of the query is the counterexample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.context import loop_props
from cursched.analysis.effects import Access
from cursched.ir.nodes import For
from cursched.ir.symbols import Sym


def conflicting(a: Access, b: Access, *, reductions_commute: bool = True) -> bool:
    """Whether instances of ``a`` and ``b`` could not be swapped if they touched one element."""
    if a.buf is not b.buf:
        return False
    if a.kind == "read" and b.kind == "read":
        return False
    return not (reductions_commute and a.kind == "reduce" and b.kind == "reduce")


@dataclass(frozen=True, slots=True)
class Instance:
    """An access seen from one instance: ``env`` renames the loop variables of the instance.

    ``outer`` holds the loops (outside the access's own ``loops``) whose variables ``env``
    also renames, so their ranges are part of the instance.
    """

    access: Access
    env: dict[Sym, Sym]
    outer: tuple[For, ...] = ()

    def props(self) -> list[af.Prop]:
        out: list[af.Prop] = []
        for loop in (*self.outer, *self.access.loops):
            out.extend(loop_props(loop, self.env))
        for cond, taken in self.access.conds:
            p = af.to_prop(cond, self.env)
            if p is not None:  # unknown guard: dropping it over-approximates the instances
                out.append(p if taken else af.Not(p))
        return out

    def var(self, sym: Sym) -> af.Aff:
        return af.Aff.var(self.env.get(sym, sym))


def instance(access: Access, tag: str, outer: Sequence[For] = ()) -> Instance:
    """The instance of ``access`` whose own loops and ``outer`` loops get fresh ``@tag`` copies."""
    env: dict[Sym, Sym] = {}
    for loop in (*outer, *access.loops):
        env[loop.iter] = Sym(f"{loop.iter.name}@{tag}")
    return Instance(access, env, tuple(outer))


def index_equal(x: Instance, y: Instance) -> list[af.Prop] | None:
    """Facts saying both instances touch one element; None when that is impossible."""
    out: list[af.Prop] = []
    for i, j in zip(x.access.idx, y.access.idx, strict=False):
        ai, aj = af.to_aff(i, x.env), af.to_aff(j, y.env)
        if ai is None or aj is None:
            continue  # a non-affine index may equal anything
        d = ai - aj
        if d.is_const():
            if d.const != 0:
                return None  # constant distance: never the same element
            continue
        out.append(af.Eq(d))
    return out


def dependence(
    x: Instance, y: Instance, context: Iterable[af.Prop], order: Iterable[af.Prop] = ()
) -> smt.Model | None:
    """A model in which the two instances touch one element (and satisfy ``order``)."""
    same = index_equal(x, y)
    if same is None:
        return None
    query = [*context, *x.props(), *y.props(), *order, *same]
    return smt.satisfiable(query)


def lex_lt(xs: Sequence[af.Aff], ys: Sequence[af.Aff]) -> af.Prop:
    """The strict lexicographic order ``xs < ys`` on iteration vectors."""
    alts: list[af.Prop] = []
    for k in range(min(len(xs), len(ys))):
        eqs: list[af.Prop] = [af.Eq(xs[m] - ys[m]) for m in range(k)]
        alts.append(af.And((*eqs, af.lt(xs[k], ys[k]))))
    return af.Or(tuple(alts))
