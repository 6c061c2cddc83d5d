"""Precision: every data operation is done and rounded in the destination's type."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursched import DRAM, InterpreterError, proc
from cursched.frontend import parse_source
from cursched.interp import interpret
from cursched.ir.nodes import ProcDef


@proc
def sum3_f32(x: f32[3] @ DRAM, y: f32[1] @ DRAM):
    y[0] = x[0] + x[1] + x[2]


@proc
def sum3_f64(x: f32[3] @ DRAM, y: f64[1] @ DRAM):
    y[0] = x[0] + x[1] + x[2]


def test_f32_rounds_every_operation_f64_does_not() -> None:
    x = np.array([1e8, 1.0, -1e8], np.float32)
    y32 = np.zeros(1, np.float32)
    y64 = np.zeros(1, np.float64)
    sum3_f32.interpret(x, y32)
    sum3_f64.interpret(x, y64)
    assert y32[0] == 0.0  # 1e8 + 1 rounds back to 1e8 in f32
    assert y64[0] == 1.0  # the f32 inputs are converted to f64 before adding


@proc
def fma_like(x: f32[3] @ DRAM, y: f32[1] @ DRAM):
    y[0] = x[0] * x[1] + x[2]


def test_f32_product_rounds_before_the_sum() -> None:
    a = np.float32(1 + 2**-12)
    x = np.array([a, a, -(1 + 2**-11)], np.float32)
    y = np.zeros(1, np.float32)
    fma_like.interpret(x, y)
    # exact: 2**-24 (lost when the product is rounded to f32 first)
    assert y[0] == np.float32(a * a) + x[2]
    assert y[0] == 0.0


@proc
def add_f16(x: f16[2] @ DRAM, y: f16[1] @ DRAM):
    y[0] = x[0] + x[1]


def test_f16_rounds_to_half() -> None:
    x = np.array([2048, 1], np.float16)
    y = np.zeros(1, np.float16)
    add_f16.interpret(x, y)
    assert y[0] == 2048  # 2049 is not a half


@proc
def add_i8(x: i8[2] @ DRAM, y: i8[3] @ DRAM):
    y[0] = x[0] + x[1]
    y[1] = x[0] * x[1]
    y[2] = -x[0] - x[1]


def test_i8_wraps_without_warnings() -> None:
    x = np.array([100, 100], np.int8)
    y = np.zeros(3, np.int8)
    add_i8.interpret(x, y)  # the suite runs with -W error: an overflow warning would fail
    assert list(y) == [-56, 16, 56]


@proc
def sub_ui8(x: ui8[2] @ DRAM, y: ui8[1] @ DRAM):
    y[0] = x[0] - x[1]


def test_ui8_wraps() -> None:
    y = np.zeros(1, np.uint8)
    sub_ui8.interpret(np.array([0, 1], np.uint8), y)
    assert y[0] == 255


@proc
def dot_i8(n: size, a: i8[n] @ DRAM, b: i8[n] @ DRAM, acc: i32[1] @ DRAM):
    for i in seq(0, n):
        acc[0] += a[i] * b[i]


def test_i8_inputs_into_an_i32_accumulator() -> None:
    a = np.full(10, 100, np.int8)
    b = np.full(10, -120, np.int8)
    acc = np.zeros(1, np.int32)
    dot_i8.interpret(10, a, b, acc)
    assert acc[0] == 10 * 100 * -120  # products in i32: no i8 wrap


@proc
def i32_wrap(x: i32[1] @ DRAM):
    x[0] = x[0] * 65536 + 7


def test_i32_wraps() -> None:
    x = np.array([65536], np.int32)
    i32_wrap.interpret(x)
    assert x[0] == 7


@proc
def int_div(n: size, x: i32[n] @ DRAM, q: i32[n] @ DRAM, r: i32[n] @ DRAM):
    for i in seq(0, n):
        q[i] = x[i] / 2
        r[i] = x[i] % 2


def test_integer_data_division_truncates_like_c() -> None:
    x = np.array([-7, 7, -1, 0, 8], np.int32)
    q = np.zeros(5, np.int32)
    r = np.zeros(5, np.int32)
    int_div.interpret(5, x, q, r)
    assert list(q) == [-3, 3, 0, 0, 4]
    assert list(r) == [-1, 1, -1, 0, 0]


@proc
def div_by(x: i32[2] @ DRAM):
    x[0] = x[0] / x[1]


def test_integer_division_by_zero_raises() -> None:
    with pytest.raises(InterpreterError, match="division by zero"):
        div_by.interpret(np.array([3, 0], np.int32))


@proc
def fdiv(x: f32[2] @ DRAM, y: f32[2] @ DRAM):
    y[0] = x[0] / x[1]
    y[1] = x[1] / x[1]


def test_float_division_by_zero_is_ieee() -> None:
    y = np.zeros(2, np.float32)
    fdiv.interpret(np.array([1, 0], np.float32), y)
    assert y[0] == np.inf
    assert np.isnan(y[1])


@proc
def literal_in_dest_type(x: i8[1] @ DRAM, y: f32[1] @ DRAM):
    x[0] = 1 + x[0]
    y[0] = 0.1 + y[0]


def test_literals_take_the_destination_type() -> None:
    x = np.array([127], np.int8)
    y = np.zeros(1, np.float32)
    literal_in_dest_type.interpret(x, y)
    assert x[0] == -128
    assert y[0] == np.float32(0.1)


@proc
def mixed(x: f64[1] @ DRAM, y: f32[1] @ DRAM):
    y[0] = x[0] * 3.0


def test_reads_are_converted_to_the_destination_type_first() -> None:
    x = np.array([1 / 3], np.float64)
    y = np.zeros(1, np.float32)
    mixed.interpret(x, y)
    assert y[0] == np.float32(1 / 3) * np.float32(3)
    assert y.dtype == np.float32


# ------------------------------------------------------------------- properties (hypothesis)

_BINOP_TEXT = """
def binop(x: {t}[2] @ DRAM, y: {t}[1] @ DRAM):
    y[0] = x[0] {op} x[1]
"""


@functools.cache
def binop_proc(t: str, op: str) -> ProcDef:
    return parse_source(_BINOP_TEXT.format(t=t, op=op), {"DRAM": DRAM})


def c_int_op(a: int, b: int, op: str, dt: np.dtype) -> int:
    """C semantics on Python ints: wrapped + - *, truncating / and %."""
    if op in "/%":
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        r = q if op == "/" else a - q * b
    else:
        r = {"+": a + b, "-": a - b, "*": a * b}[op]
    bits = dt.itemsize * 8
    r &= (1 << bits) - 1
    if dt.kind == "i" and r >= 1 << (bits - 1):
        r -= 1 << bits
    return r


@settings(max_examples=150, deadline=None)
@given(
    t=st.sampled_from(["i8", "ui8", "ui16", "i32"]),
    op=st.sampled_from(["+", "-", "*", "/", "%"]),
    data=st.data(),
)
def test_integer_data_ops_follow_c(t: str, op: str, data: st.DataObject) -> None:
    dt = binop_proc(t, op).args[0].type.elem.np_dtype  # type: ignore[union-attr]
    info = np.iinfo(dt)
    ints = st.integers(int(info.min), int(info.max))
    a = data.draw(ints)
    b = data.draw(ints.filter(lambda v: v != 0) if op in "/%" else ints)
    y = np.zeros(1, dt)
    interpret(binop_proc(t, op), np.array([a, b], dt), y)
    assert int(y[0]) == c_int_op(a, b, op, dt)


@settings(max_examples=150, deadline=None)
@given(
    op=st.sampled_from(["+", "-", "*", "/"]),
    a=st.floats(width=32, allow_nan=False, allow_infinity=False),
    b=st.floats(width=32, allow_nan=False, allow_infinity=False).filter(lambda v: v != 0),
)
def test_f32_ops_are_exactly_rounded(op: str, a: float, b: float) -> None:
    # an f64 result rounded once to f32 is the correctly rounded f32 result for + - * /
    y = np.zeros(1, np.float32)
    interpret(binop_proc("f32", op), np.array([a, b], np.float32), y)
    exact = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
    with np.errstate(over="ignore"):
        assert y[0] == np.float32(exact)
