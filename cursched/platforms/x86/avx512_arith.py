"""AVX-512F arithmetic the attention and online softmax schedules need beyond ``avx512``:
subtraction, division, an accumulating add, scan_fuse's guarded subtraction of a running max
and a load pinned in a register (``avx2_arith`` and ``mm256_loadu_ps_reg`` at 16 lanes); a
16 x 16 transpose between two row-major tiles in memory (``mm512_transpose16_ps``, and
``mm512_transpose16_ps_prefetch`` that also prefetches its source rows ahead).

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
    "mm512_transpose16_ps",
    "mm512_transpose16_ps_prefetch",
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


# The transpose by recursive block swaps: at step b = 8, 4, 2, 1, rows i and i + b (i % 2b < b)
# exchange, in every block of 2b columns, row i's second b columns with row i + b's first b
# (one two-source permute per output row); after the four steps row j holds column j. Loads,
# permutes and stores move bits: the result is the copy, bitwise (NaN payloads included).
TRANSPOSE16 = r"""#include <immintrin.h>
#include <stdint.h>
/* One step: rows i and i + b of r (i % 2b < b) through the permutes lo and hi. */
#define CS_T16_STEP(r, b, lo, hi)                                                  \
    for (int i_ = 0; i_ < 16; i_++) {                                              \
        if (i_ % (2 * (b)) >= (b)) continue;                                       \
        __m512 a_ = r[i_], c_ = r[i_ + (b)];                                       \
        r[i_] = _mm512_permutex2var_ps(a_, lo, c_);                                \
        r[i_ + (b)] = _mm512_permutex2var_ps(a_, hi, c_);                          \
    }
/* ahead > 0: each source row also prefetched ahead floats on (a constant: folded) */
static inline void cs_transpose16_ps(float *dst, int_fast64_t dst_stride, const float *src,
                                     int_fast64_t src_stride, int ahead) {
    __m512 r[16];
    for (int i = 0; i < 16; i++) {
        r[i] = _mm512_loadu_ps(src + i * src_stride);
        if (ahead) _mm_prefetch((const char *)(src + i * src_stride + ahead), _MM_HINT_T0);
    }
    /* index p of step b: base + off (off < b) from the first row, else from the second */
    CS_T16_STEP(r, 8,
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
        _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31))
    CS_T16_STEP(r, 4,
        _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27),
        _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31))
    CS_T16_STEP(r, 2,
        _mm512_setr_epi32(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
        _mm512_setr_epi32(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31))
    CS_T16_STEP(r, 1,
        _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
        _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31))
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * dst_stride, r[i]);
}
#undef CS_T16_STEP
"""


@instr("cs_transpose16_ps({dst_data}, {dst_stride_0}, {src_data}, {src_stride_0}, 0);", TRANSPOSE16)
def mm512_transpose16_ps(dst: [f32][16, 16] @ DRAM, src: [f32][16, 16] @ DRAM):  # noqa: RUF016
    # a tile of 16 x 16 floats transposed between row-major tiles (the online softmax stages
    # 16 rows x 64 columns of x transposed: 4 of these per tile instead of 1024 scalar moves)
    assert stride(dst, 1) == 1
    assert stride(src, 1) == 1
    for i in seq(0, 16):
        for j in seq(0, 16):
            dst[j, i] = src[i, j]


@instr(
    "cs_transpose16_ps({dst_data}, {dst_stride_0}, {src_data}, {src_stride_0}, 128);", TRANSPOSE16
)
def mm512_transpose16_ps_prefetch(dst: [f32][16, 16] @ DRAM, src: [f32][16, 16] @ DRAM):  # noqa: RUF016
    # mm512_transpose16_ps, each of the 16 source rows also prefetched 128 floats (512 B:
    # 8 tiles of a row read left to right) ahead. The online softmax reads 16 rows 16 KiB or
    # more apart at once, 16 streams that the hardware prefetcher kept too few lines ahead
    # of: ~15% less time at 4096 x 4096 (512 B and 1 KiB ahead measured alike, 4 KiB no
    # gain). A prefetch never faults nor changes memory, so the meaning is the transpose's
    assert stride(dst, 1) == 1
    assert stride(src, 1) == 1
    for i in seq(0, 16):
        for j in seq(0, 16):
            dst[j, i] = src[i, j]
