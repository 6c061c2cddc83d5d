"""Errors of the autotuner: all subclasses of ``CurschedError``."""

from __future__ import annotations

from cursched.errors import CurschedError


class TuneError(CurschedError):
    """Base class of the autotuner's errors."""


class SpaceError(TuneError):
    """A search space or a candidate that does not fit it."""


class TargetError(TuneError):
    """What to tune cannot be found, loaded or run (a schedule, proc or inputs function)."""


class WrongResultError(TuneError):
    """A candidate's compiled code computed a different result from the untuned proc's.

    Every candidate is built by checked primitives, so this is a bug of the tool (or of a
    step taken with ``unsafe_skip_checks=True``): the search stops at once.
    """

    def __init__(self, message: str, params: dict[str, object], history: str) -> None:
        super().__init__(message)
        self.params = params
        self.history = history
