"""Check-only mode: every primitive called with ``check_only=True`` (or through
``cursched.can``) answers a ``Verdict`` that agrees with the real call on accept/refuse and on
the error class, and builds nothing where the primitive marks the end of its checks."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cursched import (
    DRAM,
    CursorError,
    ParseError,
    Proc,
    RaceError,
    SchedulingError,
    TypeCheckError,
    Verdict,
    can,
    join_loops,
    parallelize_loop,
    proc,
    rename,
    reorder_loops,
    split,
    stage_mem,
    unroll_loop,
)
from cursched.errors import BoundsError
from cursched.primitives.buffers.stage import StageOutsideWindowError, StageParallelError
from cursched.primitives.loops import loop_split
from cursched.primitives.loops.loop_split import SplitFactorError, SplitNamesError
from cursched.primitives.loops.procs import InvalidNameError
from tests.primitives.fuzzgen import proc_text
from tests.primitives.fuzzsteps import NoTarget, available_steps
from tests.primitives.test_soundness_fuzz import make


@proc
def foo(n: size, A: i8[n] @ DRAM):
    assert n % 4 == 0
    for io in seq(0, n / 4):
        for ii in seq(0, 4):
            A[4 * io + ii] += 2


@proc
def recur(n: size, x: f32[n + 1] @ DRAM):
    for i in seq(0, n):
        x[i + 1] = x[i] * 0.5


@proc
def par_rows(n: size, x: f32[n] @ DRAM):
    for i in par(0, n):
        x[i] = x[i] * 2.0


@proc
def par_pieces(x: f32[4] @ DRAM):
    for i in par(0, 4):
        x[i % 4] = 1.0
    for j in par(4, 8):
        x[j % 4] = 1.0


@proc
def grid(x: f32[4, 8] @ DRAM):
    for i in seq(0, 4):
        for j in seq(0, 8):
            x[i, j] = 1.0


def _real(call: Any) -> type[Exception] | None:
    try:
        call()
    except (SchedulingError, CursorError) as e:
        return type(e)
    return None


SAMPLE: list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]] = [
    ("split ok", split, (recur, "i", 4), {}),
    ("split factor", split, (recur, "i", 1), {}),
    ("split keyword", split, (recur, "i", 4), {"names": ("for", "in")}),
    ("split perfect", split, (recur, "i", 4), {"tail": "perfect"}),
    ("stage ok", stage_mem, (foo, "for ii in _: _", "A[4 * io:4 * io + 4]", "tile"), {}),
    ("stage outside", stage_mem, (foo, "for ii in _: _", "A[4 * io:4 * io + 3]", "tile"), {}),
    ("stage race", stage_mem, (par_rows, "x[_] = _", "x[0:n]", "xs"), {}),
    ("stage keyword", stage_mem, (foo, "for ii in _: _", "A[4 * io:4 * io + 4]", "for"), {}),
    ("parallelize race", parallelize_loop, (recur, "i"), {}),
    ("parallelize ok", parallelize_loop, (grid, "i"), {}),
    ("reorder ok", reorder_loops, (grid, "i"), {}),
    ("reorder not nested", reorder_loops, (recur, "i"), {}),
    ("unroll ok", unroll_loop, (grid, "j"), {}),
    ("unroll not constant", unroll_loop, (recur, "i"), {}),
    ("rename ok", rename, (grid, "grid2"), {}),
    ("rename keyword", rename, (grid, "lambda"), {}),
    ("join race", join_loops, (par_pieces, "i", "j"), {}),
]


@pytest.mark.parametrize(
    ("prim", "args", "kwargs"), [s[1:] for s in SAMPLE], ids=[s[0] for s in SAMPLE]
)
def test_verdict_agrees_with_the_real_call(prim: Any, args: tuple[Any, ...], kwargs: Any) -> None:
    verdict = can(prim, *args, **kwargs)
    assert isinstance(verdict, Verdict)
    again = prim(*args, check_only=True, **kwargs)
    assert bool(again) == bool(verdict) and type(again.error) is type(verdict.error)
    real = _real(lambda: prim(*args, **kwargs))
    assert bool(verdict) == (real is None), (verdict, real)
    assert (type(verdict.error) if verdict.error is not None else None) is real


def test_verdict_carries_the_error_and_its_reason() -> None:
    v = can(split, recur, "i", 1)
    assert not v and isinstance(v.error, SplitFactorError)
    assert "factor must be an integer > 1" in str(v.error)
    assert not can(split, recur, "i", 4, names=("for", "in"))
    assert isinstance(can(split, recur, "i", 4, names=("a", "a")).error, SplitNamesError)
    assert isinstance(can(rename, grid, "lambda").error, InvalidNameError)
    race = can(stage_mem, par_rows, "x[_] = _", "x[0:n]", "xs")
    assert isinstance(race.error, StageParallelError) and race.reason is RaceError
    # its last check needs the rewritten IR, so stage_mem builds the rewrite to decide
    assert can(stage_mem, foo, "for ii in _: _", "A[4 * io:4 * io + 4]", "tile").built
    assert isinstance(
        can(stage_mem, foo, "for ii in _: _", "A[4 * io:4 * io + 3]", "tile").error,
        StageOutsideWindowError,
    )
    ok = can(split, recur, "i", 4)
    assert ok and ok.error is None and ok.reason is None and not ok.built
    assert "accepted" in repr(ok) and "SplitFactorError" in repr(v)


def test_check_only_builds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the rewrite ran in check-only mode")

    monkeypatch.setattr(loop_split, "_rewrite", boom)
    assert can(split, recur, "i", 4)
    with pytest.raises(AssertionError, match="check-only"):
        split(recur, "i", 4)


def test_cursor_errors_are_raised_as_by_the_real_call() -> None:
    with pytest.raises(CursorError):
        can(split, recur, "zz", 4)
    with pytest.raises(CursorError):
        can(lambda p: p, recur)  # type: ignore[arg-type]


def _agreeing(prim: Any, seen: Counter[str]) -> Any:
    """``prim``, asked for a verdict before each real call and checked against it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            verdict = prim(*args, check_only=True, **kwargs)
        except CursorError as e:
            with pytest.raises(type(e)):
                prim(*args, **kwargs)
            raise
        try:
            out = prim(*args, **kwargs)
        except SchedulingError as e:
            assert type(verdict.error) is type(e), (verdict, e)
            seen["refused"] += 1
            raise
        assert verdict, (verdict, args, kwargs)
        seen["accepted"] += 1
        seen[prim.__name__] += 1
        return out

    return call


def test_verdicts_agree_on_random_schedules() -> None:
    # the soundness fuzzer's procs and steps: every exported primitive, accepted or refused
    seen: Counter[str] = Counter()

    @settings(
        max_examples=40,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(text=proc_text(), data=st.data())
    def run(text: str, data: st.DataObject) -> None:
        try:
            p: Proc = make(text)
        except (ParseError, TypeCheckError, BoundsError):
            assume(False)
            raise
        steps = available_steps()
        for _ in range(data.draw(st.integers(1, 4), label="number of steps")):
            _, prim, step = data.draw(st.sampled_from(steps), label="primitive")
            try:
                p, _ = step(_agreeing(prim, seen), p, data)
            except (SchedulingError, CursorError, NoTarget):
                continue

    run()
    # the sample is not vacuous: both answers occur, over many primitives
    assert seen["accepted"] >= 10 and seen["refused"] >= 10, seen
    assert len(set(seen) - {"accepted", "refused"}) >= 5, seen
