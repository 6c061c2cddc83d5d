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
        f = sub or copy
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
        out = map_stmt_children(x, fs, fe)
        match out:
            case Assign() | Reduce() | Alloc() | WindowStmt() if out.sym in env:
                out = out.replace(sym=env[out.sym])
            case For() if out.iter in env:
                out = out.replace(iter=env[out.iter])
            case _:
                pass
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
