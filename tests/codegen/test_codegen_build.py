"""The build cache (hits, misses, atomic writes), BuildError, compiler overrides."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cursched import DRAM, BuildError, CodegenError, instr, proc
from cursched.codegen import build
from cursched.codegen.build import build_library, cache_dir

SOURCE = "int cs_answer(void) { return 42; }\n"


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CURSCHED_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_miss_then_hit(fresh_cache: Path) -> None:
    first = build_library("answer", SOURCE, ("-O1",))
    assert not first.hit and first.lib_path.exists()
    assert first.lib_path.parent == fresh_cache == cache_dir()
    again = build_library("answer", SOURCE, ("-O1",))
    assert again.hit and again.lib_path == first.lib_path
    other_flags = build_library("answer", SOURCE, ("-O2",))
    other_source = build_library("answer", SOURCE + "/* changed */\n", ("-O1",))
    assert not other_flags.hit and not other_source.hit
    assert len({first.key, other_flags.key, other_source.key}) == 3
    # no temporary files are left behind
    assert not [p for p in fresh_cache.iterdir() if p.name.startswith(".tmp-")]


def test_library_appears_only_by_rename(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renames: list[tuple[str, str, bool]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        renames.append((str(src), str(dst), Path(dst).exists()))
        real_replace(src, dst)

    monkeypatch.setattr(build.os, "replace", spy)
    r = build_library("atomic", SOURCE, ("-O1",))
    lib_renames = [x for x in renames if x[1] == str(r.lib_path)]
    # the library was written elsewhere (a private temporary directory of the cache, so
    # nothing walking the cache sees it half-written), complete, then renamed into place
    assert len(lib_renames) == 1
    src, _, existed = lib_renames[0]
    assert Path(src).parent.parent == fresh_cache and Path(src).parent.name.startswith(".tmp-")
    assert not existed


def test_concurrent_builds_of_one_key(fresh_cache: Path) -> None:
    script = (
        "import ctypes, sys\n"
        "from cursched.codegen.build import build_library\n"
        f"r = build_library('race', {SOURCE!r}, ('-O1',))\n"
        "assert ctypes.CDLL(str(r.lib_path)).cs_answer() == 42\n"
    )
    env = dict(os.environ, CURSCHED_CACHE_DIR=str(fresh_cache))
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    assert len(list(fresh_cache.glob("race-*.so"))) == 1


def test_compiler_failure_is_a_build_error(fresh_cache: Path) -> None:
    with pytest.raises(BuildError) as info:
        build_library("broken", "this is not C;\n", ("-O1",))
    err = info.value
    assert "error" in err.output
    assert err.source_path is not None and Path(err.source_path).read_text() == "this is not C;\n"
    assert err.source_path in str(err)


def test_missing_compiler(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(BuildError, match="cannot run the C compiler"):
        build_library("nocc", SOURCE, ("-O1",))


def test_cc_override(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CC may carry arguments; a different compiler command is a different cache key
    plain = build_library("cc", SOURCE, ("-O1",))
    monkeypatch.setenv("CC", "cc -DCURSCHED_TEST=1")
    other = build_library("cc", SOURCE, ("-O1",))
    assert not other.hit and other.key != plain.key


@instr("{dst_data}[0] = this is not C;")
def broken_copy(dst: [f32][1] @ DRAM):
    dst[0] = 0.0


@proc
def uses_broken(x: f32[1] @ DRAM):
    broken_copy(x[0:1])


def test_broken_template_is_a_build_error() -> None:
    with pytest.raises(BuildError) as info:
        uses_broken.compile()
    assert "this is not C" in info.value.output
    assert info.value.source_path is not None and Path(info.value.source_path).exists()


@instr("{dst_data}[0] = {nowhere};")
def unknown_placeholder(dst: [f32][1] @ DRAM):
    dst[0] = 0.0


@proc
def uses_unknown(x: f32[1] @ DRAM):
    unknown_placeholder(x[0:1])


def test_unknown_placeholder_is_a_codegen_error() -> None:
    with pytest.raises(CodegenError, match=r"\{nowhere\}"):
        uses_unknown.compile()


@proc
def add_one(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] += 1.0


def test_compile_hits_the_cache_and_honours_cflags() -> None:
    a = add_one.compile()
    b = add_one.compile()
    c = add_one.compile(cflags=["-O0", "-fPIC", "-shared"])
    assert b.cache_hit and b.lib_path == a.lib_path
    assert c.lib_path != a.lib_path
    x = np.zeros(5, np.float32)
    a(5, x)
    c(5, x)
    assert (x == 2).all()


def test_native_builds_leave_out_instruction_sets_the_assembler_rejects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a CPU with AVX512-FP16, ``-march=native`` builds add ``-mno-avx512fp16`` (GCC 12-14
    emit a masked ``vmovsh`` that binutils refuses: f16 units did not build); not without
    ``-march=native``, not when the flags ask for the instructions, not on other CPUs, and not
    when the compiler does not know the option."""
    native = ("-O3", "-march=native")
    cc = tuple(build.compiler())
    monkeypatch.setattr(build, "native_features", lambda: frozenset({"avx2", "avx512_fp16"}))
    if build.accepts_option(cc, "-mno-avx512fp16"):
        assert build.native_flags(native, cc) == (*native, "-mno-avx512fp16")
    assert build.native_flags(("-O3",), cc) == ("-O3",)
    assert build.native_flags((*native, "-mavx512fp16"), cc) == (*native, "-mavx512fp16")
    assert build.native_flags(native, ("false",)) == native  # a compiler without the option
    monkeypatch.setattr(build, "native_features", lambda: frozenset({"avx2", "avx512f"}))
    assert build.native_flags(native, cc) == native


def test_f16_arithmetic_builds_and_runs_on_this_cpu(fresh_cache: Path) -> None:
    """A unit doing f16 arithmetic builds with the default flags on this CPU (on one with
    AVX512-FP16, ``relu`` of an f16 difference failed to assemble) and rounds like the
    interpreter."""

    @proc
    def relu16(n: size, a: f16[n] @ DRAM, b: f16[n] @ DRAM):
        for i in seq(0, n):
            b[i] = relu(a[i] - b[i])

    a = np.linspace(-2, 2, 37).astype(np.float16)
    b, want = np.full(37, 0.1, np.float16), np.full(37, 0.1, np.float16)
    relu16.compile()(37, a, b)
    relu16.interpret(37, a, want)
    assert b.tobytes() == want.tobytes()
