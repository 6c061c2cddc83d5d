"""Vector register memories: ``AVX2`` (``__m256``, 8 floats) and ``AVX512`` (``__m512``, 16).

A buffer ``t: f32[d0, ..., dk, W] @ AVX2`` (``W`` = 8) is an array of registers
``__m256 t[d0]...[dk];``: its last dimension is the lanes of one register, the others index
registers. Only instructions touch it (``addressable = False``), through windows of one whole
register, ``t[i0, ..., ik, 0:W]``, which the ``c_window`` hook prints as the register lvalue
``t[i0]...[ik]``. With constant indices (the register tile of a fully unrolled micro-kernel)
the compiler keeps every element of the array in a register.
"""

from __future__ import annotations

from typing import ClassVar

from cursched.errors import CodegenError
from cursched.ir.memory import Memory

__all__ = ["AVX2", "AVX512", "VectorMemory"]


class VectorMemory(Memory):
    """Base of the x86 register memories: ``lanes`` floats in one C vector ``vtype``."""

    addressable = False
    lanes: ClassVar[int] = 0
    vtype: ClassVar[str] = ""

    @classmethod
    def c_global(cls) -> str:
        return "#include <immintrin.h>"

    @classmethod
    def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        if ctype != "float":
            raise CodegenError(f"{cls.name()} holds f32 vectors, not {ctype} ('{name}')")
        if not shape or shape[-1] != str(cls.lanes):
            raise CodegenError(
                f"{cls.name()} buffer '{name}' must have {cls.lanes} as its last dimension"
                f" (one register), got [{', '.join(shape)}]"
            )
        regs = "".join(f"[{d}]" for d in shape[:-1])
        return f"{cls.vtype} {name}{regs};"

    @classmethod
    def c_free(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        return ""

    @classmethod
    def c_window(
        cls,
        name: str,
        ctype: str,
        shape: tuple[str, ...],
        starts: tuple[str, ...],
        dims: tuple[int, ...],
    ) -> str | None:
        last = len(shape) - 1
        if dims != (last,) or starts[-1] != "0":
            raise CodegenError(
                f"{cls.name()} buffer '{name}': an instruction can only take one whole register"
                f" ({name}[..., 0:{cls.lanes}]), not a view starting at"
                f" [{', '.join(starts)}] keeping dimensions {list(dims)}"
            )
        return name + "".join(f"[{i}]" for i in starts[:-1])


class AVX2(VectorMemory):
    """256-bit AVX registers (``__m256``, 8 x f32). Code using them needs AVX2 and FMA
    (every x86 CPU with AVX2 since 2013 has FMA3; the library's multiply-add uses it)."""

    lanes = 8
    vtype = "__m256"
    requires = ("avx", "avx2", "fma")


class AVX512(VectorMemory):
    """512-bit AVX-512 registers (``__m512``, 16 x f32); code using them needs AVX-512F."""

    lanes = 16
    vtype = "__m512"
    requires = ("avx512f",)
