"""The instructions of a register tile held transposed (sgemm_x86's right edge: one register
per column of C, its lanes the rows): ``mm512_mask_setzero_ps`` zeroes lanes ``i < N`` and
keeps the others, ``mm512_mask_storeu_add_strided_ps`` adds ``N`` lanes into a strided
column, bit for bit the body's sums; ``replace`` refuses either where its asserts or memories
do not hold."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, Proc, replace
from cursched.analysis.bounds import check_bounds
from cursched.frontend import parse_source
from cursched.platforms.x86 import (
    AVX512,
    cpu_features,
    mm512_loadu_ps,
    mm512_mask_setzero_ps,
    mm512_mask_storeu_add_strided_ps,
    mm512_storeu_add_ps,
    mm512_storeu_ps,
)
from cursched.primitives.calls.replace import ReplaceAssertError, ReplaceMemoryError

HAS_AVX512 = "avx512f" in cpu_features()
ENV = {"DRAM": DRAM, "AVX512": AVX512}


def _parse(src: str) -> Proc:
    return Proc(check_bounds(parse_source(src, ENV)))


def _replace_in_order(p: Proc, instrs: list[Proc]) -> Proc:
    """Each instruction replaces the first loop left (the loops in program order)."""
    for ins in instrs:
        p, _ = replace(p, p.find_loop("i #0"), ins)
    return p


ZERO_SRC = """
def zero_head(n: size, y: f32[16] @ DRAM, z: f32[16] @ DRAM):
    assert n <= 16
    t: f32[16] @ AVX512
    for i in seq(0, 16):
        t[i] = y[i]
    for i in seq(0, n):
        t[i] = 0.0
    for i in seq(0, 16):
        z[i] = t[i]
"""

COLUMN_SRC = """
def add_column(n: size, x: f32[16] @ DRAM, C: f32[20, 5] @ DRAM):
    assert n <= 16
    t: f32[16] @ AVX512
    for i in seq(0, 16):
        t[i] = x[i]
    for i in seq(0, n):
        C[i + 3, 2] += t[i]
"""


@pytest.mark.skipif(not HAS_AVX512, reason="this CPU lacks AVX-512")
def test_masked_zero_keeps_the_other_lanes() -> None:
    plain = _parse(ZERO_SRC)
    p = _replace_in_order(plain, [mm512_loadu_ps, mm512_mask_setzero_ps, mm512_storeu_ps])
    f = p.compile()
    assert "_mm512_mask_mov_ps(" in f.c_source
    y = np.arange(1, 17, dtype=np.float32)
    for n in range(1, 17):
        want, got = np.full(16, np.nan, np.float32), np.full(16, np.nan, np.float32)
        plain.interpret(n, y, want)
        f(n, y, got)
        assert np.array_equal(want, got), (n, got)
        assert not got[:n].any() and np.array_equal(got[n:], y[n:])


@pytest.mark.skipif(not HAS_AVX512, reason="this CPU lacks AVX-512")
def test_strided_store_add_is_the_bodys_sums_bitwise() -> None:
    """Lanes i < n land in C[3 + i, 2] (a row of 5 floats apart), each one rounding of
    ``C + t``; the other elements of C are untouched."""
    plain = _parse(COLUMN_SRC)
    p = _replace_in_order(plain, [mm512_loadu_ps, mm512_mask_storeu_add_strided_ps])
    f = p.compile()
    assert "_mm512_storeu_ps(cs_l_" in f.c_source
    rng = np.random.default_rng(4)
    x = rng.standard_normal(16).astype(np.float32)
    for n in range(1, 17):
        c0 = rng.standard_normal((20, 5)).astype(np.float32)
        want, got = c0.copy(), c0.copy()
        plain.interpret(n, x, want)
        f(n, x, got)
        assert np.array_equal(want, got), n
        untouched = np.ones((20, 5), bool)
        untouched[3 : 3 + n, 2] = False
        assert np.array_equal(got[untouched], c0[untouched])


def test_a_column_needs_the_strided_store() -> None:
    """A whole column of 16: the contiguous ``mm512_storeu_add_ps`` is refused (its
    ``stride(dst, 0) == 1`` does not hold, C's rows are 5 apart); the strided one fits."""
    p = _parse(COLUMN_SRC.replace("seq(0, n)", "seq(0, 16)"))
    p, _ = replace(p, p.find_loop("i #0"), mm512_loadu_ps)
    with pytest.raises(ReplaceAssertError, match=r"stride\(dst, 0\) == 1"):
        replace(p, p.find_loop("i #0"), mm512_storeu_add_ps)
    p, _ = replace(p, p.find_loop("i #0"), mm512_mask_storeu_add_strided_ps)
    assert "mm512_mask_storeu_add_strided_ps(16, C[3:19, 2]" in str(p)


def test_replace_refuses_a_masked_zero_of_memory() -> None:
    """``mm512_mask_setzero_ps`` writes a register: a DRAM buffer is refused."""
    p = _parse(ZERO_SRC.replace("@ AVX512", "@ DRAM"))
    with pytest.raises(ReplaceMemoryError):
        replace(p, p.find_loop("i #1"), mm512_mask_setzero_ps)
