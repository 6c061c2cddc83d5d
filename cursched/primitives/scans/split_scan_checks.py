"""What ``split_scan`` needs to know about a scan loop: its running value, how each update
combines (an associative operator or a linear recurrence), and the writes of its exclusive and
inclusive values. Each way a loop can fail to be a splittable scan has its own error class.

A scan loop's body is, in order: writes ``out[f(i)] = h`` of the running value before the
update (exclusive values), one update of the scalar ``h``, and writes after it (inclusive
values). The update is classified by a rule table:

- ``h += e``, ``h = h + e``, ``h = e + h``: the monoid ``+`` (identity 0);
- ``h = h * e``, ``h = e * h``: ``*`` (identity 1);
- ``h = fmax(h, e)`` (``fmaxf``, ``fmin``, either argument order): max/min (identity -inf/inf);
- ``h = a * h + b`` (and its commuted spellings): the linear recurrence, composed as pairs
  ``(A, B)``, identity ``(1, 0)``;

and, for float updates the table cannot read, by SMT (``smt.real_identity``): the update
``f(h)`` is linear when ``f(h) == f(0) + (f(1) - f(0)) * h`` for all reals, every read and
extern call free of ``h`` an unknown of its own; then ``a = f(1) - f(0)`` and ``b = f(0)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.cursors import ForCursor
from cursched.errors import (
    BadArgumentError,
    DependenceError,
    NotProvenError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.nodes import Assign, BinOp, Const, Expr, Extern, For, Read, Reduce, Stmt, USub
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import subst_expr, walk_expr
from cursched.ir.types import DataType, Type
from cursched.primitives.registry import fail
from cursched.primitives.scans.precision import mixed_precision

PRIMITIVE = "split_scan"

Op = Literal["+", "*", "max", "min", "linear"]

_MONOID_EXTERNS: dict[str, Op] = {"fmax": "max", "fmaxf": "max", "fmin": "min", "fminf": "min"}


class SplitScanChunkError(BadArgumentError):
    """split_scan, precondition 1: the chunk is not a positive integer constant."""


class SplitScanLoopError(ShapeMismatchError):
    """split_scan, precondition 2: the loop is not a sequential loop."""


class SplitScanUpdateError(ShapeMismatchError):
    """split_scan, precondition 3: the body has no update, or several, of one scalar."""


class SplitScanBodyError(ShapeMismatchError):
    """split_scan, precondition 4: a statement is neither the update nor a write of the
    running value (``out[f(i)] = h``)."""


class SplitScanRunningReadError(DependenceError):
    """split_scan, precondition 5: the running value is read elsewhere than in its update
    and the writes of it (an operand depends on it)."""


class SplitScanOutputError(ShapeMismatchError):
    """split_scan, precondition 6: an output write's index is not affine in the loop
    variable with a nonzero coefficient, or the output is read or written by another
    statement of the loop (each iteration must own its element)."""


class SplitScanNotAssociativeError(ShapeMismatchError):
    """split_scan, precondition 7: the update is neither an associative operator nor a
    linear recurrence (rule table, then SMT)."""


class SplitScanFixupError(BadArgumentError):
    """split_scan, precondition 9: ``fixup`` is not ``"combine"``, ``"products"`` or
    ``"rescan"``, or ``"products"`` was asked of a scan that is not a linear recurrence
    writing only inclusive values (each element's product of ``a`` up to and including it is
    what the fix-up of an inclusive value needs)."""


class SplitScanPrecisionError(TypeMismatchError):
    """split_scan, precondition 10: the loop mixes data precisions (the running value, its
    operands and outputs must share one: the chunks' copies are typed by it)."""


class SplitScanTripCountError(NotProvenError):
    """split_scan, precondition 11: the loop's trip count ``hi - lo`` may be negative, or is a
    constant 0 or less (the loop never runs): the chunk count is the shape of the chunks'
    buffers, which must be valid (a negative one fails at run time, a constant 0 is no type).
    """


@dataclass(frozen=True)
class Combine:
    """How an update combines the running value with the step's operand(s).

    Attributes:
        op: the operator, or ``"linear"`` for ``h = a * h + b``.
        operand: the step's operand (``b`` of the linear form).
        coeff: ``a`` of the linear form (None otherwise).
        extern: the extern spelling of max/min.
        by_smt: True when SMT decided the linear form.
    """

    op: Op
    operand: Expr
    coeff: Expr | None = None
    extern: str | None = None
    by_smt: bool = False


@dataclass(frozen=True)
class ScanShape:
    """A splittable scan loop."""

    loop: For
    running: Sym
    type: DataType
    update: Stmt
    combine: Combine
    before: tuple[Assign, ...]  # writes of the exclusive value
    after: tuple[Assign, ...]  # writes of the inclusive value


def _is_h(e: Expr, h: Sym) -> bool:
    return isinstance(e, Read) and e.sym is h and not e.idx


def _reads(e: Expr, syms: set[Sym]) -> bool:
    return any(isinstance(x, Read) and x.sym in syms for x in walk_expr(e))


def analyse(loop: ForCursor) -> ScanShape:
    """The scan shape of ``loop``, or the precondition error that it breaks."""
    L = loop.loop()
    if L.mode != "seq":
        raise fail(SplitScanLoopError, PRIMITIVE, f"the loop is {L.mode}, not seq", loop)
    _check_one_precision(loop)
    updates = [(k, s) for k, s in enumerate(L.body) if isinstance(s, Assign | Reduce) and not s.idx]
    updates = [(k, s) for k, s in updates if isinstance(s, Reduce) or _reads(s.rhs, {s.sym})]
    if len(updates) != 1:
        what = "no update" if not updates else f"{len(updates)} updates"
        msg = f"the body has {what} of a scalar running value (one is needed)"
        raise fail(SplitScanUpdateError, PRIMITIVE, msg, loop)
    k_update, update = updates[0]
    assert isinstance(update, Assign | Reduce)
    h = update.sym
    before, after = _writes(loop, L.body[:k_update], h), _writes(loop, L.body[k_update + 1 :], h)
    outputs = {w.sym for w in (*before, *after)}
    combine = _classify(loop, update, h)
    operands = [combine.operand] + ([combine.coeff] if combine.coeff is not None else [])
    if any(_reads(e, outputs) for e in operands):
        msg = "the update reads an output of the scan"
        raise fail(SplitScanOutputError, PRIMITIVE, msg, loop)
    t = _running_type(update, h)
    return ScanShape(L, h, t, update, combine, before, after)


def _check_one_precision(loop: ForCursor) -> None:
    mixed = mixed_precision(loop.proc().ir(), loop.loop().body)
    if mixed is not None:
        msg = f"the loop mixes precisions ({mixed}); the scan needs one"
        raise fail(SplitScanPrecisionError, PRIMITIVE, msg, loop)


def _running_type(update: Assign | Reduce, h: Sym) -> DataType:
    for x in walk_expr(update.rhs):
        if _is_h(x, h) and isinstance(x.type, DataType):
            return x.type
    t = update.rhs.type
    assert isinstance(t, DataType), "a data statement's right-hand side has a data type"
    return t


def _writes(loop: ForCursor, stmts: tuple[Stmt, ...], h: Sym) -> tuple[Assign, ...]:
    L = loop.loop()
    out: list[Assign] = []
    for s in stmts:
        if not (isinstance(s, Assign) and _is_h(s.rhs, h) and s.sym is not h):
            msg = "a statement is neither the update nor a write `out[f(i)] = running value`"
            raise fail(SplitScanBodyError, PRIMITIVE, msg, loop)
        forms = [af.to_aff(e) for e in s.idx]
        if any(a is None for a in forms) or not any(
            a is not None and a.coeff(L.iter) for a in forms
        ):
            msg = f"the write of {s.sym.name} is not indexed by an affine function of {L.iter.name}"
            raise fail(SplitScanOutputError, PRIMITIVE, msg, loop)
        if any(o.sym is s.sym for o in out):
            msg = f"{s.sym.name} is written twice in the loop"
            raise fail(SplitScanOutputError, PRIMITIVE, msg, loop)
        out.append(s)
    return tuple(out)


def _classify(loop: ForCursor, update: Assign | Reduce, h: Sym) -> Combine:
    if isinstance(update, Reduce):
        return _free_of_h(loop, Combine("+", update.rhs), h)
    rhs = update.rhs
    found = _table(rhs, h)
    if found is not None:
        return _free_of_h(loop, found, h)
    if _reads(rhs, {h}) and not _uses_h_in_extern(rhs, h):
        linear = _smt_linear(rhs, h)
        if linear is not None:
            return _free_of_h(loop, linear, h)
    if not _table_reads_h_once(rhs, h):
        raise fail(SplitScanRunningReadError, PRIMITIVE, "an operand reads the running value", loop)
    msg = (
        f"`{h.name} = {print_expr(rhs)}` is neither an associative operator (+, *, fmax, fmin)"
        " nor a linear recurrence a * h + b"
    )
    raise fail(SplitScanNotAssociativeError, PRIMITIVE, msg, loop)


def _table(rhs: Expr, h: Sym) -> Combine | None:
    match rhs:
        case BinOp(op="+", lhs=a, rhs=b):
            if _is_h(a, h):
                return Combine("+", b)
            if _is_h(b, h):
                return Combine("+", a)
            for lin, b_ in ((a, b), (b, a)):
                coeff = _times_h(lin, h)
                if coeff is not None:
                    return Combine("linear", b_, coeff)
        case BinOp(op="*", lhs=a, rhs=b):
            if _is_h(a, h):
                return Combine("*", b)
            if _is_h(b, h):
                return Combine("*", a)
        case Extern(name=name, args=(a, b)) if name in _MONOID_EXTERNS:
            if _is_h(a, h):
                return Combine(_MONOID_EXTERNS[name], b, extern=name)
            if _is_h(b, h):
                return Combine(_MONOID_EXTERNS[name], a, extern=name)
    return None


def _times_h(e: Expr, h: Sym) -> Expr | None:
    if isinstance(e, BinOp) and e.op == "*":
        if _is_h(e.rhs, h):
            return e.lhs
        if _is_h(e.lhs, h):
            return e.rhs
    return None


def _free_of_h(loop: ForCursor, c: Combine, h: Sym) -> Combine:
    for e in (c.operand, c.coeff):
        if e is not None and _reads(e, {h}):
            raise fail(
                SplitScanRunningReadError,
                PRIMITIVE,
                "an operand of the update reads the running value",
                loop,
            )
    return c


def _uses_h_in_extern(e: Expr, h: Sym) -> bool:
    return any(isinstance(x, Extern) and _reads(x, {h}) for x in walk_expr(e))


def _table_reads_h_once(e: Expr, h: Sym) -> bool:
    return sum(1 for x in walk_expr(e) if _is_h(x, h)) <= 1


# ----------------------------------------------------------------------------- SMT


class _Encoder:
    """Float expressions as polynomial real terms: ``h`` a variable, every other read or
    extern call an unknown of its own (one per distinct text)."""

    def __init__(self, h: Sym) -> None:
        self.h = h
        self.names: dict[str, str] = {}

    def term(self, e: Expr) -> smt.RTerm | None:
        match e:
            case Const(value=v) if not isinstance(v, bool):
                try:
                    return smt.RNum(Fraction(v))
                except (OverflowError, ValueError):
                    return None
            case Read() if _is_h(e, self.h):
                return smt.RVar("h")
            case BinOp(op="+" | "-" | "*", lhs=a, rhs=b):
                x, y = self.term(a), self.term(b)
                if x is None or y is None:
                    return None
                if e.op == "-":
                    return smt.ROp("+", (x, smt.ROp("-", (y,))))
                return smt.ROp(e.op, (x, y))
            case USub(arg=a):
                x = self.term(a)
                return None if x is None else smt.ROp("-", (x,))
            case _:
                if _reads(e, {self.h}):
                    return None
                key = print_expr(e)
                self.names.setdefault(key, f"u{len(self.names)}")
                return smt.RVar(self.names[key])


def _smt_linear(rhs: Expr, h: Sym) -> Combine | None:
    if not (isinstance(rhs.type, DataType) and rhs.type.is_float()):
        return None
    enc = _Encoder(h)
    f_h = enc.term(rhs)
    if f_h is None:
        return None
    f0, f1 = subst_expr(rhs, {h: Const(0.0, rhs.type)}), subst_expr(rhs, {h: Const(1.0, rhs.type)})
    t0, t1 = enc.term(f0), enc.term(f1)
    if t0 is None or t1 is None:
        return None
    slope = smt.ROp("+", (t1, smt.ROp("-", (t0,))))
    identity = smt.ROp("+", (t0, smt.ROp("*", (slope, smt.RVar("h")))))
    if smt.real_identity(f_h, identity) is not None:
        return None
    # the coefficient as the symbolic derivative, not f(1) - f(0), which would cancel
    # catastrophically in floating point
    return Combine("linear", _fold(f0), _fold(_deriv(rhs, h)), by_smt=True)


def _deriv(e: Expr, h: Sym) -> Expr:
    """d e / d h for an expression polynomial in ``h`` (``_Encoder`` accepted it)."""
    t = e.type
    assert isinstance(t, DataType)
    match e:
        case Read() if _is_h(e, h):
            return Const(1.0, t)
        case BinOp(op="+" | "-", lhs=a, rhs=b):
            return BinOp(e.op, _deriv(a, h), _deriv(b, h), t)
        case BinOp(op="*", lhs=a, rhs=b):
            return BinOp("+", BinOp("*", _deriv(a, h), b, t), BinOp("*", a, _deriv(b, h), t), t)
        case USub(arg=a):
            return USub(_deriv(a, h), t)
        case _:
            return Const(0.0, t)


def _fold(e: Expr) -> Expr:
    """``e`` with the additions of 0 and multiplications by 0 and 1 folded away."""
    match e:
        case BinOp(op="+" | "-" | "*", lhs=a, rhs=b):
            x, y = _fold(a), _fold(b)
            zx, zy, ox, oy = _is(x, 0.0), _is(y, 0.0), _is(x, 1.0), _is(y, 1.0)
            if e.op == "*":
                if zx or zy:
                    return Const(0.0, e.type)
                if ox or oy:
                    return y if ox else x
            elif zy:
                return x
            elif zx:
                return y if e.op == "+" else _negated(y, e.type)
            return e.replace(lhs=x, rhs=y)
        case USub(arg=a):
            x = _fold(a)
            if _is(x, 0.0):
                return Const(0.0, e.type)
            return _negated(x, e.type) if isinstance(x, Const) else e.replace(arg=x)
        case _:
            return e


def _negated(x: Expr, t: Type) -> Expr:
    # ``-c`` of a literal is the negative literal: the parser folds ``-1.0`` into one, so a
    # ``USub(Const(1.0))`` would print as ``-1.0`` and not parse back to itself (campaign
    # seed 2026, schedule 98057: the element product of ``s = ... - s`` was ``-1.0 * s_prod``)
    if isinstance(x, Const) and not isinstance(x.value, bool):
        return Const(-x.value, t)
    return USub(x, t)


def _is(e: Expr, v: float) -> bool:
    return isinstance(e, Const) and not isinstance(e.value, bool) and e.value == v


class TreeScanSizeError(BadArgumentError):
    """tree_scan, precondition 1: the loop does not run a constant power-of-two number of
    iterations from 0."""


class TreeScanFormError(ShapeMismatchError):
    """tree_scan, precondition 2: the body is not an associative update followed by one
    write of the inclusive value ``y[i + c] = h`` (exclusive writes, linear recurrences and
    other statements have no tree form here)."""
