"""Safety analysis: affine arithmetic, effects, bounds and the SMT-backed checks.

``smt.py`` is the only module of cursched that imports pysmt (z3 is the solver). The parts:

- ``affine``: the quasi-affine normal form, ``simplify_expr``, the fast decision procedure;
- ``smt``: ``valid``/``satisfiable`` with counterexamples, a query cache, ``stats``;
- ``context``: ``context_of(p, path)``, what holds at a position (asserts, loops, ifs);
- ``effects``: read/write/reduce accesses of statements, through windows and calls;
- ``bounds``: ``check_bounds``, run by ``@proc`` and ``@instr``;
- ``checks``: one ``check_*`` function per property of a rewrite, each with its error class.
"""

from cursched.analysis.affine import simplify_expr
from cursched.analysis.bounds import check_bounds
from cursched.analysis.checks import (
    BufferNotDeadError,
    CommuteError,
    FissionError,
    FusionError,
    NotBoundedError,
    NotDivisibleError,
    NotEqualError,
    OutsideWindowError,
    ParallelError,
    ReorderLoopsError,
    SafetyError,
    check_commute,
    check_dead_after,
    check_divides,
    check_expr_equal,
    check_fission,
    check_fuse,
    check_in_window,
    check_le,
    check_parallel,
    check_reorder_loops,
)
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.effects import Access, block_effects, stmt_effects

__all__ = [
    "Access",
    "BufferNotDeadError",
    "CommuteError",
    "FissionError",
    "FusionError",
    "NotBoundedError",
    "NotDivisibleError",
    "NotEqualError",
    "OutsideWindowError",
    "ParallelError",
    "PathContext",
    "ReorderLoopsError",
    "SafetyError",
    "block_effects",
    "check_bounds",
    "check_commute",
    "check_dead_after",
    "check_divides",
    "check_expr_equal",
    "check_fission",
    "check_fuse",
    "check_in_window",
    "check_le",
    "check_parallel",
    "check_reorder_loops",
    "context_of",
    "simplify_expr",
    "stmt_effects",
]
