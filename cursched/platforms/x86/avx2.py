"""AVX2 + FMA instructions on ``f32`` (8 lanes), with Exo's names where Exo has them.

Template convention (``cursched.codegen.c.statements``): a window of an ``AVX2`` buffer is the
register lvalue (``Ct[i]``), a window of a ``DRAM`` tensor is a pointer to its first element,
a data scalar ``{x}`` is its lvalue. Every body states the instruction's meaning lane by lane;
``replace`` matches it and proves the asserts (unit strides) where the call lands.

Numerics: loads, stores, broadcasts, add and mul are exact lane copies of the scalar code;
``mm256_fmadd_ps`` rounds once (the body's ``+= a * b`` rounds twice in the interpreter; the
C backend's ``-march=native`` contracts the scalar code the same way); ``mm256_max_ps`` /
``mm256_min_ps`` follow ``fmaxf`` / ``fminf`` exactly (a NaN operand is ignored, equal
operands give the second); the horizontal reductions add or compare the lanes in index order,
as their bodies do, so they are bitwise equal to the scalar loop; ``mm256_exp_ps`` is within
1 ulp of glibc's ``expf`` (``vmath_c``).
"""

from __future__ import annotations

from cursched.ir.memory import DRAM
from cursched.platforms.x86.memories import AVX2
from cursched.platforms.x86.vmath_c import EXP256
from cursched.proc import instr

__all__ = [
    "mm256_add_ps",
    "mm256_broadcast_ss",
    "mm256_broadcast_ss_scalar",
    "mm256_exp_ps",
    "mm256_fmadd_ps",
    "mm256_fmadd_ps_broadcast",
    "mm256_loadu_ps",
    "mm256_loadu_ps_prefetch",
    "mm256_loadu_ps_reg",
    "mm256_mask_fmadd_ps_broadcast",
    "mm256_maskload_ps",
    "mm256_maskstore_ps",
    "mm256_max_ps",
    "mm256_min_ps",
    "mm256_mul_ps",
    "mm256_reduce_add_ps",
    "mm256_reduce_max_ps",
    "mm256_setzero_ps",
    "mm256_storeu_add_ps",
    "mm256_storeu_ps",
    "mm_prefetch",
    "mm_prefetch_lines",
]

#: Lanes ``i < N`` set: the mask of the masked loads and stores.
_MASK = "_mm256_cmpgt_epi32(_mm256_set1_epi32((int){N}), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))"


@instr("{dst} = _mm256_loadu_ps({src});")
def mm256_loadu_ps(dst: [f32][8] @ AVX2, src: [f32][8] @ DRAM):
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = src[i]


@instr("{dst} = _mm256_loadu_ps({src}); _mm_prefetch((const char *)({src}) + 1024, _MM_HINT_T0);")
def mm256_loadu_ps_prefetch(dst: [f32][8] @ AVX2, src: [f32][8] @ DRAM):
    # the load, and a hint to fetch the line 1 KiB ahead (a packed panel read in order):
    # a prefetch never faults nor changes memory, so the meaning is the load's
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = src[i]


@instr('{dst} = _mm256_loadu_ps({src}); __asm__("" : "+x"({dst}));')
def mm256_loadu_ps_reg(dst: [f32][8] @ AVX2, src: [f32][8] @ DRAM):
    # the load, its result pinned in a register: gcc otherwise folds a load into the memory
    # operand of each of its uses, re-reading the vector once per use (a register tile's
    # operand used by 4 FMAs became 4 loads); the empty asm changes nothing, so the meaning
    # is the load's
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = src[i]


@instr("_mm256_storeu_ps({dst}, {src});")
def mm256_storeu_ps(dst: [f32][8] @ DRAM, src: [f32][8] @ AVX2):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 8):
        dst[i] = src[i]


@instr("_mm256_storeu_ps({dst}, _mm256_add_ps(_mm256_loadu_ps({dst}), {src}));")
def mm256_storeu_add_ps(dst: [f32][8] @ DRAM, src: [f32][8] @ AVX2):
    # ``dst += src`` in memory: a register tile accumulated from zero is added to C once at
    # the end (BLIS's micro-kernel), so C is not needed before the k loop; one rounding per
    # lane, as the body's
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 8):
        dst[i] += src[i]


@instr("_mm_prefetch((const char *)({src}), _MM_HINT_T0);")
def mm_prefetch(src: [f32][16] @ DRAM):
    # a hint to bring the line of src[0] (16 floats: 64 bytes) into L1 ahead of its use: it
    # neither faults nor changes memory, so its body is empty; insert it with
    # insert_noop_call
    pass


@instr(
    "_mm_prefetch((const char *)({src}), _MM_HINT_T0);"
    " _mm_prefetch((const char *)({src}) + 60, _MM_HINT_T0);"
)
def mm_prefetch_lines(src: [f32][16] @ DRAM):
    # the lines of src[0] and src[15]: 16 floats not aligned to 64 bytes (numpy's arrays
    # start 16 bytes past a line) span two lines, and ``mm_prefetch`` fetched only the first,
    # so the C tile's update at the end of the micro-kernel missed on the other (+9% at
    # 1024^3 and 2048^3). A hint: no fault, no change to memory, an empty body
    pass


@instr(
    "{dst} = _mm256_blendv_ps({dst}, _mm256_maskload_ps({src}, " + _MASK + "),"
    " _mm256_castsi256_ps(" + _MASK + "));"
)
def mm256_maskload_ps(N: size, dst: [f32][8] @ AVX2, src: [f32][N] @ DRAM):
    # lanes N..7 keep their value, as the body says (maskload alone would zero them, which
    # a later full-register use could observe): the blend makes the template the body
    assert N <= 8
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, N):
        dst[i] = src[i]


@instr("_mm256_maskstore_ps({dst}, " + _MASK + ", {src});")
def mm256_maskstore_ps(N: size, dst: [f32][N] @ DRAM, src: [f32][8] @ AVX2):
    assert N <= 8
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, N):
        dst[i] = src[i]


@instr("{dst} = _mm256_setzero_ps();")
def mm256_setzero_ps(dst: [f32][8] @ AVX2):
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = 0.0


@instr("{out} = _mm256_broadcast_ss({val});")
def mm256_broadcast_ss(out: [f32][8] @ AVX2, val: [f32][1] @ DRAM):
    assert stride(out, 0) == 1
    for i in seq(0, 8):
        out[i] = val[0]


@instr("{out} = _mm256_set1_ps({val});")
def mm256_broadcast_ss_scalar(out: [f32][8] @ AVX2, val: f32):
    assert stride(out, 0) == 1
    for i in seq(0, 8):
        out[i] = val


@instr("{dst} = _mm256_fmadd_ps({src1}, {src2}, {dst});")
def mm256_fmadd_ps(dst: [f32][8] @ AVX2, src1: [f32][8] @ AVX2, src2: [f32][8] @ AVX2):
    assert stride(src1, 0) == 1
    assert stride(src2, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] += src1[i] * src2[i]


@instr("{dst} = _mm256_fmadd_ps({lhs}, _mm256_broadcast_ss({rhs}), {dst});")
def mm256_fmadd_ps_broadcast(dst: [f32][8] @ AVX2, lhs: [f32][8] @ AVX2, rhs: [f32][1] @ DRAM):
    # Exo's name and body; the broadcast of rhs is a load the compiler shares between the
    # calls of one rhs (the micro-kernel's two registers of a row)
    assert stride(dst, 0) == 1
    assert stride(lhs, 0) == 1
    for i in seq(0, 8):
        dst[i] += lhs[i] * rhs[0]


@instr(
    "{dst} = _mm256_blendv_ps({dst}, _mm256_fmadd_ps({lhs}, _mm256_broadcast_ss({rhs}), {dst}),"
    " _mm256_castsi256_ps(" + _MASK + "));"
)
def mm256_mask_fmadd_ps_broadcast(
    N: size, dst: [f32][8] @ AVX2, lhs: [f32][8] @ AVX2, rhs: [f32][1] @ DRAM
):
    # the multiply-add on lanes i < N only (a masked edge tile's last register): lanes N..7
    # keep their value, as the body says, so the template blends (AVX2 has no masked FMA);
    # the mask depends on N alone, which the compiler hoists out of the micro-kernel's loop
    assert N <= 8
    assert stride(dst, 0) == 1
    assert stride(lhs, 0) == 1
    for i in seq(0, N):
        dst[i] += lhs[i] * rhs[0]


@instr("{out} = _mm256_add_ps({x}, {y});")
def mm256_add_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, y: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 8):
        out[i] = x[i] + y[i]


@instr("{out} = _mm256_mul_ps({x}, {y});")
def mm256_mul_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, y: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 8):
        out[i] = x[i] * y[i]


# fmaxf(a, b): b is NaN -> a, else a > b ? a : b; maxps(a, b) is ``a > b ? a : b``, so only
# a NaN in b needs the blend
@instr(
    "{out} = _mm256_blendv_ps(_mm256_max_ps({x}, {y}), {x}, _mm256_cmp_ps({y}, {y}, _CMP_UNORD_Q));"
)
def mm256_max_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, y: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 8):
        out[i] = fmaxf(x[i], y[i])


@instr(
    "{out} = _mm256_blendv_ps(_mm256_min_ps({x}, {y}), {x}, _mm256_cmp_ps({y}, {y}, _CMP_UNORD_Q));"
)
def mm256_min_ps(out: [f32][8] @ AVX2, x: [f32][8] @ AVX2, y: [f32][8] @ AVX2):
    assert stride(out, 0) == 1
    assert stride(x, 0) == 1
    assert stride(y, 0) == 1
    for i in seq(0, 8):
        out[i] = fmin(x[i], y[i])


@instr("{dst} = cs_exp256_ps({src});", EXP256)
def mm256_exp_ps(dst: [f32][8] @ AVX2, src: [f32][8] @ AVX2):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 8):
        dst[i] = expf(src[i])


# lane order, as the body: bitwise the scalar loop's result (a tree would round differently)
@instr(
    "{ float cs_l_[8]; _mm256_storeu_ps(cs_l_, {src});"
    " for (int cs_k_ = 0; cs_k_ < 8; cs_k_++) {dst} += cs_l_[cs_k_]; }"
)
def mm256_reduce_add_ps(dst: f32, src: [f32][8] @ AVX2):
    assert stride(src, 0) == 1
    for i in seq(0, 8):
        dst += src[i]


@instr(
    "{ float cs_l_[8]; _mm256_storeu_ps(cs_l_, {src});"
    " for (int cs_k_ = 0; cs_k_ < 8; cs_k_++) { float cs_b_ = cs_l_[cs_k_];"
    " {dst} = cs_b_ != cs_b_ ? {dst} : ({dst} > cs_b_ ? {dst} : cs_b_); } }"
)
def mm256_reduce_max_ps(dst: f32, src: [f32][8] @ AVX2):
    assert stride(src, 0) == 1
    for i in seq(0, 8):
        dst = fmaxf(dst, src[i])
