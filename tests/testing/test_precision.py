"""``widened_to_f64`` and the soundness fuzzer's f64 recheck of reassociating steps (issue 11:
the campaign's schedule 54789, a tree_scan whose regrouped f32 sums were 15% off)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, proc
from cursched.interp import interpret
from cursched.ir.nodes import Alloc, Call, ProcDef
from cursched.ir.traversal import walk_exprs, walk_stmts
from cursched.ir.types import F64, I32, TensorType
from cursched.testing import assert_equivalent
from cursched.testing.precision import widened_to_f64
from tests.primitives.test_soundness_fuzz import check_equivalent


@proc
def helper(x: f32[4] @ DRAM):
    for i in seq(0, 4):
        x[i] = x[i] * 0.5


@proc
def mixed(n: size, x: f32[n + 4] @ DRAM, h: f16[4] @ DRAM, k: i32[4] @ DRAM):
    t: f32[4] @ DRAM
    for i in seq(0, 4):
        t[i] = x[i] + 1.0
        k[i] = k[i] + 1
    helper(t)
    w = t[0:2]
    h[0] = w[1]


# (x + 1e8) - 1e8 loses x to f32 rounding (spacing 8 at 1e8); x + (1e8 - 1e8) is x: a
# reassociation's f32 results differ by up to 4, its f64 results by ~1e-8
@proc
def grouped_left(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    for i in seq(0, 8):
        y[i] = (x[i] + 100000000.0) - 100000000.0


@proc
def grouped_right(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    for i in seq(0, 8):
        y[i] = x[i] + (100000000.0 - 100000000.0)


@proc
def off_by_one(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    for i in seq(0, 8):
        y[i] = x[i] + (100000001.0 - 100000000.0)


@proc
def staged_f32(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    for i in seq(0, 8):
        t: f32 @ DRAM
        t = x[i] + 100000000.0
        t = t - 100000000.0
        y[i] = t


@proc
def staged_f64(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    for i in seq(0, 8):
        t: f64 @ DRAM
        t = x[i] + 100000000.0
        t = t - 100000000.0
        y[i] = t


def _data_types(p: ProcDef) -> set[str]:
    names = set()
    for a in p.args:
        if isinstance(a.type, TensorType):
            names.add(a.type.elem.name)
    for s in walk_stmts(p.body):
        if isinstance(s, Alloc) and isinstance(s.type, TensorType):
            names.add(s.type.elem.name)
    for e in walk_exprs(p.body):
        t = getattr(e, "type", None)
        elem = t.elem if isinstance(t, TensorType) else t
        if elem is not None and hasattr(elem, "numpy"):
            names.add(elem.name)
    return names


def test_every_float_type_is_widened_and_integers_are_not() -> None:
    assert {"f32", "f16", "i32"} <= _data_types(mixed.ir())
    wide = widened_to_f64(mixed)
    assert _data_types(wide) == {"f64", "i32"}
    [k] = [a for a in wide.args if a.sym.name == "k"]
    assert isinstance(k.type, TensorType) and k.type.elem == I32
    calls = [s for s in walk_stmts(wide.body) if isinstance(s, Call)]
    assert calls and all(a.type.elem == F64 for a in calls[0].proc.args)  # the callee too


def test_the_input_is_unchanged_and_an_all_f64_proc_is_returned_as_it_is() -> None:
    before = str(mixed)
    widened_to_f64(mixed)
    assert str(mixed) == before
    wide = widened_to_f64(mixed)
    assert widened_to_f64(wide) is wide


def test_the_widened_proc_computes_in_f64() -> None:
    x = np.arange(8, dtype=np.float64) + 0.25
    y = np.zeros(8)
    interpret(widened_to_f64(grouped_left), x=x, y=y)
    np.testing.assert_allclose(y, x, rtol=0, atol=1e-7)  # f32 would round to multiples of 8
    x32, y32 = x.astype(np.float32), np.zeros(8, np.float32)
    interpret(grouped_left, x=x32, y=y32)
    assert np.abs(y32 - x32).max() > 0.2


def test_a_reassociation_that_only_rounds_differently_passes_after_a_reassociating_step() -> None:
    with pytest.raises(AssertionError, match="differ on"):
        assert_equivalent(grouped_left, grouped_right, trials=2)
    check_equivalent(grouped_left, grouped_right, ["left_reassociate_expr(p, ...)"])
    log = ["tree_scan(p, ...)  # accepted", "simplify(p)"]
    check_equivalent(grouped_left, grouped_right, log)


def test_without_a_reassociating_step_the_f32_difference_is_a_finding() -> None:
    with pytest.raises(AssertionError, match="differ on") as info:
        check_equivalent(grouped_left, grouped_right, ["simplify(p)", "rename(p, 'q')"])
    assert "in f64" not in str(info.value)
    # refused calls do not count: the reassociating call below was not accepted
    log = ["tree_scan(p, ...)  # refused: ScanError", "simplify(p)"]
    with pytest.raises(AssertionError, match="differ on"):
        check_equivalent(grouped_left, grouped_right, log)


def test_a_wrong_rewrite_still_fails_in_f64() -> None:
    with pytest.raises(AssertionError, match=r"and in f64: .*differ on"):
        check_equivalent(grouped_left, off_by_one, ["left_reassociate_expr(p, ...)"])


def test_another_precision_for_one_buffer_is_rechecked_in_f64_after_set_precision() -> None:
    with pytest.raises(AssertionError, match="differ on"):
        check_equivalent(staged_f32, staged_f64, ["simplify(p)"])
    check_equivalent(staged_f32, staged_f64, ["set_precision(p, t, 'f64')"])
