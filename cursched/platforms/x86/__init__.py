"""The x86 instruction library: AVX2 + FMA and AVX-512F registers and instructions on f32.

Memories ``AVX2`` (``__m256``) and ``AVX512`` (``__m512``); instructions named as Exo's
(``mm256_loadu_ps``, ``mm512_fmadd_ps``, ...) plus vector math (``mm256_exp_ps``,
``mm256_max_ps`` with ``fmaxf``'s NaN rule, horizontal ``mm256_reduce_add_ps`` /
``mm256_reduce_max_ps``) whose bodies state their meaning, so ``replace`` proves each use.
``cpu_features()`` reports what the running CPU has (``cpu_vendor()`` its maker); ``isa()``
picks the widest supported set (``"avx512"``, ``"avx2"`` or ``None``), and ``Proc.compile``
refuses code using a memory whose instructions the CPU lacks (``CodegenError``).
"""

from __future__ import annotations

from cursched.codegen.cpu import cpu_features, cpu_vendor
from cursched.platforms.x86 import avx2, avx2_arith, avx512, avx512_arith
from cursched.platforms.x86.avx2 import *  # noqa: F403 - the library's instructions
from cursched.platforms.x86.avx2_arith import *  # noqa: F403
from cursched.platforms.x86.avx512 import *  # noqa: F403
from cursched.platforms.x86.avx512_arith import *  # noqa: F403
from cursched.platforms.x86.memories import AVX2, AVX512, VectorMemory

__all__ = [
    "AVX2",
    "AVX512",
    "VectorMemory",
    "cpu_features",
    "cpu_vendor",
    "isa",
    *avx2.__all__,
    *avx2_arith.__all__,
    *avx512.__all__,
    *avx512_arith.__all__,
]


def isa() -> str | None:
    """The widest vector instruction set of this library the running CPU supports."""
    have = cpu_features()
    if set(AVX512.requires) <= have:
        return "avx512"
    if set(AVX2.requires) <= have:
        return "avx2"
    return None
