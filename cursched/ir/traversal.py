"""Generic traversal: children of a node, ``map_children``, ``walk``, substitution.

Everything that inspects the IR walks it through these few functions plus ``match`` on the
node kinds; there is no visitor class hierarchy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar, assert_never

from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    FnArg,
    For,
    If,
    Interval,
    Node,
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.types import ControlType, DataType, TensorType, Type

ExprFn = Callable[[Expr], Expr]
StmtFn = Callable[[Stmt], Stmt]
N = TypeVar("N", bound=Node)


def map_type(t: Type, fe: ExprFn) -> Type:
    """Apply ``fe`` to the shape expressions of a tensor type."""
    match t:
        case TensorType():
            shape = tuple(fe(s) for s in t.shape)
            changed = any(a is not b for a, b in zip(shape, t.shape, strict=True))
            return TensorType(t.elem, shape, t.window) if changed else t
        case DataType() | ControlType():
            return t
        case _:
            assert_never(t)


def _map_waccess(w: WAccess, fe: ExprFn) -> WAccess:
    match w:
        case Point():
            return w.replace(pt=fe(w.pt))
        case Interval():
            return w.replace(lo=fe(w.lo), hi=fe(w.hi))
        case _:
            assert_never(w)


def map_expr_children(e: Expr, fe: ExprFn) -> Expr:
    """Rebuild ``e`` with ``fe`` applied to each direct sub-expression."""
    match e:
        case Const() | StrideExpr():
            return e
        case Read():
            return e.replace(idx=tuple(fe(i) for i in e.idx))
        case BinOp():
            return e.replace(lhs=fe(e.lhs), rhs=fe(e.rhs))
        case USub():
            return e.replace(arg=fe(e.arg))
        case Extern():
            return e.replace(args=tuple(fe(a) for a in e.args))
        case WindowExpr():
            return e.replace(idx=tuple(_map_waccess(w, fe) for w in e.idx))
        case _:
            assert_never(e)


def map_stmt_children(s: Stmt, fs: StmtFn, fe: ExprFn) -> Stmt:
    """Rebuild ``s`` with ``fs`` applied to child statements and ``fe`` to child expressions
    (index, bound, condition and right-hand expressions and the shapes of allocations).
    """
    match s:
        case Assign() | Reduce():
            return s.replace(idx=tuple(fe(i) for i in s.idx), rhs=fe(s.rhs))
        case Pass():
            return s
        case If():
            return s.replace(
                cond=fe(s.cond),
                body=tuple(fs(c) for c in s.body),
                orelse=tuple(fs(c) for c in s.orelse),
            )
        case For():
            return s.replace(lo=fe(s.lo), hi=fe(s.hi), body=tuple(fs(c) for c in s.body))
        case Alloc():
            t = map_type(s.type, fe)
            assert isinstance(t, DataType | TensorType)
            return s.replace(type=t)
        case Call():
            return s.replace(args=tuple(fe(a) for a in s.args))
        case WindowStmt():
            rhs = fe(s.rhs)
            assert isinstance(rhs, WindowExpr)
            return s.replace(rhs=rhs)
        case Scope():
            return s.replace(body=tuple(fs(c) for c in s.body))
        case _:
            assert_never(s)


def stmt_blocks(s: Stmt) -> tuple[tuple[str, tuple[Stmt, ...]], ...]:
    """The statement lists directly inside ``s``, by field name (``body``, ``orelse``)."""
    match s:
        case If():
            return (("body", s.body), ("orelse", s.orelse))
        case For() | Scope():
            return (("body", s.body),)
        case Assign() | Reduce() | Pass() | Alloc() | Call() | WindowStmt():
            return ()
        case _:
            assert_never(s)


def stmt_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions directly inside ``s`` (not those of nested statements)."""
    match s:
        case Assign() | Reduce():
            return (*s.idx, s.rhs)
        case Pass():
            return ()
        case If():
            return (s.cond,)
        case For():
            return (s.lo, s.hi)
        case Alloc():
            return s.type.shape if isinstance(s.type, TensorType) else ()
        case Call():
            return s.args
        case WindowStmt():
            return (s.rhs,)
        case Scope():
            return ()
        case _:
            assert_never(s)


def expr_children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``e``."""
    match e:
        case Const() | StrideExpr():
            return ()
        case Read():
            return e.idx
        case BinOp():
            return (e.lhs, e.rhs)
        case USub():
            return (e.arg,)
        case Extern():
            return e.args
        case WindowExpr():
            out: list[Expr] = []
            for w in e.idx:
                out.extend((w.pt,) if isinstance(w, Point) else (w.lo, w.hi))
            return tuple(out)
        case _:
            assert_never(e)


def walk_expr(e: Expr) -> Iterator[Expr]:
    """``e`` and all its sub-expressions, pre-order."""
    yield e
    for c in expr_children(e):
        yield from walk_expr(c)


def walk_stmts(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of ``body``, nested ones included, pre-order."""
    for s in body:
        yield s
        for _, block in stmt_blocks(s):
            yield from walk_stmts(block)


def walk_exprs(body: tuple[Stmt, ...]) -> Iterator[Expr]:
    """Every expression in ``body`` (all depths), pre-order within each statement."""
    for s in walk_stmts(body):
        for e in stmt_exprs(s):
            yield from walk_expr(e)


def proc_exprs(p: ProcDef) -> Iterator[Expr]:
    """Every expression of a proc: argument shapes, asserts and body."""
    for a in p.args:
        if isinstance(a.type, TensorType):
            for s in a.type.shape:
                yield from walk_expr(s)
    for pred in p.preds:
        yield from walk_expr(pred)
    yield from walk_exprs(p.body)


# ---------------------------------------------------------------------------- substitution


def subst_expr(e: Expr, env: Mapping[Sym, Expr | Sym]) -> Expr:
    """Replace reads of symbols (and, for a ``Sym`` value, every use of the symbol).

    A ``Sym -> Expr`` entry replaces control reads ``x`` by the expression; a ``Sym -> Sym``
    entry renames every use (reads, windows, strides).
    """
    return _Subst(env).expr(e)


def subst_stmt(s: Stmt, env: Mapping[Sym, Expr | Sym]) -> Stmt:
    """``subst_expr`` over a statement and its children; written symbols are renamed too."""
    return _Subst(env).stmt(s)


class _Subst:
    """``subst_expr`` and ``subst_stmt`` for one ``env``. Methods, not nested recursive
    functions: a nested function that calls itself is a reference cycle (the function and
    its closure cell), so it and all it holds wait for the cyclic garbage collector, whose
    full passes over a long schedule's caches cost milliseconds."""

    __slots__ = ("env",)

    def __init__(self, env: Mapping[Sym, Expr | Sym]) -> None:
        self.env = env

    def expr(self, x: Expr) -> Expr:
        env = self.env
        match x:
            case Read() if x.sym in env:
                target = env[x.sym]
                if isinstance(target, Sym):
                    return x.replace(sym=target, idx=tuple(self.expr(i) for i in x.idx))
                assert not x.idx, "only index-free reads can be replaced by an expression"
                return target
            case WindowExpr() | StrideExpr() if x.sym in env:
                target = env[x.sym]
                assert isinstance(target, Sym)
                return self.with_shape(map_expr_children(x.replace(sym=target), self.expr))
            case _:
                return self.with_shape(map_expr_children(x, self.expr))

    def with_shape(self, x: Expr) -> Expr:
        # A window's (or whole-tensor read's) type holds shape expressions over sizes and
        # loop variables; they must follow the substitution like any other expression.
        match x:
            case WindowExpr():
                t = map_type(x.type, self.expr)
                assert isinstance(t, TensorType)
                return x.replace(type=t)
            case Read() if isinstance(x.type, TensorType):
                return x.replace(type=map_type(x.type, self.expr))
            case _:
                return x

    def stmt(self, x: Stmt) -> Stmt:
        env = self.env
        out = map_stmt_children(x, self.stmt, self.expr)
        match out:
            case Assign() | Reduce() | Alloc() | WindowStmt() if out.sym in env:
                target = env[out.sym]
                if isinstance(target, Sym):
                    return out.replace(sym=target)
                return out
            case For() if out.iter in env:
                target = env[out.iter]
                return out.replace(iter=target) if isinstance(target, Sym) else out
            case _:
                return out


def free_syms_expr(e: Expr) -> set[Sym]:
    """Symbols an expression refers to."""
    out: set[Sym] = set()
    _add_free_syms(e, out)
    return out


def _add_free_syms(e: Expr, out: set[Sym]) -> None:
    # plain recursion: the nested generators of ``walk_expr`` cost a frame per level per node
    if isinstance(e, Read | WindowExpr | StrideExpr):
        out.add(e.sym)
    for c in expr_children(e):
        _add_free_syms(c, out)


def defined_syms(s: Stmt) -> set[Sym]:
    """Symbols bound by ``s`` and its nested statements (allocs, windows, loop variables)."""
    out: set[Sym] = set()
    for x in walk_stmts((s,)):
        match x:
            case Alloc() | WindowStmt():
                out.add(x.sym)
            case For():
                out.add(x.iter)
            case _:
                pass
    return out


def written_args(
    p: ProcDef, callee_written: Callable[[ProcDef], frozenset[int]] | None = None
) -> frozenset[int]:
    """Positions of the arguments of ``p`` that ``p`` may write: directly, through a window
    (its root buffer), or by passing them to a callee that writes the matching parameter
    (instruction bodies included).

    Args:
        p: the proc.
        callee_written: the positions a called proc writes, for callers that already keep them
            (the interpreter's compiled callees); by default this function, memoised per call.

    Returns:
        The argument indices written.
    """
    if callee_written is None:
        memo: dict[int, frozenset[int]] = {}

        def memoised(q: ProcDef) -> frozenset[int]:
            if id(q) not in memo:
                memo[id(q)] = written_args(q, memoised)
            return memo[id(q)]

        callee_written = memoised
    root: dict[Sym, Sym] = {}
    out: set[Sym] = set()
    for s in walk_stmts(p.body):
        match s:
            case WindowStmt():
                root[s.sym] = root.get(s.rhs.sym, s.rhs.sym)
            case Assign() | Reduce():
                out.add(root.get(s.sym, s.sym))
            case Call():
                cw = callee_written(s.proc)
                for i, a in enumerate(s.args):
                    if i in cw and isinstance(a, Read | WindowExpr):
                        out.add(root.get(a.sym, a.sym))
            case _:
                pass
    return frozenset(i for i, a in enumerate(p.args) if a.sym in out)


def arg_syms(p: ProcDef) -> tuple[Sym, ...]:
    """The parameter symbols of ``p`` in order."""
    return tuple(a.sym for a in p.args)


def fnarg(p: ProcDef, name: str) -> FnArg | None:
    """The parameter of ``p`` called ``name``, if any."""
    for a in p.args:
        if a.sym.name == name:
            return a
    return None
