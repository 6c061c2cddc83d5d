"""The SMT layer: the only module of cursched that imports pysmt (z3 is the solver).

Queries are lists of ``Prop`` facts over ``Aff`` terms. Before solving, a query is put in a
canonical form (symbols renamed ``v0, v1, ...`` in order of first appearance), which is both
the cache key and the naming of the solver's variables: the same question asked about fresh
copies of the same loop variables hits the cache. Floor division and modulo are encoded
exactly with a fresh quotient per distinct ``Div``/``Mod`` atom (``k*q <= x < k*q + k``).

One solver is kept for the process and used with push/pop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, assert_never

from pysmt.shortcuts import (
    GE,
    GT,
    LT,
    TRUE,
    And,
    Bool,
    Div,
    Equals,
    Int,
    Minus,
    Not,
    Or,
    Plus,
    Real,
    Solver,
    Symbol,
    Times,
)
from pysmt.typing import BOOL, INT, REAL

from cursched.analysis import affine as af
from cursched.ir.symbols import Sym

Model = dict[Sym, int | bool]
"""Values of the variables of a satisfiable query (sizes, loop variables, booleans)."""


@dataclass
class SmtStats:
    """Counters of the SMT layer (shown by ``benchmarks/checks.py``)."""

    queries: int = 0
    hits: int = 0
    solver_calls: int = 0
    solver_seconds: float = 0.0

    def hit_rate(self) -> float:
        return self.hits / self.queries if self.queries else 0.0


@dataclass
class _State:
    solver: Any = None
    cache: dict[str, tuple[bool, dict[int, int | bool]]] = field(default_factory=dict)
    real_cache: dict[str, tuple[bool, dict[str, float] | None]] = field(default_factory=dict)
    stats: SmtStats = field(default_factory=SmtStats)


_STATE = _State()
_CACHE_LIMIT = 200_000


def stats() -> SmtStats:
    """The counters since the last ``reset``."""
    return _STATE.stats


def reset(clear_cache: bool = True) -> None:
    """Zero the counters (and forget cached answers unless ``clear_cache`` is False)."""
    _STATE.stats = SmtStats()
    if clear_cache:
        _STATE.cache.clear()
        _STATE.real_cache.clear()


# ------------------------------------------------------------------ canonical naming


class _Canon:
    """Renames symbols to dense indices in order of first appearance, and prints a key."""

    def __init__(self) -> None:
        self.index: dict[Sym, int] = {}
        self.syms: list[Sym] = []

    def sym(self, s: Sym) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.syms)
            self.syms.append(s)
        return i

    def atom(self, a: af.Atom) -> str:
        match a:
            case af.Var():
                return f"v{self.sym(a.sym)}"
            case af.Stride():
                return f"s{self.sym(a.sym)}_{a.dim}"
            case af.Div():
                return f"({self.aff(a.num)})/{a.k}"
            case af.Mod():
                return f"({self.aff(a.num)})%{a.k}"
            case _:
                assert_never(a)

    def aff(self, a: af.Aff) -> str:
        parts = [f"{c}*{self.atom(x)}" for x, c in a.terms]
        return "+".join([*parts, str(a.const)])

    def prop(self, p: af.Prop) -> str:
        match p:
            case af.Ge():
                return f"[{self.aff(p.aff)}>=0]"
            case af.Eq():
                return f"[{self.aff(p.aff)}==0]"
            case af.BVar():
                return f"b{self.sym(p.sym)}"
            case af.BConst():
                return "T" if p.value else "F"
            case af.Not():
                return f"!{self.prop(p.arg)}"
            case af.And():
                return "&(" + ",".join(self.prop(x) for x in p.args) + ")"
            case af.Or():
                return "|(" + ",".join(self.prop(x) for x in p.args) + ")"
            case _:
                assert_never(p)


# --------------------------------------------------------------------------- encoding


class _Encoder:
    """Encodes props as pysmt formulas over the canonical names of ``canon``."""

    def __init__(self, canon: _Canon) -> None:
        self.canon = canon
        self.side: list[Any] = []
        self.quot: dict[tuple[str, int], Any] = {}

    def atom(self, a: af.Atom) -> Any:
        match a:
            case af.Var():
                return Symbol(f"v{self.canon.sym(a.sym)}", INT)
            case af.Stride():
                s = Symbol(f"s{self.canon.sym(a.sym)}_{a.dim}", INT)
                self.side.append(GE(s, Int(0)))
                return s
            case af.Div():
                return self.quotient(a.num, a.k)
            case af.Mod():
                x = self.aff(a.num)
                return Plus(x, Times(Int(-a.k), self.quotient(a.num, a.k)))
            case _:
                assert_never(a)

    def quotient(self, num: af.Aff, k: int) -> Any:
        key = (self.canon.aff(num), k)
        q = self.quot.get(key)
        if q is None:
            q = Symbol(f"q{len(self.quot)}", INT)
            self.quot[key] = q
            x = self.aff(num)
            kq = Times(Int(k), q)
            self.side.append(And(GE(x, kq), LT(x, Plus(kq, Int(k)))))
        return q

    def aff(self, a: af.Aff) -> Any:
        parts = [Times(Int(c), self.atom(x)) if c != 1 else self.atom(x) for x, c in a.terms]
        if a.const or not parts:
            parts.append(Int(a.const))
        return parts[0] if len(parts) == 1 else Plus(parts)

    def prop(self, p: af.Prop) -> Any:
        match p:
            case af.Ge():
                return GE(self.aff(p.aff), Int(0))
            case af.Eq():
                return Equals(self.aff(p.aff), Int(0))
            case af.BVar():
                return Symbol(f"b{self.canon.sym(p.sym)}", BOOL)
            case af.BConst():
                return Bool(p.value)
            case af.Not():
                return Not(self.prop(p.arg))
            case af.And():
                return And([self.prop(x) for x in p.args]) if p.args else TRUE()
            case af.Or():
                return Or([self.prop(x) for x in p.args]) if p.args else Bool(False)
            case _:
                assert_never(p)


def _solver() -> Any:
    if _STATE.solver is None:
        _STATE.solver = Solver(name="z3", logic="QF_LIA")
    return _STATE.solver


def satisfiable(props: Sequence[af.Prop]) -> Model | None:
    """A model of the conjunction of ``props``, or None when there is none.

    Answers are cached by the canonical form of the query.
    """
    st = _STATE.stats
    st.queries += 1
    canon = _Canon()
    key = "&".join(canon.prop(p) for p in props)
    hit = _STATE.cache.get(key)
    if hit is None:
        st.solver_calls += 1
        t0 = time.perf_counter()
        hit = _solve(props, canon)
        st.solver_seconds += time.perf_counter() - t0
        if len(_STATE.cache) >= _CACHE_LIMIT:
            _STATE.cache.clear()  # a long session must not grow without bound
        _STATE.cache[key] = hit
    else:
        st.hits += 1
    sat, values = hit
    if not sat:
        return None
    return {canon.syms[i]: v for i, v in values.items()}


def _solve(props: Sequence[af.Prop], canon: _Canon) -> tuple[bool, dict[int, int | bool]]:
    enc = _Encoder(canon)
    formulas = [enc.prop(p) for p in props]
    solver = _solver()
    solver.push()
    try:
        for f in [*formulas, *enc.side]:
            solver.add_assertion(f)
        if not solver.solve():
            return False, {}
        free = _free_vars(formulas, enc.side)
        values: dict[int, int | bool] = {}
        for i in range(len(canon.syms)):
            for name, ty in ((f"v{i}", INT), (f"b{i}", BOOL)):
                sym = Symbol(name, ty)
                if sym in free:
                    v = solver.get_value(sym)
                    values[i] = v.constant_value() if ty is BOOL else int(v.constant_value())
        return True, values
    finally:
        solver.pop()


def _free_vars(formulas: Sequence[Any], side: Sequence[Any]) -> set[Any]:
    out: set[Any] = set()
    for f in [*formulas, *side]:
        out |= f.get_free_variables()
    return out


@dataclass(frozen=True, slots=True)
class SmtResult:
    """The answer to ``valid``: ``ok`` or a counterexample (values that falsify the goal)."""

    ok: bool
    counterexample: Model | None = None

    def __bool__(self) -> bool:
        return self.ok


def valid(prop: af.Prop, context: Sequence[af.Prop] = ()) -> SmtResult:
    """Whether ``prop`` holds for every assignment satisfying ``context``."""
    model = satisfiable([*context, af.Not(prop)])
    return SmtResult(True) if model is None else SmtResult(False, model)


def format_model(model: Model | None) -> str:
    """``n = 4, i = 3`` (sorted by symbol creation, which is source order)."""
    if not model:
        return "(no values)"
    items = sorted(model.items(), key=lambda kv: kv[0].id)
    return ", ".join(f"{s.name} = {v}" for s, v in items)


# ------------------------------------------------------------------ real arithmetic


@dataclass(frozen=True, slots=True)
class RVar:
    """A real-valued unknown of a ``real_identity`` query."""

    name: str


@dataclass(frozen=True, slots=True)
class RNum:
    """A rational constant."""

    value: Fraction


@dataclass(frozen=True, slots=True)
class ROp:
    """``+``, ``*`` (n-ary), ``-`` (unary negation) or ``/`` (binary) over real terms."""

    op: str
    args: tuple[RTerm, ...]


RTerm = RVar | RNum | ROp
"""A term of polynomial (rational) real arithmetic, for ``real_identity``."""

RealModel = dict[str, float]
"""Values of the unknowns that falsify a real identity."""


def _real(t: RTerm) -> Any:
    match t:
        case RVar():
            return Symbol(f"r_{t.name}", REAL)
        case RNum():
            return Real(t.value)
        case ROp(op="+"):
            return Plus([_real(a) for a in t.args])
        case ROp(op="*"):
            return Times([_real(a) for a in t.args])
        case ROp(op="-"):
            return Minus(Real(0), _real(t.args[0]))
        case ROp(op="/"):
            return Div(_real(t.args[0]), _real(t.args[1]))
        case ROp():
            raise ValueError(f"unknown real operation {t.op!r}")
        case _:
            assert_never(t)


def real_identity(
    lhs: RTerm,
    rhs: RTerm,
    positive: Sequence[RTerm] = (),
    equal: Sequence[tuple[RTerm, RTerm]] = (),
) -> RealModel | None:
    """Whether ``lhs == rhs`` for all reals satisfying the facts (quantifier-free, QF_NRA).

    Args:
        lhs: one side of the identity.
        rhs: the other side.
        positive: terms known to be positive.
        equal: pairs of terms known to be equal (``P * N = 1`` for an atom and its inverse).

    Returns:
        None when the identity is proven, else a counterexample (values of the unknowns).
        Division by zero is an unknown value to z3, so an identity relying on it fails.
    """
    st = _STATE.stats
    st.queries += 1
    key = f"R|{lhs!r}|{rhs!r}|{positive!r}|{equal!r}"
    hit = _STATE.real_cache.get(key)
    if hit is not None:
        st.hits += 1
        return hit[1]
    st.solver_calls += 1
    t0 = time.perf_counter()
    facts = [GT(_real(p), Real(0)) for p in positive]
    facts += [Equals(_real(a), _real(b)) for a, b in equal]
    goal = Not(Equals(_real(lhs), _real(rhs)))
    model: RealModel | None = None
    with Solver(name="z3", logic="QF_NRA") as solver:
        for f in [*facts, goal]:
            solver.add_assertion(f)
        if solver.solve():
            model = {}
            for v in sorted(goal.get_free_variables(), key=str):
                val = solver.get_value(v).constant_value()
                model[str(v).removeprefix("r_")] = float(Fraction(val))
    st.solver_seconds += time.perf_counter() - t0
    if len(_STATE.real_cache) >= _CACHE_LIMIT:
        _STATE.real_cache.clear()
    _STATE.real_cache[key] = (True, model)
    return model
