"""replace: golden output, one negative test per precondition (Exo issue 758 among them),
forwarding, differential equivalence (interpreter, and the C backend for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, Memory, fission, instr, proc, replace, split
from cursched.analysis.checks import SafetyError
from cursched.cursors import CallCursor, Tombstone
from cursched.errors import StaleCursorError
from cursched.ir.printer import print_expr
from cursched.primitives.calls.replace import (
    ReplaceAssertError,
    ReplaceMemoryError,
    ReplaceMismatchError,
    ReplaceNotProcError,
    ReplaceUnboundError,
)
from cursched.testing import assert_equivalent


class SCRATCH(Memory):
    """A host memory of the tests (plain malloc), distinct from DRAM."""


@instr("for (int t_ = 0; t_ < 4; t_++) {dst_data}[t_] = {src_data}[t_];")
def copy4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 4):
        dst[i] = src[i]


@instr("for (int t_ = 0; t_ < {n}; t_++) {dst_data}[t_] += {a} * {x_data}[t_];")
def axpy(n: size, dst: [f32][n] @ DRAM, a: f32 @ DRAM, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        dst[i] += a * x[i]


@instr("zero2x2({t_data}, {t_stride_0});")
def zero2x2(t: [f32][2, 2] @ DRAM):  # noqa: RUF016
    for i in seq(0, 2):
        for j in seq(0, 2):
            t[i, j] = 0.0


@proc
def rows(n: size, A: f32[n, 16] @ DRAM, B: f32[n, 16] @ DRAM, s: f32[n] @ DRAM):
    for i in seq(0, n):
        for jo in seq(0, 4):
            for ji in seq(0, 4):
                B[i, 4 * jo + ji] = A[i, 4 * jo + ji]
        for j in seq(0, 16):
            B[i, j] += s[i] * A[i, j]


@proc
def tiles(n: size, T: f32[n, 8] @ DRAM):
    assert n % 2 == 0
    for io in seq(0, n / 2):
        for jo in seq(0, 4):
            for ii in seq(0, 2):
                for ji in seq(0, 2):
                    T[2 * io + ii, 2 * jo + ji] = 0.0


@proc
def column(A: f32[16, 16] @ DRAM, B: f32[16, 16] @ DRAM):
    for j in seq(0, 16):
        for io in seq(0, 4):
            for ii in seq(0, 4):
                B[4 * io + ii, j] = A[4 * io + ii, j]


# ---------------------------------------------------------------------------------- golden


def test_replace_rows_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop = rows.find_loop("ji")
    stmt = rows.find("B[_] = A[_]")
    p, c = replace(rows, loop, copy4)
    p, d = replace(p, "for j in _: _", axpy)
    golden.check(p)
    assert isinstance(c.call, CallCursor) and isinstance(d.call, CallCursor)
    assert c.call.name() == "copy4" and d.call.name() == "axpy"
    assert p.forward(c.call) == p.at("body[0].body[0].body[0]")
    for dead in (loop, stmt):
        t = p.forward(dead)
        assert isinstance(t, Tombstone) and not t
        assert "use .call" in t.story()
        with pytest.raises(StaleCursorError, match="replace"):
            replace(p, dead, copy4)
    assert p.forward(rows.find_loop("jo")) == p.forward(c.call.parent())
    assert_equivalent(rows, p, trials=4)


def test_replace_rows_compiles() -> None:
    p, _ = replace(rows, "for ji in _: _", copy4)
    p, _ = replace(p, "for j in _: _", axpy)
    rng = np.random.default_rng(3)
    n = 3
    a = rng.standard_normal((n, 16)).astype(np.float32)
    s = rng.standard_normal(n).astype(np.float32)
    b1, b2 = np.zeros((n, 16), np.float32), np.zeros((n, 16), np.float32)
    p.compile()(n, a, b1, s)
    rows.interpret(n, a, b2, s)
    np.testing.assert_allclose(b1, b2, rtol=1e-6)


def test_replace_two_dimensional_window(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = replace(tiles, "for ii in _: _", zero2x2)
    assert c.call.name() == "zero2x2"
    golden.check(p)
    assert "zero2x2(T[2 * io:2 * io + 2, 2 * jo:2 * jo + 2])" in str(p)
    assert_equivalent(tiles, p, trials=3)


def test_replace_scalar_and_size_bound() -> None:
    _, c = replace(rows, "for j in _: _", axpy)
    args = [print_expr(a.node()) for a in c.call.args()]
    assert args[0] == "16" and args[2] == "s[i]"


# ------------------------------------------------------------------------- preconditions


def test_not_a_proc() -> None:
    with pytest.raises(ReplaceNotProcError):
        replace(rows, "for ji in _: _", "copy4")


def test_mismatch_operator() -> None:
    @proc
    def sub(A: f32[16] @ DRAM, B: f32[16] @ DRAM, a: f32 @ DRAM):
        for i in seq(0, 16):
            B[i] += a - A[i]

    with pytest.raises(ReplaceMismatchError, match="does not match"):
        replace(sub, "for i in _: _", axpy)


def test_mismatch_element() -> None:
    @proc
    def skew(A: f32[16] @ DRAM, B: f32[16] @ DRAM):
        for i in seq(0, 4):
            B[i] = A[2 * i]

    with pytest.raises(ReplaceMismatchError):
        replace(skew, "for i in _: _", copy4)


def test_mismatch_two_buffers_for_one_parameter() -> None:
    @instr("sq({x_data});")
    def square(x: [f32][4] @ DRAM):
        for i in seq(0, 4):
            x[i] = x[i] * x[i]

    @proc
    def two(A: f32[4] @ DRAM, B: f32[4] @ DRAM):
        for i in seq(0, 4):
            A[i] = B[i] * B[i]

    with pytest.raises(ReplaceMismatchError, match="stands for"):
        replace(two, "for i in _: _", square)


def test_memory() -> None:
    @instr("copy_scratch({dst_data}, {src_data});")
    def copy_scratch(dst: [f32][4] @ SCRATCH, src: [f32][4] @ DRAM):
        for i in seq(0, 4):
            dst[i] = src[i]

    with pytest.raises(ReplaceMemoryError, match="SCRATCH"):
        replace(rows, "for ji in _: _", copy_scratch)


def test_unbound_parameter() -> None:
    @instr("cp({dst_data}, {src_data}, {k});")
    def cp_k(k: index, dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
        for i in seq(0, 4):
            dst[i] = src[i]

    with pytest.raises(ReplaceUnboundError, match="k"):
        replace(rows, "for ji in _: _", cp_k)


def test_assert_stride_of_a_column_read() -> None:
    """An aligned row load matched to a strided column read: the unit-stride asserts of the
    instruction fail there, with a counterexample."""
    with pytest.raises(ReplaceAssertError, match="stride") as info:
        replace(column, "for ii in _: _", copy4)
    assert isinstance(info.value.internal_cause, SafetyError)
    assert "counterexample" in str(info.value)
    # The explicit opt-out skips the call-site proof only (never the match).
    _, c = replace(column, "for ii in _: _", copy4, unsafe_skip_checks=True)
    assert c.call.name() == "copy4"
    with pytest.raises(ReplaceMismatchError):
        replace(column, "for j in _: _", copy4, unsafe_skip_checks=True)


def test_exo_issue_758_instruction_assert_is_proven() -> None:
    """Exo issue 758: ``dummy_load`` asserts ``N == 8`` but Exo 1.0 matched it to a loop of
    2 and compiled it. Here the assert is proven at the call, so the match is rejected."""

    @instr("dummy_load_whatever({dst}, {s});")
    def dummy_load(N: size, dst: [R][N] @ DRAM, s: R @ DRAM):
        assert N == 8
        for i in seq(0, N):
            dst[i] = s

    @proc
    def foo(x: R[256] @ DRAM, y: R[256] @ DRAM, a: R @ DRAM):
        for i in seq(0, 256):
            x[i] = a
            y[i] = a

    p, sp = split(foo, "i", 2, ("io", "ii"), tail="perfect")
    p, fi = fission(p, sp.inner.body()[0].after())
    with pytest.raises(ReplaceAssertError, match="N == 8") as info:
        replace(p, fi.first, dummy_load)
    assert "dummy_load(2, x[2 * io:2 * io + 2], a)" in str(info.value.internal_cause)
    assert "with N = 2" in str(info.value)
    with pytest.raises(ReplaceAssertError, match="N == 8"):
        replace(p, fi.second, dummy_load)
    # The same instruction fits a loop of 8.
    q, sq = split(foo, "i", 8, ("io", "ii"), tail="perfect")
    q, fq = fission(q, sq.inner.body()[0].after())
    q, _ = replace(q, fq.first, dummy_load)
    assert "dummy_load(8, x[8 * io:8 * io + 8], a)" in str(q)
    assert_equivalent(foo, q, trials=2)


def test_replace_offset_window() -> None:
    """Constant offsets go into the window's bounds."""

    @proc
    def short(A: f32[6] @ DRAM, B: f32[6] @ DRAM):
        for i in seq(0, 4):
            B[i + 2] = A[i + 2]

    p, _ = replace(short, "for i in _: _", copy4)
    assert "copy4(B[2:6], A[2:6])" in str(p)
    assert_equivalent(short, p, trials=2)


@instr("clear4({dst_data});")
def clear4(dst: f32[4] @ DRAM):
    for i in seq(0, 4):
        dst[i] = 0.0


@instr("half_clear({dst_data});")
def half_clear(dst: [f32][4] @ DRAM):
    for i in seq(0, 4):
        if i < 2:
            dst[i] = 0.0


def test_contiguous_parameter_takes_a_whole_buffer() -> None:
    @proc
    def fill(n: size, x: f32[n, 4] @ DRAM):
        for i in seq(0, n):
            t: f32[4] @ DRAM
            for j in seq(0, 4):
                t[j] = 0.0
            for j in seq(0, 4):
                x[i, j] = 0.0
            x[i, 0] += t[0]

    p, c = replace(fill, "for j in _: _", clear4)
    assert "clear4(t)" in str(p) and c.call.name() == "clear4"
    assert_equivalent(fill, p, trials=2)
    with pytest.raises(ReplaceMismatchError, match="contiguous"):
        replace(fill, "for j in _: _ #1", clear4)


def test_instruction_with_a_condition() -> None:
    @proc
    def halves(n: size, x: f32[n, 4] @ DRAM):
        for i in seq(0, n):
            for j in seq(0, 4):
                if j < 2:
                    x[i, j] = 0.0

    @proc
    def other_half(n: size, x: f32[n, 4] @ DRAM):
        for i in seq(0, n):
            for j in seq(0, 4):
                if j < 3:
                    x[i, j] = 0.0

    p, _ = replace(halves, "for j in _: _", half_clear)
    assert "half_clear(x[i, 0:4])" in str(p)
    assert_equivalent(halves, p, trials=2)
    with pytest.raises(ReplaceMismatchError, match="condition"):
        replace(other_half, "for j in _: _", half_clear)


def test_instruction_call_compiles() -> None:
    """The instruction call compiles through its template and matches the interpreter."""
    p2, _ = replace(rows, "for ji in _: _", copy4)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 16)).astype(np.float32)
    s = rng.standard_normal(2).astype(np.float32)
    b1, b2 = np.zeros((2, 16), np.float32), np.zeros((2, 16), np.float32)
    p2.compile()(2, a, b1, s)
    p2.interpret(2, a, b2, s)
    np.testing.assert_allclose(b1, b2, rtol=1e-6)


def test_shifted_loops_match() -> None:
    """A caller loop starting elsewhere matches by its trip count; the offset goes into the
    windows."""

    @instr("c({dst_data}, {src_data}, {n});")
    def copyn(n: size, dst: [f32][n] @ DRAM, src: [f32][n] @ DRAM):
        for i in seq(0, n):
            dst[i] = src[i]

    @proc
    def shifted(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM):
        assert n > 8
        for i in seq(2, 6):
            B[i] = A[i + 1]
        for i in seq(3, n):
            B[i] = A[i - 3]

    p, _ = replace(shifted, "for i in _: _", copy4)
    p, _ = replace(p, "for i in _: _", copyn)
    assert "copy4(B[2:6], A[3:7])" in str(p)
    assert "copyn(n - 3, B[3:n], A[0:n - 3])" in str(p)
    assert_equivalent(shifted, p, trials=3)


def test_bool_parameter_binds_to_a_condition() -> None:
    @instr("maybe_zero({dst_data}, {flag});")
    def maybe_zero(flag: bool, dst: [f32][4] @ DRAM):
        for i in seq(0, 4):
            if flag:
                dst[i] = 0.0

    @proc
    def gated(n: size, A: f32[n, 4] @ DRAM, on: bool):
        for i in seq(0, n):
            for j in seq(0, 4):
                if on and n > 2:
                    A[i, j] = 0.0

    p, _ = replace(gated, "for j in _: _", maybe_zero)
    assert "maybe_zero(on and n > 2, A[i, 0:4])" in str(p)
    assert_equivalent(gated, p, trials=4)


@instr(
    "for (int t_ = 0; t_ < 4; t_++) {dst_data}[t_] = fmaxf({dst_data}[t_], expf({src_data}[t_]));"
)
def max_exp4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    for i in seq(0, 4):
        dst[i] = fmaxf(dst[i], expf(src[i]))


def test_replace_matches_an_extern_under_its_other_name() -> None:
    """``fmaxf``/``fmax`` and ``expf``/``exp`` are one extern each (same meaning and C
    function): an instruction saying ``fmaxf(.., expf(..))`` matches code saying
    ``fmax(.., exp(..))``; ``fmin`` still does not match ``fmax``."""

    @proc
    def f(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
        for i in seq(0, 8):
            y[i] = fmax(y[i], exp(x[i]))

    @proc
    def g(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
        for i in seq(0, 8):
            y[i] = fmin(y[i], exp(x[i]))

    p, s = split(f, "i", 4, ("io", "ii"), tail="perfect")
    q, _ = replace(p, s.inner, max_exp4)
    assert "max_exp4(y[4 * io:4 * io + 4], x[4 * io:4 * io + 4])" in str(q)
    assert_equivalent(f, q, trials=2)
    p, s = split(g, "i", 4, ("io", "ii"), tail="perfect")
    with pytest.raises(ReplaceMismatchError, match="fmaxf"):
        replace(p, s.inner, max_exp4)
