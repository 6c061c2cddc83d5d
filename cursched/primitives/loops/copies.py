"""Copies of a body built from a plan: ``unroll_copies`` (``unroll_loop``) and
``shared_copies`` (``specialize``), and the node builders ``loop_common`` copies with.

A body copied several times (once per iteration of an unrolled loop, once per branch of a
specialized block) is analysed once: for each node, whether it reads the substituted variable
or a symbol bound in the body (then each copy gets its own node) or neither (then every copy
shares it with the body). The plan that analysis leaves (``_Plan``) builds each copy by
direct constructor calls, without asking again, per copy and per node, what a generic
rebuild asks (which fields, which children, does it mention the variable): with eight copies
that second walk was most of ``unroll_loop``'s rewrite.

Sharing across copies is what the IR contract allows (``docs/architecture.md``, IR): a node
found twice in a new region is new for the editor's identity forwarding, so the shared
expressions die like the copied ones, and the editor's search for survivors can be skipped
(``kill_all``). Statements are always new objects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from cursched.analysis import affine as af
from cursched.cursors.tree import _CHILDREN
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    For,
    If,
    Pass,
    Read,
    Reduce,
    Scope,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import defined_syms, free_syms_expr, map_type, subst_expr
from cursched.ir.types import INT, ControlType, TensorType

Ranges = Mapping[Sym, af.Bound]

# ------------------------------------------------------------------------ node builders

# The init fields of each node class, for ``rebuild`` and the plan's static fields.
_FIELDS: dict[type, tuple[str, ...]] = {}


def fields_of(cls: type) -> tuple[str, ...]:
    """The init fields of a node class, in order (read once per class)."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return names


def is_int(e: Expr) -> bool:
    """Whether ``e`` is an integer control expression."""
    t = getattr(e, "type", None)
    return isinstance(t, ControlType) and t.is_integer()


def rebuild(x: Any, f: Callable[[Any], Any], env: Mapping[Sym, Sym]) -> Any:
    """A new ``x`` with ``f`` applied to its children (and to a tensor type's shape), its
    symbol renamed by ``env``."""
    cls = type(x)
    # the kinds that make up most bodies, built directly: the generic way below reads the
    # fields, the children and the type by name for every node
    if cls is Read and not isinstance(x.type, TensorType):
        sym = x.sym
        return Read(env.get(sym, sym), tuple([f(c) for c in x.idx]), x.type, srcinfo=x.srcinfo)
    if cls is BinOp:
        return BinOp(x.op, f(x.lhs), f(x.rhs), x.type, srcinfo=x.srcinfo)
    if cls is Const:
        return Const(x.value, x.type, srcinfo=x.srcinfo)
    if cls is Assign or cls is Reduce:
        sym = x.sym
        idx = tuple([f(c) for c in x.idx])
        return cls(env.get(sym, sym), idx, f(x.rhs), srcinfo=x.srcinfo)
    kw = {n: getattr(x, n) for n in fields_of(cls)}
    for attr, many in _CHILDREN[cls]:
        kw[attr] = tuple([f(c) for c in kw[attr]]) if many else f(kw[attr])
    t = kw.get("type")
    if isinstance(t, TensorType):
        kw["type"] = map_type(t, f)
    sym = kw.get("sym")
    if sym is not None and sym in env:
        kw["sym"] = env[sym]
    return cls(**kw)


class Mentions:
    """Whether an expression reads one of ``keys`` or has a tensor type (whose shape may;
    such nodes are always copied), memoised by node (bottom-up, each node once). A class,
    not a nested function calling itself: that is a reference cycle (function and
    closure cell), which would keep the memo for the cyclic garbage collector."""

    __slots__ = ("keys", "memo")

    def __init__(self, keys: frozenset[Sym]) -> None:
        self.keys = keys
        self.memo: dict[int, tuple[Any, bool]] = {}

    def __call__(self, x: Any) -> bool:
        hit = self.memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        sym = getattr(x, "sym", None)
        out = (sym is not None and sym in self.keys) or isinstance(
            getattr(x, "type", None), TensorType
        )
        for attr, many in _CHILDREN[type(x)]:
            v = getattr(x, attr)
            # no short cut: every child gets its entry, asked again by the plan
            hits = [self(c) for c in v] if many else [self(v)]
            out = out or any(hits)
        self.memo[id(x)] = (x, out)  # the node kept alive: a dead node's id may be reused
        return out


# ---------------------------------------------------------------------------- the plan


@dataclass(slots=True)
class _Copy:
    """One copy being built: the fresh symbol of each symbol bound in the body, and what
    the substituted variable reads in it (None: nothing is substituted)."""

    env: dict[Sym, Sym]
    value: Expr | None


# How to build one node of a copy; None in a plan: the node is shared by every copy.
_Make: TypeAlias = Callable[[_Copy], Any]
_Kids: TypeAlias = tuple[_Make | None, ...]


def _value(c: _Copy) -> Any:
    return c.value


def _each(plans: _Kids, old: tuple[Any, ...], c: _Copy) -> tuple[Any, ...]:
    return tuple([o if p is None else p(c) for o, p in zip(old, plans, strict=True)])


def _tuple(plans: _Kids, old: tuple[Any, ...]) -> Callable[[_Copy], tuple[Any, ...]]:
    """What builds a tuple of children in a copy; the one or two indices of an access, the
    common case, without a loop (this runs once per copy for most nodes)."""
    if all(p is None for p in plans):
        return lambda c: old
    if len(old) == 1:
        (p0,) = plans
        assert p0 is not None
        return lambda c: (p0(c),)
    if len(old) == 2:
        (a, b), (pa, pb) = old, plans
        if pa is None:
            assert pb is not None
            return lambda c: (a, pb(c))
        if pb is None:
            return lambda c: (pa(c), b)
        return lambda c: (pa(c), pb(c))
    return lambda c: _each(plans, old, c)


class _Plan:
    """How each node of a body is built in a copy: read once from the body, then run per
    copy (``stmt`` for statements, ``expr`` for expressions and window coordinates).

    The expressions are those ``fresh_copy(body, {var: value}, ranges)`` makes, as
    ``unroll_copies`` documents: a read of ``var`` is the copy's value, a maximal integer
    affine expression reading ``var`` is substituted and simplified, every other node
    reading ``var`` or a bound symbol (or having a tensor type) is rebuilt with its
    symbol renamed, and the rest is shared.
    """

    def __init__(self, bound: frozenset[Sym], var: Sym | None, ranges: Ranges) -> None:
        self.var = var
        self.ranges = ranges
        self.mentions = Mentions(bound | {var} if var is not None else bound)

    def expr(self, x: Any) -> _Make | None:
        if not self.mentions(x):
            return None
        var = self.var
        if type(x) is Read and x.sym is var:
            return _value
        # a maximal integer affine expression reading the variable is simplified; one
        # that does not is rebuilt node by node below, as its children read no ``var``
        affine = var is not None and is_int(x) and af.to_aff(x) is not None
        if affine and var in free_syms_expr(x):
            assert var is not None
            return self._simplified(x, var)
        if type(x) is Read and not isinstance(x.type, TensorType):
            return self._read(x)
        if type(x) is BinOp:
            return self._binop(x)
        return self._node(x)

    def _simplified(self, x: Expr, var: Sym) -> _Make:
        # the substituted expression depends on the copy's value: built per copy, then
        # copied with the copy's symbols (it may read bound ones)
        ranges, copy = self.ranges, self.copy

        def make(c: _Copy) -> Any:
            assert c.value is not None
            return copy(af.simplify_expr(subst_expr(x, {var: c.value}), ranges), c)

        return make

    def copy(self, y: Any, c: _Copy) -> Any:
        """``y`` (a substituted expression) with the copy's symbols, shared where it reads
        none of the body's."""
        return rebuild(y, lambda z: self.copy(z, c), c.env) if self.mentions(y) else y

    def _read(self, x: Read) -> _Make:
        sym, typ, src = x.sym, x.type, x.srcinfo
        idx = _tuple(tuple(self.expr(i) for i in x.idx), x.idx)

        def make(c: _Copy) -> Any:
            return Read(c.env.get(sym, sym), idx(c), typ, srcinfo=src)

        return make

    def _binop(self, x: BinOp) -> _Make:
        op, lhs, rhs, typ, src = x.op, x.lhs, x.rhs, x.type, x.srcinfo
        lp, rp = self.expr(lhs), self.expr(rhs)

        def make(c: _Copy) -> Any:
            a = lhs if lp is None else lp(c)
            b = rhs if rp is None else rp(c)
            return BinOp(op, a, b, typ, srcinfo=src)

        return make

    def _node(self, x: Any) -> _Make:
        # any other kind (windows and their coordinates, externs, negations, strides,
        # whole-tensor reads): its fields, with the plans of its children and shape
        cls = type(x)
        static = {n: getattr(x, n) for n in fields_of(cls)}
        kids = [(a, many, self._plans(static[a], many)) for a, many in _CHILDREN[cls]]
        t = static.get("type")
        shape = tuple(self.expr(e) for e in t.shape) if isinstance(t, TensorType) else None
        sym = static.get("sym")

        def make(c: _Copy) -> Any:
            kw = dict(static)
            for attr, many, plans in kids:
                if many:
                    kw[attr] = _each(plans, kw[attr], c)
                elif plans[0] is not None:
                    kw[attr] = plans[0](c)
            if shape is not None and any(p is not None for p in shape):
                assert isinstance(t, TensorType)
                kw["type"] = TensorType(t.elem, _each(shape, t.shape, c), t.window)
            if sym is not None and sym in c.env:
                kw["sym"] = c.env[sym]
            return cls(**kw)

        return make

    def _plans(self, v: Any, many: bool) -> _Kids:
        return tuple(self.expr(e) for e in v) if many else (self.expr(v),)

    def block(self, stmts: Sequence[Stmt]) -> Callable[[_Copy], tuple[Stmt, ...]]:
        plans = tuple(self.stmt(s) for s in stmts)
        return lambda c: tuple(p(c) for p in plans)

    def stmt(self, s: Stmt) -> Callable[[_Copy], Stmt]:
        """The plan of a statement: always a new object, its bound symbol renamed."""
        src = s.srcinfo
        match s:
            case Assign() | Reduce():
                cls, sym, rhs = type(s), s.sym, s.rhs
                idx, rp = _tuple(tuple(self.expr(i) for i in s.idx), s.idx), self.expr(rhs)
                return lambda c: cls(
                    c.env.get(sym, sym), idx(c), rhs if rp is None else rp(c), srcinfo=src
                )
            case For():
                it, lo, hi, mode, axis = s.iter, s.lo, s.hi, s.mode, s.axis
                lp, hp, body = self.expr(lo), self.expr(hi), self.block(s.body)
                return lambda c: For(
                    c.env.get(it, it),
                    lo if lp is None else lp(c),
                    hi if hp is None else hp(c),
                    body(c),
                    mode,
                    axis,
                    srcinfo=src,
                )
            case If():
                cond, cp = s.cond, self.expr(s.cond)
                then, other = self.block(s.body), self.block(s.orelse)
                return lambda c: If(cond if cp is None else cp(c), then(c), other(c), srcinfo=src)
            case _:
                return self._other_stmt(s)

    def _other_stmt(self, s: Stmt) -> Callable[[_Copy], Stmt]:
        src = s.srcinfo
        match s:
            case Alloc():
                sym, t, mem = s.sym, s.type, s.mem
                sp = tuple(self.expr(e) for e in t.shape) if isinstance(t, TensorType) else ()

                def alloc(c: _Copy) -> Stmt:
                    typ = t
                    if isinstance(t, TensorType) and any(p is not None for p in sp):
                        typ = TensorType(t.elem, _each(sp, t.shape, c), t.window)
                    return Alloc(c.env.get(sym, sym), typ, mem, srcinfo=src)

                return alloc
            case WindowStmt():
                wsym, wrhs, wp = s.sym, s.rhs, self.expr(s.rhs)

                def window(c: _Copy) -> Stmt:
                    rhs = wrhs if wp is None else wp(c)
                    assert isinstance(rhs, WindowExpr)
                    return WindowStmt(c.env.get(wsym, wsym), rhs, srcinfo=src)

                return window
            case Call():
                callee, args = s.proc, s.args
                ap = tuple(self.expr(a) for a in args)
                return lambda c: Call(callee, _each(ap, args, c), srcinfo=src)
            case Scope():
                name, target, body = s.name, s.target, self.block(s.body)
                return lambda c: Scope(name, body(c), target, srcinfo=src)
            case Pass():
                return lambda c: Pass(srcinfo=src)
            case _:
                raise AssertionError(f"not a statement: {s!r}")


def _bound_in_order(body: Sequence[Stmt]) -> list[Sym]:
    bound: set[Sym] = set()
    for s in body:
        bound |= defined_syms(s)
    # in binding order (by id), as fresh_copy makes them: the copies' ids order the terms
    # of affine normal forms
    return sorted(bound, key=lambda x: x.id)


def unroll_copies(
    body: Sequence[Stmt], var: Sym, values: Sequence[int], ranges: Ranges | None = None
) -> list[tuple[Stmt, ...]]:
    """One copy of ``body`` per value of ``var`` (``var`` replaced by the value, integer
    affine expressions that read it simplified, each symbol bound inside renamed to a fresh
    one per copy), as ``fresh_copy(body, {var: value}, ranges)`` makes it, except that the
    expressions reading neither ``var`` nor a symbol bound in ``body`` are shared with
    ``body`` instead of copied (every statement is still a new object).

    Only for two copies or more: a node shared by the copies occurs more than once in the
    new region, so the editor's identity forwarding kills it as it kills a copied one (a
    single copy would let a shared expression forward to it).
    """
    assert len(values) >= 2, "a single copy would forward the shared expressions"
    order = _bound_in_order(body)
    make = _Plan(frozenset(order), var, ranges or {}).block(body)
    return [make(_Copy({x: x.copy() for x in order}, Const(v, INT))) for v in values]


def shared_copies(body: Sequence[Stmt], count: int) -> list[tuple[Stmt, ...]]:
    """``count`` copies of ``body``, each symbol bound inside renamed to a fresh one per
    copy (in binding order, copy after copy), the expressions reading no such symbol shared
    with ``body`` (every statement a new object): ``loop_wrap.fresh(body)`` made ``count``
    times, with that sharing. Two copies or more, for the reason ``unroll_copies`` gives."""
    assert count >= 2, "a single copy would forward the shared expressions"
    order = _bound_in_order(body)
    make = _Plan(frozenset(order), None, {}).block(body)
    return [make(_Copy({x: x.copy() for x in order}, None)) for _ in range(count)]
