"""Memory hooks (``Memory.c_window`` / ``c_access``) and the x86 register memories: register
tiles of any rank compile, windows of windows compose, CPU features are checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cursched import DRAM, Memory, Proc, instr, proc, replace
from cursched.codegen.c import generate_unit
from cursched.errors import CodegenError
from cursched.platforms.x86 import (
    AVX2,
    AVX512,
    cpu_features,
    cpu_vendor,
    isa,
    mm256_fmadd_ps,
    mm256_loadu_ps,
    mm256_storeu_ps,
    mm512_loadu_ps,
    mm512_storeu_ps,
)


@proc
def tile_rank2(A: f32[4, 8] @ DRAM, B: f32[4, 8] @ DRAM):
    Ct: f32[4, 8] @ AVX2
    for i in seq(0, 4):
        for j in seq(0, 8):
            Ct[i, j] = A[i, j]
    for i in seq(0, 4):
        for j in seq(0, 8):
            Ct[i, j] += Ct[i, j] * Ct[i, j]
    for i in seq(0, 4):
        for j in seq(0, 8):
            B[i, j] = Ct[i, j]


def _vectorised_rank2() -> Proc:
    p = tile_rank2
    for ins in (mm256_loadu_ps, mm256_fmadd_ps, mm256_storeu_ps):
        p, _ = replace(p, p.find_loop("j #0"), ins)
    return p


def test_rank2_register_tile_compiles(golden: object) -> None:
    p = _vectorised_rank2()
    c = generate_unit("tile_rank2", [p.ir()]).c_source
    # the allocation is an array of registers and each window one register lvalue
    assert "__m256 Ct[4];" in c
    assert "Ct[i] = _mm256_loadu_ps((A + i * 8));" in c
    assert "Ct[i] = _mm256_fmadd_ps(Ct[i], Ct[i], Ct[i]);" in c
    assert "Ct + " not in c
    golden.check(c)  # type: ignore[attr-defined]
    a = np.arange(32, dtype=np.float32).reshape(4, 8) / 7
    b = np.zeros_like(a)
    p.compile()(a, b)
    np.testing.assert_allclose(b, a + a * a, rtol=1e-6)


@proc
def tile_rank3(A: f32[2, 3, 8] @ DRAM, B: f32[2, 3, 8] @ DRAM):
    Ct: f32[2, 3, 8] @ AVX2
    for i in seq(0, 2):
        for j in seq(0, 3):
            w = Ct[i, :, :]
            for k in seq(0, 8):
                w[j, k] = A[i, j, k]
    for i in seq(0, 2):
        for j in seq(0, 3):
            for k in seq(0, 8):
                B[i, j, k] = Ct[i, j, k]


def test_rank3_tile_and_window_of_window() -> None:
    p = tile_rank3
    # the stride analysis does not follow window statements (stride(w, 1) == 1 is not
    # derived from ``w = Ct[i, :, :]``), so this one replace skips its proofs; what the test
    # checks is the C backend's composition of the two windows
    p, _ = replace(p, p.find_loop("k #0"), mm256_loadu_ps, unsafe_skip_checks=True)
    p, _ = replace(p, p.find_loop("k #0"), mm256_storeu_ps)
    f = p.compile()
    # ``w = Ct[i, :, :]`` is a view (no pointer), and ``w[j, 0:8]`` composes to Ct[i][j]
    assert "__m256 Ct[2][3];" in f.c_source
    assert "Ct[i][j] = _mm256_loadu_ps(" in f.c_source
    a = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    b = np.zeros_like(a)
    f(a, b)
    assert np.array_equal(a, b)


class VEC4(Memory):
    """A user memory of GCC vectors of 4 floats: both hooks, element access included."""

    @classmethod
    def c_global(cls) -> str:
        return "typedef float cs_v4f __attribute__((vector_size(16)));"

    @classmethod
    def c_alloc(cls, name: str, ctype: str, shape: tuple[str, ...]) -> str:
        return f"cs_v4f {name}[{shape[0]}];"

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
        return f"{name}[{starts[0]}]"

    @classmethod
    def c_access(
        cls, name: str, ctype: str, shape: tuple[str, ...], idx: tuple[str, ...]
    ) -> str | None:
        return f"{name}[{idx[0]}][{idx[1]}]"


@instr("{dst} = {dst} * 2.0f;")
def double4(dst: [f32][4] @ VEC4):
    for i in seq(0, 4):
        dst[i] = dst[i] * 2.0


@proc
def user_vectors(x: f32[3, 4] @ DRAM):
    v: f32[3, 4] @ VEC4
    for i in seq(0, 3):
        for j in seq(0, 4):
            v[i, j] = x[i, j]
    for i in seq(0, 3):
        for j in seq(0, 4):
            v[i, j] = v[i, j] * 2.0
    for i in seq(0, 3):
        for j in seq(0, 4):
            x[i, j] = v[i, j] + 1.0


def test_user_memory_access_and_window_hooks() -> None:
    p, _ = replace(user_vectors, user_vectors.find_loop("j #1"), double4)
    f = p.compile()
    assert "v[i][j] = x[i * 4 + j];" in f.c_source  # c_access
    assert "v[i] = v[i] * 2.0f;" in f.c_source  # c_window, in the template
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = x * 2 + 1
    f(x)
    assert np.array_equal(x, expected)


@proc
def half_register(A: f32[8] @ DRAM):
    t: f32[8] @ AVX2
    for i in seq(0, 4):
        t[i] = A[i]


def test_register_view_must_be_whole() -> None:
    from cursched.ir.memory import Memory as Base

    assert AVX2.c_window("t", "float", ("8",), ("0",), (0,)) == "t"
    with pytest.raises(CodegenError, match="one whole register"):
        AVX2.c_window("t", "float", ("2", "8"), ("0", "4"), (1,))
    with pytest.raises(CodegenError, match="last dimension"):
        AVX2.c_alloc("t", "float", ("4",))
    with pytest.raises(CodegenError, match="f32"):
        AVX512.c_alloc("t", "double", ("16",))
    assert Base.c_window("t", "float", ("8",), ("0",), (0,)) is None
    with pytest.raises(CodegenError, match="only instructions can access"):
        half_register.compile()


@proc
def copy16(A: f32[16] @ DRAM, B: f32[16] @ DRAM):
    t: f32[16] @ AVX512
    for i in seq(0, 16):
        t[i] = A[i]
    for i in seq(0, 16):
        B[i] = t[i]


def _avx512_copy() -> Proc:
    p, _ = replace(copy16, copy16.find_loop("i #0"), mm512_loadu_ps)
    p, _ = replace(p, p.find_loop("i #0"), mm512_storeu_ps)
    return p


def test_avx512_on_a_cpu_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    p = _avx512_copy()
    assert "_mm512_loadu_ps" in generate_unit("copy16", [p.ir()]).c_source  # text is fine
    monkeypatch.setenv("CURSCHED_CPU_FEATURES", "sse4_2,avx,avx2,fma")
    assert isa() == "avx2"
    with pytest.raises(CodegenError, match=r"lacks avx512f \(needed by memory AVX512\)"):
        p.compile()


@pytest.mark.skipif("avx512f" in cpu_features(), reason="this CPU has AVX-512")
def test_avx512_refused_on_this_cpu() -> None:
    with pytest.raises(CodegenError, match="avx512f"):
        _avx512_copy().compile()


@pytest.mark.skipif("avx512f" not in cpu_features(), reason="this CPU lacks AVX-512")
def test_avx512_runs_where_present() -> None:
    a = np.arange(16, dtype=np.float32)
    b = np.zeros_like(a)
    _avx512_copy().compile()(a, b)
    assert np.array_equal(a, b)


def test_cpu_features_reads_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CURSCHED_CPU_FEATURES", raising=False)
    feats = cpu_features()
    assert feats, "no CPU flags found"
    assert ("avx2" in feats) == (isa() in ("avx2", "avx512"))


def test_cpu_vendor_reads_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """``cpu_vendor`` agrees with ``/proc/cpuinfo``'s ``vendor_id``, and the environment
    variable states another maker (tests and cross-builds)."""
    monkeypatch.delenv("CURSCHED_CPU_VENDOR", raising=False)
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        assert cpu_vendor() == "other"
    else:
        lines = text.splitlines()
        ids = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("vendor_id")]
        makers = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}
        want = makers.get(ids[0], "other") if ids else "other"
        assert cpu_vendor() == want
    monkeypatch.setenv("CURSCHED_CPU_VENDOR", " AMD ")
    assert cpu_vendor() == "amd"
