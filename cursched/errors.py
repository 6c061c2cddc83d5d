"""Every exception class of cursched, in one hierarchy.

The hierarchy (docs/architecture.md, contract 10)::

    CurschedError
      ParseError            source is not in the language (file:line:col + caret excerpt)
      TypeCheckError        source is in the language but ill-typed (same location format)
        BoundsError         an access that cannot be proven in bounds
      SchedulingError       a primitive's precondition failed (one subclass per precondition,
                            each also under exactly one reason class below)
        RaceError           parallel iterations would touch one element
        DependenceError     the rewrite would reorder or drop accesses against a dependence
                            (or a value it needs is written or used elsewhere)
        OutOfBoundsError    an access, point or window may leave its bounds
        NotProvenError      a fact the rewrite needs (equality, divisibility, sign, coverage,
                            idempotence, an assert) cannot be proven
        BadNameError        a new name is not usable (keyword, reserved, taken)
        BadArgumentError    a non-cursor argument has the wrong type or value (a factor, a
                            memory, an expression text that does not parse)
        ShapeMismatchError  the code at the cursor is not of the form the primitive rewrites
        ScopeError          a name would leave its scope or enter one where it is unbound
        IndirectUseError    a buffer is reached indirectly (windows, whole-buffer calls,
                            ``stride``), which the rewrite cannot follow
        TypeMismatchError   types, precisions or memories that must agree do not
      CursorError
        StaleCursorError    a cursor whose node was killed by an earlier primitive
        ForeignCursorError  a cursor from a version that is not an ancestor
        PatternError        a pattern that is malformed or matches nothing
      CodegenError          the IR cannot be expressed in the target language
      BuildError            the system compiler failed (its output attached)
      AliasError            overlapping call arguments a callee cannot take
      AllocationError       a buffer too large to allocate (also a ``MemoryError``)
      ArgumentError         a compiled or interpreted proc was called with bad arguments
      InterpreterError      the reference interpreter hit a failing assert or an
                            out-of-bounds access
      IRVerificationError   an IR value breaks an invariant of ``cursched.ir.verify``

Errors reach the user without internal frames: each entry point of the API (a primitive
through the registry, ``@proc``/``@instr``, ``Proc.compile``, ``Proc.interpret``, a compiled
proc's call) catches ``CurschedError`` and re-raises it through ``at_boundary``, so the
traceback holds the user's frames and that one entry point. The chained internal error (an
analysis ``SafetyError`` behind a primitive's precondition class, say) and the internal
traceback stay on the exception as ``internal_cause`` and ``internal_traceback`` for whoever
debugs cursched; ``CURSCHED_DEBUG=1`` keeps the full chained traceback instead.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
class SrcInfo:
    """A position in user source: file, 1-based line, 0-based column and the line's text."""

    filename: str
    line: int
    col: int = 0
    text: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"

    def excerpt(self) -> str:
        """The source line with a caret under the column (empty when the text is unknown)."""
        if not self.text:
            return ""
        stripped = self.text.rstrip("\n")
        return f"    {stripped}\n    {' ' * self.col}^"


class CurschedError(Exception):
    """Base class of every error raised by cursched.

    Attributes:
        internal_cause: the internal exception this one was raised from (its ``__cause__``
            or ``__context__`` before ``at_boundary`` cut the chain), or None.
        internal_traceback: the frames inside cursched that the boundary dropped, or None.
    """

    internal_cause: BaseException | None = None
    internal_traceback: TracebackType | None = None


def debug_tracebacks() -> bool:
    """Whether ``CURSCHED_DEBUG`` asks for full internal tracebacks (read at each error)."""
    return os.environ.get("CURSCHED_DEBUG", "0") not in ("", "0")


def at_boundary(e: CurschedError) -> CurschedError:
    """``e`` made ready to be re-raised at an API entry point, without internal frames.

    Keeps the chain and the dropped frames on ``e.internal_cause`` and
    ``e.internal_traceback`` (the first boundary crossed wins, so nested entry points, a
    primitive calling another, keep the innermost story). Raise the result ``from None``.
    With ``CURSCHED_DEBUG`` set, ``e`` is returned untouched.
    """
    if debug_tracebacks():
        return e
    if e.internal_traceback is None:
        e.internal_traceback = e.__traceback__
    if e.internal_cause is None:
        e.internal_cause = e.__cause__ or e.__context__
    e.__cause__ = None
    e.__suppress_context__ = True
    return e.with_traceback(None)


def api_boundary(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator for an API entry point: a ``CurschedError`` leaves it through ``at_boundary``
    (its traceback ends at this entry point: the user's frames and this one)."""

    @functools.wraps(fn)
    def entry(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except CurschedError as e:
            if debug_tracebacks():
                raise
            raise at_boundary(e) from None

    return entry


class _LocatedError(CurschedError):
    """An error that points at a place in user source."""

    def __init__(self, message: str, srcinfo: SrcInfo | None = None) -> None:
        self.message = message
        self.srcinfo = srcinfo
        super().__init__(self._format())

    def _format(self) -> str:
        if self.srcinfo is None:
            return self.message
        excerpt = self.srcinfo.excerpt()
        head = f"{self.srcinfo}: {self.message}"
        return f"{head}\n{excerpt}" if excerpt else head


class ParseError(_LocatedError):
    """The source uses Python that is not part of the cursched language."""


class TypeCheckError(_LocatedError):
    """The source is in the language but its types, names or shapes are wrong."""


class BoundsError(TypeCheckError):
    """An access, window or call that cannot be proven to stay in bounds."""


class SchedulingError(CurschedError):
    """A scheduling primitive refused to rewrite because a precondition failed."""


# --- reasons: ``except RaceError`` catches a race whatever the primitive (the precise class
# stays the primitive's own; tests/test_error_reasons.py checks each has exactly one reason)


class RaceError(SchedulingError):
    """Reason: iterations of a ``par`` loop (or of parallel stages) would touch one element."""


class DependenceError(SchedulingError):
    """Reason: the rewrite would reorder, merge or drop accesses against a dependence, or a
    value it relies on is written or used elsewhere."""


class OutOfBoundsError(SchedulingError):
    """Reason: an access, a point or a window may leave the bounds it must stay in."""


class NotProvenError(SchedulingError):
    """Reason: a fact the rewrite needs (an equality, a divisibility, a sign, a coverage, an
    idempotence, a callee's assert) cannot be proven where it stands."""


class BadNameError(SchedulingError):
    """Reason: a new name is not usable (not an identifier, a keyword, reserved, or taken)."""


class BadArgumentError(SchedulingError):
    """Reason: a non-cursor argument of a primitive has the wrong type or value (a factor, a
    memory, a flag, an expression text). Not ``ArgumentError``, which is about the
    arguments of a call to a compiled or interpreted proc."""


class ShapeMismatchError(SchedulingError):
    """Reason: the code the cursor designates is not of the form the primitive rewrites (not a
    loop, not nested, not adjacent, bodies that differ, no match)."""


class ScopeError(SchedulingError):
    """Reason: a name would leave its scope, or enter one where it is not bound."""


class IndirectUseError(SchedulingError):
    """Reason: a buffer is reached indirectly (a window, a whole-buffer call argument,
    ``stride``), which the rewrite cannot follow."""


class TypeMismatchError(SchedulingError):
    """Reason: types, precisions or memories that must agree do not."""


REASONS: tuple[type[SchedulingError], ...] = (
    RaceError,
    DependenceError,
    OutOfBoundsError,
    NotProvenError,
    BadNameError,
    BadArgumentError,
    ShapeMismatchError,
    ScopeError,
    IndirectUseError,
    TypeMismatchError,
)
"""Every reason class, each a direct subclass of ``SchedulingError``."""


class CursorError(CurschedError):
    """A cursor could not be used."""


class StaleCursorError(CursorError):
    """A cursor whose node was killed by an earlier primitive."""


class ForeignCursorError(CursorError):
    """A cursor from a proc version that is not an ancestor of the proc it is used on."""


class PatternError(CursorError):
    """A pattern that is malformed or matches nothing."""


class CodegenError(CurschedError):
    """The IR cannot be expressed in the target language."""


class BuildError(CurschedError):
    """The system compiler failed; ``output`` holds what it printed."""

    def __init__(self, message: str, output: str = "", source_path: str | None = None) -> None:
        self.output = output
        self.source_path = source_path
        text = message
        if source_path:
            text += f"\n  generated source: {source_path}"
        if output:
            text += "\n" + output
        super().__init__(text)


class AliasError(CurschedError):
    """A call passes two arguments that may overlap while the callee writes one of them, and
    the callee may access them out of its body's order (docs/semantics.md, "Aliasing").
    Raised as ``CallAliasError`` (definition), ``CodegenAliasError`` (C generation) or
    ``ReplaceAliasError`` (``replace``)."""


class AllocationError(CurschedError, MemoryError):
    """A buffer could not be allocated: its size overflows, or the allocation failed (the
    interpreter checks before allocating, compiled code checks ``malloc``'s result)."""


class ArgumentError(CurschedError):
    """A proc was called with arguments that do not match its signature or asserts."""


class InterpreterError(CurschedError):
    """The reference interpreter found a failing assert or an out-of-bounds access."""


class IRVerificationError(CurschedError):
    """An IR value breaks an invariant stated in ``cursched.ir.verify`` (an internal bug)."""
