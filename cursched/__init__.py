"""cursched: a user-schedulable array language whose primitives return the cursors you need.

Public API: the decorators ``proc``, ``instr`` and ``config``, the ``Proc`` class, memories,
data types, errors, and (from ``cursched.primitives``) every scheduling primitive.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from cursched import primitives as _primitives
from cursched.errors import (
    AliasError,
    ArgumentError,
    BadArgumentError,
    BadNameError,
    BoundsError,
    BuildError,
    CodegenError,
    CurschedError,
    CursorError,
    DependenceError,
    ForeignCursorError,
    IndirectUseError,
    InterpreterError,
    NotProvenError,
    OutOfBoundsError,
    ParseError,
    PatternError,
    RaceError,
    SchedulingError,
    ScopeError,
    ShapeMismatchError,
    StaleCursorError,
    TypeCheckError,
    TypeMismatchError,
)
from cursched.ir.barrier import SYNC_THREADS as _SYNC_THREADS
from cursched.ir.config import config
from cursched.ir.memory import (
    DRAM,
    DRAM_KEPT,
    DRAM_STACK,
    DRAM_STATIC,
    GLOBAL,
    REGISTER,
    SHARED,
    Memory,
)
from cursched.primitives import *  # noqa: F403 - the primitives' list lives in one place
from cursched.primitives.registry import Verdict, can
from cursched.proc import Proc, instr, proc

sync_threads = Proc(_SYNC_THREADS)
"""The CUDA block barrier ``sync_threads()`` (``__syncthreads()``); see ``insert_barriers``."""

try:
    __version__ = _version("cursched")
except _PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "DRAM",
    "DRAM_KEPT",
    "DRAM_STACK",
    "DRAM_STATIC",
    "GLOBAL",
    "REGISTER",
    "SHARED",
    "AliasError",
    "ArgumentError",
    "BadArgumentError",
    "BadNameError",
    "BoundsError",
    "BuildError",
    "CodegenError",
    "CurschedError",
    "CursorError",
    "DependenceError",
    "ForeignCursorError",
    "IndirectUseError",
    "InterpreterError",
    "Memory",
    "NotProvenError",
    "OutOfBoundsError",
    "ParseError",
    "PatternError",
    "Proc",
    "RaceError",
    "SchedulingError",
    "ScopeError",
    "ShapeMismatchError",
    "StaleCursorError",
    "TypeCheckError",
    "TypeMismatchError",
    "Verdict",
    "can",
    "config",
    "instr",
    "proc",
    "sync_threads",
]
# every primitive, and PrimCursors, as `cursched.primitives` lists them
__all__ += _primitives.__all__
