"""Evaluating one candidate: schedule, compile, check against the untuned proc, time.

``evaluate`` runs in a worker process (``cursched.tune.pool``), in a Ray task, or in the
search's own process; it never raises for a candidate the primitives refuse (that is an
``infeasible`` outcome, recorded with the error's class), and returns a wrong result as an
outcome too, so that the search, not the worker, stops.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cursched.errors import BuildError, CodegenError, CurschedError
from cursched.ir.traversal import written_args
from cursched.proc import Proc
from cursched.tune.target import Inputs, ScheduleFn, TargetRef, resolve_inputs

#: Outcomes of a candidate.
OK, INFEASIBLE, BUILD_FAILED, WRONG = "ok", "infeasible", "build_failed", "wrong"


@dataclass(frozen=True)
class Timing:
    """How a candidate is timed: ``warmup`` untimed calls, then the median of ``repeats``."""

    warmup: int = 1
    repeats: int = 5


@dataclass(frozen=True)
class Tolerance:
    """How close a candidate's outputs must be to the reference's.

    An element passes when ``|got - want| <= atol + rtol * (|want| + max |want|)``: the
    scale of the whole output counts, since a schedule that regroups a sum (a blocked K loop)
    moves an element that cancels to near zero by the rounding of its largest terms, not of
    its own value; a wrong schedule is off by the output's own scale.
    """

    rtol: float = 1e-4
    atol: float = 1e-6


@dataclass
class Outcome:
    """What one candidate gave."""

    params: dict[str, Any]
    status: str
    time_s: float | None = None
    times: list[float] = field(default_factory=list)
    error_class: str | None = None
    error_message: str | None = None
    history: str = ""


class Evaluator:
    """Evaluates candidates of one target; keeps the inputs and the reference outputs."""

    def __init__(
        self,
        proc: Proc,
        schedule: ScheduleFn,
        inputs: Callable[[], Inputs] | Inputs,
        timing: Timing,
        tolerance: Tolerance,
        compile_options: Mapping[str, Any],
    ) -> None:
        self.proc = proc
        self.schedule = schedule
        self.inputs = resolve_inputs(inputs)
        self.timing = timing
        self.tolerance = tolerance
        self.compile_options = dict(compile_options)
        self._reference: list[np.ndarray[Any, Any]] | None = None

    def reference(self) -> list[np.ndarray[Any, Any]]:
        """The untuned proc's outputs on the inputs (compiled once)."""
        if self._reference is None:
            self._reference = self._outputs(self.proc, self.proc.compile(**self.compile_options))
        return self._reference

    def evaluate(self, params: dict[str, Any]) -> Outcome:
        """Schedule, compile, check and time the candidate ``params``."""
        try:
            p = self.schedule(self.proc, **params)
        except CurschedError as e:
            return Outcome(params, INFEASIBLE, error_class=type(e).__name__, error_message=str(e))
        history = p.history(self.proc.name())
        try:
            fn = p.compile(**self.compile_options)
        except (BuildError, CodegenError) as e:
            return Outcome(
                params, BUILD_FAILED, error_class=type(e).__name__, error_message=str(e)[:4000]
            )
        got = self._outputs(p, fn)
        bad = _first_mismatch(got, self.reference(), self.tolerance)
        if bad is not None:
            return Outcome(params, WRONG, error_message=bad, history=history)
        times = self._time(fn)
        return Outcome(params, OK, statistics.median(times), times, history=history)

    def _call_args(self) -> tuple[list[Any], dict[str, Any]]:
        if isinstance(self.inputs, dict):
            return [], {k: _copy(v) for k, v in self.inputs.items()}
        return [_copy(v) for v in self.inputs], {}

    def _outputs(self, p: Proc, fn: Callable[..., None]) -> list[np.ndarray[Any, Any]]:
        args, kwargs = self._call_args()
        fn(*args, **kwargs)
        names = [a.sym.name for a in p.ir().args]
        written = sorted(written_args(p.ir()))
        values = [args[i] if i < len(args) else kwargs[names[i]] for i in written]
        return [np.array(v, copy=True) for v in values]

    def _time(self, fn: Callable[..., None]) -> list[float]:
        args, kwargs = self._call_args()
        with timing_lock:
            return self._time_locked(fn, args, kwargs)

    def _time_locked(
        self, fn: Callable[..., None], args: list[Any], kwargs: dict[str, Any]
    ) -> list[float]:
        for _ in range(self.timing.warmup):
            fn(*args, **kwargs)
        times = []
        for _ in range(self.timing.repeats):
            t0 = time.perf_counter()
            fn(*args, **kwargs)
            times.append(time.perf_counter() - t0)
        return times


def _copy(v: Any) -> Any:
    return v.copy() if isinstance(v, np.ndarray) else v


def _first_mismatch(
    got: list[np.ndarray[Any, Any]], want: list[np.ndarray[Any, Any]], tol: Tolerance
) -> str | None:
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        finite = np.abs(w[np.isfinite(w)]) if w.size else w
        scale = float(finite.max()) if finite.size else 0.0
        close = np.isclose(g, w, rtol=tol.rtol, atol=tol.atol + tol.rtol * scale, equal_nan=True)
        if not close.all():
            where = np.unravel_index(int(np.argmin(close)), close.shape) if close.ndim else ()
            return (
                f"output {k} differs from the untuned proc's at index {tuple(map(int, where))}:"
                f" {g[where]!r} instead of {w[where]!r}"
            )
    return None


# -- in worker processes ----------------------------------------------------------------------
#: Held while a candidate is timed: a worker process pinned to a core sets it to that core's
#: lock, so that two workers sharing a core never time at the same moment.
timing_lock: AbstractContextManager[Any] = nullcontext()
_EVALUATORS: dict[tuple[str, str], Evaluator] = {}


def evaluate_ref(
    ref: TargetRef,
    params: dict[str, Any],
    inputs: Inputs | None,
    timing: Timing,
    tolerance: Tolerance,
    compile_options: Mapping[str, Any],
) -> Outcome:
    """``evaluate`` for a target sent by reference (the evaluator is cached per process)."""
    key = (ref.key, repr(sorted(compile_options.items())))
    ev = _EVALUATORS.get(key)
    if ev is None:
        proc, schedule, inputs_fn = ref.load()
        source = inputs_fn if inputs_fn is not None else inputs
        assert source is not None, "a TargetRef without an inputs function travels with inputs"
        ev = Evaluator(proc, schedule, source, timing, tolerance, compile_options)
        _EVALUATORS[key] = ev
    return ev.evaluate(params)
