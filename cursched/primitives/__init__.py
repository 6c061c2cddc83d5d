"""Scheduling primitives, one module per family, all built on ``registry.primitive``.

``cursched.split`` is ``cursched.primitives.split``: every primitive is re-exported from the
package root.
"""

from cursched.primitives.allocs import delete_buffer, lift_alloc, reuse_buffer, sink_alloc
from cursched.primitives.binds import bind_expr, inline_assign
from cursched.primitives.buffer_attrs import set_memory, set_precision, set_window
from cursched.primitives.call_eqv import call_eqv
from cursched.primitives.calls import inline
from cursched.primitives.dims import (
    divide_dim,
    expand_dim,
    mult_dim,
    rearrange_dim,
    resize_dim,
    unroll_buffer,
)
from cursched.primitives.exprs import commute_expr, left_reassociate_expr, rewrite_expr
from cursched.primitives.extract import extract_subproc
from cursched.primitives.loop_nests import fission, fuse, reorder_loops
from cursched.primitives.loop_ranges import cut_loop, join_loops, shift_loop
from cursched.primitives.loop_shapes import mult_loops, parallelize_loop, unroll_loop
from cursched.primitives.loop_split import split
from cursched.primitives.loop_wrap import add_loop, remove_loop
from cursched.primitives.procs import rename
from cursched.primitives.registry import PrimCursors, primitive, settings
from cursched.primitives.replace import replace
from cursched.primitives.scan import scan_fuse
from cursched.primitives.scopes import eliminate_dead_code, lift_scope, specialize
from cursched.primitives.simplify import simplify
from cursched.primitives.stage import stage_mem
from cursched.primitives.statements import delete_pass, insert_pass, reorder_stmts
from cursched.primitives.windows_inline import inline_window
from cursched.primitives.writes import (
    fold_into_reduce,
    lift_reduce_constant,
    merge_writes,
    split_write,
)

__all__ = [
    "PrimCursors",
    "add_loop",
    "bind_expr",
    "call_eqv",
    "commute_expr",
    "cut_loop",
    "delete_buffer",
    "delete_pass",
    "divide_dim",
    "eliminate_dead_code",
    "expand_dim",
    "extract_subproc",
    "fission",
    "fold_into_reduce",
    "fuse",
    "inline",
    "inline_assign",
    "inline_window",
    "insert_pass",
    "join_loops",
    "left_reassociate_expr",
    "lift_alloc",
    "lift_reduce_constant",
    "lift_scope",
    "merge_writes",
    "mult_dim",
    "mult_loops",
    "parallelize_loop",
    "primitive",
    "rearrange_dim",
    "remove_loop",
    "rename",
    "reorder_loops",
    "reorder_stmts",
    "replace",
    "resize_dim",
    "reuse_buffer",
    "rewrite_expr",
    "scan_fuse",
    "set_memory",
    "set_precision",
    "set_window",
    "settings",
    "shift_loop",
    "simplify",
    "sink_alloc",
    "specialize",
    "split",
    "split_write",
    "stage_mem",
    "unroll_buffer",
    "unroll_loop",
]
