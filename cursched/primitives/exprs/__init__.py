"""Expression and write primitives: binding, inlining, rewriting, merging and splitting writes."""

from cursched.primitives.exprs.binds import bind_expr, inline_assign
from cursched.primitives.exprs.configs import bind_config, delete_config, write_config
from cursched.primitives.exprs.exprs import commute_expr, left_reassociate_expr, rewrite_expr
from cursched.primitives.exprs.writes import (
    fold_into_reduce,
    lift_reduce_constant,
    merge_writes,
    split_write,
)

__all__ = [
    "bind_config",
    "bind_expr",
    "commute_expr",
    "delete_config",
    "fold_into_reduce",
    "inline_assign",
    "left_reassociate_expr",
    "lift_reduce_constant",
    "merge_writes",
    "rewrite_expr",
    "split_write",
    "write_config",
]
