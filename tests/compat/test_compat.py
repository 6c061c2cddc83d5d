"""cursched.compat.exo (issue 15, items 3-5): Exo-spelled schedule files run through the
compatibility layer, compiled and checked against numpy, and, where exo-lang is installed,
run under Exo too with the outputs compared; the layer's Procedure methods, template
translation and primitive wrappers; and the coverage of Exo 1.0's scheduling API."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import cursched.compat.exo as cx
from cursched import Proc
from cursched.codegen.cpu import cpu_features
from cursched.cursors import ForCursor, Tombstone

from . import exo_runner as R

_AVX2 = {"avx", "avx2", "fma"} <= set(cpu_features())
SCHEDULES = [
    "blur",
    "gemmini_config",
    pytest.param(
        "avx2_microkernel",
        marks=pytest.mark.skipif(not _AVX2, reason="the CPU has no AVX2 + FMA"),
    ),
]


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_numpy(name: str, golden) -> None:  # type: ignore[no-untyped-def]
    m = R.load(name, "cursched")
    p = m.SCHEDULED
    assert isinstance(p, cx.Procedure)
    golden.check(p.proc)
    args = m.inputs(np.random.default_rng(0))
    want = m.reference(args)  # before the call: an output may be an input too (C += ...)
    p.compile()(*args)
    np.testing.assert_allclose(args[m.OUTPUT], want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not R.exo_available(), reason="exo-lang is not installed (bench extra)")
@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_agrees_with_exo(name: str, tmp_path: Path) -> None:
    ours, theirs = R.load(name, "cursched"), R.load(name, "exo")
    assert type(theirs.SCHEDULED).__module__.startswith("exo")
    a = ours.inputs(np.random.default_rng(1))
    b = theirs.inputs(np.random.default_rng(1))
    ours.SCHEDULED.compile()(*a)
    R.run_exo_c(theirs.SCHEDULED, b, tmp_path)
    np.testing.assert_array_equal(a[ours.OUTPUT], b[theirs.OUTPUT])


# ------------------------------------------------------------------------------ Procedure


@cx.proc
def saxpy(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] += a * x[i]


def test_procedure_methods(tmp_path: Path) -> None:
    p = saxpy
    assert p.name() == "saxpy" and not p.is_instr() and p.get_instr() is None
    loop = p.find_loop("i")
    assert isinstance(loop, ForCursor) and p.find("for i in _: _") == loop
    assert len(p.args()) == 4 and p.find_alloc_or_arg("x").name() == "x"
    assert len(p.find_all("y[_] += _")) == 1 and len(p.body()) == 1
    q = cx.divide_loop(p, loop, 4, ["io", "ii"], tail="cut")
    assert isinstance(q, cx.Procedure) and isinstance(q.proc, Proc)
    assert q.forward(loop) == q.find_loop("io")
    assert "void saxpy(" in q.c_code_str()
    q.compile_c(tmp_path, "saxpy_k")
    assert (tmp_path / "saxpy_k.c").read_text().count("void saxpy(") == 1
    assert "divide" not in q.history() and "split(" in q.history()


def test_partial_eval() -> None:
    p = saxpy.partial_eval(8)
    assert "def saxpy(a: f32 @ DRAM, x: f32[8] @ DRAM, y: f32[8] @ DRAM):" in str(p)
    assert "for i in seq(0, 8):" in str(p)
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, dtype=np.float32)
    p.interpret(np.array(2.0, dtype=np.float32), x, y)
    assert y.tolist() == (1 + 2 * x).tolist()
    with pytest.raises(cx.SchedulingError):
        saxpy.partial_eval(n=2.5)
    with pytest.raises(cx.SchedulingError):
        saxpy.partial_eval(m=3)


def test_extract_subproc_returns_both() -> None:
    p, sub = cx.extract_subproc(saxpy, saxpy.find_loop("i"), "inner")
    assert isinstance(sub, cx.Procedure) and sub.name() == "inner"
    assert "inner(" in str(p)


def test_unsafe_flags_are_accepted_and_checks_still_run() -> None:
    @cx.proc
    def two(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            x[i] = 1.0
            y[i] = x[i] + 1.0

    p = cx.fission(two, two.find("x[_] = _").after(), unsafe_disable_checks=True)
    assert str(p).count("for i in seq(0, n):") == 2
    with pytest.raises(cx.SchedulingError):
        cx.remove_loop(two, "i", unsafe_disable_check=False)


def test_stdlib_helpers() -> None:
    @cx.proc
    def nest(n: size, x: f32[n, 8] @ DRAM):
        for i in seq(0, n):
            for j in seq(0, 8):
                if n > 2:
                    x[i, j] = 0.0

    p = cx.lift_if(nest, nest.find("if _: _"), n_lifts=2)
    assert str(p).splitlines()[1].strip() == "if n > 2:"
    q = cx.repeat(cx.reorder_loops)(nest, "i j")  # until it fails (swapping back is legal)
    assert isinstance(q, cx.Procedure)
    r = cx.sched_seq(nest, [(cx.divide_loop, "j", 4, ["jo", "ji"]), cx.simplify])
    assert "for ji in seq(0, 4):" in str(r)
    # until it fails: the second split would reuse the name jj, which is refused
    s = cx.repeat(cx.divide_loop)(nest, "j", 2, ["j", "jj"], perfect=True)
    assert "for jj in seq(0, 2):" in str(s) and str(s).count("seq(0, 2)") == 1
    # a fixed count does not swallow the failure (as in Exo)
    with pytest.raises(cx.SchedulingError):
        cx.repeat(cx.divide_loop, n_times=2)(nest, "j", 2, ["j", "jj"], perfect=True)


def test_autofission_removes_loops_it_emptied() -> None:
    @cx.proc
    def hoist(n: size, s: f32 @ DRAM, x: f32[n] @ DRAM, t: f32[1] @ DRAM):
        for i in seq(0, n):
            t[0] = s
            x[i] = x[i] * 2.0

    p = cx.autofission(hoist, hoist.find("t[_] = _").after())
    assert str(p).splitlines()[1].strip() == "t[0] = s"
    assert_equivalent = importlib.import_module("cursched.testing").assert_equivalent
    assert_equivalent(hoist.proc, p.proc, trials=3)


def test_autolift_alloc_adds_a_dimension() -> None:
    @cx.proc
    def local(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            t: f32
            t = x[i] * 2.0
            y[i] = t

    p = cx.autolift_alloc(local, "t : _")
    assert str(p).splitlines()[1].strip() in ("t: f32[n] @ DRAM", "t: f32 @ DRAM")
    from cursched.testing import assert_equivalent

    assert_equivalent(local.proc, p.proc, trials=3)


# ---------------------------------------------------------------------------- templates


def test_translate_template() -> None:
    @cx.instr("{dst_data} = _mm_load({src_data}); foo(&{win_data}, {n}, {s_data}, {s});")
    def ins(n: size, dst: f32[8] @ DRAM, src: f32[8] @ DRAM, win: [f32][8] @ DRAM, s: f32):
        for k in seq(0, 8):
            dst[k] = src[k] + win[k] * s

    assert ins.is_instr()
    assert ins.get_instr() == "{dst} = _mm_load({src}); foo({win}, {n}, {s_data}, {s_data});"


def test_exo_instr_compiles_with_exo_template() -> None:
    @cx.instr("for (int k = 0; k < 4; k++) (&{dst_data})[k] = 2.0f * (&{src_data})[k];")
    def dbl4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
        for k in seq(0, 4):
            dst[k] = 2.0 * src[k]

    @cx.proc
    def twice(n: size, x: f32[4 * n] @ DRAM, y: f32[4 * n] @ DRAM):
        for i in seq(0, 4 * n):
            y[i] = 2.0 * x[i]

    p = cx.divide_loop(twice, "i", 4, ["io", "ii"], perfect=True)
    p = cx.replace(p, p.find_loop("ii"), dbl4)
    assert "((y + 4 * io))[k]" in p.c_code_str()
    x = np.arange(12, dtype=np.float32)
    y = np.zeros(12, dtype=np.float32)
    p.compile()(3, x, y)
    assert y.tolist() == (2 * x).tolist()
    q = cx.make_instr(twice, "for (int k = 0; k < {n}; k++) {y_data}[k] = 2 * {x_data}[k];")
    assert q.get_instr() == "for (int k = 0; k < {n}; k++) {y}[k] = 2 * {x}[k];"


# ----------------------------------------------------------------------------- coverage


def _exo_scheduling_ops() -> list[str]:
    api = importlib.import_module("exo.API_scheduling")
    return sorted(n for n in dir(api) if api.is_atomic_scheduling_op(getattr(api, n)))


_STDLIB_HELPERS = [
    "repeat",
    "sched_seq",
    "loop_hack",
    "call_site_mem_aware_replace",
    "replace_all",
    "replace_once",
    "lift_if",
]


@pytest.mark.skipif(not R.exo_available(), reason="exo-lang is not installed (bench extra)")
def test_every_exo_scheduling_op_has_a_compat_spelling() -> None:
    ops = _exo_scheduling_ops()
    assert len(ops) > 50
    missing = [n for n in ops + _STDLIB_HELPERS if not callable(getattr(cx, n, None))]
    assert not missing, missing
    guide = (Path(__file__).parents[2] / "docs" / "porting_from_exo.md").read_text()
    undocumented = [n for n in ops + _STDLIB_HELPERS if f"`{n}`" not in guide]
    assert not undocumented, undocumented


def test_replace_once_and_call_site_replace() -> None:
    @cx.instr("{dst_data} = 2.0f * {src_data};")
    def dbl1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
        dst[0] = 2.0 * src[0]

    @cx.proc
    def two(x: f32[2] @ DRAM, y: f32[2] @ DRAM):
        y[0] = 2.0 * x[0]
        y[1] = 2.0 * x[1]

    p = cx.replace_once(two, [dbl1])
    assert str(p).count("dbl1(") == 1 and "y[1] = 2.0 * x[1]" in str(p)
    q = cx.call_site_mem_aware_replace(p, p.find("y[_] = _"), dbl1)
    assert str(q).count("dbl1(") == 2
    x = np.array([1.0, 3.0], dtype=np.float32)
    y = np.zeros(2, dtype=np.float32)
    q.compile()(x, y)
    assert y.tolist() == [2.0, 6.0]
    assert cx.replace_once(two, []).proc is two.proc


def test_loop_hack_applies_at_every_match() -> None:
    @cx.proc
    def loops(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            x[i] = 0.0
        for i in seq(0, n):
            y[i] = 0.0

    p = cx.loop_hack(cx.parallelize_loop, lambda q: q.find_loop("i", many=True))(loops)
    assert str(p).count("par(0, n)") == 2


def test_tombstones_pass_through() -> None:
    p = cx.divide_loop(saxpy, "i", 4, ["io", "ii"])
    stmt = saxpy.find("y[_] += _")
    q = cx.unroll_loop(p, "ii")
    assert isinstance(q.forward(stmt), Tombstone)
