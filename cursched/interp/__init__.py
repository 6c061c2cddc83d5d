"""The reference interpreter: runs a proc on numpy arrays and Python ints (the tests' oracle).

``run`` binds and validates arguments, lays arrays out as flat memoryviews (or lists) and
runs a compiled proc; ``compile`` turns a proc (statements, allocations, calls) into the
source of a Python function, exec'd once per ``ProcDef``; ``loops`` does its loops (and
``dot_nest`` the dot-product nests numpy runs); ``exprs`` does expressions;
``values`` holds the scalar helpers (casts, rounding, integer division, messages) shared by
the three.

A new statement kind is one method ``Compiler._stmt_<kind>`` emitting its source (and a case
in ``Compiler.stmt``), with the expression helpers of ``ExprCompiler`` (``ctrl``, ``value``,
``offset``, ``window``).
"""

from cursched.interp.run import compiled, eval_control, interpret, procdef_of

__all__ = ["compiled", "eval_control", "interpret", "procdef_of"]
