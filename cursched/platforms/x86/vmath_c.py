"""C text of the vector math helpers (``c_global`` of the instructions that use them).

``cs_exp256_ps`` / ``cs_exp512_ps``: e^x lane by lane, for every float x.

Method: ``n = round(x * log2(e))``, ``r = x - n * ln2`` in two FMA steps (``ln2`` split into
a float and the float of its remainder, so ``r`` carries ~48 bits of ``n * ln2``),
``e^r = 1 + r + r^2 * P(r)`` on ``|r| <= ln2 / 2`` with the degree-5 polynomial P of
Cephes' ``expf`` (Horner with FMA), then ``e^x = e^r * 2^n1 * 2^n2`` with
``n1 = n >> 1``, ``n2 = n - n1``: both factors are normal floats, the first product is exact,
so the result is rounded once, also when it is subnormal. AVX-512 scales by ``2^n`` in one
instruction instead (``vscalefps``: ``e^r * 2^n`` rounded once, the same value; bitwise
equal to the two-factor scaling on all 2^32 floats, checked when it went in): the
conversion, the integer steps and the two multiplies (9 instructions) become one, ~20% less
time per vector on Zen 5.

Special values: x is clamped to ``[-104, 89]`` first (beyond them e^x rounds to 0 or
overflows to inf, which the clamped value gives too): ``-inf -> +0``, ``+inf -> +inf``,
overflow (``x > 88.7228``) ``-> +inf``, underflow ``-> +0`` or the nearest subnormal; NaN in,
NaN out (the lane's input, quieted). The NaN needs no blend of its own: ``max``/``min`` return
their second operand when either is NaN, so the clamp (bound first, x second) keeps x's NaN;
every later step has that NaN as an operand (x86 returns a NaN operand, quieted; all of them
are x's here), and ``cvtps_epi32`` of NaN (``0x80000000``) gives the scales ``2^n1 = 2^n2 =
1.0`` (the bias' add and the shift wrap to ``127 << 23``), so ``y`` is x quieted
(``vscalefps`` of two NaNs returns its first, quieted: x's too). This saves
the compare, add and blend per vector that a select of ``x + x`` cost (the exp is ~15% of
flash attention's time at head 64).

Error bound: measured against glibc ``expf`` (correctly rounded to within 0.502 ulp):
at most 1 ulp over every float (``benchmarks/vector_exp.py`` runs all 2^32 of them);
the test suite checks every special value and 10^6 random floats.
"""

from __future__ import annotations

__all__ = ["EXP256", "EXP512"]

_COEFFS = (
    "1.9875691500E-4f",
    "1.3981999507E-3f",
    "8.3334519073E-3f",
    "4.1665795894E-2f",
    "1.6666665459E-1f",
    "5.0000001201E-1f",
)


def _exp(w: str, v: str, vi: str) -> str:
    """The exp helper for vector width ``w`` (256 or 512), float type ``v``, int type ``vi``."""
    m = f"_mm{w}"
    poly = f"    {v} p = {m}_set1_ps({_COEFFS[0]});\n"
    for c in _COEFFS[1:]:
        poly += f"    p = {m}_fmadd_ps(p, r, {m}_set1_ps({c}));\n"
    if w == "256":
        rnd = "_mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"
    else:
        rnd = "_mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"
    return (
        f"static inline {v} cs_exp{w}_ps({v} x) {{\n"
        "    /* e^x, <= 1 ulp from glibc's expf; see cursched/platforms/x86/vmath_c.py */\n"
        f"    {v} lo = {m}_max_ps({m}_set1_ps(-104.0f), x);  /* NaN x: x */\n"
        f"    {v} xc = {m}_min_ps({m}_set1_ps(89.0f), lo);\n"
        f"    {v} t = {m}_mul_ps(xc, {m}_set1_ps(1.44269504088896341f));\n"
        f"    {v} n = {rnd};\n"
        f"    {v} r = {m}_fnmadd_ps(n, {m}_set1_ps(0.693145751953125f), xc);\n"
        f"    r = {m}_fnmadd_ps(n, {m}_set1_ps(1.42860682030941723e-06f), r);\n"
        + poly
        + f"    {v} r2 = {m}_mul_ps(r, r);\n"
        f"    p = {m}_fmadd_ps(p, r2, {m}_add_ps(r, {m}_set1_ps(1.0f)));\n"
        + (_scale_512() if w == "512" else _scale(w, v, vi))
    )


def _scale_512() -> str:
    """AVX-512's ``e^r * 2^n``: one ``vscalefps`` (n is integral, ``|n| <= 150``)."""
    return "    return _mm512_scalef_ps(p, n);\n}"


def _scale(w: str, v: str, vi: str) -> str:
    """``e^r * 2^n1 * 2^n2`` by integer exponents (AVX2 has no ``vscalefps``)."""
    m = f"_mm{w}"
    return (
        f"    {vi} ni = {m}_cvtps_epi32(n);\n"
        f"    {vi} n1 = {m}_srai_epi32(ni, 1);\n"
        f"    {vi} n2 = {m}_sub_epi32(ni, n1);\n"
        f"    {vi} bias = {m}_set1_epi32(127);\n"
        f"    {v} s1 = {m}_castsi{w}_ps({m}_slli_epi32({m}_add_epi32(n1, bias), 23));\n"
        f"    {v} s2 = {m}_castsi{w}_ps({m}_slli_epi32({m}_add_epi32(n2, bias), 23));\n"
        f"    return {m}_mul_ps({m}_mul_ps(p, s1), s2);\n"
        "}"
    )


#: ``__m256 cs_exp256_ps(__m256)`` (AVX2 + FMA).
EXP256 = "#include <immintrin.h>\n" + _exp("256", "__m256", "__m256i")
#: ``__m512 cs_exp512_ps(__m512)`` (AVX-512F).
EXP512 = "#include <immintrin.h>\n" + _exp("512", "__m512", "__m512i")
