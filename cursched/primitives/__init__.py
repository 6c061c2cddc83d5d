"""Scheduling primitives, one module per family, all built on ``registry.primitive``.

``cursched.split`` is ``cursched.primitives.split``: every primitive is re-exported from the
package root.
"""

from cursched.primitives.loop_nests import fission, fuse, reorder_loops
from cursched.primitives.loop_ranges import cut_loop, join_loops, shift_loop
from cursched.primitives.loop_split import split
from cursched.primitives.procs import rename
from cursched.primitives.registry import PrimCursors, primitive, settings
from cursched.primitives.statements import delete_pass, insert_pass, reorder_stmts

__all__ = [
    "PrimCursors",
    "cut_loop",
    "delete_pass",
    "fission",
    "fuse",
    "insert_pass",
    "join_loops",
    "primitive",
    "rename",
    "reorder_loops",
    "reorder_stmts",
    "settings",
    "shift_loop",
    "split",
]
