"""Buffer primitives: staging, allocation placement, dimensions, attributes, window inlining."""

from cursched.primitives.buffers.allocs import delete_buffer, lift_alloc, reuse_buffer, sink_alloc
from cursched.primitives.buffers.buffer_attrs import set_memory, set_precision, set_window
from cursched.primitives.buffers.dims import (
    divide_dim,
    expand_dim,
    mult_dim,
    rearrange_dim,
    resize_dim,
    unroll_buffer,
)
from cursched.primitives.buffers.stage import stage_mem
from cursched.primitives.buffers.windows_inline import inline_window

__all__ = [
    "delete_buffer",
    "divide_dim",
    "expand_dim",
    "inline_window",
    "lift_alloc",
    "mult_dim",
    "rearrange_dim",
    "resize_dim",
    "reuse_buffer",
    "set_memory",
    "set_precision",
    "set_window",
    "sink_alloc",
    "stage_mem",
    "unroll_buffer",
]
