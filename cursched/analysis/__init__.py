"""Safety analysis: affine arithmetic, effects, bounds and the SMT-backed checks.

``smt.py`` is the only module of cursched that imports pysmt (z3 is the solver). The parts:

- ``affine``: the quasi-affine normal form, ``simplify_expr``, the fast decision procedure;
- ``smt``: ``valid``/``satisfiable`` with counterexamples, a query cache, ``stats``;
- ``context``: ``context_of(p, path)``, what holds at a position (asserts, loops, ifs);
- ``effects``: read/write/reduce accesses of statements, through windows and calls;
- ``bounds``: ``check_bounds``, run by ``@proc`` and ``@instr``;
- ``checks``: one ``check_*`` function per property of a rewrite, each with its error class;
- ``conditions``: conditions always/never true at a position, call preconditions.
"""

from cursched.analysis.affine import simplify_expr
from cursched.analysis.bounds import check_bounds, check_stmt_bounds
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
from cursched.analysis.conditions import (
    CallPreconditionError,
    ConditionError,
    check_always,
    check_call_preconditions,
    decide_condition,
)
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.effects import Access, block_effects, stmt_effects

__all__ = [
    "Access",
    "BufferNotDeadError",
    "CallPreconditionError",
    "CommuteError",
    "ConditionError",
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
    "check_always",
    "check_bounds",
    "check_call_preconditions",
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
    "check_stmt_bounds",
    "context_of",
    "decide_condition",
    "simplify_expr",
    "stmt_effects",
]
