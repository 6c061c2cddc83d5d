"""cursched: a user-schedulable array language whose primitives return the cursors you need.

Public API: the decorators ``proc`` and ``instr``, the ``Proc`` class, memories, data types,
errors, and (from ``cursched.primitives``) every scheduling primitive.
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
from cursched.ir.barrier import SYNC_THREADS as _SYNC_THREADS
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

sync_threads = Proc(_SYNC_THREADS)
"""The CUDA block barrier ``sync_threads()`` (``__syncthreads()``); see ``insert_barriers``."""

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
    "instr",
    "proc",
    "sync_threads",
]
# every primitive, and PrimCursors, as `cursched.primitives` lists them
__all__ += _primitives.__all__
