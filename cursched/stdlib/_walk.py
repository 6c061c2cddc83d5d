"""Walking a proc's statements by cursor (the stdlib's own helper)."""

from __future__ import annotations

from collections.abc import Iterator

from cursched.cursors import BlockCursor, ForCursor, StmtCursor
from cursched.cursors.stmts import IfCursor, ScopeCursor
from cursched.proc import Proc

__all__ = ["blocks", "nested_blocks", "statements"]


def nested_blocks(s: StmtCursor) -> Iterator[BlockCursor]:
    if isinstance(s, ForCursor | ScopeCursor):
        yield s.body()
    elif isinstance(s, IfCursor):
        for b in (s.body(), s.orelse()):
            if isinstance(b, BlockCursor):
                yield b


def _all_blocks(b: BlockCursor) -> Iterator[BlockCursor]:
    yield b
    for s in b:
        for inner in nested_blocks(s):
            yield from _all_blocks(inner)


def statements(p: Proc) -> list[StmtCursor]:
    """Every statement of ``p``, pre-order."""
    return [s for b in _all_blocks(p.body()) for s in b]


def blocks(p: Proc, length: int, within: StmtCursor | None = None) -> list[BlockCursor]:
    """Every run of ``length`` consecutive statements of one block, pre-order (only those
    inside ``within``, itself included, when given)."""
    out: list[BlockCursor] = []
    roots = [p.body()] if within is None else [within.as_block()]
    for b in (blk for r in roots for blk in _all_blocks(r)):
        out += [b[k : k + length] for k in range(len(b) - length + 1)]
    return out
