"""Memories: where a buffer lives. Users define their own by subclassing ``Memory``.

A memory is a class (never instantiated), compared by identity, as in Exo. The class methods
describe how the C backend allocates, frees and addresses buffers in it; the IR itself only
stores the class.

Example:
    >>> class AVX2(Memory):
    ...     '''256-bit vector registers.'''
    ...     @classmethod
    ...     def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
    ...         return f"__m256 {name};"
"""

from __future__ import annotations

from typing import ClassVar


class Memory:
    """Base class of memories. Subclass it to declare a memory of your own."""

    #: "c" for host memories, "cuda" for memories of the CUDA backend.
    target: ClassVar[str] = "c"
    #: Whether ordinary scalar code may read and write it directly.
    addressable: ClassVar[bool] = True
    #: Whether a window (strided view) into it may be taken.
    windowable: ClassVar[bool] = True

    @classmethod
    def name(cls) -> str:
        return cls.__name__

    @classmethod
    def c_global(cls) -> str:
        """Text placed once at the top of the generated C file (includes, typedefs)."""
        return ""

    @classmethod
    def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        """C statement(s) allocating buffer ``name`` of ``ctype`` elements and ``shape``."""
        if not shape:
            return f"{ctype} {name};"
        count = " * ".join(f"({s})" for s in shape)
        return f"{ctype} *{name} = ({ctype} *)malloc(sizeof({ctype}) * {count});"

    @classmethod
    def c_free(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        """C statement(s) releasing the buffer (empty for scalars)."""
        return f"free({name});" if shape else ""


class DRAM(Memory):
    """Main memory, heap-allocated (stack-allocated by the C backend when small and constant)."""


class DRAM_STACK(Memory):  # noqa: N801 - the name users know from Exo
    """Main memory on the C stack (sizes must be constant)."""

    @classmethod
    def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        if not shape:
            return f"{ctype} {name};"
        count = " * ".join(f"({s})" for s in shape)
        return f"{ctype} {name}[{count}];"

    @classmethod
    def c_free(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        return ""


class DRAM_STATIC(Memory):  # noqa: N801 - the name users know from Exo
    """Main memory in static storage (sizes must be constant)."""

    @classmethod
    def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        if not shape:
            return f"static {ctype} {name};"
        count = " * ".join(f"({s})" for s in shape)
        return f"static {ctype} {name}[{count}];"

    @classmethod
    def c_free(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        return ""


class GLOBAL(Memory):
    """CUDA global memory."""

    target = "cuda"


class SHARED(Memory):
    """CUDA shared memory (one copy per thread block)."""

    target = "cuda"


class REGISTER(Memory):
    """CUDA registers (one copy per thread); not windowable."""

    target = "cuda"
    windowable = False


BUILTIN_MEMORIES: dict[str, type[Memory]] = {
    m.__name__: m for m in (DRAM, DRAM_STACK, DRAM_STATIC, GLOBAL, SHARED, REGISTER)
}
