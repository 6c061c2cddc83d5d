"""Reason classes: every precondition class of every primitive (and every analysis check's
error) subclasses exactly one reason class of ``cursched.errors.REASONS``, so a caller can catch
``RaceError`` (or ``BadNameError``, ...) whatever the primitive."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import cursched
import cursched.analysis
import cursched.primitives
from cursched import (
    DRAM,
    BadArgumentError,
    BadNameError,
    DependenceError,
    NotProvenError,
    OutOfBoundsError,
    RaceError,
    SchedulingError,
    ShapeMismatchError,
    join_loops,
    parallelize_loop,
    proc,
    reorder_loops,
    split,
    stage_mem,
)
from cursched.analysis.checks import SafetyError
from cursched.errors import REASONS
from cursched.primitives.calls.unify import UnifyError


def _classes_of(package: object) -> list[type[SchedulingError]]:
    out: list[type[SchedulingError]] = []
    path = package.__path__  # type: ignore[attr-defined]
    prefix = package.__name__ + "."  # type: ignore[attr-defined]
    for info in pkgutil.walk_packages(path, prefix):
        mod = importlib.import_module(info.name)
        for value in vars(mod).values():
            if (
                isinstance(value, type)
                and issubclass(value, SchedulingError)
                and value.__module__ == mod.__name__
            ):
                out.append(value)
    return out


PRECONDITIONS = _classes_of(cursched.primitives)
ANALYSIS = [c for c in _classes_of(cursched.analysis) if c is not SafetyError]


def test_the_walk_finds_every_precondition_class() -> None:
    # 154 when reasons were introduced; primitives added since only make it larger
    assert len(PRECONDITIONS) >= 154
    assert len(ANALYSIS) >= 15


@pytest.mark.parametrize("cls", PRECONDITIONS + ANALYSIS, ids=lambda c: c.__name__)
def test_each_error_class_has_exactly_one_reason(cls: type[SchedulingError]) -> None:
    reasons = [r for r in REASONS if issubclass(cls, r)]
    assert len(reasons) == 1, f"{cls.__name__} has reasons {[r.__name__ for r in reasons]}"
    # the unifier's errors share UnifyError's reason (a mismatch) through their base class
    if issubclass(cls, UnifyError):
        assert reasons == [ShapeMismatchError]


def test_reasons_are_exported_and_direct_subclasses() -> None:
    for r in REASONS:
        assert r.__bases__ == (SchedulingError,)
        assert getattr(cursched, r.__name__) is r
        assert r.__name__ in cursched.__all__


@proc
def par_pieces(x: f32[4] @ DRAM):
    for i in par(0, 4):
        x[i % 4] = 1.0
    for j in par(4, 8):
        x[j % 4] = 1.0


@proc
def recur(n: size, x: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        x[i + 1] = x[i] * 0.5


@proc
def par_rows(n: size, x: f32[n] @ DRAM):
    for i in par(0, n):
        x[i] = x[i] * 2.0


@proc
def wavefront(n: size, x: f32[n + 1, n + 1] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, n):
            x[i + 1, j] = x[i, j + 1]


def test_except_race_error_catches_races_of_any_primitive() -> None:
    attempts = [
        lambda: join_loops(par_pieces, par_pieces.find_loop("i"), par_pieces.find_loop("j")),
        lambda: parallelize_loop(recur, "i"),
        lambda: stage_mem(par_rows, "x[_] = _", "x[0:n]", "xs"),
    ]
    kinds = set()
    for attempt in attempts:
        try:
            attempt()
        except RaceError as e:
            kinds.add(type(e).__name__)
        else:
            raise AssertionError("no race reported")
    assert kinds == {"JoinParallelError", "ParallelizeRaceError", "StageParallelError"}


def test_other_reasons_catch_their_primitives() -> None:
    with pytest.raises(DependenceError):
        reorder_loops(wavefront, "i")
    with pytest.raises(BadArgumentError):
        split(recur, "i", 1)
    with pytest.raises(BadNameError):
        split(recur, "i", 4, names=("io", "io"))
    with pytest.raises(NotProvenError):
        split(recur, "i", 4, tail="perfect")
    with pytest.raises(OutOfBoundsError):
        stage_mem(par_rows, "x[_] = _", "x[0:1]", "xs")
    with pytest.raises(ShapeMismatchError):
        reorder_loops(recur, "i")
