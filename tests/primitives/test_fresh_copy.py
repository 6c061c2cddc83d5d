"""``loop_common.fresh_copy``: a copy sharing no node, its symbols made in binding order."""

from __future__ import annotations

from cursched import DRAM, proc
from cursched.cursors.tree import walk
from cursched.ir.nodes import Alloc, For, Stmt
from cursched.ir.symbols import Sym
from cursched.primitives.loops.loop_common import fresh_copy


@proc
def nest(n: size, x: f32[n, 8] @ DRAM):
    for i in seq(0, n):
        t: f32[8] @ DRAM
        for j in seq(0, 8):
            t[j] = 1.0
        for k in seq(0, 8):
            for m in seq(0, 1):
                x[i, k] = t[k + m]


def _bound(stmts: tuple[Stmt, ...]) -> list[Sym]:
    out: list[Sym] = []
    for s in stmts:
        for _, x in walk(s):
            if isinstance(x, For):
                out.append(x.iter)
            elif isinstance(x, Alloc):
                out.append(x.sym)
    return out


def test_copies_symbols_in_binding_order_and_shares_no_node() -> None:
    body = nest.ir().body
    copy = fresh_copy(body)
    old, new = _bound(body), _bound(copy)
    assert [s.name for s in new] == [s.name for s in old]
    assert not set(map(id, new)) & set(map(id, old))
    # the copies are made in the order of the originals (program order here): the ids order
    # the terms of affine normal forms, so set order made printouts vary between runs
    assert [s.id for s in new] == sorted(s.id for s in new)
    old_nodes = {id(x) for s in body for _, x in walk(s)}
    assert not any(id(x) in old_nodes for s in copy for _, x in walk(s))
