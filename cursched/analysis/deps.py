"""Dependences between access instances, decided syntactically first and by SMT otherwise.

Two accesses conflict when they touch the same buffer and they are not both reads and not both
reductions (``+=`` commutes with ``+=``). A dependence query asks whether two *instances* of
conflicting accesses can touch the same element: every loop variable that differs between the
instances is renamed to a fresh copy (``i@1``, ``i@2``) and the query conjoins the context, the
ranges of both instances, the equality of their indices and an ordering constraint supplied by
the check (``i@1 < i@2`` ...). A model of the query is the counterexample.
"""

from __future__ import annotations

import math
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
    x: Instance, y: Instance, context: Iterable[af.Prop], order: Sequence[af.Prop] = ()
) -> smt.Model | None:
    """A model in which the two instances touch one element (and satisfy ``order``)."""
    same = index_equal(x, y)
    if same is None or _independent(same, order):
        return None
    query = [*context, *x.props(), *y.props(), *order, *same]
    return smt.satisfiable(query)


def _var_pair(a: af.Aff) -> tuple[Sym, Sym, int] | None:
    """``(u, v, c)`` when ``a`` is ``c * u - c * v + const`` over two plain variables."""
    if len(a.terms) != 2:
        return None
    (p, cp), (q, cq) = a.terms
    if not isinstance(p, af.Var) or not isinstance(q, af.Var) or cp != -cq:
        return None
    return (p.sym, q.sym, cp)


def _independent(same: Sequence[af.Prop], order: Sequence[af.Prop]) -> bool:
    """Cheap proofs that no pair of instances touches one element, before any SMT query.

    The GCD test (``sum c_k x_k == -const`` has no integer solution when ``gcd(c)`` does not
    divide ``const``), and the ordered distance test: a dimension ``c * (u - v) + k == 0``
    fixes the distance ``u - v = -k / c``, which an ordering ``u < v`` (or ``v < u``) among
    ``order`` may contradict.
    """
    less: set[tuple[Sym, Sym]] = set()
    for o in order:  # ``lt(u, v)`` is ``Ge(v - u - 1)``, its terms in either order
        pair = _var_pair(o.aff) if isinstance(o, af.Ge) and o.aff.const == -1 else None
        if pair is not None and pair[2] == 1:
            less.add((pair[1], pair[0]))
        elif pair is not None and pair[2] == -1:
            less.add((pair[0], pair[1]))
    for eq in same:
        assert isinstance(eq, af.Eq)
        a = eq.aff
        if all(isinstance(t, af.Var) for t, _ in a.terms):
            g = math.gcd(*(c for _, c in a.terms))
            if g and a.const % g:
                return True
        pair = _var_pair(a)
        if pair is None:
            continue
        u, v, c = pair
        if a.const % c:
            return True
        dist = -a.const // c  # u - v
        if ((u, v) in less and dist >= 0) or ((v, u) in less and dist <= 0):
            return True
    return False


def lex_lt(xs: Sequence[af.Aff], ys: Sequence[af.Aff]) -> af.Prop:
    """The strict lexicographic order ``xs < ys`` on iteration vectors."""
    alts: list[af.Prop] = []
    for k in range(min(len(xs), len(ys))):
        eqs: list[af.Prop] = [af.Eq(xs[m] - ys[m]) for m in range(k)]
        alts.append(af.And((*eqs, af.lt(xs[k], ys[k]))))
    return af.Or(tuple(alts))
