"""Allocation sizes (issue 11, finding 3; docs/semantics.md, "Sizes").

``t: f32[2**50, 4]`` was accepted and the compiled call died with SIGSEGV (no NULL check
after ``malloc``), ``2**60`` wrapped to a 0-byte block written past its end, a size above
int64 was pasted into the C source, and the interpreter raised an untyped ``MemoryError`` or
``ValueError``. Compiled calls run in a child process here, so a crash fails the test instead
of killing pytest.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from cursched import DRAM, proc
from cursched.codegen.c import generate_unit
from cursched.errors import AllocationError, CurschedError, TypeCheckError
from tests.codegen.child import run_child

E50, E60, E70 = 2**50, 2**60, 2**70
HERE = Path(__file__).parent


def test_constant_allocation_over_int64_bytes_is_a_type_error() -> None:
    with pytest.raises(TypeCheckError, match=r"more than 2\*\*62") as info:

        @proc
        def wraps(x: f32[4] @ DRAM):
            t: f32[E60, 4] @ DRAM
            t[0, 0] = x[0]
            x[0] = t[0, 0]

    err = info.value
    assert err.srcinfo is not None and err.srcinfo.filename == __file__
    assert "t: f32[E60, 4]" in str(err)  # the caret excerpt shows the annotation


def test_extent_above_int64_is_a_type_error() -> None:
    with pytest.raises(TypeCheckError, match="extent 1180591620717411303424 is too large"):

        @proc
        def huge(x: f32[4] @ DRAM):
            t: f32[E70] @ DRAM
            t[0] = x[0]
            x[0] = t[0]

    with pytest.raises(TypeCheckError, match="too large"):

        @proc
        def huge_arg(x: f32[E70] @ DRAM):
            x[0] = 0.0


@proc
def big_alloc(n: size, x: f32[n] @ DRAM):
    assert n <= 4
    t: f32[E50, 4] @ DRAM
    for i in seq(0, n):
        t[i, 0] = x[i]
        x[i] = t[i, 0] + 1.0


@proc
def sized_alloc(n: size, m: size, x: f32[n] @ DRAM):
    t: f32[n, m] @ DRAM
    for i in seq(0, n):
        t[i, 0] = x[i]
        x[i] = t[i, 0] + 1.0


@proc
def alloc_in_loop(n: size, m: size, x: f32[n] @ DRAM):
    small: f32[n] @ DRAM
    for i in seq(0, n):
        t: f32[m] @ DRAM
        t[0] = x[i]
        small[i] = t[0]
    for i in seq(0, n):
        x[i] = small[i] + 1.0


def test_interpreter_raises_allocation_error_before_allocating() -> None:
    x = np.ones(4, np.float32)
    with pytest.raises(AllocationError) as info:
        big_alloc.interpret(4, x)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, CurschedError)
    with pytest.raises(AllocationError):
        sized_alloc.interpret(4, 2**61, x)  # 2**63 * 4 bytes: numpy would say "too big"


def test_heap_allocations_are_checked_in_c() -> None:
    c = generate_unit("sized_alloc", [sized_alloc.ir()]).c_source
    assert "cs_malloc(cs_mul_sz(cs_mul_sz(sizeof(float), n), m))" in c
    assert "if (t == NULL) {" in c
    loop = generate_unit("alloc_in_loop", [alloc_in_loop.ir()]).c_source
    # inside a loop the failure skips the rest of the iteration; ``small`` stays allocated
    assert "if (t == NULL) {\n            continue;\n        }" in loop


_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    sys.path.insert(0, {here!r})
    import test_codegen_sizes as m
    from cursched.errors import AllocationError

    def run(p, *args):
        try:
            p.compile()(*args)
        except AllocationError as e:
            print("AllocationError", isinstance(e, MemoryError))
        else:
            print("ran")

    x = np.ones(4, np.float32)
    run(m.big_alloc, 4, x)
    run(m.sized_alloc, 4, 2**61, x)     # the byte count overflows: no 0-byte block
    run(m.sized_alloc, 4, 2**40, x)     # 16 TiB: malloc fails
    run(m.alloc_in_loop, 4, 2**44, x)   # fails in every iteration of a loop
    y = np.ones(4, np.float32)
    m.alloc_in_loop.compile()(4, 3, y)  # and the same unit still works afterwards
    print(y.tolist())
    """
)


def test_compiled_huge_allocations_raise_allocation_error(codegen_cache: Path) -> None:
    out = run_child(_CHILD.format(here=str(HERE)), codegen_cache)
    lines = out.split("\n")
    assert lines[:4] == ["AllocationError True"] * 4, out
    assert lines[4] == "[2.0, 2.0, 2.0, 2.0]"
