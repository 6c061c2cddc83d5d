"""Golden files of the generated C (``pytest --update-golden`` rewrites them).

One test per construct family: tensors and reductions, windows and calls, instructions,
allocations on the stack and the heap, ``par`` loops, floor division, precision casts,
externs, scopes, integer wrap-around. Reviewing a diff here is reviewing the code generator.
"""

from __future__ import annotations

import pytest
from corpus import CASES

from cursched import DRAM, proc
from cursched.codegen.c import generate_unit

BY_NAME = {c.name: c for c in CASES}
GOLDEN_CORPUS = [
    "sgemm",
    "sgemm_tiled",
    "qgemm_i8",
    "transpose_par",
    "blur_2pass",
    "softmax_online",
    "axpy_win",
    "copy2d",
    "tril",
    "mixed_floats",
    "wrap_ints",
    "static_lut",
    "copy_with_instr",
    "scoped_stages",
    "abs_select",
    "swish_gate",
]


@pytest.mark.parametrize("name", GOLDEN_CORPUS)
def test_corpus_c(name: str, golden) -> None:
    golden.check(generate_unit(name, [BY_NAME[name].proc.ir()]).c_source)


@proc
def heap_and_floor(n: size, k: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert n >= 4
    big: f32[2048] @ DRAM
    dyn: f32[n] @ DRAM
    for i in seq(0, n):
        dyn[i] = x[i]
    for i in seq(0, n):
        big[i % 2048] = dyn[i]
        y[i] = big[i % 2048]
    if k >= 0:
        for i in seq(0, n):
            y[(i + k) % 4] += 1.0


def test_heap_alloc_and_floor_division(golden) -> None:
    unit = generate_unit("heap_and_floor", [heap_and_floor.ir()])
    # 8 KiB and n floats go to the heap (checked allocations) and are freed at the end of
    # the block, and ``big`` also on the path where allocating ``dyn`` fails;
    # (i + k) % 4 is not provably >= 0
    assert unit.c_source.count("cs_malloc(cs_mul_sz(") == 2
    assert unit.c_source.count("free(") == 3
    assert "    free(dyn);\n    free(big);\n}" in unit.c_source
    assert "cs_floormod" in unit.c_source
    golden.check(unit.c_source)


def test_header(golden) -> None:
    unit = generate_unit("two", [BY_NAME["axpy_win"].proc.ir(), BY_NAME["copy2d"].proc.ir()])
    golden.check(unit.h_source)
