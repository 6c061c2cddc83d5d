"""Path-aware access to the IR: the addressable children of a node, reading and rebuilding
along a path. Paths follow ``cursched.ir.paths``.

Only nodes are addressable: statements, expressions, window coordinates and parameters.
Types (and the shapes inside them) and the callee of a ``Call`` are not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeGuard

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
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
    rebuilder,
)
from cursched.ir.paths import Path, Step

# attribute -> whether it holds a tuple; one table instead of reflection, for speed.
_CHILDREN: dict[type, tuple[tuple[str, bool], ...]] = {
    Assign: (("idx", True), ("rhs", False)),
    Reduce: (("idx", True), ("rhs", False)),
    Pass: (),
    If: (("cond", False), ("body", True), ("orelse", True)),
    For: (("lo", False), ("hi", False), ("body", True)),
    Alloc: (),
    Call: (("args", True),),
    WindowStmt: (("rhs", False),),
    Scope: (("body", True),),
    Const: (),
    Read: (("idx", True),),
    BinOp: (("lhs", False), ("rhs", False)),
    USub: (("arg", False),),
    Extern: (("args", True),),
    WindowExpr: (("idx", True),),
    StrideExpr: (),
    Point: (("pt", False),),
    Interval: (("lo", False), ("hi", False)),
    FnArg: (),
    ProcDef: (("args", True), ("preds", True), ("body", True)),
}

STMT_LISTS = ("body", "orelse")
_EXPR_CLASSES = (Const, Read, BinOp, USub, Extern, WindowExpr, StrideExpr)


def is_expr(x: object) -> TypeGuard[Expr]:
    """Whether ``x`` is an expression node (window coordinates are not)."""
    return isinstance(x, _EXPR_CLASSES)


def children(node: Any) -> Iterator[tuple[Step, Any]]:
    """The addressable children of ``node`` with the step reaching each."""
    for attr, many in _CHILDREN.get(type(node), ()):
        value = getattr(node, attr)
        if many:
            for i, c in enumerate(value):
                yield (attr, i), c
        else:
            yield (attr, -1), value


def iter_nodes(roots: Iterable[Any]) -> Iterator[Any]:
    """Every addressable node under ``roots`` (themselves included), depth first, without
    paths: the nodes the editor's survivor search walks (``_CHILDREN``); for identity tests."""
    stack = list(roots)
    while stack:
        x = stack.pop()
        yield x
        for attr, many in _CHILDREN.get(type(x), ()):
            v = getattr(x, attr)
            if many:
                stack.extend(v)
            else:
                stack.append(v)


def walk(node: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """``node`` and every addressable node below it, pre-order, with their paths."""
    yield prefix, node
    for step, c in children(node):
        yield from walk(c, (*prefix, step))


def walk_stmts(
    body: tuple[Stmt, ...], prefix: Path, attr: str = "body"
) -> Iterator[tuple[Path, Stmt]]:
    """Every statement of the list ``prefix.<attr>`` and below, pre-order, with paths."""
    for i, s in enumerate(body):
        path = (*prefix, (attr, i))
        yield path, s
        if isinstance(s, For | Scope):
            yield from walk_stmts(s.body, path)
        elif isinstance(s, If):
            yield from walk_stmts(s.body, path)
            yield from walk_stmts(s.orelse, path, "orelse")


def copy_node(node: Any) -> Any:
    """A new node object equal to ``node`` (the same children): a node that must not keep
    the old one's identity (``dataclasses.replace(node)``, at the cost of the constructor)."""
    return rebuilder(type(node), ())(node)


def copy_tree(node: Any) -> Any:
    """``node`` and every addressable node below it rebuilt as new objects (the same
    symbols, types and values): a copy that keeps no old node's identity."""
    kids = _CHILDREN.get(type(node), ())
    fn = rebuilder(type(node), tuple(attr for attr, _ in kids))
    values = [
        tuple(map(copy_tree, getattr(node, attr))) if many else copy_tree(getattr(node, attr))
        for attr, many in kids
    ]
    return fn(node, *values)


def with_field(node: Any, attr: str, value: Any) -> Any:
    """``node`` with field ``attr`` set to ``value`` (``node`` itself when it holds that
    very object): what ``node.replace(attr=value)`` gives, at the cost of the constructor."""
    if value is getattr(node, attr):
        return node
    return rebuilder(type(node), (attr,))(node, value)


def update_at(root: Any, path: Path, fn: Callable[[Any], Any]) -> Any:
    """``root`` with the node at ``path`` replaced by ``fn(node)``; unchanged parts shared."""
    if not path:
        return fn(root)
    attr, index = path[0]
    child = getattr(root, attr)
    if index == -1:
        return with_field(root, attr, update_at(child, path[1:], fn))
    old = child[index]
    new = update_at(old, path[1:], fn)
    if new is old:
        return root
    return with_field(root, attr, (*child[:index], new, *child[index + 1 :]))


def stmt_list(root: ProcDef, parent: Path, attr: str) -> tuple[Stmt, ...]:
    """The statement list ``parent.<attr>``."""
    node: Any = root
    for a, i in parent:
        node = getattr(node, a)
        if i != -1:
            node = node[i]
    out = getattr(node, attr)
    assert isinstance(out, tuple)
    return out
