"""Rescalability of a reduction term in a running value, for ``scan_fuse``.

A term ``T(m)`` of an accumulation ``s += T(m)`` is *rescalable* in ``m`` with rate ``c`` and
base ``b`` (``e`` or 2) when ``T(m') = T(m) * b ** (c * (m - m'))`` for all reals: then the sum of
the terms at the final ``m`` equals the sum of terms taken at the running values, each rescaled
by the product of the corrections ``b ** (c * (m_prev - m))`` made after it (the online-softmax
telescoping). ``rescale_rate`` decides it in two stages:

1. a rule table over the syntax: ``exp(A - c*m)`` (also ``expf``, ``exp2``), products and
   quotients of rescalable terms (the rates add), sums and differences of terms with the same
   rate, negation, ``select`` with conditions free of ``m``, and anything not reading ``m``;
2. when the table cannot decide, SMT (``cursched.analysis.smt.real_identity``): the identity
   above with ``m`` and ``m'`` as two unknowns, each ``exp`` of a sum written as a product of
   uninterpreted positive atoms ``P(t)`` with inverses ``N(t)``, ``P(t) * N(t) = 1`` (so the
   query is quantifier-free; quantified axioms about ``exp`` do not work with z3). Subterms the
   encoding does not understand (``log``, ``fmax``, a product inside an exponent) become
   unknowns of their own, a different one for ``m`` and for ``m'``: that only makes the
   identity harder to prove, never wrongly proven.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from math import isfinite

from cursched.analysis import smt
from cursched.ir.nodes import BinOp, Const, Expr, Extern, Read, USub
from cursched.ir.printer import print_expr
from cursched.ir.traversal import walk_expr

EXP_FAMILY: dict[str, str] = {"exp": "e", "expf": "e", "exp2": "2"}
"""Extern name -> the base of the exponential it computes."""


@dataclass(frozen=True, slots=True)
class Rate:
    """How a term scales with the running value: ``T(m) ~ base ** (-c * m)``.

    Attributes:
        base: ``"e"`` or ``"2"``; None for a term that does not depend on ``m`` (``c == 0``).
        c: the rate.
        extern: the extern spelling to use for the correction (``exp``, ``expf``, ``exp2``).
        by_smt: True when the rule table could not decide and SMT proved it.
    """

    base: str | None
    c: Fraction
    extern: str = "exp"
    by_smt: bool = False


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a term is not rescalable, with a counterexample when SMT found one."""

    reason: str
    counterexample: dict[str, float] | None = None


class _No(Exception):
    """The rule table cannot decide (internal)."""


RunningTest = Callable[[Read], bool]


def _reads_m(e: Expr, is_m: RunningTest) -> bool:
    return any(isinstance(x, Read) and is_m(x) for x in walk_expr(e))


def _num(e: Expr) -> Fraction | None:
    if isinstance(e, Const) and not isinstance(e.value, bool) and isfinite(e.value):
        return Fraction(e.value)
    return None


# ------------------------------------------------------------------------ the rule table


def linear_coeff(e: Expr, is_m: RunningTest) -> Fraction | None:
    """The coefficient ``k`` of ``m`` when ``e = A + k * m`` with ``A`` free of ``m``."""
    if not _reads_m(e, is_m):
        return Fraction(0)
    match e:
        case Read():
            return Fraction(1) if is_m(e) else None
        case USub():
            k = linear_coeff(e.arg, is_m)
            return None if k is None else -k
        case BinOp(op="+" | "-"):
            a, b = linear_coeff(e.lhs, is_m), linear_coeff(e.rhs, is_m)
            if a is None or b is None:
                return None
            return a + b if e.op == "+" else a - b
        case BinOp(op="*"):
            for k_side, other in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                k = _num(k_side)
                if k is not None:
                    inner = linear_coeff(other, is_m)
                    return None if inner is None else k * inner
            return None
        case BinOp(op="/"):
            k = _num(e.rhs)
            inner = linear_coeff(e.lhs, is_m)
            return None if k is None or k == 0 or inner is None else inner / k
        case _:
            return None


def _join(a: Rate, b: Rate, sign: int) -> Rate:
    if a.base is not None and b.base is not None and a.base != b.base:
        raise _No
    base = a.base if a.base is not None else b.base
    extern = a.extern if a.base is not None else b.extern
    c = a.c + sign * b.c
    return Rate(base if c != 0 else None, c, extern)


def _table(e: Expr, is_m: RunningTest) -> Rate:
    if not _reads_m(e, is_m):
        return Rate(None, Fraction(0))
    match e:
        case Extern(name=name, args=(arg,)) if name in EXP_FAMILY:
            k = linear_coeff(arg, is_m)
            if k is None:
                raise _No
            return Rate(EXP_FAMILY[name] if k else None, -k, name)
        case Extern(name="select", args=(a, b, x, y)):
            if _reads_m(a, is_m) or _reads_m(b, is_m):
                raise _No
            rx, ry = _table(x, is_m), _table(y, is_m)
            if (rx.base, rx.c) != (ry.base, ry.c):
                raise _No
            return rx
        case BinOp(op="*"):
            return _join(_table(e.lhs, is_m), _table(e.rhs, is_m), 1)
        case BinOp(op="/"):
            return _join(_table(e.lhs, is_m), _table(e.rhs, is_m), -1)
        case BinOp(op="+" | "-"):
            ra, rb = _table(e.lhs, is_m), _table(e.rhs, is_m)
            if (ra.base, ra.c) != (rb.base, rb.c):
                raise _No
            return ra if ra.base is not None else rb
        case USub():
            return _table(e.arg, is_m)
        case _:
            raise _No


# ---------------------------------------------------------------------- the SMT encoding


@dataclass
class _Encoding:
    """Real terms for one query; names unknowns ``a0, a1, ...`` and remembers their text."""

    is_m: RunningTest
    names: dict[str, str] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)
    positive: list[smt.RTerm] = field(default_factory=list)
    inverse: list[tuple[smt.RTerm, smt.RTerm]] = field(default_factory=list)

    def unknown(self, text: str) -> smt.RVar:
        name = self.names.get(text)
        if name is None:
            name = self.names[text] = f"a{len(self.names)}"
        return smt.RVar(name)

    def key(self, e: Expr, ver: int) -> str:
        """A key naming ``e`` exactly (symbols by identity: ``repr`` shows their ids), the
        version of the running value included when ``e`` reads it; remembers its text."""
        versioned = _reads_m(e, self.is_m)
        key = f"{e!r} @{ver}" if versioned else repr(e)
        self.shown[key] = f"{print_expr(e)} @{ver}" if versioned else print_expr(e)
        return key

    def atom(self, e: Expr, ver: int) -> smt.RVar:
        return self.unknown(self.key(e, ver))

    def term(self, e: Expr, ver: int) -> smt.RTerm:
        match e:
            case Const():
                k = _num(e)
                return smt.RNum(k) if k is not None else self.atom(e, ver)
            case Read():
                return self.unknown(f"m{ver}") if self.is_m(e) else self.atom(e, ver)
            case BinOp(op="+" | "*"):
                return smt.ROp(e.op, (self.term(e.lhs, ver), self.term(e.rhs, ver)))
            case BinOp(op="-"):
                neg = smt.ROp("-", (self.term(e.rhs, ver),))
                return smt.ROp("+", (self.term(e.lhs, ver), neg))
            case BinOp(op="/"):
                return smt.ROp("/", (self.term(e.lhs, ver), self.term(e.rhs, ver)))
            case USub():
                return smt.ROp("-", (self.term(e.arg, ver),))
            case Extern(name=name, args=(arg,)) if name in EXP_FAMILY:
                return self.power(EXP_FAMILY[name], self.exponent(arg, ver))
            case _:
                return self.atom(e, ver)

    def exponent(self, e: Expr, ver: int) -> dict[str, Fraction]:
        """``e`` as a linear combination of atoms (``"1"`` is the constant)."""
        out: dict[str, Fraction] = {}

        def add(key: str, k: Fraction) -> None:
            out[key] = out.get(key, Fraction(0)) + k

        def go(x: Expr, k: Fraction) -> None:
            num = _num(x)
            if num is not None:
                add("1", k * num)
                return
            match x:
                case Read() if self.is_m(x):
                    add(f"m{ver}", k)
                case USub():
                    go(x.arg, -k)
                case BinOp(op="+" | "-"):
                    go(x.lhs, k)
                    go(x.rhs, k if x.op == "+" else -k)
                case BinOp(op="*") if _num(x.lhs) is not None or _num(x.rhs) is not None:
                    c, other = (x.lhs, x.rhs) if _num(x.lhs) is not None else (x.rhs, x.lhs)
                    go(other, k * (_num(c) or Fraction(0)))
                case _:
                    add(self.key(x, ver), k)

        go(e, Fraction(1))
        return {key: k for key, k in out.items() if k != 0}

    def power(self, base: str, combo: dict[str, Fraction]) -> smt.RTerm:
        """``base ** sum(k * atom)`` as a product of positive atoms and their inverses."""
        factors: list[smt.RTerm] = []
        for key, k in sorted(combo.items()):
            unit = Fraction(1) if k.denominator == 1 else abs(k)
            times = int(abs(k) / unit)
            p = self.unknown(f"{base}^({unit} * {key})")
            n = self.unknown(f"{base}^(-{unit} * {key})")
            if (p, n) not in self.inverse:
                self.positive += [p, n]
                self.inverse.append((p, n))
            factors += [p if k > 0 else n] * times
        if not factors:
            return smt.RNum(Fraction(1))
        return factors[0] if len(factors) == 1 else smt.ROp("*", tuple(factors))


def _candidates(e: Expr, is_m: RunningTest) -> list[Rate]:
    out = [Rate(None, Fraction(0))]
    for x in walk_expr(e):
        if isinstance(x, Extern) and x.name in EXP_FAMILY and len(x.args) == 1:
            k = linear_coeff(x.args[0], is_m)
            if k:
                r = Rate(EXP_FAMILY[x.name], -k, x.name, by_smt=True)
                if r not in out:
                    out.append(r)
    return out


def _smt(e: Expr, is_m: RunningTest) -> Rate | Refusal:
    last: dict[str, float] | None = None
    for r in _candidates(e, is_m):
        enc = _Encoding(is_m)
        lhs = enc.term(e, 2)
        rhs: smt.RTerm = enc.term(e, 1)
        if r.base is not None:
            shift = enc.power(r.base, {"m1": r.c, "m2": -r.c})
            rhs = smt.ROp("*", (rhs, shift))
        one = smt.RNum(Fraction(1))
        model = smt.real_identity(
            lhs,
            rhs,
            positive=enc.positive,
            equal=[(smt.ROp("*", (p, n)), one) for p, n in enc.inverse],
        )
        if model is None:
            return r
        texts = {name: enc.shown.get(key, key) for key, name in enc.names.items()}
        shown = {texts.get(k, k): v for k, v in model.items() if "^" not in texts.get(k, "^")}
        last = shown
    return Refusal("not rescalable: neither the rule table nor SMT proves it", last)


def rescale_rate(term: Expr, is_m: RunningTest) -> Rate | Refusal:
    """How ``term`` scales with the running value (reads for which ``is_m`` holds).

    Args:
        term: the right-hand side of an accumulation.
        is_m: recognises the reads of the running value.

    Returns:
        A ``Rate`` (rule table first, then SMT), or a ``Refusal`` with the reason and, when
        SMT found one, a counterexample (``m1``/``m2`` are the two running values).
    """
    try:
        return _table(term, is_m)
    except _No:
        return _smt(term, is_m)
