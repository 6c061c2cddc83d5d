"""cursched: a user-schedulable array language whose primitives return the cursors you need.

Public API: the decorators ``proc``, ``instr`` and ``config``, the ``Proc`` class, memories,
data types, errors, and (from ``cursched.primitives``) every scheduling primitive.
"""

from cursched import primitives as _primitives
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
from cursched.ir.config import config
from cursched.ir.memory import (
    DRAM,
    DRAM_STACK,
    DRAM_STATIC,
    GLOBAL,
    REGISTER,
    SHARED,
    Memory,
)
from cursched.primitives import *  # noqa: F403 - the primitives' list lives in one place
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
    "config",
    "instr",
    "proc",
]
# every primitive, and PrimCursors, as `cursched.primitives` lists them
__all__ += _primitives.__all__
