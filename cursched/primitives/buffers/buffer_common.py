"""Helpers shared by the buffer primitives (``stage``, ``allocs``, ``dims``, ``buffer_attrs``).

- ``uses_of``: every use of a buffer in a list of statements, with its path, so a primitive
  can check each use in its own context before rewriting it;
- ``rebuild``: the statements with each use of a buffer replaced (``fix(old, new)``), keeping
  every other node object, so that ``same_pairs`` keeps statement identity;
- ``buffer_scope``: the statements an allocation's symbol is visible in (the allocation and
  what follows it in its list), or the whole body for a parameter;
- ``fresh_name``, ``fresh_names``: a name no symbol of the proc has (new loop variables,
  staged buffers);
- ``simplified``: the readable IR of an affine index expression.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from cursched.analysis import affine as af
from cursched.cursors import AllocCursor, ArgCursor, BlockLoc, NodeLoc
from cursched.cursors.index import bound_names
from cursched.cursors.tree import stmt_list, walk
from cursched.ir.nodes import (
    Assign,
    BinOp,
    Expr,
    Node,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    WindowExpr,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children, map_stmt_children
from cursched.ir.types import INDEX

UseNode: TypeAlias = Read | WindowExpr | Assign | Reduce | StrideExpr


@dataclass(frozen=True, slots=True)
class Use:
    """One use of a buffer: the node and its path in the proc."""

    path: Path
    node: UseNode


def uses_of(stmts: Sequence[Stmt], paths: Sequence[Path], sym: Sym) -> list[Use]:
    """Every read, write, window and stride of ``sym`` in ``stmts`` (at ``paths``)."""
    out: list[Use] = []
    for s, p in zip(stmts, paths, strict=True):
        for path, node in walk(s, p):
            kinds = Read | WindowExpr | Assign | Reduce | StrideExpr
            if isinstance(node, kinds) and node.sym is sym:
                out.append(Use(path, node))
    return out


def rebuild(
    stmts: Sequence[Stmt], sym: Sym, fix: Callable[[UseNode, UseNode], Node]
) -> tuple[Stmt, ...]:
    """``stmts`` with every use ``u`` of ``sym`` replaced by ``fix(u, u_with_new_children)``.

    ``fix`` gets the original node (to look up what was computed for it) and the node with its
    children already rewritten (an assignment's right-hand side may read the buffer too).
    """

    def fe(x: Expr) -> Expr:
        if isinstance(x, Read | WindowExpr | StrideExpr) and x.sym is sym:
            out = fix(x, x)  # index expressions are control: no buffer read inside
            assert isinstance(out, Read | WindowExpr | StrideExpr)
            return out
        return map_expr_children(x, fe)

    def fs(s: Stmt) -> Stmt:
        new = map_stmt_children(s, fs, fe)
        if isinstance(s, Assign | Reduce) and s.sym is sym:
            assert isinstance(new, Assign | Reduce)
            out = fix(s, new)
            assert isinstance(out, Assign | Reduce)
            return out
        return new

    return tuple(fs(s) for s in stmts)


def buffer_scope(ir: ProcDef, buf: AllocCursor | ArgCursor) -> BlockLoc:
    """The statements in which ``buf`` is visible: from its allocation to the end of its
    list, or the whole body for a parameter."""
    if isinstance(buf, ArgCursor):
        return BlockLoc((), "body", 0, len(ir.body))
    *parent, (attr, k) = buf.path()
    n = len(stmt_list(ir, tuple(parent), attr))
    return BlockLoc(tuple(parent), attr, k, n)


def scope_stmts(ir: ProcDef, block: BlockLoc) -> tuple[tuple[Stmt, ...], tuple[Path, ...]]:
    """The statements of ``block`` and their paths."""
    stmts = stmt_list(ir, block.parent, block.attr)[block.lo : block.hi]
    return stmts, block.stmt_paths()


def used_names(ir: ProcDef) -> set[str]:
    """Names of every symbol the proc binds (parameters, loops, allocations, windows)."""
    # the body's names are cached per statement node (cursors.index), shared across steps
    return {a.sym.name for a in ir.args} | bound_names(ir)


# (bound names, base) -> the first k with base<k> not among them, by the frozenset's identity
# (cursors.index caches it per body, so a proc version asks once): otherwise a proc whose
# loops are i0 ... i3333 makes stage_mem try 3,334 names per new index variable
_FIRST_FREE: dict[tuple[int, str], tuple[frozenset[str], int]] = {}
_FIRST_FREE_LIMIT = 1 << 12


def _first_free(bound: frozenset[str], base: str) -> int:
    hit = _FIRST_FREE.get((id(bound), base))
    if hit is not None and hit[0] is bound:
        return hit[1]
    k = 0
    while f"{base}{k}" in bound:
        k += 1
    if len(_FIRST_FREE) >= _FIRST_FREE_LIMIT:
        _FIRST_FREE.clear()
    _FIRST_FREE[(id(bound), base)] = (bound, k)
    return k


def fresh_names(ir: ProcDef, base: str, count: int, also: set[str]) -> list[str]:
    """``count`` names ``base<k>``, each the first that no symbol of ``ir`` and no name of
    ``also`` or of the ones before has: the names ``fresh_name`` gives on ``used_names(ir) |
    also``, one after the other, without building that union.

    Before ``k = _first_free(bound, base)`` every ``base<j>`` is bound, so the search can
    start there: a name free in the union is free in the bound names.
    """
    bound = bound_names(ir)
    taken = {a.sym.name for a in ir.args} | also
    k, out = _first_free(bound, base), list[str]()
    while len(out) < count:
        name = f"{base}{k}"
        k += 1
        if name not in bound and name not in taken:
            out.append(name)
    return out


def fresh_name(taken: set[str], base: str) -> str:
    """``base0``, ``base1``, ... : the first not in ``taken`` (which it then joins)."""
    k = 0
    while f"{base}{k}" in taken:
        k += 1
    name = f"{base}{k}"
    taken.add(name)
    return name


def simplified(a: af.Aff, ranges: Mapping[Sym, af.Bound] | None = None) -> Expr:
    """The readable IR of ``a`` after range-aware simplification."""
    return af.from_aff(af.simplify_aff(a, ranges or {}))


def minus(e: Expr, off: Expr) -> Expr:
    """``e - off``, simplified when both are affine."""
    a, b = af.to_aff(e), af.to_aff(off)
    if a is None or b is None:
        return BinOp("-", e, off, INDEX)
    return simplified(a - b)


def new_access_locs(stmts: Sequence[Stmt], block: BlockLoc, syms: set[Sym]) -> tuple[NodeLoc, ...]:
    """Locations of every access of ``syms`` in ``stmts`` placed at ``block``."""
    out: list[NodeLoc] = []
    for s, p in zip(stmts, block.stmt_paths(), strict=True):
        for path, node in walk(s, p):
            if isinstance(node, Read | WindowExpr | Assign | Reduce) and node.sym in syms:
                out.append(NodeLoc(path))
    return tuple(out)


__all__ = [
    "Use",
    "buffer_scope",
    "fresh_name",
    "fresh_names",
    "minus",
    "new_access_locs",
    "rebuild",
    "scope_stmts",
    "simplified",
    "used_names",
    "uses_of",
]
