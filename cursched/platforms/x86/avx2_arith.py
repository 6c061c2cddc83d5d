"""AVX2 arithmetic the softmax and attention schedules need beyond ``avx2``: subtraction,
division, an accumulating add and scan_fuse's guarded subtraction of a running max.

Each is one IEEE operation per lane, so the vector result is bitwise the scalar code's
(``x - y``, ``x / y``, ``d += s`` round once each, as C does). ``mm256_sub_guarded_ps`` is the
exponent of the terms ``scan_fuse`` writes for a running ``fmax`` (``x - select(-inf, m, m,
0.0)``: the running max, or 0 while it is ``-inf`` or NaN), one compare, one blend and one
subtraction.
"""

from __future__ import annotations

from cursched.platforms.x86.memories import AVX2
from cursched.proc import instr

__all__ = ["mm256_acc_ps", "mm256_div_ps", "mm256_sub_guarded_ps", "mm256_sub_ps"]


@instr("{out} = _mm256_sub_ps({x}, {y});")
def mm256_sub_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, y: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 8):
        out[i] = x[i] - y[i]


@instr("{out} = _mm256_div_ps({x}, {y});")
def mm256_div_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, y: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 8):
        out[i] = x[i] / y[i]


@instr("{dst} = _mm256_add_ps({dst}, {src});")
def mm256_acc_ps(dst: [f32][8] @ AVX2, src: [f32][8] @ AVX2):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 8):
        dst[i] += src[i]


# select(a, b, c, d) is ``c if a < b else d``: the ordered compare -inf < m is false for
# m = -inf and for NaN, where the blend keeps 0
@instr(
    "{out} = _mm256_sub_ps({x}, _mm256_blendv_ps(_mm256_setzero_ps(), {m},"
    " _mm256_cmp_ps(_mm256_set1_ps(-INFINITY), {m}, _CMP_LT_OQ)));"
)
def mm256_sub_guarded_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, m: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(m, 0) == 1
    for i in seq(0, 8):
        out[i] = x[i] - select(-inf, m[i], m[i], 0.0)
