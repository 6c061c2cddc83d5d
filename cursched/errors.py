"""Every exception class of cursched, in one hierarchy.

The hierarchy (DESIGN.md, contract 10)::

    CurschedError
      ParseError            source is not in the language (file:line:col + caret excerpt)
      TypeCheckError        source is in the language but ill-typed (same location format)
        BoundsError         an access that cannot be proven in bounds
      SchedulingError       a primitive's precondition failed (one subclass per precondition)
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
"""

from __future__ import annotations

from dataclasses import dataclass


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
    """Base class of every error raised by cursched."""


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
