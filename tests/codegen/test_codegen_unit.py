"""Focused checks of the generator: names, floor division, heap buffers, units, ABI."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, GLOBAL, CodegenError, Memory, Proc, instr, proc
from cursched.codegen.c import generate_unit
from cursched.codegen.c.expressions import binary, is_atom
from cursched.codegen.c.naming import Namer, sanitize
from cursched.ir.symbols import Sym


def test_sanitize_keeps_names_but_avoids_c_words() -> None:
    assert sanitize("x") == "x"
    assert sanitize("float") == "float_"
    assert sanitize("free") == "free_"
    assert sanitize("cs_tmp") == "cs_tmp_"


def test_namer_unique_and_scoped() -> None:
    names = Namer({"f"})
    i1, i2 = Sym("i"), Sym("i")
    names.push()
    assert names.bind(i1) == "i"
    names.push()
    assert names.bind(i2) == "i_1"  # shadowing an outer i is avoided
    names.pop()
    names.pop()
    names.push()
    assert names.bind(Sym("i")) == "i"  # a sibling block reuses the name
    assert names.bind(Sym("f")) == "f_1"  # global names are never reused


@pytest.mark.parametrize(
    ("a", "op", "b", "text"),
    [
        ("a * b", "+", "c", "a * b + c"),
        ("a", "-", "b + c", "a - (b + c)"),
        ("a + b", "+", "c", "a + b + c"),
        ("a", "+", "b + c", "a + (b + c)"),
        ("a + b", "*", "c", "(a + b) * c"),
        ("i < n", "&&", "j < n", "(i < n) && (j < n)"),
        ("(float)x[i]", "*", "y", "(float)x[i] * y"),
        ("a", "-", "-1.0f", "a - -1.0f"),
    ],
)
def test_binary_parenthesises_by_precedence(a: str, op: str, b: str, text: str) -> None:
    assert binary(a, op, b) == text


def test_atoms() -> None:
    assert is_atom("x") and is_atom("1.5f") and is_atom("f(a, b)") and is_atom("A[i * n + j]")
    assert is_atom("(float)A[i]") and not is_atom("(float)(a + b) + c")
    assert not is_atom("*x") and not is_atom("(a) + (b)")


@proc
def keywords(n: size, float: f32[n] @ DRAM, free: f32[n] @ DRAM):
    restrict: f32
    for int in seq(0, n):
        restrict = float[int]
        free[int] = restrict * 2.0


def test_c_keywords_as_names() -> None:
    c = generate_unit("keywords", [keywords.ir()]).c_source
    assert "float *restrict float_" in c and "for (int_fast64_t int_ = 0;" in c
    f = keywords.compile()
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    f(4, x, y)
    assert (y == 2 * x).all()


@proc
def floors(n: size, k: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert n >= 4
    big: f32[2048] @ DRAM
    for i in seq(0, n):
        big[i % 2048] = x[i]
    for i in seq(0, n):
        y[(i + k) % 4] += big[i % 2048]
    for i in seq(0, n):
        y[(k - i) / 8 - (k - i - 7) / 8] += 1.0


@pytest.mark.parametrize("k", [-13, -1, 0, 5])
def test_floor_division_of_negative_numbers_and_heap(k: int) -> None:
    f = floors.compile()
    x = np.arange(9, dtype=np.float32)
    y1, y2 = np.zeros(9, np.float32), np.zeros(9, np.float32)
    f(9, k, x, y1)
    floors.interpret(9, k, x, y2)
    assert y1.tobytes() == y2.tobytes()


@proc
def inner(n: size, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        x[i] = x[i] + 1.0


@proc
def outer(n: size, A: f32[n, n] @ DRAM):
    for i in seq(0, n):
        inner(n, A[i, 0:n])
        inner(n, A[0:n, i])


def test_callees_emitted_once_before_callers() -> None:
    unit = generate_unit("outer", [outer.ir()])
    c = unit.c_source
    assert c.count("void inner(") == 1 and c.index("void inner(") < c.index("void outer(")
    assert "inner(n, A + i * n, 1);" in c and "inner(n, A + i, n);" in c
    assert [ln for ln in unit.h_source.splitlines() if ln.startswith("void ")] == [
        ln.split(" {")[0] + ";" for ln in c.splitlines() if ln.startswith("void ")
    ]
    f = outer.compile()
    A = np.zeros((3, 3), np.float32)
    f(3, A)
    assert (A == 2).all()


@proc
def noargs():
    t: f32[4] @ DRAM
    for i in seq(0, 4):
        t[i] = 0.0


def test_proc_without_arguments() -> None:
    assert "void noargs(void)" in generate_unit("noargs", [noargs.ir()]).c_source
    noargs.compile()()


class ARENA(Memory):
    """A user memory with its own global text and allocation hooks."""

    @classmethod
    def c_global(cls) -> str:
        return "static float cs_test_arena[1024];"

    @classmethod
    def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        return f"{ctype} *{name} = cs_test_arena; /* arena */"

    @classmethod
    def c_free(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        return f"/* release {name} */"


class VREG(Memory):
    """Vector registers: only instructions may touch them."""

    addressable = False


@instr(
    "cs_test_copy4({dst_data}, {src_data});",
    c_global="#include <string.h>\n"
    "static inline void cs_test_copy4(float *d, const float *s) { memcpy(d, s, 16); }",
)
def copy4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    for i in seq(0, 4):
        dst[i] = src[i]


@proc
def arena_copy(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    t: f32[8] @ ARENA
    for i in seq(0, 8):
        t[i] = x[i]
    for i in seq(0, 8):
        x[i] = t[(i + 4) % 8]
    copy4(y[0:4], x[0:4])
    copy4(y[4:8], x[4:8])


def test_memory_hooks_and_instruction_globals() -> None:
    c = generate_unit("arena_copy", [arena_copy.ir()]).c_source
    assert c.count("static float cs_test_arena[1024];") == 1
    assert c.count("#include <string.h>") == 1
    assert "float *t = cs_test_arena; /* arena */" in c and "/* release t */" in c
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    arena_copy.compile()(x, y)
    assert y.tolist() == [4, 5, 6, 7, 0, 1, 2, 3]


@proc
def touches_register(x: f32[4] @ DRAM):
    r: f32[4] @ VREG
    for i in seq(0, 4):
        r[i] = x[i]


@proc
def gpu_arg(x: f32[4] @ GLOBAL):
    for i in seq(0, 4):
        x[i] = 0.0


@pytest.mark.parametrize(
    ("p", "message"),
    [(touches_register, "only instructions can access"), (gpu_arg, "not a memory of the C")],
)
def test_memories_c_cannot_use(p: Proc, message: str) -> None:
    with pytest.raises(CodegenError, match=message):
        generate_unit(p.name(), [p.ir()])


@proc
def floor_mix(k: index, y: i32[5, 5] @ DRAM):
    for i in seq(0, 5):
        y[((k * 3 - i) / 4) % 5, 0] += 1
        y[(k - 7 * i) % 5, 1] += 1
        y[((k + i) / 3) % 5, 2] += 1
        y[(k - (i - k) / 2 * 2) % 5, 3] += 1
        y[(-(k % 3) + (-k) / 5) % 5, 4] += 1


def test_floor_division_and_modulo_for_every_sign() -> None:
    f = floor_mix.compile()
    for k in range(-20, 21):
        a, b = np.zeros((5, 5), np.int32), np.zeros((5, 5), np.int32)
        f(k, a)
        floor_mix.interpret(k, b)
        assert (a == b).all(), k
