"""Per-node indexes of a proc, cached by node identity so that they survive a step.

Versions of a proc share every subtree a step did not touch, so what is computed for a
statement (the names it binds, where its loops are) holds in every version that contains the
same object. The caches are keyed by ``id`` with the node kept alive in the entry (frozen
slotted nodes take no weak references), hold only facts of the node itself (none depend on
where it sits), and are cleared when full.

- ``bound_names(node)``: the names of the loops, allocations and window statements bound in
  a statement, a block or a proc's body (the names a new binding may clash with);
- ``nth_loop(body, name, k)`` / ``nth_alloc``: the path of the ``k``-th loop over ``name``
  (allocation of ``name``) in pre-order, which ``find_loop`` and ``find_alloc_or_arg`` ask
  instead of walking the proc: each statement knows how many loops and allocations of each
  name it holds, so the search skips every statement without one and descends into one
  statement per level.
"""

from __future__ import annotations

from typing import Any

from cursched.ir.nodes import Alloc, For, If, ProcDef, Scope, Stmt, WindowStmt
from cursched.ir.paths import Path

__all__ = ["bound_names", "count_loops", "nth_alloc", "nth_loop"]

# about 10 entries per statement of a 10,000-statement proc fit: clearing is a rare event
_LIMIT = 1 << 17
_NONE: frozenset[str] = frozenset()
_NAMES: dict[int, tuple[Any, frozenset[str]]] = {}


def _remember(cache: dict[int, tuple[Any, Any]], node: Any, value: Any) -> None:
    if len(cache) >= _LIMIT:
        cache.clear()
    cache[id(node)] = (node, value)


def _stmt_names(s: Stmt) -> frozenset[str]:
    t = type(s)
    if t is Alloc or t is WindowStmt:
        return frozenset((s.sym.name,))  # type: ignore[union-attr]
    if t is not For and t is not If and t is not Scope:
        return _NONE
    hit = _NAMES.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    if isinstance(s, For):
        out = _block_names(s.body) | {s.iter.name}
    elif isinstance(s, If):
        out = _block_names(s.body) | _block_names(s.orelse)
    else:
        assert isinstance(s, Scope)
        out = _block_names(s.body)
    _remember(_NAMES, s, out)
    return out


def _block_names(block: tuple[Stmt, ...], cache: bool = False) -> frozenset[str]:
    # ``cache``: a whole body, asked for more than once by a primitive (the blocks inside a
    # statement are covered by the statement's entry)
    if cache:
        hit = _NAMES.get(id(block))
        if hit is not None and hit[0] is block:
            return hit[1]
    out = _NONE.union(*map(_stmt_names, block)) if block else _NONE
    if cache:
        _remember(_NAMES, block, out)
    return out


def bound_names(node: Stmt | tuple[Stmt, ...] | ProcDef) -> frozenset[str]:
    """The names bound by loops, allocations and window statements in ``node`` (a statement,
    a block, or a proc's body; a proc's parameters are not included)."""
    if isinstance(node, ProcDef):
        return _block_names(node.body, cache=True)
    if isinstance(node, tuple):
        return _block_names(node, cache=True)
    return _stmt_names(node)


_Key = tuple[type, str]  # (For, loop variable name) or (Alloc, buffer name)


def _counts(s: Stmt) -> dict[_Key, int]:
    """How many loops and allocations of each name ``s`` is or holds."""
    t = type(s)
    if t is Alloc:
        return {(Alloc, s.sym.name): 1}  # type: ignore[union-attr]
    if t is not For and t is not If and t is not Scope:
        return _EMPTY
    hit = _COUNTS.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    out: dict[_Key, int] = {}
    if isinstance(s, For):
        out[(For, s.iter.name)] = 1
    for _, block in _blocks(s):
        for sub in block:
            for key, n in _counts(sub).items():
                out[key] = out.get(key, 0) + n
    _remember(_COUNTS, s, out)
    return out


_EMPTY: dict[_Key, int] = {}
_COUNTS: dict[int, tuple[Any, dict[_Key, int]]] = {}


def _blocks(s: Stmt) -> tuple[tuple[str, tuple[Stmt, ...]], ...]:
    if isinstance(s, If):
        return (("body", s.body), ("orelse", s.orelse))
    if isinstance(s, For | Scope):
        return (("body", s.body),)
    return ()


def _nth(block: tuple[Stmt, ...], attr: str, prefix: Path, key: _Key, k: int) -> Path | int:
    """The path of the ``k``-th (pre-order) statement of ``key`` in ``block``, or how many
    there are when fewer than ``k + 1``."""
    seen = 0
    for i, s in enumerate(block):
        n = _counts(s).get(key, 0)
        if k - seen >= n:
            seen += n
            continue
        path = (*prefix, (attr, i))
        if _is(s, key):
            if k == seen:
                return path
            seen += 1
        for sub_attr, sub in _blocks(s):
            got = _nth(sub, sub_attr, path, key, k - seen)
            if not isinstance(got, int):
                return got
            seen += got
    return seen


def _is(s: Stmt, key: _Key) -> bool:
    if isinstance(s, For):
        return key[0] is For and s.iter.name == key[1]
    if isinstance(s, Alloc):
        return key[0] is Alloc and s.sym.name == key[1]
    return False


def nth_loop(body: tuple[Stmt, ...], name: str, k: int) -> Path | None:
    """The path of the ``k``-th loop over ``name`` (pre-order, from 0) in a proc's body."""
    got = _nth(body, "body", (), (For, name), k)
    return None if isinstance(got, int) else got


def nth_alloc(body: tuple[Stmt, ...], name: str, k: int) -> Path | None:
    """The path of the ``k``-th allocation of ``name`` (pre-order, from 0) in a proc's body."""
    got = _nth(body, "body", (), (Alloc, name), k)
    return None if isinstance(got, int) else got


def count_loops(body: tuple[Stmt, ...], name: str) -> int:
    """How many loops over ``name`` a proc's body has."""
    key: _Key = (For, name)
    return sum(_counts(s).get(key, 0) for s in body)
