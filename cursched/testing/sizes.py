"""Drawing control arguments (sizes, indices, bools) that satisfy a proc's asserts.

No SMT solver: the asserts procs carry are simple (``n % 4 == 0``, ``n >= 8``,
``m == 2 * n``, ``i < n``), and three cheap devices handle them:

1. candidate values per argument: 1..12, plus values built from the asserts' constants
   (``c - 1, c, c + 1``; multiples of each modulus ``m`` up to ``4 m``, of the least common
   multiple of the moduli, and the multiples next to each constant);
2. equalities ``lhs == rhs`` solved for their last unknown variable, when affine in it
   (found by evaluating at three points, so no algebra is needed);
3. rejection sampling over the candidates, in a random variable order per attempt (so an
   equality can be solved for either side), small candidates first; then an exhaustive search.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from cursched.errors import ArgumentError, InterpreterError
from cursched.interp import eval_control
from cursched.interp.values import fmt_expr
from cursched.ir.nodes import BinOp, Const, Expr, ProcDef, Read
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_expr
from cursched.ir.types import SIZE, ControlType

__all__ = ["draw_controls"]

_REJECTION_TRIES = 2000
_ENUMERATION_LIMIT = 200_000
_SMALL = 16  # the largest constant-derived candidate of the first phase (or 4 x a modulus)

Values = dict[Sym, int | bool]


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, BinOp) and e.op == "and":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _assert_constants(pd: ProcDef) -> tuple[set[int], set[int]]:
    """The integer constants of the asserts, and the moduli among them."""
    consts: set[int] = set()
    moduli: set[int] = set()
    for pred in pd.preds:
        for e in walk_expr(pred):
            if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
                consts.add(e.value)
            if isinstance(e, BinOp) and e.op == "%" and isinstance(e.rhs, Const):
                moduli.add(int(e.rhs.value))
    moduli.discard(0)
    return consts, moduli


def _candidates(
    t: ControlType, consts: set[int], moduli: set[int], cap: int | None
) -> list[int | bool]:
    """Candidate values: small ones, plus values built from the asserts' constants.

    With a ``cap``, constant-derived values above it are left out, so that an assert such as
    ``n <= 1024`` does not make a test run a proc at n = 1024 when n = 5 would do.
    """
    if t.name == "bool":
        return [False, True]
    derived = {c + d for c in consts for d in (-1, 0, 1)}
    if t.name == "size" and moduli:
        steps = moduli | {math.lcm(*moduli)}
        derived |= {m * k for m in steps for k in (1, 2, 3, 4)}
        # the multiples on either side of each constant: n % 4 == 0 and n >= 25 wants 28
        derived |= {(c // m + d) * m for m in steps for c in consts for d in (0, 1)}
    if cap is not None:
        derived = {v for v in derived if v <= cap}
    base = set(range(1, 13)) if t.name == "size" else set(range(12))
    low = 1 if t.name == "size" else -(2**62)
    return sorted(v for v in base | derived if v >= low)


def _equalities(pd: ProcDef) -> list[tuple[BinOp, frozenset[Sym]]]:
    """The ``==`` conjuncts of the asserts, each with the control symbols it reads."""
    out = []
    for pred in pd.preds:
        for c in _conjuncts(pred):
            if isinstance(c, BinOp) and c.op == "==":
                syms = frozenset(x.sym for x in walk_expr(c) if isinstance(x, Read) and not x.idx)
                out.append((c, syms))
    return out


def _solve_for(eq: BinOp, sym: Sym, values: Mapping[Sym, Any]) -> int | None:
    """An integer ``sym`` making ``eq`` hold given ``values``, if ``eq`` is affine in it."""

    def f(v: int) -> Any:
        env = {**values, sym: v}
        return eval_control(eq.lhs, env) - eval_control(eq.rhs, env)

    try:
        f0, f1 = f(0), f(1)
        a = f1 - f0
        if not isinstance(a, int) or a == 0 or f0 % a != 0:
            return None
        # affine? checked at points a modulus or a floor division would not pass
        if any(f(v) != f0 + a * v for v in (2, 97, -89)):
            return None
    except InterpreterError:
        return None
    return int(-f0 // a)


def _satisfied(pd: ProcDef, values: Mapping[Sym, Any]) -> bool:
    for pred in pd.preds:
        try:
            ok = eval_control(pred, values)
        except InterpreterError:
            continue  # an assert on strides is checked later, when the arrays exist
        if not ok:
            return False
    return True


def _attempt(
    order: list[int],
    syms: list[Sym],
    cands: list[list[int | bool]],
    equalities: list[tuple[BinOp, frozenset[Sym]]],
    positive: set[Sym],
    rng: np.random.Generator,
) -> Values:
    values: Values = {}
    for k in order:
        s, c = syms[k], cands[k]
        solved = None
        if len(c) > 1:  # a pinned value stays pinned
            for eq, used in equalities:
                if s in used and all(u in values for u in used if u is not s):
                    solved = _solve_for(eq, s, values)
                    if solved is not None:
                        break
        if solved is None or (s in positive and solved <= 0):
            solved = c[int(rng.integers(len(c)))]
        values[s] = solved
    return values


def draw_controls(
    pd: ProcDef, rng: np.random.Generator, sizes: Mapping[str, int | bool]
) -> dict[Sym, int | bool]:
    """Values for the control parameters of ``pd`` that satisfy its asserts.

    Asserts that read strides are not considered here (the arrays do not exist yet).

    Args:
        pd: the proc.
        rng: the source of randomness.
        sizes: values pinned by parameter name.

    Raises:
        ArgumentError: ``sizes`` names something that is not a control parameter, or no
            satisfying values were found.
    """
    controls = [a for a in pd.args if isinstance(a.type, ControlType)]
    unknown = set(sizes) - {a.sym.name for a in controls}
    if unknown:
        raise ArgumentError(
            f"sizes= names {sorted(unknown)}, which are not control arguments of {pd.name}"
        )
    consts, moduli = _assert_constants(pd)
    syms = [a.sym for a in controls]
    positive = {a.sym for a in controls if a.type == SIZE}
    equalities = _equalities(pd)

    def ok(values: Mapping[Sym, Any]) -> bool:
        return all(values[s] > 0 for s in positive) and _satisfied(pd, values)

    cap = max([_SMALL, *(4 * m for m in moduli)])
    cands: list[list[int | bool]] = []
    for phase_cap, tries in ((cap, _REJECTION_TRIES // 4), (None, _REJECTION_TRIES)):
        cands = []
        for a in controls:
            assert isinstance(a.type, ControlType)
            pinned = sizes.get(a.sym.name)
            cands.append(
                [pinned] if pinned is not None else _candidates(a.type, consts, moduli, phase_cap)
            )
        for _ in range(tries):
            order = [int(k) for k in rng.permutation(len(syms))]
            values = _attempt(order, syms, cands, equalities, positive, rng)
            if ok(values):
                return values
    # rejection failed (a rare combination): search the candidates exhaustively, in order
    for combo in itertools.islice(itertools.product(*cands), _ENUMERATION_LIMIT):
        values = dict(zip(syms, combo, strict=True))
        if ok(values):
            return values
    preds = "; ".join(fmt_expr(e) for e in pd.preds)
    if not sizes and _provably_unsatisfiable(pd):
        raise UnsatisfiableAssertsError(
            f"could not draw arguments of {pd.name} satisfying its asserts ({preds}): no"
            " inputs satisfy them, they contradict each other (or the sizes' positivity)"
        )
    given = f" with {dict(sizes)} pinned" if sizes else ""
    raise UnsatisfiableAssertsError(
        f"could not draw arguments of {pd.name} satisfying its asserts ({preds}){given}; "
        "pin some with sizes={...}"
    )


class UnsatisfiableAssertsError(ArgumentError):
    """No inputs satisfying a proc's asserts were found to run it on: the asserts contradict
    each other (proved), or none of the values tried satisfy them, or the arrays the
    generator makes cannot satisfy their ``stride`` asserts."""


def _provably_unsatisfiable(pd: ProcDef) -> bool:
    """Whether the asserts (and positive sizes) have no solution at all (SMT)."""
    from cursched.analysis import smt
    from cursched.analysis.context import proc_props

    # proc_props drops what is not affine: a contradiction among the rest is one in all
    return smt.satisfiable(proc_props(pd)) is None
