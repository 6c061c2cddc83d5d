# ruff: noqa: F841
"""Bounds at definition time: ``@proc`` proves accesses, windows and calls in bounds."""

from __future__ import annotations

import pytest
from corpus.procs_kernels import sgemm

from cursched import DRAM, instr, proc
from cursched.analysis.bounds import check_bounds
from cursched.errors import BoundsError, TypeCheckError


def test_bounds_error_is_a_type_check_error() -> None:
    assert issubclass(BoundsError, TypeCheckError)


def test_out_of_bounds_access_with_counterexample() -> None:
    with pytest.raises(BoundsError) as info:

        @proc
        def shift(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM):
            for i in seq(0, n):
                B[i] = A[i + 1]

    text = str(info.value)
    assert "index i + 1 of A" in text
    assert "counterexample: n = " in text and "i = " in text
    assert "B[i] = A[i + 1]" in text
    assert info.value.srcinfo is not None and info.value.srcinfo.line > 0


def test_negative_index() -> None:
    with pytest.raises(BoundsError, match="index i - 1 of A"):

        @proc
        def back(n: size, A: f32[n] @ DRAM):
            for i in seq(0, n):
                A[i - 1] = 0.0


def test_write_target_checked() -> None:
    with pytest.raises(BoundsError, match="index n of A"):

        @proc
        def past_end(n: size, A: f32[n] @ DRAM):
            A[n] = 0.0


def test_guard_and_assert_make_accesses_safe() -> None:
    @proc
    def guarded(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM):
        for i in seq(0, n):
            if i + 1 < n:
                B[i] = A[i + 1]
            else:
                B[i] = A[0]

    @proc
    def asserted(n: size, A: f32[n] @ DRAM):
        assert n >= 8
        A[7] = 0.0

    @proc
    def tiled(n: size, A: f32[n] @ DRAM):
        assert n % 4 == 0
        for io in seq(0, n / 4):
            for ii in seq(0, 4):
                A[4 * io + ii] = 0.0

    with pytest.raises(BoundsError, match="counterexample: n = "):

        @proc
        def untiled(n: size, A: f32[n] @ DRAM):
            for io in seq(0, n / 4 + 1):
                for ii in seq(0, 4):
                    A[4 * io + ii] = 0.0


def test_window_out_of_bounds() -> None:
    with pytest.raises(BoundsError, match="interval 0:n \\+ 1 of window"):

        @proc
        def wide(n: size, A: f32[n] @ DRAM):
            w = A[0 : n + 1]

    with pytest.raises(BoundsError, match="interval 2:n - 1 of window"):

        @proc
        def maybe_reversed(n: size, A: f32[n] @ DRAM):
            w = A[2 : n - 1]


def test_window_access_checked_against_window_shape() -> None:
    with pytest.raises(BoundsError, match="index 4 of w"):

        @proc
        def through(A: f32[8] @ DRAM):
            w = A[2:6]
            w[4] = 0.0


@proc
def fill(n: size, dst: [f32][n] @ DRAM):
    assert n >= 2
    for i in seq(0, n):
        dst[i] = 0.0


def test_call_shape_mismatch() -> None:
    with pytest.raises(BoundsError, match="dimension 0 is m, the parameter wants n") as info:

        @proc
        def caller(n: size, m: size, A: f32[m] @ DRAM):
            assert n >= 2
            fill(n, A[0:m])

    cex = info.value.message
    assert "counterexample: n = " in cex and "m = " in cex


def test_call_callee_assert_not_implied() -> None:
    with pytest.raises(BoundsError) as info:

        @proc
        def caller(n: size, A: f32[n] @ DRAM):
            fill(n, A[0:n])

    assert "assert n >= 2 of fill" in str(info.value)
    assert "counterexample: n = 1" in str(info.value)


def test_call_size_must_be_positive() -> None:
    with pytest.raises(BoundsError, match="size n of fill is m - 2, which must be positive"):

        @proc
        def caller(m: size, A: f32[m] @ DRAM):
            assert m >= 2
            fill(m - 2, A[0 : m - 2])


def test_call_ok_under_assert() -> None:
    @proc
    def caller(n: size, A: f32[n, n] @ DRAM):
        assert n >= 2
        for i in seq(0, n):
            fill(n, A[i, 0:n])


def test_instr_bodies_are_checked() -> None:
    with pytest.raises(BoundsError):

        @instr("{dst_data}[0] = 0;")
        def bad_instr(dst: [f32][4] @ DRAM):
            dst[4] = 0.0


def test_correct_proc_passes_quickly() -> None:
    check_bounds(sgemm.ir())  # passes: returns, raises nothing
    assert check_bounds(sgemm.ir()) is sgemm.ir()
