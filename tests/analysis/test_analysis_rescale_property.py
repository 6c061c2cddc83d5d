"""Soundness of the rescalability decision on random terms: whenever ``rescale_rate`` accepts
a term with rate ``c``, ``T(m2) == T(m1) * base ** (c * (m1 - m2))`` holds numerically at random
points (the identity ``scan_fuse`` relies on). ``CURSCHED_FUZZ`` sets the number of examples."""

from __future__ import annotations

import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursched.analysis.rescale import Rate, rescale_rate
from cursched.ir.nodes import BinOp, Const, Expr, Extern, Read, USub
from cursched.ir.symbols import Sym
from cursched.ir.types import F64

M, X, Y = Sym("m"), Sym("x"), Sym("y")
EXAMPLES = int(os.environ.get("CURSCHED_FUZZ", "150"))


def _leaf() -> st.SearchStrategy[Expr]:
    m, x = Read(M, (), F64), Read(X, (), F64)
    softmax_terms = [
        Extern(f, (BinOp("-", x, m, F64),), F64) for f in ("exp", "exp2")
    ]  # the terms that rescale, so that accepted terms are common
    return st.one_of(
        st.sampled_from([m, x, Read(Y, (), F64), *softmax_terms]),
        st.sampled_from([0.5, 1.0, 2.0, -1.0]).map(lambda v: Const(v, F64)),
    )


def _grow(sub: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "/"]), sub, sub).map(
            lambda t: BinOp(t[0], t[1], t[2], F64)  # type: ignore[arg-type]
        ),
        sub.map(lambda e: USub(e, F64)),
        st.tuples(st.sampled_from(["exp", "exp2"]), sub).map(lambda t: Extern(t[0], (t[1],), F64)),
    )


TERMS = st.recursive(_leaf(), _grow, max_leaves=6)


def _eval(e: Expr, env: dict[Sym, float]) -> float:
    match e:
        case Const():
            return float(e.value)
        case Read():
            return env[e.sym]
        case USub():
            return -_eval(e.arg, env)
        case BinOp():
            a, b = _eval(e.lhs, env), _eval(e.rhs, env)
            return {"+": a + b, "-": a - b, "*": a * b}[e.op] if e.op != "/" else a / b
        case Extern():
            v = _eval(e.args[0], env)
            return math.exp(v) if e.name == "exp" else 2.0**v
        case _:
            raise AssertionError(e)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(term=TERMS, pts=st.lists(st.floats(-2, 2), min_size=4, max_size=4))
def test_accepted_terms_rescale(term: Expr, pts: list[float]) -> None:
    r = rescale_rate(term, lambda rd: rd.sym is M)
    if not isinstance(r, Rate):
        return
    m1, m2, x, y = pts
    try:
        t1 = _eval(term, {M: m1, X: x, Y: y})
        t2 = _eval(term, {M: m2, X: x, Y: y})
    except (ZeroDivisionError, OverflowError):
        return
    base = {None: 1.0, "e": math.e, "2": 2.0}[r.base]
    want = t1 * base ** (float(r.c) * (m1 - m2))
    assert math.isclose(t2, want, rel_tol=1e-6, abs_tol=1e-9 * (1 + abs(t2))), (r, t1, t2)
