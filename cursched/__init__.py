"""cursched: a user-schedulable array language whose primitives return the cursors you need.

Public API: the decorators ``proc`` and ``instr``, the ``Proc`` class, memories, data types,
errors, and (from ``cursched.primitives``) every scheduling primitive.
"""

from cursched.errors import (
    ArgumentError,
    BoundsError,
    BuildError,
    CodegenError,
    CurschedError,
    CursorError,
    ForeignCursorError,
    InterpreterError,
    ParseError,
    PatternError,
    SchedulingError,
    StaleCursorError,
    TypeCheckError,
)
from cursched.ir.memory import (
    DRAM,
    DRAM_STACK,
    DRAM_STATIC,
    GLOBAL,
    REGISTER,
    SHARED,
    Memory,
)
from cursched.primitives import delete_pass, insert_pass, rename, reorder_stmts
from cursched.proc import Proc, instr, proc

__all__ = [
    "DRAM",
    "DRAM_STACK",
    "DRAM_STATIC",
    "GLOBAL",
    "REGISTER",
    "SHARED",
    "ArgumentError",
    "BoundsError",
    "BuildError",
    "CodegenError",
    "CurschedError",
    "CursorError",
    "ForeignCursorError",
    "InterpreterError",
    "Memory",
    "ParseError",
    "PatternError",
    "Proc",
    "SchedulingError",
    "StaleCursorError",
    "TypeCheckError",
    "delete_pass",
    "insert_pass",
    "instr",
    "proc",
    "rename",
    "reorder_stmts",
]
