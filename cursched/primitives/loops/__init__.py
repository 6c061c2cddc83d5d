"""Loop and statement primitives: split, reorder, fission/fuse, ranges, shapes, wraps, scopes,
statements, simplify, rename."""

from cursched.primitives.loops.guards import add_unsafe_guard
from cursched.primitives.loops.loop_nests import fission, fuse, reorder_loops
from cursched.primitives.loops.loop_ranges import cut_loop, join_loops, shift_loop
from cursched.primitives.loops.loop_shapes import mult_loops, parallelize_loop, unroll_loop
from cursched.primitives.loops.loop_split import split
from cursched.primitives.loops.loop_wrap import add_loop, remove_loop
from cursched.primitives.loops.procs import rename
from cursched.primitives.loops.recompute import divide_with_recompute
from cursched.primitives.loops.scopes import eliminate_dead_code, lift_scope, specialize
from cursched.primitives.loops.simplify import simplify
from cursched.primitives.loops.statements import delete_pass, insert_pass, reorder_stmts

__all__ = [
    "add_loop",
    "add_unsafe_guard",
    "cut_loop",
    "delete_pass",
    "divide_with_recompute",
    "eliminate_dead_code",
    "fission",
    "fuse",
    "insert_pass",
    "join_loops",
    "lift_scope",
    "mult_loops",
    "parallelize_loop",
    "remove_loop",
    "rename",
    "reorder_loops",
    "reorder_stmts",
    "shift_loop",
    "simplify",
    "specialize",
    "split",
    "unroll_loop",
]
