"""Aliasing (issue 11, findings 1 and 2; docs/semantics.md, "Aliasing").

Finding 1: a call with overlapping windows compiled to a wrong result, silently, because the
callee's pointer parameters were ``restrict``. Now an overlap is proved impossible (the
parameters stay ``restrict``), tolerated by a sequential callee (``restrict`` dropped, result
equal to the interpreter's), or refused with a typed error naming both windows.

Finding 2: the wrapper accepted overlapping views of one array (``w=b[1:9], v=b[0:8]``). Now
any two arrays whose memory overlaps while the proc writes one are refused before C runs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from cursched import DRAM, instr, proc, replace
from cursched.analysis.aliasing import CallAliasError, CodegenAliasError
from cursched.codegen.c import generate_unit
from cursched.codegen.c import runtime as rt
from cursched.errors import AliasError, ArgumentError, TypeCheckError
from cursched.frontend import parse_source
from cursched.primitives.calls.replace import ReplaceAliasError
from cursched.testing import assert_equivalent


@proc
def acc(n: size, dst: [f32][n] @ DRAM, src: [f32][n] @ DRAM):
    for q in seq(0, n):
        dst[q] += src[q]


@proc
def prefix(n: size, t: f32[n + 1] @ DRAM):
    acc(n, t[1 : n + 1], t[0:n])


@proc
def halves(t: f32[8] @ DRAM):
    for i in seq(0, 2):
        acc(2, t[4 * i : 4 * i + 2], t[4 * i + 2 : 4 * i + 4])


@proc
def acc_twice(n: size, dst: [f32][n] @ DRAM, src: [f32][n] @ DRAM):
    acc(n, dst, src)
    acc(n, dst, src)


@proc
def prefix_twice(n: size, t: f32[n + 1] @ DRAM):
    acc_twice(n, t[1 : n + 1], t[0:n])


@instr("for (int cs_k = 0; cs_k < 4; cs_k++) {dst_data}[cs_k] += {src_data}[cs_k];")
def vadd4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    for q in seq(0, 4):
        dst[q] += src[q]


def _params(c_source: str, name: str) -> str:
    m = re.search(rf"^void {name}\((.*)\) \{{$", c_source, re.M)
    assert m is not None, c_source
    return m.group(1)


def test_overlapping_call_matches_interpreter() -> None:
    t = np.arange(5, dtype=np.float32)
    want = t.copy()
    prefix.interpret(4, want)
    assert want.tolist() == [0, 1, 3, 6, 10]
    f = prefix.compile()
    got = t.copy()
    f(4, got)
    assert got.tolist() == [0, 1, 3, 6, 10]  # was [0, 1, 3, 5, 7]
    # the overlap is tolerated because acc is sequential: its pointers lose restrict
    assert "restrict" not in _params(f.c_source, "acc")
    assert "float *restrict t" in _params(f.c_source, "prefix")


def test_overlap_propagates_to_what_the_callee_calls() -> None:
    f = prefix_twice.compile()
    t = np.arange(6, dtype=np.float32)
    want, got = t.copy(), t.copy()
    prefix_twice.interpret(5, want)
    f(5, got)
    assert got.tolist() == want.tolist()
    # acc_twice's dst and src may alias, so they may alias inside acc too
    assert "restrict" not in _params(f.c_source, "acc_twice")
    assert "restrict" not in _params(f.c_source, "acc")


def test_disjoint_windows_of_one_buffer_keep_restrict() -> None:
    c = generate_unit("halves", [halves.ir()]).c_source
    assert "float *restrict dst" in _params(c, "acc")
    assert "float *restrict src" in _params(c, "acc")
    t = np.arange(8, dtype=np.float32)
    want, got = t.copy(), t.copy()
    halves.interpret(want)
    halves.compile()(got)
    assert got.tolist() == want.tolist()


def test_different_buffers_keep_restrict() -> None:
    c = generate_unit("acc_twice", [acc_twice.ir()]).c_source
    assert _params(c, "acc").count("restrict") == 2


def test_instruction_on_overlapping_windows_is_refused_at_definition() -> None:
    with pytest.raises(CallAliasError) as info:

        @proc
        def shifted(t: f32[8] @ DRAM):
            vadd4(t[1:5], t[0:4])

    err = info.value
    assert isinstance(err, AliasError) and isinstance(err, TypeCheckError)
    assert "dst = t[1:5]" in str(err) and "src = t[0:4]" in str(err)
    assert "vadd4 is an instruction" in str(err)
    assert err.srcinfo is not None and err.srcinfo.line > 0


def test_instruction_on_disjoint_windows_is_accepted() -> None:
    @proc
    def apart(t: f32[8] @ DRAM):
        vadd4(t[4:8], t[0:4])

    t = np.arange(8, dtype=np.float32)
    want, got = t.copy(), t.copy()
    apart.interpret(want)
    apart.compile()(got)
    assert got.tolist() == want.tolist()


@instr("for (int cs_k = 0; cs_k < 4; cs_k++) {out_data}[cs_k] = {x_data}[cs_k] + {y_data}[cs_k];")
def add4(out: [f32][4] @ DRAM, x: [f32][4] @ DRAM, y: [f32][4] @ DRAM):
    for q in seq(0, 4):
        out[q] = x[q] + y[q]


@instr("for (int cs_k = 0; cs_k < 4; cs_k++) {dst_data}[cs_k] = {src_data}[3 - cs_k];")
def reverse4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    for q in seq(0, 4):
        dst[q] = src[3 - q]


def test_same_window_into_a_pointwise_instruction_is_accepted() -> None:
    @proc
    def in_place(t: f32[8] @ DRAM):
        for i in seq(0, 2):
            add4(t[4 * i : 4 * i + 4], t[4 * i : 4 * i + 4], t[4 - 4 * i : 8 - 4 * i])

    t = np.arange(8, dtype=np.float32)
    want, got = t.copy(), t.copy()
    in_place.interpret(want)
    in_place.compile()(got)
    assert got.tolist() == want.tolist()


def test_same_window_into_a_non_pointwise_instruction_is_refused() -> None:
    # dst[q] = src[3 - q] on one window: element 0 is read after element 3 was written
    with pytest.raises(CallAliasError, match="dst = t\\[0:4\\] and src = t\\[0:4\\]"):

        @proc
        def reversed_in_place(t: f32[4] @ DRAM):
            reverse4(t[0:4], t[0:4])


def test_overlap_decided_under_the_loop_ranges() -> None:
    # t[4i:4i+4] and t[4i+4:4i+8] never meet for one i, whatever i is
    @proc
    def strided(n: size, t: f32[4 * n + 4] @ DRAM):
        for i in seq(0, n):
            vadd4(t[4 * i : 4 * i + 4], t[4 * i + 4 : 4 * i + 8])

    # ... but t[i:i+4] and t[i+2:i+6] do: the counterexample names i
    with pytest.raises(CallAliasError, match=r"may overlap"):

        @proc
        def sliding(n: size, t: f32[n + 6] @ DRAM):
            for i in seq(0, n):
                vadd4(t[i : i + 4], t[i + 2 : i + 6])

    assert strided.compile() is not None


def test_par_callee_on_overlapping_windows_is_refused() -> None:
    @proc
    def par_acc(n: size, dst: [f32][n] @ DRAM, src: [f32][n] @ DRAM):
        for q in par(0, n):
            dst[q] += src[q]

    with pytest.raises(CallAliasError, match="par_acc has a par loop"):

        @proc
        def par_prefix(n: size, t: f32[n + 1] @ DRAM):
            par_acc(n, t[1 : n + 1], t[0:n])


def test_overlap_made_without_the_frontend_is_refused_when_compiling() -> None:
    # parse_source skips the definition-time check (as IR built by a primitive could)
    text = "def shifted(t: f32[8] @ DRAM):\n    vadd4(t[1:5], t[0:4])\n"
    ir = parse_source(text, {"vadd4": vadd4, "DRAM": DRAM})
    with pytest.raises(CodegenAliasError, match=r"dst = t\[1:5\] and src = t\[0:4\]"):
        generate_unit("shifted", [ir])


@proc
def running_sum(t: f32[5] @ DRAM):
    for q in seq(0, 4):
        t[q + 1] += t[q]


def test_replace_refuses_overlapping_windows_into_an_instruction() -> None:
    with pytest.raises(ReplaceAliasError) as info:
        replace(running_sum, "for q in _: _", vadd4)
    assert isinstance(info.value, AliasError)
    assert "t[1:5]" in str(info.value) and "t[0:4]" in str(info.value)


def test_replace_accepts_one_window_into_a_pointwise_instruction() -> None:
    @proc
    def double(t: f32[4] @ DRAM, u: f32[4] @ DRAM):
        for q in seq(0, 4):
            t[q] = t[q] + u[q]

    p, _ = replace(double, "for q in _: _", add4)
    assert_equivalent(double, p)


def test_replace_accepts_overlapping_windows_into_a_sequential_proc() -> None:
    @proc
    def acc4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
        for q in seq(0, 4):
            dst[q] += src[q]

    p, cur = replace(running_sum, "for q in _: _", acc4)
    assert cur.call.is_valid()
    assert_equivalent(running_sum, p)
    t = np.arange(5, dtype=np.float32)
    want, got = t.copy(), t.copy()
    running_sum.interpret(want)
    p.compile()(got)
    assert got.tolist() == want.tolist() == [0, 1, 3, 6, 10]


# -- finding 2: overlapping arrays passed to a compiled proc ---------------------------------


@proc
def shift(n: size, w: [f32][n] @ DRAM, v: [f32][n] @ DRAM):
    for i in seq(0, n):
        w[i] += v[i]


@proc
def add3(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM, c: f32[n] @ DRAM):
    for i in seq(0, n):
        c[i] = a[i] + b[i]


@pytest.fixture(params=[True, False], ids=["shim", "ctypes-data"])
def layout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both wrapper paths: the entry shim (the usual one) and plain data pointers."""
    if not request.param:
        monkeypatch.setattr(rt, "np_data_offset_ok", lambda: False)
    return bool(request.param)


def test_overlapping_views_are_refused(layout: bool) -> None:
    f = shift.compile()
    b = np.arange(9, dtype=np.float32)
    with pytest.raises(ArgumentError, match="'w' and 'v' share memory"):
        f(8, b[1:9], b[0:8])
    assert b.tolist() == list(range(9))  # nothing ran


def test_self_overlapping_written_window_is_refused(layout: bool) -> None:
    f = shift.compile()
    b = np.arange(8, dtype=np.float32)
    broadcast = np.lib.stride_tricks.as_strided(b, (4,), (0,))
    with pytest.raises(ArgumentError, match=r"argument 'w'.*reach the same element"):
        f(4, broadcast, b[4:8])
    # read only, the same view is fine
    out = np.zeros(4, np.float32)
    f(4, out, broadcast)
    assert out.tolist() == [0.0] * 4


def test_interleaved_and_read_only_overlaps_are_accepted(layout: bool) -> None:
    f = shift.compile()
    b = np.arange(16, dtype=np.float32)
    want = b.copy()
    shift.interpret(8, want[0::2], want[1::2])
    f(8, b[0::2], b[1::2])  # spans meet, memory does not: decided exactly
    assert b.tolist() == want.tolist()
    g = add3.compile()
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    g(4, x, x, out)  # two reads of one array
    assert out.tolist() == [0, 2, 4, 6]
    with pytest.raises(ArgumentError, match="'a' and 'c' are the same array"):
        g(4, out, x, out)


@proc
def add3w(n: size, a: [f32][n] @ DRAM, b: [f32][n] @ DRAM, c: [f32][n] @ DRAM):
    for i in seq(0, n):
        c[i] = a[i] + b[i]


def test_refusal_checks_every_pair(layout: bool) -> None:
    # (a, c) is flagged first by the spans but shares no memory; (b, c) does share
    g = add3w.compile()
    buf = np.arange(8, dtype=np.float32)
    with pytest.raises(ArgumentError, match="'b' and 'c' share memory"):
        g(4, buf[0::2], buf[1::2], buf[1::2])
    out = np.arange(8, dtype=np.float32)
    want = out.copy()
    add3w.interpret(4, want[0::2], want[0::2].copy(), want[1::2])
    g(4, out[0::2], out[0::2].copy(), out[1::2])
    assert out.tolist() == want.tolist()
