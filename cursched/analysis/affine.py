"""Quasi-affine integer arithmetic: a normal form, conversion from/to the IR, simplification.

An ``Aff`` is ``const + sum(coeff * atom)`` where an atom is a control variable (a size, an
index, a loop variable), ``stride(A, d)``, or the floor division / modulo of an ``Aff`` by a
positive constant. Terms are kept sorted by a canonical key and coefficients are never zero,
so two ``Aff`` values are equal exactly when they are the same normal form.

Division and modulo atoms are normalised when built (multiples of the divisor are pulled out,
nested divisions merged), which is always sound for floor semantics; the range-dependent rules
(``(ii) / 4 == 0`` when ``0 <= ii < 4``) live in ``simplify_aff``.

``Prop`` is the matching language of linear facts (``aff >= 0``, ``aff == 0``, and, or, not,
boolean variables) used by the contexts and the SMT layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias, assert_never

from cursched.ir.nodes import (
    BinOp,
    Const,
    Expr,
    Extern,
    Read,
    StrideExpr,
    USub,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children
from cursched.ir.types import BOOL, INDEX, INT, ControlType, Type

# --------------------------------------------------------------------------------- atoms


@dataclass(frozen=True, slots=True)
class Var:
    """A control variable; ``type`` (size, index, ...) rides along for rebuilding IR."""

    sym: Sym
    type: Type = field(default=INDEX, compare=False)


@dataclass(frozen=True, slots=True)
class Stride:
    """``stride(sym, dim)``, an opaque non-negative integer."""

    sym: Sym
    dim: int


@dataclass(frozen=True, slots=True)
class Div:
    """``floor(num / k)`` with ``k > 0``."""

    num: Aff
    k: int


@dataclass(frozen=True, slots=True)
class Mod:
    """``num mod k`` (floor modulo, in ``[0, k)``) with ``k > 0``."""

    num: Aff
    k: int


Atom: TypeAlias = Var | Stride | Div | Mod
AtomKey: TypeAlias = tuple[object, ...]


def atom_key(a: Atom) -> AtomKey:
    """A total order on atoms: variables by creation order, then strides, divs, mods."""
    if type(a) is Var:  # by far the most common atom: skip the match
        return (0, a.sym.id)
    match a:
        case Var():
            return (0, a.sym.id)
        case Stride():
            return (1, a.sym.id, a.dim)
        case Div():
            return (2, a.num.key(), a.k)
        case Mod():
            return (3, a.num.key(), a.k)
        case _:
            assert_never(a)


def _term_key(t: tuple[Atom, int]) -> AtomKey:
    return atom_key(t[0])


@dataclass(frozen=True, slots=True)
class Aff:
    """``const + sum(coeff * atom for atom, coeff in terms)`` in normal form."""

    terms: tuple[tuple[Atom, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(parts: Mapping[Atom, int], const: int = 0) -> Aff:
        """The normal form of a linear combination (zero coefficients dropped)."""
        if len(parts) == 1:  # nothing to order
            ((a, c),) = parts.items()
            return Aff(((a, c),) if c else (), const)
        items = [(a, c) for a, c in parts.items() if c]
        if len(items) > 1:
            items.sort(key=_term_key)
        return Aff(tuple(items), const)

    @staticmethod
    def var(sym: Sym, type: Type = INDEX) -> Aff:
        return Aff(((Var(sym, type), 1),), 0)

    @staticmethod
    def num(value: int) -> Aff:
        return Aff((), value)

    def key(self) -> AtomKey:
        return (tuple((atom_key(a), c) for a, c in self.terms), self.const)

    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, other: Aff | int) -> Aff:
        if isinstance(other, int):
            return Aff(self.terms, self.const + other)
        # a constant on either side leaves the other's terms, already in normal form
        if not other.terms:
            return Aff(self.terms, self.const + other.const)
        if not self.terms:
            return Aff(other.terms, self.const + other.const)
        acc = dict(self.terms)
        for a, c in other.terms:
            acc[a] = acc.get(a, 0) + c
        return Aff.of(acc, self.const + other.const)

    def __neg__(self) -> Aff:
        return self.scale(-1)

    def __sub__(self, other: Aff | int) -> Aff:
        return self + (-other if isinstance(other, int) else other.scale(-1))

    def scale(self, k: int) -> Aff:
        if k == 0:
            return Aff()
        return Aff(tuple((a, c * k) for a, c in self.terms), self.const * k)

    def atoms(self) -> Iterable[Atom]:
        """Every atom, nested ones (inside divisions and modulos) included."""
        for a, _ in self.terms:
            yield a
            if isinstance(a, Div | Mod):
                yield from a.num.atoms()

    def syms(self) -> set[Sym]:
        return {a.sym for a in self.atoms() if isinstance(a, Var | Stride)}

    def coeff(self, sym: Sym) -> int:
        for a, c in self.terms:
            if isinstance(a, Var) and a.sym is sym:
                return c
        return 0


def div(a: Aff, k: int) -> Aff:
    """``floor(a / k)`` normalised: multiples of ``k`` pulled out, nested divisions merged."""
    assert k > 0
    if k == 1:
        return a
    whole: dict[Atom, int] = {}
    rest: dict[Atom, int] = {}
    for atom, c in a.terms:
        q, r = divmod(c, k)
        if q:
            whole[atom] = q
        if r:
            rest[atom] = r
    q0, r0 = divmod(a.const, k)
    out = Aff.of(whole, q0)
    if not rest:
        return out
    rem = Aff.of(rest, r0)
    # floor(floor(x / a) / b) == floor(x / (a * b)) for positive a, b
    if len(rem.terms) == 1 and rem.terms[0][1] == 1 and isinstance(rem.terms[0][0], Div):
        inner = rem.terms[0][0]
        return out + div(inner.num + rem.const * inner.k, inner.k * k)
    return out + Aff(((Div(rem, k), 1),), 0)


def mod(a: Aff, k: int) -> Aff:
    """``a mod k`` normalised: coefficients and constant reduced modulo ``k``."""
    assert k > 0
    if k == 1:
        return Aff()
    rest = {atom: c % k for atom, c in a.terms if c % k}
    rem = Aff.of(rest, a.const % k)
    if rem.is_const():
        return rem
    # (x mod (k * m)) mod k == x mod k
    if len(rem.terms) == 1 and rem.terms[0][1] == 1 and not rem.const:
        inner = rem.terms[0][0]
        if isinstance(inner, Mod) and inner.k % k == 0:
            return mod(inner.num, k)
    return Aff(((Mod(rem, k), 1),), 0)


# ------------------------------------------------------------------------ IR <-> Aff

Rename: TypeAlias = Mapping[Sym, Sym]


def _is_int_type(t: Type) -> bool:
    return isinstance(t, ControlType) and t.is_integer()


# ``to_aff`` without renaming, memoised per expression node: IR subtrees are shared between
# the versions of a proc, so every check and every ``simplify`` meets the same index nodes
# again. Keyed by ``id`` with the node kept alive in the entry (so the id cannot be reused
# while the entry exists); structural keys would cost a deep hash per lookup. Cleared when
# full, which only costs recomputation.
_AFF_MEMO: dict[int, tuple[Expr, Aff | None]] = {}
_AFF_MEMO_LIMIT = 1 << 15


def to_aff(e: Expr, env: Rename | None = None) -> Aff | None:
    """The normal form of a control integer expression, or None when it is not quasi-affine.

    Args:
        e: the expression.
        env: symbols to rename on the way (fresh copies of loop variables for dependence
            queries).
    """
    t = type(e)
    if env or (t is not BinOp and t is not USub):
        return _to_aff(e, env)
    hit = _AFF_MEMO.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    a = _to_aff(e, None)
    if len(_AFF_MEMO) >= _AFF_MEMO_LIMIT:
        _AFF_MEMO.clear()
    _AFF_MEMO[id(e)] = (e, a)
    return a


def _to_aff(e: Expr, env: Rename | None) -> Aff | None:
    if type(e) is Read and not env:  # the common leaf, without the match below
        if e.idx or not _is_int_type(e.type):
            return None
        return Aff(((Var(e.sym, e.type), 1),), 0)
    match e:
        case Const():
            v = e.value
            return Aff.num(v) if isinstance(v, int) and not isinstance(v, bool) else None
        case Read():
            if e.idx or not _is_int_type(e.type):
                return None
            sym = env.get(e.sym, e.sym) if env else e.sym
            return Aff.var(sym, e.type)
        case StrideExpr():
            sym = env.get(e.sym, e.sym) if env else e.sym
            return Aff(((Stride(sym, e.dim), 1),), 0)
        case USub():
            a = to_aff(e.arg, env)
            return None if a is None else -a
        case BinOp():
            return _binop_aff(e, env)
        case Extern() | WindowExpr():
            return None
        case _:
            assert_never(e)


def _binop_aff(e: BinOp, env: Rename | None) -> Aff | None:
    lhs = to_aff(e.lhs, env)
    rhs = to_aff(e.rhs, env)
    if lhs is None or rhs is None:
        return None
    match e.op:
        case "+":
            return lhs + rhs
        case "-":
            return lhs - rhs
        case "*":
            if lhs.is_const():
                return rhs.scale(lhs.const)
            if rhs.is_const():
                return lhs.scale(rhs.const)
            return None
        case "/" | "%":
            if not rhs.is_const() or rhs.const <= 0:
                return None
            return div(lhs, rhs.const) if e.op == "/" else mod(lhs, rhs.const)
        case _:
            return None


def _int(v: int) -> Expr:
    return Const(v, INT)


def _atom_expr(a: Atom) -> Expr:
    match a:
        case Var():
            return Read(a.sym, (), a.type)
        case Stride():
            return StrideExpr(a.sym, a.dim, INDEX)
        case Div():
            return BinOp("/", from_aff(a.num), _int(a.k), INDEX)
        case Mod():
            return BinOp("%", from_aff(a.num), _int(a.k), INDEX)
        case _:
            assert_never(a)


def _term_expr(a: Atom, c: int) -> Expr:
    base = _atom_expr(a)
    return base if c == 1 else BinOp("*", _int(c), base, INDEX)


def from_aff(a: Aff) -> Expr:
    """A readable IR expression for ``a``: positive terms first, ``4 * io + ii``, ``n - i - 1``."""
    pos = [(x, c) for x, c in a.terms if c > 0]
    neg = [(x, -c) for x, c in a.terms if c < 0]
    out: Expr | None = None
    if not pos and a.const > 0:
        out = _int(a.const)
    for x, c in pos:
        t = _term_expr(x, c)
        out = t if out is None else BinOp("+", out, t, INDEX)
    for x, c in neg:
        t = _term_expr(x, c)
        out = USub(t, INDEX) if out is None else BinOp("-", out, t, INDEX)
    if out is None:
        return _int(a.const)
    if pos and a.const > 0:
        out = BinOp("+", out, _int(a.const), INDEX)
    elif a.const < 0:
        out = BinOp("-", out, _int(-a.const), INDEX)
    return out


def _is_int_const(e: Expr, v: int) -> bool:
    return type(e) is Const and e.value == v and e.type == INT


def _is_term(e: Expr, a: Atom, c: int) -> bool:
    """``_term_expr(a, c) == e`` for a variable or stride atom, without building it."""
    if c != 1:
        if not (type(e) is BinOp and e.op == "*" and e.type == INDEX):
            return False
        if not _is_int_const(e.lhs, c):
            return False
        e = e.rhs
    if type(a) is Var:
        return type(e) is Read and e.sym is a.sym and e.idx == () and e.type == a.type
    if type(a) is Stride:
        return type(e) is StrideExpr and e.sym is a.sym and e.dim == a.dim and e.type == INDEX
    return False


def matches_from_aff(a: Aff, e: Expr) -> bool | None:
    """``from_aff(a) == e``, decided without building the expression, for ``a`` without
    division or modulo atoms (None for the others). ``simplify`` mostly meets expressions
    already in normal form, so this comparison is what it does most.
    """
    if any(not isinstance(x, Var | Stride) for x, _ in a.terms):
        return None
    # from_aff's result: a head, then a left-nested chain of ``+ term`` (positive terms),
    # ``- term`` (negative ones) and finally ``+ const`` or ``- const``
    chain: list[tuple[str, Atom | None, int]] = []
    pos = [(x, c) for x, c in a.terms if c > 0]
    neg = [(x, -c) for x, c in a.terms if c < 0]
    chain += [("+", x, c) for x, c in pos]
    chain += [("-", x, c) for x, c in neg]
    if pos and a.const > 0:
        chain.append(("+", None, a.const))
    elif (pos or neg) and a.const < 0:
        chain.append(("-", None, -a.const))
    if not pos and a.const > 0:
        chain.insert(0, ("", None, a.const))  # the constant comes first
    if not chain:
        return _is_int_const(e, a.const)
    spine: list[BinOp] = []
    x = e
    while len(spine) < len(chain) - 1:
        if not (type(x) is BinOp and x.op == chain[len(chain) - 1 - len(spine)][0]):
            return False
        if x.type != INDEX:
            return False
        spine.append(x)
        x = x.lhs
    # ``x`` is the head: a constant, the first positive term, or minus the first negative
    op, atom, c = chain[0]
    if atom is None:
        ok = _is_int_const(x, c)
    elif op == "-":
        ok = type(x) is USub and x.type == INDEX and _is_term(x.arg, atom, c)
    else:
        ok = _is_term(x, atom, c)
    if not ok:
        return False
    for node, (_, atom, c) in zip(reversed(spine), chain[1:], strict=True):
        if not (_is_int_const(node.rhs, c) if atom is None else _is_term(node.rhs, atom, c)):
            return False
    return True


# ------------------------------------------------------------------------------ props


@dataclass(frozen=True, slots=True)
class Ge:
    """``aff >= 0``."""

    aff: Aff


@dataclass(frozen=True, slots=True)
class Eq:
    """``aff == 0``."""

    aff: Aff


@dataclass(frozen=True, slots=True)
class BVar:
    """A boolean control variable."""

    sym: Sym


@dataclass(frozen=True, slots=True)
class BConst:
    value: bool


@dataclass(frozen=True, slots=True)
class Not:
    arg: Prop


@dataclass(frozen=True, slots=True)
class And:
    args: tuple[Prop, ...]


@dataclass(frozen=True, slots=True)
class Or:
    args: tuple[Prop, ...]


Prop: TypeAlias = Ge | Eq | BVar | BConst | Not | And | Or


def le(a: Aff, b: Aff) -> Prop:
    """``a <= b``."""
    return Ge(b - a)


def lt(a: Aff, b: Aff) -> Prop:
    """``a < b``."""
    return Ge(b - a - 1)


def to_prop(e: Expr, env: Rename | None = None) -> Prop | None:
    """The ``Prop`` of a control boolean expression, or None when it is not affine."""
    match e:
        case Const() if isinstance(e.value, bool):
            return BConst(e.value)
        case Read() if e.type == BOOL and not e.idx:
            return BVar(env.get(e.sym, e.sym) if env else e.sym)
        case BinOp() if e.op in ("and", "or"):
            lhs, rhs = to_prop(e.lhs, env), to_prop(e.rhs, env)
            if lhs is None or rhs is None:
                return None
            return And((lhs, rhs)) if e.op == "and" else Or((lhs, rhs))
        case BinOp() if e.op in ("<", ">", "<=", ">=", "==", "!="):
            lhs_a, rhs_a = to_aff(e.lhs, env), to_aff(e.rhs, env)
            if lhs_a is None or rhs_a is None:
                return None
            match e.op:
                case "<":
                    return lt(lhs_a, rhs_a)
                case "<=":
                    return le(lhs_a, rhs_a)
                case ">":
                    return lt(rhs_a, lhs_a)
                case ">=":
                    return le(rhs_a, lhs_a)
                case "==":
                    return Eq(lhs_a - rhs_a)
                case _:
                    return Not(Eq(lhs_a - rhs_a))
        case _:
            return None


# ------------------------------------------------------------------ ranges and decision

Bound: TypeAlias = tuple[int | None, int | None]
"""An inclusive integer interval; None is unbounded on that side."""


class HasRanges(Protocol):
    """Anything that knows constant ranges of variables (a path context)."""

    def ranges(self) -> Mapping[Sym, Bound]: ...


def _add(x: int | None, y: int | None) -> int | None:
    return None if x is None or y is None else x + y


def _scaled(b: Bound, c: int) -> Bound:
    lo, hi = b
    lo2 = None if lo is None else lo * c
    hi2 = None if hi is None else hi * c
    return (lo2, hi2) if c > 0 else (hi2, lo2)


def atom_range(a: Atom, ranges: Mapping[Sym, Bound]) -> Bound:
    """A constant interval holding every value of ``a``."""
    match a:
        case Var():
            if a.sym in ranges:
                return ranges[a.sym]
            return (1, None) if a.type == ControlType("size") else (None, None)
        case Stride():
            return (0, None)
        case Div():
            lo, hi = aff_range(a.num, ranges)
            return (None if lo is None else lo // a.k, None if hi is None else hi // a.k)
        case Mod():
            lo, hi = aff_range(a.num, ranges)
            if lo is not None and hi is not None and lo // a.k == hi // a.k:
                return (lo % a.k, hi % a.k)
            return (0, a.k - 1)
        case _:
            assert_never(a)


def aff_range(a: Aff, ranges: Mapping[Sym, Bound]) -> Bound:
    """A constant interval holding every value of ``a`` given the ranges of its variables."""
    lo: int | None = a.const
    hi: int | None = a.const
    for atom, c in a.terms:
        alo, ahi = _scaled(atom_range(atom, ranges), c)
        lo, hi = _add(lo, alo), _add(hi, ahi)
    return (lo, hi)


@dataclass(frozen=True, slots=True)
class SymBound:
    """A loop variable's symbolic inclusive bounds ``lo <= sym <= hi``."""

    sym: Sym
    lo: Aff
    hi: Aff


def prove_nonneg(
    a: Aff, loops: Sequence[SymBound], ranges: Mapping[Sym, Bound] | None = None
) -> bool:
    """A fast, sound, incomplete proof that ``a >= 0``.

    Loop variables are eliminated innermost first by their symbolic bounds (the lower bound
    where the coefficient is positive, the upper one where it is negative); what is left is
    bounded by constant ranges (sizes are at least 1, modulos lie in ``[0, k)``).
    """
    for lb in reversed(loops):
        c = a.coeff(lb.sym)
        if c == 0:
            continue
        rest = Aff(tuple(t for t in a.terms if not (isinstance(t[0], Var) and t[0].sym is lb.sym)))
        a = rest + (lb.lo.scale(c) if c > 0 else lb.hi.scale(c)) + a.const
    lo, _ = aff_range(_expand_divs(a), ranges or {})
    return lo is not None and lo >= 0


def _expand_divs(a: Aff) -> Aff:
    """Rewrite ``m * k * (x / k)`` as ``m * (x - x % k)``, so ``x`` can cancel and the
    modulo is bounded by ``[0, k)`` (``M - 4 * (M / 4)`` becomes ``M % 4``)."""
    for atom, c in a.terms:
        if isinstance(atom, Div) and c % atom.k == 0:
            m = c // atom.k
            without = Aff(tuple(t for t in a.terms if t[0] != atom), a.const)
            return _expand_divs(without + (atom.num - mod(atom.num, atom.k)).scale(m))
    return a


# ------------------------------------------------------------------------- simplify


def _simplify_atom(a: Atom, ranges: Mapping[Sym, Bound]) -> Aff:
    match a:
        case Var() | Stride():
            return Aff(((a, 1),), 0)
        case Div():
            num = simplify_aff(a.num, ranges)
            lo, hi = aff_range(num, ranges)
            if lo is not None and hi is not None and lo // a.k == hi // a.k:
                return Aff.num(lo // a.k)
            return div(num, a.k)
        case Mod():
            num = simplify_aff(a.num, ranges)
            lo, hi = aff_range(num, ranges)
            if lo is not None and hi is not None and lo // a.k == hi // a.k:
                return num - (lo // a.k) * a.k
            return mod(num, a.k)
        case _:
            assert_never(a)


def simplify_aff(a: Aff, ranges: Mapping[Sym, Bound] | None = None) -> Aff:
    """``a`` with divisions and modulos removed where the ranges decide them."""
    if not any(isinstance(atom, Div | Mod) for atom, _ in a.terms):
        return a  # only the division and modulo atoms depend on the ranges
    rs = ranges or {}
    # the sum of the simplified terms, accumulated once (what adding them one by one gives)
    acc: dict[Atom, int] = {}
    const = a.const
    for atom, c in a.terms:
        part = _simplify_atom(atom, rs)
        const += part.const * c
        for b, d in part.terms:
            acc[b] = acc.get(b, 0) + d * c
    return _fold_divmod(Aff.of(acc, const))


def _fold_divmod(a: Aff) -> Aff:
    """Fold ``m * k * (x / k) + m * (x % k)`` back into ``m * x`` (what merging split loops
    leaves behind)."""
    coeffs = dict(a.terms)
    for atom, c in a.terms:
        if not isinstance(atom, Mod):
            continue
        d = Div(atom.num, atom.k)
        if coeffs.get(d) == c * atom.k and coeffs.get(atom) == c:
            rest = Aff(tuple(t for t in a.terms if t[0] != atom and t[0] != d), a.const)
            return _fold_divmod(rest + atom.num.scale(c))
    return a


def _ranges_of(ctx: HasRanges | Mapping[Sym, Bound] | None) -> Mapping[Sym, Bound]:
    if ctx is None:
        return {}
    if isinstance(ctx, Mapping):
        return ctx
    return ctx.ranges()


def _decide(p: Prop, ranges: Mapping[Sym, Bound]) -> bool | None:
    match p:
        case Ge():
            lo, hi = aff_range(p.aff, ranges)
            if lo is not None and lo >= 0:
                return True
            return False if hi is not None and hi < 0 else None
        case Eq():
            lo, hi = aff_range(p.aff, ranges)
            if lo == 0 and hi == 0:
                return True
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                return False
            return None
        case _:
            return None


def simplify_expr(e: Expr, ctx: HasRanges | Mapping[Sym, Bound] | None = None) -> Expr:
    """Simplify the control arithmetic in ``e`` (data operations are left alone).

    Integer control expressions are rebuilt from their normal form (``4 * io + ii``);
    divisions, modulos and comparisons that the constant ranges of ``ctx`` decide are folded.

    Args:
        e: any expression.
        ctx: a path context (or a mapping from symbols to inclusive constant ranges).
    """
    return _Simplify(_ranges_of(ctx)).expr(e)


class _Simplify:
    """``simplify_expr`` under one set of ranges. A method, not a nested function calling
    itself: that would be a reference cycle (function and closure cell), left with what
    it holds to the cyclic garbage collector after every call."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: Mapping[Sym, Bound]) -> None:
        self.ranges = ranges

    def expr(self, x: Expr) -> Expr:
        ranges = self.ranges
        match x:
            case BinOp() | USub() if _is_int_type(x.type):
                a = to_aff(x)
                if a is not None:
                    s = simplify_aff(a, ranges)
                    if matches_from_aff(s, x):
                        return x  # unchanged: keep the node (and srcinfo)
                    out = from_aff(s)
                    return x if out == x else out
            case BinOp() if x.op in ("<", ">", "<=", ">=", "==", "!="):
                p = to_prop(x)
                decided = None if p is None else _decide(_simplify_prop(p, ranges), ranges)
                if decided is not None:
                    return Const(decided, BOOL)
            case _:
                pass
        return map_expr_children(x, self.expr)


def _simplify_prop(p: Prop, ranges: Mapping[Sym, Bound]) -> Prop:
    match p:
        case Ge():
            return Ge(simplify_aff(p.aff, ranges))
        case Eq():
            return Eq(simplify_aff(p.aff, ranges))
        case _:
            return p
