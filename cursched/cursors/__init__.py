"""Cursors: places in a proc, navigation, pattern finding, edit operations and forwarding.

A cursor is a (proc, location) pair (docs/architecture.md, contract 5). Modules:

- ``locs``: locations (node paths, blocks, gaps, parameters) and the printed path format;
- ``kinds`` / ``stmts``: the cursor classes and their navigation;
- ``patterns``: ``find``, ``find_loop``, ``find_alloc_or_arg``;
- ``edits``: the edit operations primitives are built from, each yielding a forwarding map;
- ``forwarding``: the maps and their composition; ``lineage``: forwarding along history;
- ``show``: printing a proc with a cursor marked; ``history``: the replayable script.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cursched.cursors.edits import Editor
from cursched.cursors.forwarding import Dead, PathMap
from cursched.cursors.kinds import ArgCursor, Cursor, ExprCursor, InvalidCursor, Tombstone
from cursched.cursors.lineage import StepRecord, forward_cursor
from cursched.cursors.locs import (
    ArgLoc,
    BlockLoc,
    GapLoc,
    Loc,
    NodeLoc,
    NoLoc,
    format_path,
    parse_path,
)
from cursched.cursors.stmts import (
    AllocCursor,
    AssignCursor,
    BlockCursor,
    CallCursor,
    ForCursor,
    GapCursor,
    IfCursor,
    PassCursor,
    ReduceCursor,
    ScopeCursor,
    StmtCursor,
    WindowStmtCursor,
    make_cursor,
)
from cursched.cursors.tree import stmt_list
from cursched.errors import CursorError

if TYPE_CHECKING:
    from cursched.proc import Proc

__all__ = [
    "AllocCursor",
    "ArgCursor",
    "ArgLoc",
    "AssignCursor",
    "BlockCursor",
    "BlockLoc",
    "CallCursor",
    "Cursor",
    "Dead",
    "Editor",
    "ExprCursor",
    "ForCursor",
    "GapCursor",
    "GapLoc",
    "IfCursor",
    "InvalidCursor",
    "Loc",
    "NoLoc",
    "NodeLoc",
    "PassCursor",
    "PathMap",
    "ReduceCursor",
    "ScopeCursor",
    "StepRecord",
    "StmtCursor",
    "Tombstone",
    "WindowStmtCursor",
    "at",
    "format_path",
    "forward_cursor",
    "make_cursor",
    "parse_path",
]

_BLOCK = re.compile(r"^(?:(.*)\.)?([A-Za-z_]\w*)\[(\d+):(\d+)\]$")


def at(proc: Proc, where: str) -> Cursor:
    """The cursor at a printed location (``"body[0].rhs"``, ``"body[1:3]"``, ``"args[0]"``).

    Raises:
        CursorError: when ``where`` is not a location of ``proc``.
    """
    text = where.strip()
    m = _BLOCK.match(text)
    try:
        if m:
            parent, attr = parse_path(m.group(1) or ""), m.group(2)
            lo, hi = int(m.group(3)), int(m.group(4))
            n = len(stmt_list(proc.ir(), parent, attr))
            if not 0 <= lo < hi <= n:
                raise CursorError(f"block {where!r} out of range (the list has {n} statements)")
            return BlockCursor(proc, BlockLoc(parent, attr, lo, hi))
        return make_cursor(proc, NodeLoc(parse_path(text)))
    except (ValueError, LookupError, AttributeError) as e:
        raise CursorError(f"no location {where!r} in {proc!r}: {e}") from None
