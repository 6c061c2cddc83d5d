"""AVX-512F instructions on ``f32`` (16 lanes), with Exo's names and bodies where Exo has them.

Same conventions as ``avx2`` (register windows are lvalues, DRAM windows pointers). The
masked forms take Exo's bodies, ``for i in seq(0, 16): if i < N: ...`` (a guarded tail, as
``split(..., tail="guard")`` leaves it); lanes ``i >= N`` keep their value in every masked
instruction, exactly as the bodies say (so ``mm512_maskz_loadu_ps`` merges rather than zeroes:
Exo's zeroing template differs from its body). Numerics as in ``avx2``.
"""

from __future__ import annotations

from cursched.ir.memory import DRAM
from cursched.platforms.x86.memories import AVX512
from cursched.platforms.x86.vmath_c import EXP512
from cursched.proc import instr

__all__ = [
    "mm512_add_ps",
    "mm512_exp_ps",
    "mm512_fmadd_ps",
    "mm512_fmadd_ps_broadcast",
    "mm512_loadu_ps",
    "mm512_loadu_ps_prefetch",
    "mm512_mask_fmadd_ps",
    "mm512_mask_fmadd_ps_broadcast",
    "mm512_mask_setzero_ps",
    "mm512_mask_storeu_add_strided_ps",
    "mm512_mask_storeu_ps",
    "mm512_maskload_ps",
    "mm512_maskstore_ps",
    "mm512_maskz_loadu_ps",
    "mm512_max_ps",
    "mm512_min_ps",
    "mm512_mul_ps",
    "mm512_reduce_add_ps",
    "mm512_reduce_max_ps",
    "mm512_set1_ps",
    "mm512_set1_ps_scalar",
    "mm512_setzero_ps",
    "mm512_storeu_add_ps",
    "mm512_storeu_ps",
]

_MASK = "(__mmask16)((1u << {N}) - 1u)"


@instr("{dst} = _mm512_loadu_ps({src});")
def mm512_loadu_ps(dst: [f32][16] @ AVX512, src: [f32][16] @ DRAM):
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 16):
        dst[i] = src[i]


@instr("{dst} = _mm512_loadu_ps({src}); _mm_prefetch((const char *)({src}) + 3072, _MM_HINT_T0);")
def mm512_loadu_ps_prefetch(dst: [f32][16] @ AVX512, src: [f32][16] @ DRAM):
    # the load, and a hint to fetch the line 3 KiB ahead into L1 (a packed panel read in
    # order: 24 rows of a 32-float panel of B, sched/sgemm_x86.py's Intel target); a
    # prefetch never faults nor changes memory, so the meaning is the load's
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 16):
        dst[i] = src[i]


@instr("_mm512_storeu_ps({dst}, {src});")
def mm512_storeu_ps(dst: [f32][16] @ DRAM, src: [f32][16] @ AVX512):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 16):
        dst[i] = src[i]


@instr("{dst} = _mm512_mask_loadu_ps({dst}, " + _MASK + ", {src});")
def mm512_maskz_loadu_ps(N: size, dst: [f32][16] @ AVX512, src: [f32][N] @ DRAM):
    # Exo's name and body; merge-masked (lanes i >= N keep their value, as the body says)
    # where Exo's zero-masking template would clear them behind the body's back
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    assert N <= 16
    for i in seq(0, 16):
        if i < N:
            dst[i] = src[i]


@instr("_mm512_mask_storeu_ps({dst}, " + _MASK + ", {src});")
def mm512_mask_storeu_ps(N: size, dst: [f32][N] @ DRAM, src: [f32][16] @ AVX512):
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    assert N <= 16
    for i in seq(0, 16):
        if i < N:
            dst[i] = src[i]


@instr("_mm512_storeu_ps({dst}, _mm512_add_ps(_mm512_loadu_ps({dst}), {src}));")
def mm512_storeu_add_ps(dst: [f32][16] @ DRAM, src: [f32][16] @ AVX512):
    # as mm256_storeu_add_ps: a register tile accumulated from zero added to C at the end
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 16):
        dst[i] += src[i]


@instr("{dst} = _mm512_setzero_ps();")
def mm512_setzero_ps(dst: [f32][16] @ AVX512):
    assert stride(dst, 0) == 1
    for i in seq(0, 16):
        dst[i] = 0.0


@instr("{dst} = _mm512_set1_ps(*{src});")
def mm512_set1_ps(dst: [f32][16] @ AVX512, src: [f32][1] @ DRAM):
    assert stride(dst, 0) == 1
    for i in seq(0, 16):
        dst[i] = src[0]


@instr("{dst} = _mm512_set1_ps({src});")
def mm512_set1_ps_scalar(dst: [f32][16] @ AVX512, src: f32):
    assert stride(dst, 0) == 1
    for i in seq(0, 16):
        dst[i] = src


@instr("{C} = _mm512_fmadd_ps({A}, {B}, {C});")
def mm512_fmadd_ps(A: [f32][16] @ AVX512, B: [f32][16] @ AVX512, C: [f32][16] @ AVX512):
    assert stride(A, 0) == 1
    assert stride(B, 0) == 1
    assert stride(C, 0) == 1
    for i in seq(0, 16):
        C[i] += A[i] * B[i]


@instr("{dst} = _mm512_fmadd_ps({lhs}, _mm512_set1_ps(*{rhs}), {dst});")
def mm512_fmadd_ps_broadcast(
    dst: [f32][16] @ AVX512, lhs: [f32][16] @ AVX512, rhs: [f32][1] @ DRAM
):
    # as mm256_fmadd_ps_broadcast: the register-blocked micro-kernel's multiply-add
    assert stride(dst, 0) == 1
    assert stride(lhs, 0) == 1
    for i in seq(0, 16):
        dst[i] += lhs[i] * rhs[0]


# The masked forms of a loop ``for i in seq(0, N)`` (AVX2's ``mm256_maskload_ps`` shape: what
# stage_mem of a window ``[0:N]`` makes), for the sgemm's masked edge micro-kernels; merge
# masking keeps lanes N..15, as the bodies say


@instr("{dst} = _mm512_mask_loadu_ps({dst}, " + _MASK + ", {src});")
def mm512_maskload_ps(N: size, dst: [f32][16] @ AVX512, src: [f32][N] @ DRAM):
    assert N <= 16
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, N):
        dst[i] = src[i]


@instr("_mm512_mask_storeu_ps({dst}, " + _MASK + ", {src});")
def mm512_maskstore_ps(N: size, dst: [f32][N] @ DRAM, src: [f32][16] @ AVX512):
    assert N <= 16
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, N):
        dst[i] = src[i]


@instr("{dst} = _mm512_mask3_fmadd_ps({lhs}, _mm512_set1_ps(*{rhs}), {dst}, " + _MASK + ");")
def mm512_mask_fmadd_ps_broadcast(
    N: size, dst: [f32][16] @ AVX512, lhs: [f32][16] @ AVX512, rhs: [f32][1] @ DRAM
):
    assert N <= 16
    assert stride(dst, 0) == 1
    assert stride(lhs, 0) == 1
    for i in seq(0, N):
        dst[i] += lhs[i] * rhs[0]


# A register tile held transposed (one register per column of C, its lanes the rows: the
# sgemm's right edge runs its vector along the packed rows of A) starts at zero in lanes
# i < N and is added at the end into a column of C, whose elements lie a row apart


@instr("{dst} = _mm512_mask_mov_ps({dst}, " + _MASK + ", _mm512_setzero_ps());")
def mm512_mask_setzero_ps(N: size, dst: [f32][16] @ AVX512):
    # lanes i >= N keep their value, as the body says (a plain setzero would clear them)
    assert N <= 16
    assert stride(dst, 0) == 1
    for i in seq(0, N):
        dst[i] = 0.0


@instr(
    "{ float cs_l_[16]; _mm512_storeu_ps(cs_l_, {src});"
    " for (int_fast64_t cs_k_ = 0; cs_k_ < {N}; cs_k_++)"
    " {dst}[cs_k_ * {dst_stride_0}] += cs_l_[cs_k_]; }"
)
def mm512_mask_storeu_add_strided_ps(N: size, dst: [f32][N] @ DRAM, src: [f32][16] @ AVX512):
    # dst of any stride (a column of C): the register spilled once, its N lanes added one by
    # one (a transposed tile's end, once per K block: a gather and a scatter would need
    # 32-bit indices, i * stride, which a row of C's length may overflow)
    assert N <= 16
    assert stride(src, 0) == 1
    for i in seq(0, N):
        dst[i] += src[i]


@instr("{C} = _mm512_mask3_fmadd_ps({A}, {B}, {C}, " + _MASK + ");")
def mm512_mask_fmadd_ps(
    N: size, A: [f32][16] @ AVX512, B: [f32][16] @ AVX512, C: [f32][16] @ AVX512
):
    assert N >= 1
    assert N < 16
    assert stride(A, 0) == 1
    assert stride(B, 0) == 1
    assert stride(C, 0) == 1
    for i in seq(0, 16):
        if i < N:
            C[i] += A[i] * B[i]


@instr("{out} = _mm512_add_ps({x}, {y});")
def mm512_add_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, y: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 16):
        out[i] = x[i] + y[i]


@instr("{out} = _mm512_mul_ps({x}, {y});")
def mm512_mul_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, y: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 16):
        out[i] = x[i] * y[i]


# fmaxf's rule (a NaN in y gives x): maxps gives ``x > y ? x : y``, then x where y is NaN
@instr(
    "{out} = _mm512_mask_mov_ps(_mm512_max_ps({x}, {y}),"
    " _mm512_cmp_ps_mask({y}, {y}, _CMP_UNORD_Q), {x});"
)
def mm512_max_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, y: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 16):
        out[i] = fmaxf(x[i], y[i])


@instr(
    "{out} = _mm512_mask_mov_ps(_mm512_min_ps({x}, {y}),"
    " _mm512_cmp_ps_mask({y}, {y}, _CMP_UNORD_Q), {x});"
)
def mm512_min_ps(out: [f32][16] @ AVX512, x: [f32][16] @ AVX512, y: [f32][16] @ AVX512):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 16):
        out[i] = fmin(x[i], y[i])


@instr("{dst} = cs_exp512_ps({src});", EXP512)
def mm512_exp_ps(dst: [f32][16] @ AVX512, src: [f32][16] @ AVX512):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 16):
        dst[i] = expf(src[i])


@instr(
    "{ float cs_l_[16]; _mm512_storeu_ps(cs_l_, {src});"
    " for (int cs_k_ = 0; cs_k_ < 16; cs_k_++) {dst} += cs_l_[cs_k_]; }"
)
def mm512_reduce_add_ps(dst: f32, src: [f32][16] @ AVX512):
    assert stride(src, 0) == 1
    for i in seq(0, 16):
        dst += src[i]


@instr(
    "{ float cs_l_[16]; _mm512_storeu_ps(cs_l_, {src});"
    " for (int cs_k_ = 0; cs_k_ < 16; cs_k_++) { float cs_b_ = cs_l_[cs_k_];"
    " {dst} = cs_b_ != cs_b_ ? {dst} : ({dst} > cs_b_ ? {dst} : cs_b_); } }"
)
def mm512_reduce_max_ps(dst: f32, src: [f32][16] @ AVX512):
    assert stride(src, 0) == 1
    for i in seq(0, 16):
        dst = fmaxf(dst, src[i])
