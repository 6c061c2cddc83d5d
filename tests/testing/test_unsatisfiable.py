"""``assert_equivalent`` on a proc no input can run (issue 11, finding 7): a typed error
saying so, instead of an ``InterpreterError`` about a failed assert."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, proc
from cursched.errors import ArgumentError, InterpreterError
from cursched.testing import UnsatisfiableAssertsError, assert_equivalent, random_args


@proc
def contradiction(n: size, x: f32[n] @ DRAM):
    assert n > 4
    assert n < 3
    for i in seq(0, n):
        x[i] = 0.0


@proc
def odd_stride(n: size, x: f32[n] @ DRAM):
    assert stride(x, 0) == 2
    for i in seq(0, n):
        x[i] = 0.0


@proc
def window_stride(n: size, x: [f32][n, 4] @ DRAM):  # noqa: RUF016
    assert stride(x, 1) == 3
    for i in seq(0, n):
        x[i, 0] = 0.0


@proc
def fine(n: size, x: [f32][n, 4] @ DRAM):  # noqa: RUF016
    assert stride(x, 1) == 1
    assert n % 4 == 0
    for i in seq(0, n):
        x[i, 0] = 1.0


def test_contradicting_asserts() -> None:
    with pytest.raises(UnsatisfiableAssertsError, match="contradict each other") as info:
        assert_equivalent(contradiction, contradiction)
    assert isinstance(info.value, ArgumentError)
    assert not isinstance(info.value, InterpreterError)
    assert "n > 4; n < 3" in str(info.value)


@pytest.mark.parametrize("p", [odd_stride, window_stride], ids=["tensor", "window"])
def test_stride_asserts_no_drawn_array_meets(p: object) -> None:
    with pytest.raises(UnsatisfiableAssertsError, match="no inputs assert_equivalent can draw"):
        assert_equivalent(p, p)


def test_pinned_sizes_that_break_the_asserts() -> None:
    with pytest.raises(UnsatisfiableAssertsError, match=r"with \{'n': 3\} pinned"):
        random_args(fine, np.random.default_rng(0), {"n": 3})


def test_satisfiable_asserts_still_run() -> None:
    args = random_args(fine, np.random.default_rng(0))
    assert args["n"] % 4 == 0  # type: ignore[operator]
    assert_equivalent(fine, fine)
