"""AVX-512F arithmetic the attention and online softmax schedules need beyond ``avx512``:
subtraction, division, an accumulating add, scan_fuse's guarded subtraction of a running max
and a load pinned in a register (``avx2_arith`` and ``mm256_loadu_ps_reg`` at 16 lanes).

Each arithmetic instruction is one IEEE operation per lane, so the vector result is bitwise
the scalar code's (``x - y``, ``d += s`` round once each, as C does). ``mm512_sub_guarded_ps``
is the exponent of the terms ``scan_fuse`` writes for a running ``fmax`` (``x - select(-inf,
m, m, 0.0)``: the running max, or 0 while it is ``-inf`` or NaN): one compare into a mask and
one masked subtraction (the lanes of the guard's 0 keep ``x``: ``x - 0.0`` is ``x``, also for
``x = -0.0``; for a signaling NaN ``x`` the compiled scalar code keeps it too, bitwise, as
the test checks).
"""

from __future__ import annotations

from cursched.ir.memory import DRAM
from cursched.platforms.x86.memories import AVX512
from cursched.proc import instr

__all__ = [
    "mm512_acc_ps",
    "mm512_div_ps",
    "mm512_loadu_ps_reg",
    "mm512_sub_guarded_ps",
    "mm512_sub_ps",
]


@instr('{dst} = _mm512_loadu_ps({src}); __asm__("" : "+v"({dst}));')
def mm512_loadu_ps_reg(dst: [f32][16] @ AVX512, src: [f32][16] @ DRAM):
    # mm256_loadu_ps_reg at 16 lanes: the load, its result pinned in a register (gcc folds a
    # plain load into each use's memory operand, re-reading the vector once per FMA); "v":
    # any of the 32 zmm registers. The empty asm changes nothing: the meaning is the load's
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 16):
        dst[i] = src[i]


@instr("{out} = _mm512_sub_ps({x}, {y});")
def mm512_sub_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, y: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 16):
        out[i] = x[i] - y[i]


@instr("{out} = _mm512_div_ps({x}, {y});")
def mm512_div_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, y: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 16):
        out[i] = x[i] / y[i]


@instr("{dst} = _mm512_add_ps({dst}, {src});")
def mm512_acc_ps(dst: [f32][16] @ AVX512, src: [f32][16] @ AVX512):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 16):
        dst[i] += src[i]


# select(a, b, c, d) is ``c if a < b else d``: the ordered compare -inf < m is false for
# m = -inf and for NaN, whose lanes the masked subtraction leaves x (= x - 0.0 bitwise)
@instr(
    "{out} = _mm512_mask_sub_ps({x}, _mm512_cmp_ps_mask(_mm512_set1_ps(-INFINITY), {m},"
    " _CMP_LT_OQ), {x}, {m});"
)
def mm512_sub_guarded_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, m: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(m, 0) == 1
    for i in seq(0, 16):
        out[i] = x[i] - select(-inf, m[i], m[i], 0.0)
