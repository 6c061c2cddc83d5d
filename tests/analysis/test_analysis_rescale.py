"""analysis/rescale.py (the rescalability rule table and its SMT fallback) and
smt.real_identity."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cursched import DRAM, proc
from cursched.analysis import smt
from cursched.analysis.rescale import Rate, Refusal, linear_coeff, rescale_rate
from cursched.ir.nodes import Read, Reduce


@proc
def terms(n: size, x: f32[n] @ DRAM, s: f32[16] @ DRAM):
    m: f32
    m = 0.0
    for i in seq(0, n):
        s[0] += exp(x[i] - m)
        s[1] += exp(x[i] * m)
        s[2] += (x[i] - m) * (x[i] - m)
        s[3] += exp(x[i]) / exp(m)
        s[4] += exp(x[i] - m) * (m - m + 1.0)
        s[5] += exp2(2.0 * (x[i] - m)) * x[i]
        s[6] += exp(x[i] - m) + 1.0
        s[7] += expf(0.5 * (x[i] - m))
        s[8] += x[i]
        s[9] += exp(x[i] - m) * exp(x[i] - m) / exp(x[i] - m)
        s[10] += exp(x[i] - m) * m / m
        s[11] += select(x[i], 0.0, exp(x[i] - m), 2.0 * exp(1.0 - m))
        s[12] += exp(m - x[i])
        s[13] += exp(x[i] - m) * exp2(x[i] - m)
        s[14] += -exp(x[i] - m) / 3.0


def _cases() -> tuple[list[Reduce], object]:
    loop = terms.ir().body[2]
    m = terms.ir().body[0].sym
    return list(loop.body), (lambda r: isinstance(r, Read) and r.sym is m)


@pytest.mark.parametrize(
    ("k", "base", "c", "by_smt"),
    [
        (0, "e", 1, False),
        (3, "e", 1, False),
        (4, "e", 1, True),
        (5, "2", 2, False),
        (7, "e", Fraction(1, 2), False),
        (8, None, 0, False),
        (9, "e", 1, False),
        (11, "e", 1, False),
        (12, "e", -1, False),
        (14, "e", 1, False),
    ],
)
def test_rates(k: int, base: str | None, c: Fraction | int, by_smt: bool) -> None:
    stmts, is_m = _cases()
    r = rescale_rate(stmts[k].rhs, is_m)  # type: ignore[arg-type]
    assert isinstance(r, Rate), r
    assert (r.base, r.c, r.by_smt) == (base, c, by_smt)


@pytest.mark.parametrize("k", [1, 2, 6, 10, 13])
def test_refusals(k: int) -> None:
    stmts, is_m = _cases()
    r = rescale_rate(stmts[k].rhs, is_m)  # type: ignore[arg-type]
    assert isinstance(r, Refusal), r


def test_counterexample_of_the_variance() -> None:
    stmts, is_m = _cases()
    r = rescale_rate(stmts[2].rhs, is_m)  # type: ignore[arg-type]
    assert isinstance(r, Refusal) and r.counterexample is not None
    assert set(r.counterexample) == {"m1", "m2", "x[i]"}


def test_linear_coeff() -> None:
    stmts, is_m = _cases()
    arg = stmts[7].rhs.args[0]  # type: ignore[attr-defined]
    assert linear_coeff(arg, is_m) == Fraction(-1, 2)  # type: ignore[arg-type]
    assert linear_coeff(stmts[1].rhs.args[0], is_m) is None  # type: ignore[attr-defined, arg-type]


def test_real_identity() -> None:
    x, y, p, n = (smt.RVar(v) for v in "xypn")
    one = smt.RNum(Fraction(1))
    assert smt.real_identity(smt.ROp("*", (x, y)), smt.ROp("*", (y, x))) is None
    assert (
        smt.real_identity(
            smt.ROp("*", (x, p, n)), x, positive=[p, n], equal=[(smt.ROp("*", (p, n)), one)]
        )
        is None
    )
    model = smt.real_identity(smt.ROp("*", (x, x)), x)
    assert model is not None and model["x"] * model["x"] != model["x"]
    # division by zero is not assumed to be anything: x / x = 1 is refused
    assert smt.real_identity(smt.ROp("/", (x, x)), one) is not None
