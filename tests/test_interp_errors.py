"""Bad arguments, failing asserts and out-of-bounds accesses."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, ArgumentError, InterpreterError, proc
from cursched.interp import interpret
from cursched.ir.nodes import ProcDef


@proc
def axpy(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] += a * x[i]


@proc
def matcopy(n: size, m: size, A: f32[n, m] @ DRAM, B: f32[n, m] @ DRAM, first: index):
    for i in seq(0, n):
        for j in seq(0, m):
            B[i, j] = A[i, j]


def good(n: int = 4) -> dict[str, object]:
    return {
        "n": n,
        "a": np.array(2, np.float32),
        "x": np.ones(n, np.float32),
        "y": np.zeros(n, np.float32),
    }


def test_good_arguments_run() -> None:
    args = good()
    axpy.interpret(**args)
    assert list(args["y"]) == [2.0] * 4  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"x": np.ones(4, np.float64)}, r"argument x expects a numpy float32 .*dtype float64"),
        ({"x": np.ones((4, 1), np.float32)}, r"argument x .*rank 2 instead of 1"),
        ({"x": np.ones(5, np.float32)}, r"argument x .*shape should be \(4,\)"),
        ({"x": np.ones(8, np.float32)[::2]}, r"argument x .*not C-contiguous"),
        ({"x": [1.0, 1.0, 1.0, 1.0]}, r"argument x expects a numpy float32 .*got list"),
        ({"x": None}, r"argument x .*got NoneType"),
        ({"n": 0}, r"argument n expects a positive int .*sizes are positive"),
        ({"n": -3}, r"argument n expects a positive int"),
        ({"n": True}, r"argument n expects a positive int .*got bool"),
        ({"n": 4.0}, r"argument n expects a positive int .*got float"),
        ({"a": np.array(2, np.float64)}, r"argument a expects a numpy float32 array of shape \(\)"),
        ({"a": np.ones(2, np.float32)}, r"argument a expects"),
        ({"a": "2"}, r"argument a expects .*got str"),
    ],
)
def test_bad_argument(change: dict[str, object], match: str) -> None:
    args = good()
    args.update(change)
    with pytest.raises(ArgumentError, match=match):
        axpy.interpret(**args)


def test_missing_extra_unknown_and_duplicate_arguments() -> None:
    a, x, y = np.array(2, np.float32), np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(ArgumentError, match=r"missing argument\(s\) y"):
        axpy.interpret(4, a, x)
    with pytest.raises(ArgumentError, match="takes 4 arguments"):
        axpy.interpret(4, a, x, y, y)
    with pytest.raises(ArgumentError, match="has no argument 'z'"):
        axpy.interpret(4, a, x, y=y, z=y)
    with pytest.raises(ArgumentError, match="argument x given twice"):
        axpy.interpret(4, a, x, y, x=x)


def test_index_and_bool_arguments() -> None:
    A = np.ones((2, 3), np.float32)
    B = np.zeros((2, 3), np.float32)
    matcopy.interpret(2, 3, A, B, -5)  # an index may be any integer
    matcopy.interpret(2, 3, A, B, np.int64(1))  # numpy integers are integers
    with pytest.raises(ArgumentError, match=r"argument first expects an int \(index\), got bool"):
        matcopy.interpret(2, 3, A, B, False)


@proc
def flagged(flag: bool, x: f32[1] @ DRAM):
    if flag:
        x[0] = 1.0


def test_bool_argument_needs_a_bool() -> None:
    x = np.zeros(1, np.float32)
    flagged.interpret(np.bool_(True), x)
    assert x[0] == 1.0
    with pytest.raises(ArgumentError, match="argument flag expects a bool, got int 1"):
        flagged.interpret(1, x)


def test_scalar_arguments() -> None:
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    axpy.interpret(4, 3.0, x, y)  # a Python number for a scalar the proc only reads
    axpy.interpret(4, np.array([1], np.float32), x, y)  # shape (1,) is accepted too
    assert list(y) == [4.0] * 4


@proc
def write_scalar(s: f32):
    s += 1.0


@proc
def write_scalar_by_call(s: f32):
    write_scalar(s)


def test_written_scalar_needs_an_array() -> None:
    with pytest.raises(ArgumentError, match=r"argument s .*the proc writes it, so pass an array"):
        write_scalar.interpret(2.0)
    with pytest.raises(ArgumentError, match="the proc writes it"):
        write_scalar_by_call.interpret(2.0)
    s = np.zeros(1, np.float32)
    write_scalar_by_call.interpret(s)
    assert s[0] == 1.0


def test_read_only_output_is_refused() -> None:
    args = good()
    y = args["y"]
    assert isinstance(y, np.ndarray)
    y.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"argument y .*read-only"):
        axpy.interpret(**args)


# --------------------------------------------------------------------------------- asserts


@proc
def blocked(n: size, x: f32[n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n / 4):
        x[4 * i] = 1.0


def test_failing_assert_names_the_assert_and_values() -> None:
    blocked.interpret(8, np.zeros(8, np.float32))
    with pytest.raises(
        InterpreterError,
        match=r"assert n % 4 == 0 failed on entry to proc blocked \(n = 6\) at .*test_interp_errors.py:\d+",
    ):
        blocked.interpret(6, np.zeros(6, np.float32))


# --------------------------------------------------------------------------- out of bounds
# A proc that may go out of bounds does not get past definition-time checks, so these procs
# assert what keeps them in bounds and the tests run them with the asserts removed.


def unchecked(p: object) -> ProcDef:
    """``p``'s IR without its asserts."""
    ir = p.ir()  # type: ignore[attr-defined]
    assert isinstance(ir, ProcDef)
    return ir.replace(preds=())


@proc
def shift_read(n: size, d: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert d == 0
    for i in seq(0, n):
        y[i] = x[i + d]


@proc
def shift_write(n: size, d: index, x: f32[n] @ DRAM, y: f32[n, 2] @ DRAM):
    assert d == 0
    for i in seq(0, n):
        y[i + d, 1] = x[i]


@proc
def shift_window(n: size, d: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert d == 0 and n >= 2
    w = x[d : d + 2]
    y[0] = w[0]


def test_out_of_bounds_read_reports_access_and_index() -> None:
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    interpret(unchecked(shift_read), 4, 0, x, y)
    with pytest.raises(
        InterpreterError, match=r"out-of-bounds read x\[i \+ d\]: index 4 outside shape \(4,\)"
    ):
        interpret(unchecked(shift_read), 4, 1, x, y)
    with pytest.raises(
        InterpreterError, match=r"in proc shift_read \(.*test_interp_errors.py:\d+:\d+\)"
    ):
        interpret(unchecked(shift_read), 4, 1, x, y)


def test_negative_index_is_not_wrapped() -> None:
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(InterpreterError, match=r"out-of-bounds read x\[i \+ d\]: index -1"):
        interpret(unchecked(shift_read), 4, -1, x, y)
    assert not y.any()


def test_out_of_bounds_write() -> None:
    x, y = np.zeros(3, np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(
        InterpreterError, match=r"out-of-bounds write y\[i \+ d, 1\]: index \(-1, 1\)"
    ):
        interpret(unchecked(shift_write), 3, -1, x, y)
    with pytest.raises(
        InterpreterError, match=r"out-of-bounds write y\[i \+ d, 1\]: index \(3, 1\)"
    ):
        interpret(unchecked(shift_write), 3, 1, x, y)


@pytest.mark.parametrize("d", [-1, 3])
def test_out_of_bounds_window(d: int) -> None:
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(InterpreterError, match=r"out-of-bounds window x\[d:d \+ 2\]"):
        interpret(unchecked(shift_window), 4, d, x, y)


@proc
def callee8(x: [f32][8] @ DRAM):
    x[0] = 1.0


@proc
def caller_bad_shape(n: size, x: f32[n] @ DRAM):
    assert n == 8
    callee8(x[0:n])


def test_call_argument_shape_is_checked_at_run_time() -> None:
    interpret(unchecked(caller_bad_shape), 8, np.zeros(8, np.float32))
    with pytest.raises(
        InterpreterError, match=r"call to callee8: argument x has shape \(5,\), expected \(8,\)"
    ):
        interpret(unchecked(caller_bad_shape), 5, np.zeros(5, np.float32))
