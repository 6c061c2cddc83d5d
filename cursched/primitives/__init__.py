"""Scheduling primitives, one module per family, all built on ``registry.primitive``.

``cursched.split`` is ``cursched.primitives.split``: every primitive is re-exported from the
package root.
"""

from cursched.primitives.loop_nests import fission, fuse, reorder_loops
from cursched.primitives.loop_ranges import cut_loop, join_loops, shift_loop
from cursched.primitives.loop_shapes import (
    add_loop,
    mult_loops,
    parallelize_loop,
    remove_loop,
    unroll_loop,
)
from cursched.primitives.loop_split import split
from cursched.primitives.procs import rename
from cursched.primitives.registry import PrimCursors, primitive, settings
from cursched.primitives.scopes import eliminate_dead_code, lift_scope, specialize
from cursched.primitives.simplify import simplify
from cursched.primitives.statements import delete_pass, insert_pass, reorder_stmts

__all__ = [
    "PrimCursors",
    "add_loop",
    "cut_loop",
    "delete_pass",
    "eliminate_dead_code",
    "fission",
    "fuse",
    "insert_pass",
    "join_loops",
    "lift_scope",
    "mult_loops",
    "parallelize_loop",
    "primitive",
    "remove_loop",
    "rename",
    "reorder_loops",
    "reorder_stmts",
    "settings",
    "shift_loop",
    "simplify",
    "specialize",
    "split",
    "unroll_loop",
]
