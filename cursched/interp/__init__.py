"""The reference interpreter: runs a proc on numpy arrays and Python ints (the tests' oracle).

``run`` binds and validates arguments and runs a compiled proc; ``compile`` turns statements,
allocations and calls into Python closures; ``exprs`` does expressions; ``values`` holds the
scalar helpers (casts, integer division, messages) shared by the three.
"""

from cursched.interp.run import compiled, eval_control, interpret, procdef_of

__all__ = ["compiled", "eval_control", "interpret", "procdef_of"]
