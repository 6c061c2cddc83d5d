"""Helpers shared by the loop primitives (``loop_split``, ``loop_nests``, ``loop_ranges``).

- ``subst_simplify``: replace loop variables by index expressions and simplify exactly the
  control expressions that changed, so the output reads like hand-written code
  (``4 * io + ii``) while untouched expressions keep their text and their node identity;
- ``fresh_copy``: a copy of statements in which every node is a new object and every symbol
  bound inside is a fresh one, for the second copy of a body (tails, cut and fissioned
  loops): identity-based forwarding then follows the original, never the copy;
- ``same_pairs``: old/new statement pairs of a structure-preserving rewrite, for ``same=``;
- ``index_expr`` (from ``cursched.primitives.arguments``, re-exported): a user's index
  argument (an int, an IR expression or a string such as ``"n / 2"``) as an IR expression
  over the control names visible at a place;
- ``safety``: turn an analysis ``SafetyError`` into the primitive's own error class, keeping
  the counterexample.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from cursched.analysis import affine as af
from cursched.analysis.checks import SafetyError
from cursched.cursors import Cursor
from cursched.cursors.tree import _CHILDREN
from cursched.errors import SchedulingError
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Const,
    Expr,
    For,
    Node,
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import (
    defined_syms,
    free_syms_expr,
    map_expr_children,
    map_stmt_children,
    map_type,
    subst_expr,
    walk_stmts,
)
from cursched.ir.types import INT, ControlType, TensorType

# re-exported: the loop, buffer and scope primitives import them from here
from cursched.primitives.arguments import BadIndexExpressionError as BadIndexExpressionError
from cursched.primitives.arguments import index_expr as index_expr
from cursched.primitives.registry import fail

N = TypeVar("N", bound=Node)

Ranges = Mapping[Sym, af.Bound]


# ------------------------------------------------------------------------- substitution


def _is_int(e: Expr) -> bool:
    t = getattr(e, "type", None)
    return isinstance(t, ControlType) and t.is_integer()


def _map_type_of(x: Expr, fe: Callable[[Expr], Expr]) -> Expr:
    # shapes inside the types of windows (and of whole-tensor reads) mention loop variables
    # (``x[4 * i:4 * i + 4]`` has extent ``4 * i + 4 - 4 * i``), so they change along
    t = getattr(x, "type", None)
    if isinstance(t, TensorType):
        return x.replace(type=map_type(t, fe))
    return x


def subst_expr_simplified(e: Expr, env: Mapping[Sym, Expr], ranges: Ranges) -> Expr:
    """``e`` with the reads of ``env``'s symbols replaced; each maximal integer control
    expression that changed is simplified (``(4 * io + ii) / 4`` -> ``io`` given ``ii < 4``).
    Shapes inside window types are rewritten too.
    """
    keys = set(env)

    def go(x: Expr) -> Expr:
        if _is_int(x) and af.to_aff(x) is not None:
            if free_syms_expr(x) & keys:
                return af.simplify_expr(subst_expr(x, env), ranges)
            return x
        return _map_type_of(map_expr_children(x, go), go)

    return go(e)


def subst_simplify(s: Stmt, env: Mapping[Sym, Expr], ranges: Ranges) -> Stmt:
    """``subst_expr_simplified`` over a statement and everything nested in it."""

    def fe(x: Expr) -> Expr:
        return subst_expr_simplified(x, env, ranges)

    def fs(x: Stmt) -> Stmt:
        return map_stmt_children(x, fs, fe)

    return fs(s)


def rename_expr(e: Expr, env: Mapping[Sym, Sym]) -> Expr:
    """``e`` with every use of ``env``'s symbols renamed, inside window types too."""

    def go(x: Expr) -> Expr:
        y = _map_type_of(map_expr_children(x, go), go)
        if isinstance(y, Read | WindowExpr | StrideExpr) and y.sym in env:
            return y.replace(sym=env[y.sym])
        return y

    return go(e)


def rename_stmt(s: Stmt, env: Mapping[Sym, Sym]) -> Stmt:
    """``s`` with every use and binding of ``env``'s symbols renamed."""

    def fe(x: Expr) -> Expr:
        return rename_expr(x, env)

    def fs(x: Stmt) -> Stmt:
        out = map_stmt_children(x, fs, fe)
        match out:
            case Assign() | Reduce() | Alloc() | WindowStmt() if out.sym in env:
                return out.replace(sym=env[out.sym])
            case For() if out.iter in env:
                return out.replace(iter=env[out.iter])
            case _:
                return out

    return fs(s)


# The init fields of each node class, for ``_force_new``.
_FIELDS: dict[type, tuple[str, ...]] = {}


def _force_new(node: N) -> N:
    # always a new object, unlike Node.replace (dataclasses.replace without its reflection)
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(node) if f.init)
    return cls(**{n: getattr(node, n) for n in names})


def _fresh_expr(
    e: Expr,
    env: Mapping[Sym, Sym],
    subst: Mapping[Sym, Expr] | None = None,
    ranges: Ranges | None = None,
) -> Expr:
    """``rename_expr`` whose result shares no node with ``e``: every node (window
    coordinates included) is built anew from its fields, children copied, shapes inside
    tensor types copied, symbols renamed. Built directly rather than through
    ``map_expr_children``, whose ``Node.replace`` compares every child first.

    With ``subst``, the copy of ``subst_expr_simplified(e, subst, ranges)`` in the same
    single pass (the substitution sees the old symbols, then the result is renamed).
    """
    keys = set(subst) if subst else set()
    rng: Ranges = ranges or {}

    def go(x: Any) -> Any:
        if keys and _is_int(x) and af.to_aff(x) is not None:
            # as subst_expr_simplified: a maximal integer affine expression is simplified
            # when it mentions a substituted symbol, copied as it is otherwise
            if free_syms_expr(x) & keys:
                assert subst is not None
                x = af.simplify_expr(subst_expr(x, subst), rng)
            return copy(x)

        return copy(x, go)

    def copy(x: Any, sub: Callable[[Any], Any] | None = None) -> Any:
        return _rebuild(x, sub or copy, env)

    out: Expr = go(e) if keys else copy(e)
    return out


def _fresh_stmt(
    s: Stmt,
    env: Mapping[Sym, Sym],
    subst: Mapping[Sym, Expr] | None = None,
    ranges: Ranges | None = None,
) -> Stmt:
    """``rename_stmt`` whose result shares no node with ``s`` (one pass instead of two);
    with ``subst``, of ``subst_simplify(s, subst, ranges)`` (in the same pass, not a
    substituted tree first and then its copy)."""

    def fe(x: Expr) -> Expr:
        return _fresh_expr(x, env, subst, ranges)

    def fs(x: Stmt) -> Stmt:
        out = _rename_binder(map_stmt_children(x, fs, fe), env)
        return _force_new(out) if out is x else out

    return fs(s)


def fresh_copy(
    stmts: Sequence[Stmt],
    env: Mapping[Sym, Expr | Sym] | None = None,
    ranges: Ranges | None = None,
) -> tuple[Stmt, ...]:
    """A copy of ``stmts`` sharing no node with them, each symbol bound inside renamed to a
    fresh one, and ``env`` substituted (expressions for loop variables, simplified).

    Args:
        stmts: the statements to copy.
        env: loop variables to replace by expressions (or symbols to rename).
        ranges: constant ranges for simplifying the substituted expressions.
    """
    rename: dict[Sym, Sym] = {}
    for s in stmts:
        # in binding order (by id), not set order: the copies' ids order the terms of the
        # normal forms, so set order (by address) made the printed output vary between runs
        for sym in sorted(defined_syms(s), key=lambda x: x.id):
            rename[sym] = sym.copy()
    exprs = {k: v for k, v in (env or {}).items() if not isinstance(v, Sym)}
    syms = {k: v for k, v in (env or {}).items() if isinstance(v, Sym)}
    out: list[Stmt] = []
    names = {**rename, **syms}
    for s in stmts:
        out.append(_fresh_stmt(s, names, exprs, ranges))
    return tuple(out)


def same_pairs(old: Sequence[Stmt], new: Sequence[Stmt]) -> list[tuple[Stmt, Stmt]]:
    """(old, new) pairs of every statement, for a rewrite that kept the statement structure."""
    return [
        (a, b)
        for a, b in zip(walk_stmts(tuple(old)), walk_stmts(tuple(new)), strict=True)
        if a is not b
    ]


def aff(e: Expr) -> af.Aff:
    """The affine form of a loop bound (the frontend guarantees bounds are quasi-affine)."""
    a = af.to_aff(e)
    assert a is not None, "loop bounds are quasi-affine"
    return a


def expr_of(a: af.Aff) -> Expr:
    """The readable IR expression of an affine form."""
    return af.from_aff(a)


def int_const(v: int) -> Expr:
    return Const(v, INT)


# ------------------------------------------------------------------------------- safety


def safety(cls: type[SchedulingError], primitive: str, e: SafetyError, where: Cursor) -> Exception:
    """The primitive's own error for a failed analysis check, with its counterexample."""
    err = fail(cls, primitive, e.message.removeprefix(f"{primitive}: "), where)
    err.counterexample = e.counterexample  # type: ignore[attr-defined]
    return err


def _mentions(keys: frozenset[Sym], memo: dict[int, tuple[Any, bool]]) -> Callable[[Any], bool]:
    """Whether an expression reads one of ``keys`` or has a tensor type (whose shape may;
    such nodes are always copied), memoised by node (bottom-up, each node once)."""

    def go(x: Any) -> bool:
        hit = memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        sym = getattr(x, "sym", None)
        out = (sym is not None and sym in keys) or isinstance(getattr(x, "type", None), TensorType)
        for attr, many in _CHILDREN[type(x)]:
            v = getattr(x, attr)
            # no short cut: every child gets its entry, asked again by the copies
            hits = [go(c) for c in v] if many else [go(v)]
            out = out or any(hits)
        memo[id(x)] = (x, out)  # the node kept alive: a dead node's id may be reused
        return out

    return go


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
    bound: set[Sym] = set()
    for s in body:
        bound |= defined_syms(s)
    order = sorted(bound, key=lambda x: x.id)  # binding order, as fresh_copy makes them
    mentions = _mentions(frozenset((*bound, var)), {})
    rng: Ranges = ranges or {}
    out: list[tuple[Stmt, ...]] = []
    for value in values:
        env: dict[Sym, Sym] = {x: x.copy() for x in order}
        subst: dict[Sym, Expr] = {var: Const(value, INT)}

        def copy(x: Any, env: dict[Sym, Sym] = env) -> Any:
            if not mentions(x):
                return x
            return _rebuild(x, copy, env)

        def fe(x: Any, env: dict[Sym, Sym] = env, subst: dict[Sym, Expr] = subst) -> Any:
            if not mentions(x):
                return x
            if type(x) is Read and x.sym is var:  # what the substitution and simplify make
                return subst[var]
            if _is_int(x) and af.to_aff(x) is not None:
                # as subst_expr_simplified: a maximal integer affine expression reading the
                # variable is simplified, one that does not is copied as it is
                if var in free_syms_expr(x):
                    x = af.simplify_expr(subst_expr(x, subst), rng)
                return copy(x)
            return _rebuild(x, fe, env)

        out.append(tuple(_new_stmt(s, fe, env) for s in body))
    return out


def _rename_binder(s: Stmt, env: Mapping[Sym, Sym]) -> Stmt:
    """``s`` with the symbol it binds (a written buffer, an allocation, a window, a loop
    variable) renamed by ``env``."""
    match s:
        case Assign() | Reduce() | Alloc() | WindowStmt() if s.sym in env:
            return s.replace(sym=env[s.sym])
        case For() if s.iter in env:
            return s.replace(iter=env[s.iter])
        case _:
            return s


def _rebuild(x: Any, f: Callable[[Any], Any], env: Mapping[Sym, Sym]) -> Any:
    """A new ``x`` with ``f`` applied to its children (and to a tensor type's shape), its
    symbol renamed by ``env``."""
    cls = type(x)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(fld.name for fld in dataclasses.fields(x) if fld.init)
    kw = {n: getattr(x, n) for n in names}
    for attr, many in _CHILDREN[cls]:
        kw[attr] = tuple(f(c) for c in kw[attr]) if many else f(kw[attr])
    t = kw.get("type")
    if isinstance(t, TensorType):
        kw["type"] = map_type(t, f)
    sym = kw.get("sym")
    if sym is not None and sym in env:
        kw["sym"] = env[sym]
    return cls(**kw)


def _new_stmt(s: Stmt, fe: Callable[[Any], Any], env: Mapping[Sym, Sym]) -> Stmt:
    """``s`` rebuilt as a new object, its expressions through ``fe``, its bound symbols
    renamed by ``env``."""

    def fs(x: Stmt) -> Stmt:
        if type(x) is Assign or type(x) is Reduce:  # the bulk: no type, no block
            new: Stmt = _rebuild(x, fe, env)
            return new
        out = _rename_binder(map_stmt_children(x, fs, fe), env)
        return _force_new(out) if out is x else out

    return fs(s)
