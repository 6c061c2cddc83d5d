"""Memories: where a buffer lives. Users define their own by subclassing ``Memory``.

A memory is a class (never instantiated), compared by identity, as in Exo. The class methods
describe how the C backend allocates, frees and addresses buffers in it; the IR itself only
stores the class.

Hooks (class methods; every argument is C text; every default is plain row-major C):

* ``c_global()``: text placed once at the top of the C file (``#include <immintrin.h>``).
* ``c_alloc(name, ctype, shape)`` / ``c_free(...)``: declare and release an allocation.
* ``c_window(name, ctype, shape, starts, dims)``: the C text a window of an allocation
  becomes, i.e. what an instruction template's ``{x}``/``{x_data}`` reads. ``starts`` holds
  the index of the window's first element in every dimension of the allocation, ``dims`` the
  dimensions the window keeps. ``None`` (the default) means a pointer ``name + offset``.
  A register memory returns an lvalue instead: for ``Ct: f32[4, 8] @ AVX2``, declared as
  ``__m256 Ct[4];``, the window ``Ct[i, 0:8]`` is ``Ct[i]`` (Exo's ``window`` hook).
* ``c_access(name, ctype, shape, idx)``: the C lvalue of one element (Exo's ``read`` and
  ``write``), ``None`` for ``name[offset]``. Consulted only when ``addressable`` is true:
  scalar code never touches a non-addressable memory.
* ``passes_as``: a memory whose parameters also take this memory's buffers (the same C
  pointer; only the allocation differs): ``DRAM_KEPT`` buffers are passed for ``DRAM``.
* ``requires``: CPU features (``/proc/cpuinfo`` flag names) the running CPU must have for
  code using the memory; ``Proc.compile`` refuses with a ``CodegenError`` when one is
  missing (``cursched.codegen.cpu``).

Hooks see the allocation itself (its name and shape), never an intermediate window: the
backend composes windows of windows before it calls them. Windows of a memory whose
``c_window`` returns text can only be passed to instructions (their template is expanded in
place); a call of an ordinary proc needs a pointer and is a ``CodegenError``.

Example (a memory of GCC vectors of 4 floats, one per row)::

    class VEC4(Memory):
        addressable = False

        @classmethod
        def c_alloc(cls, name, ctype, shape):
            return f"v4f {name}[{shape[0]}];"

        @classmethod
        def c_window(cls, name, ctype, shape, starts, dims):
            return f"{name}[{starts[0]}]"
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
    #: CPU features (``/proc/cpuinfo`` flag names, e.g. ``"avx2"``) that code using it needs.
    requires: ClassVar[tuple[str, ...]] = ()
    #: A memory whose buffers a parameter in it also takes (same addressing and C pointer;
    #: only the allocation differs): ``DRAM_KEPT`` buffers are passed for ``DRAM`` ones.
    passes_as: ClassVar[type[Memory] | None] = None

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

    @classmethod
    def c_window(
        cls,
        name: str,
        ctype: str,
        shape: tuple[str, ...],
        starts: tuple[str, ...],
        dims: tuple[int, ...],
    ) -> str | None:
        """C text of the window of allocation ``name`` whose first element is at ``starts``
        and which keeps the dimensions ``dims`` of ``shape``; ``None`` for the default, a
        pointer to that element with the row-major allocation's strides."""
        return None

    @classmethod
    def c_access(
        cls, name: str, ctype: str, shape: tuple[str, ...], idx: tuple[str, ...]
    ) -> str | None:
        """C lvalue of element ``idx`` of allocation ``name``; ``None`` for the default,
        ``name[row-major offset]``."""
        return None


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


class DRAM_KEPT(Memory):  # noqa: N801 - named like Exo's DRAM memories
    """Main memory kept between calls: the C backend keeps one heap block per allocation
    site and thread (``static _Thread_local``), grows it when a call needs more and frees
    it when the thread ends (a pthread key's destructor) or the library is unloaded, not at
    the proc's return. For the packing buffers of a proc called many times (OpenBLAS keeps its
    buffers too): a block of 100s of KiB freed at every return is given back to the
    system by ``malloc``'s trimming and faulted in again, page by page, on the next call.
    Allocation failures are reported as for ``DRAM``. A site's block is reused by the
    next execution of the site on the same thread, which is sound because an allocation's
    lifetime ends with its block and procs do not recurse. Its buffers are passed for
    ``DRAM`` parameters (``passes_as``): a callee sees the same pointer."""

    passes_as = DRAM


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


def passes_for(have: object, want: object) -> bool:
    """Whether a buffer in memory ``have`` may be passed for a parameter in ``want``: the
    same memory, or ``have.passes_as`` is ``want``."""
    return have is want or (want is not None and getattr(have, "passes_as", None) is want)


BUILTIN_MEMORIES: dict[str, type[Memory]] = {
    m.__name__: m for m in (DRAM, DRAM_STACK, DRAM_STATIC, DRAM_KEPT, GLOBAL, SHARED, REGISTER)
}
