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

from collections.abc import Callable, Mapping, Sequence
from operator import is_
from typing import Any, TypeVar

from cursched.analysis import affine as af
from cursched.analysis.checks import SafetyError
from cursched.cursors import Cursor
from cursched.cursors.tree import copy_node
from cursched.errors import SchedulingError
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
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
from cursched.ir.types import INT, TensorType

# re-exported: the loop, buffer and scope primitives import them from here
from cursched.primitives.arguments import BadIndexExpressionError as BadIndexExpressionError
from cursched.primitives.arguments import index_expr as index_expr
from cursched.primitives.loops.copies import is_int, rebuild
from cursched.primitives.loops.copies import unroll_copies as unroll_copies
from cursched.primitives.registry import fail

N = TypeVar("N", bound=Node)

Ranges = Mapping[Sym, af.Bound]


# ------------------------------------------------------------------------- substitution


def _map_type_of(x: Expr, fe: Callable[[Expr], Expr]) -> Expr:
    # shapes inside the types of windows (and of whole-tensor reads) mention loop variables
    # (``x[4 * i:4 * i + 4]`` has extent ``4 * i + 4 - 4 * i``), so they change along
    t = getattr(x, "type", None)
    if isinstance(t, TensorType):
        return x.replace(type=map_type(t, fe))
    return x


# A memo of ``_simplified``: integer expression -> its substituted, simplified form, for
# one substitution (one env, one set of ranges). Keyed by structure, not identity: a body
# reads the substituted variable in many nodes that are equal (every ``i`` of
# ``x[i, j] = y[j, i]``), and each simplification costs tens of microseconds.
Memo = dict[Expr, Expr]


def _simplified(x: Expr, env: Mapping[Sym, Expr], ranges: Ranges, memo: Memo | None) -> Expr:
    if memo is None:
        return af.simplify_expr(subst_expr(x, env), ranges)
    out = memo.get(x)
    if out is None:
        out = memo[x] = af.simplify_expr(subst_expr(x, env), ranges)
    return out


def subst_expr_simplified(
    e: Expr, env: Mapping[Sym, Expr], ranges: Ranges, memo: Memo | None = None
) -> Expr:
    """``e`` with the reads of ``env``'s symbols replaced; each maximal integer control
    expression that changed is simplified (``(4 * io + ii) / 4`` -> ``io`` given ``ii < 4``).
    Shapes inside window types are rewritten too.

    ``memo`` (for one ``env`` and ``ranges``): simplified forms by expression, shared by the
    calls of one rewrite; equal expressions then get one node object, which the IR allows.
    """
    return _SubstSimplify(env, ranges, memo).expr(e)


def subst_simplify(
    s: Stmt, env: Mapping[Sym, Expr], ranges: Ranges, memo: Memo | None = None
) -> Stmt:
    """``subst_expr_simplified`` over a statement and everything nested in it."""
    return _SubstSimplify(env, ranges, memo).stmt(s)


class _SubstSimplify:
    """``subst_simplify`` for one ``env``, ``ranges`` and ``memo``; methods rather than
    nested functions calling themselves, which are reference cycles (function and closure
    cell) that keep what they hold for the cyclic garbage collector."""

    __slots__ = ("env", "keys", "memo", "ranges")

    def __init__(self, env: Mapping[Sym, Expr], ranges: Ranges, memo: Memo | None) -> None:
        self.env, self.keys, self.ranges, self.memo = env, set(env), ranges, memo

    def simplified(self, x: Expr) -> Expr:
        return _simplified(x, self.env, self.ranges, self.memo)

    def expr(self, x: Expr) -> Expr:
        if is_int(x):
            if type(x) is Read and not x.idx:  # a control variable: most indices
                return self.simplified(x) if x.sym in self.keys else x
            if af.to_aff(x) is not None:
                return self.simplified(x) if free_syms_expr(x) & self.keys else x
        # data reads and operations, the rest of most bodies, rebuilt directly (what
        # ``map_expr_children`` does, the same object when no child changed)
        if type(x) is Read and not isinstance(x.type, TensorType):
            idx = tuple([self.expr(i) for i in x.idx])
            if all(map(is_, idx, x.idx)):
                return x
            return Read(x.sym, idx, x.type, srcinfo=x.srcinfo)
        if type(x) is BinOp:
            a, b = self.expr(x.lhs), self.expr(x.rhs)
            if a is x.lhs and b is x.rhs:
                return x
            return BinOp(x.op, a, b, x.type, srcinfo=x.srcinfo)
        return _map_type_of(map_expr_children(x, self.expr), self.expr)

    def stmt(self, x: Stmt) -> Stmt:
        # assignments and loops, most of a body, rebuilt directly (as ``expr`` does)
        if type(x) is Assign or type(x) is Reduce:
            idx, rhs = tuple([self.expr(i) for i in x.idx]), self.expr(x.rhs)
            if rhs is x.rhs and all(map(is_, idx, x.idx)):
                return x
            return type(x)(x.sym, idx, rhs, srcinfo=x.srcinfo)
        if type(x) is For:
            lo, hi = self.expr(x.lo), self.expr(x.hi)
            body = tuple([self.stmt(s) for s in x.body])
            if lo is x.lo and hi is x.hi and all(map(is_, body, x.body)):
                return x
            return For(x.iter, lo, hi, body, x.mode, x.axis, srcinfo=x.srcinfo)
        return map_stmt_children(x, self.stmt, self.expr)


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


class _Fresh:
    """One ``fresh_copy`` being made: ``rename_stmt`` / ``rename_expr`` whose result shares
    no node with its input (every node, window coordinates included, built anew from its
    fields, shapes inside tensor types copied, symbols renamed by ``env``), in one pass,
    built directly rather than through ``map_expr_children``, whose ``Node.replace``
    compares every child first.

    With ``subst``, the copy of ``subst_simplify(s, subst, ranges)`` in the same pass (the
    substitution sees the old symbols, then the result is renamed). ``memo`` holds the
    copies of the simplified forms by expression: the equal index expressions of a body
    (every ``i`` of ``x[i, j] = y[j, i]``) are simplified and copied once, and get one new
    node object, as the IR allows.
    """

    def __init__(self, env: Mapping[Sym, Sym], subst: Mapping[Sym, Expr], ranges: Ranges) -> None:
        self.env = env
        self.subst = subst
        self.keys = frozenset(subst)
        self.ranges = ranges
        self.memo: Memo = {}

    def expr(self, x: Any) -> Any:
        keys = self.keys
        if keys and is_int(x):
            # as subst_expr_simplified: a maximal integer affine expression is simplified
            # when it mentions a substituted symbol, copied as it is otherwise
            if type(x) is Read and not x.idx:  # a control variable: most indices
                return self.copied(x) if x.sym in keys else self.copy(x)
            if af.to_aff(x) is not None:
                return self.copied(x) if free_syms_expr(x) & keys else self.copy(x)
        return rebuild(x, self.expr, self.env)

    def copy(self, x: Any) -> Any:
        return rebuild(x, self.copy, self.env)

    def copied(self, x: Expr) -> Expr:
        out = self.memo.get(x)
        if out is None:
            out = self.memo[x] = self.copy(af.simplify_expr(subst_expr(x, self.subst), self.ranges))
        return out

    def stmt(self, s: Stmt) -> Stmt:
        if type(s) is Assign or type(s) is Reduce:  # the bulk: no type, no block
            new: Stmt = rebuild(s, self.expr, self.env)
            return new
        out = _rename_binder(map_stmt_children(s, self.stmt, self.expr), self.env)
        return copy_node(out) if out is s else out  # always a new object


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
    fresh = _Fresh({**rename, **syms}, exprs, ranges or {})
    return tuple(fresh.stmt(s) for s in stmts)


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
