"""set_memory, set_precision, set_window: golden output, one negative test per precondition,
forwarding (buffer -> buffer), differential equivalence (interpreter; C for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    DRAM,
    DRAM_STACK,
    REGISTER,
    Memory,
    proc,
    set_memory,
    set_precision,
    set_window,
)
from cursched.cursors import AllocCursor, ArgCursor
from cursched.ir.types import F64
from cursched.primitives.buffers.buffer_attrs import (
    SetMemoryCallError,
    SetMemoryError,
    SetMemoryNotDataError,
    SetMemoryWindowedError,
    SetPrecisionError,
    SetPrecisionNotDataError,
    SetPrecisionSharedError,
    SetWindowFlagError,
    SetWindowNotArgError,
)
from cursched.testing import assert_equivalent


@proc
def addv(a: [f32][4] @ DRAM, b: [f32][4] @ DRAM):
    for k in seq(0, 4):
        a[k] += b[k]


@proc
def acc(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        t: f32[4] @ DRAM
        for k in seq(0, 4):
            t[k] = x[i] * 0.5
        y[i] = t[0] + t[3]


@proc
def calls(x: f32[4] @ DRAM, y: f32[4] @ DRAM):
    t: f32[4] @ DRAM
    for k in seq(0, 4):
        t[k] = y[k]
    addv(x[0:4], t[0:4])


def test_set_memory_and_precision(golden) -> None:  # type: ignore[no-untyped-def]
    t = acc.find_alloc_or_arg("t")
    p, c = set_memory(acc, t, DRAM_STACK)
    assert isinstance(c.buffer, AllocCursor) and p.forward(t) == c.buffer
    p2, c2 = set_precision(p, c.buffer, "f64")
    golden.check(p2)
    assert c2.buffer.type().elem == F64
    assert p2.forward(t) == c2.buffer
    assert_equivalent(acc, p2, trials=3)
    f = p2.compile()
    x = np.arange(6, dtype=np.float32)
    y1, y2 = np.zeros(6, np.float32), np.zeros(6, np.float32)
    f(6, x, y1)
    acc.interpret(6, x, y2)
    np.testing.assert_allclose(y1, y2)


def test_set_precision_of_argument() -> None:
    p, c = set_precision(acc, "y", F64)
    assert "y: f64[n] @ DRAM" in str(p)
    assert isinstance(c.buffer, ArgCursor)


def test_set_window(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = set_window(acc, "x", True)
    golden.check(p)
    assert c.buffer.type().window
    p2, _ = set_window(p, c.buffer, False)
    assert str(p2) == str(acc)


@proc
def whole(x: f32[4] @ DRAM, y: f32[4] @ DRAM):
    addv(x, y)


def test_set_window_retypes_whole_tensor_arguments() -> None:
    p, c = set_window(whole, "x", True)
    assert "x: [f32][4] @ DRAM" in str(p)
    assert c.buffer == p.forward(whole.find_alloc_or_arg("x"))
    assert_equivalent(whole, p, trials=2)


def test_set_memory_bad_memory() -> None:
    with pytest.raises(SetMemoryError):
        set_memory(acc, "t", "DRAM")


def test_set_memory_control_parameter() -> None:
    with pytest.raises(SetMemoryNotDataError):
        set_memory(acc, "n", DRAM)


def test_set_memory_not_windowable() -> None:
    with pytest.raises(SetMemoryWindowedError):
        set_memory(calls, "t", REGISTER)
    p, _ = set_memory(acc, "t", REGISTER)  # fine: never windowed
    assert "@ REGISTER" in str(p)


def test_set_memory_passed_to_a_call_in_another_memory() -> None:
    with pytest.raises(SetMemoryCallError, match="passed to addv"):
        set_memory(calls, "t", DRAM_STACK)
    with pytest.raises(SetMemoryCallError):
        set_memory(calls, "x", DRAM_STACK)


def test_set_memory_user_memory() -> None:
    class Scratch(Memory):
        """A user memory."""

    _, c = set_memory(acc, "t", Scratch)
    assert c.buffer.mem() is Scratch


@pytest.mark.parametrize("t", ["f99", 3, None])
def test_set_precision_bad_type(t: object) -> None:
    with pytest.raises(SetPrecisionError):
        set_precision(acc, "t", t)


def test_set_precision_control_parameter() -> None:
    with pytest.raises(SetPrecisionNotDataError):
        set_precision(acc, "n", "f32")


def test_set_precision_windowed_buffer() -> None:
    with pytest.raises(SetPrecisionSharedError):
        set_precision(calls, "t", "f64")


def test_set_window_on_allocation() -> None:
    with pytest.raises(SetWindowNotArgError):
        set_window(acc, "t", True)
    with pytest.raises(SetWindowNotArgError):
        set_window(acc, "n", True)


def test_set_window_bad_flag() -> None:
    with pytest.raises(SetWindowFlagError):
        set_window(acc, "x", 1)
