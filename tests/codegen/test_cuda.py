"""The CUDA backend: kernel text (golden), nvcc cubins and their resources, the CPU emulation
(results, thread-order race check, divergent barriers), argument checks, refusals."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from cursched import (
    DRAM,
    GLOBAL,
    REGISTER,
    SHARED,
    ArgumentError,
    BuildError,
    CodegenError,
    Proc,
    bind_loop,
    insert_barriers,
    proc,
    scope,
)
from cursched.analysis.races import MissingBarrierError
from cursched.cli import main
from cursched.codegen.cuda import (
    BarrierDivergenceError,
    ThreadOrderError,
    generate_cuda,
    kernel_resources,
    nvcc_available,
)
from cursched.codegen.cuda.kernel import (
    KernelMemoryError,
    RegisterNotPerThreadError,
    RegisterThreadIndexError,
    SharedPlacementError,
)
from cursched.codegen.cuda.nvcc import parse_ptxas
from cursched.testing.plugin import Golden

needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")


def _gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    import cupy

    return bool(cupy.is_available())


@proc
def rev(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):
    assert n % 64 == 0
    for b in seq(0, n / 64):
        s: f32[64] @ SHARED
        for t in seq(0, 64):
            s[t] = x[64 * b + t]
        for t in seq(0, 64):
            y[64 * b + t] = s[63 - t]


def kernel(p: Proc, barriers: bool = True) -> Proc:
    p, k = scope(p, p.body(), "rev", target="cuda")
    p, _ = bind_loop(p, "b", "blockIdx.x")
    p, _ = bind_loop(p, "t", "threadIdx.x")
    p, _ = bind_loop(p, "t #1", "threadIdx.x")
    if barriers:
        p, _ = insert_barriers(p, k.scope)
    return p


@proc
def widths(n: size, x: f32[n, 48] @ GLOBAL, y: f32[n, 48] @ GLOBAL):
    with scope("widths", target="cuda"):
        for b in par(0, n, axis="blockIdx.x"):
            s: f32[48] @ SHARED
            for t in par(0, 16, axis="threadIdx.x"):
                for q in seq(0, 3):
                    s[16 * q + t] = x[b, 16 * q + t]
            sync_threads()
            for t in par(0, 48, axis="threadIdx.x"):
                y[b, t] = s[47 - t] + 1.0
            sync_threads()
            for u in par(0, 2, axis="threadIdx.y"):
                for t in par(0, 24, axis="threadIdx.x"):
                    y[b, 24 * u + t] += 1.0


@proc
def per_thread(n: size, x: f32[n, 32] @ GLOBAL, y: f32[n, 32] @ GLOBAL):
    with scope("per_thread", target="cuda"):
        for b in par(0, n, axis="blockIdx.x"):
            acc: f32[32, 2] @ REGISTER
            for t in par(0, 32, axis="threadIdx.x"):
                for k in seq(0, 2):
                    acc[t, k] = x[b, t]
            for t in par(0, 32, axis="threadIdx.x"):
                for k in seq(0, 2):
                    acc[t, k] += acc[t, k]
            for t in par(0, 32, axis="threadIdx.x"):
                y[b, t] = acc[t, 0] + acc[t, 1]


# ---------------------------------------------------------------------- the .cu text


def test_kernel_golden(golden: Golden) -> None:
    golden.check(kernel(rev).cuda_source(), "rev")
    golden.check(widths.cuda_source(), "widths")
    golden.check(per_thread.cuda_source(), "per_thread")


def test_kernel_text_features() -> None:
    src = kernel(rev).cuda_source()
    assert 'extern "C" __global__ void __launch_bounds__(64) rev(' in src
    assert "__shared__ float s[64];" in src
    assert src.count("__syncthreads();") == 1
    w = widths.cuda_source()
    assert "if (threadIdx.x < 16) {" in w and "if (threadIdx.x < 24) {" in w
    assert "if (threadIdx.y == 0) {" in w  # the loops binding no threadIdx.y run on y == 0
    assert "__launch_bounds__(96)" in w
    r = per_thread.cuda_source()
    assert "float acc[2];" in r  # one element per thread: the thread dimension is dropped
    assert "#pragma unroll" in r


@proc
def big_rows(n: size, x: f32[n, 64, 64] @ GLOBAL, y: f32[n, 32, 64] @ GLOBAL):
    with scope("big_rows", target="cuda"):
        for b in par(0, n, axis="blockIdx.x"):
            acc: f32[32, 64] @ REGISTER
            for t in par(0, 32, axis="threadIdx.x"):
                for d in seq(0, 64):
                    acc[t, d] = 0.0
                for i in seq(0, 64):
                    for d in seq(0, 64):
                        acc[t, d] += x[b, i, d]
                for d in seq(0, 64):
                    y[b, t, d] = acc[t, d]


def test_unroll_budget() -> None:
    """A constant loop whose unrolled body passes UNROLL_BUDGET stays rolled (ptxas would take
    minutes on it), the loops inside it still unroll; the results are unchanged."""
    from cursched.codegen.cuda.kernel import UNROLL_BUDGET, unrolled_size

    src = big_rows.cuda_source()
    rows = src.split("for (int_fast64_t i = 0; i < 64; i++)", 1)
    assert len(rows) == 2 and not rows[0].rstrip().endswith("#pragma unroll")
    assert src.count("#pragma unroll") == 3  # the three column loops
    loop = big_rows.find_loop("i").node()
    assert unrolled_size(loop) == 64 * 64 > UNROLL_BUDGET
    assert unrolled_size(big_rows.find_loop("d").node()) == 64
    x = np.random.default_rng(0).standard_normal((2, 64, 64)).astype(np.float32)
    y = np.zeros((2, 32, 64), np.float32)
    big_rows.compile(target="cuda-emulated")(2, x, y)
    want = np.broadcast_to(x.sum(axis=1, keepdims=True), y.shape)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_data_code_outside_kernels_is_refused() -> None:
    @proc
    def mixed(n: size, x: f32[n] @ GLOBAL):
        with scope("k", target="cuda"):
            for t in par(0, 32, axis="threadIdx.x"):  # noqa: B007
                x[0] = 1.0
        x[0] = 2.0

    with pytest.raises(CodegenError, match=r"`x\[0\] = 2.0` is outside every cuda scope"):
        mixed.cuda_source()


@proc
def steps(n: size, k: size, x: f32[n] @ GLOBAL, y: f32[k, n] @ GLOBAL):
    for it in seq(0, k):
        with scope("step", target="cuda"):
            for b in par(0, (n + 31) / 32, axis="blockIdx.x"):
                for t in par(0, 32, axis="threadIdx.x"):
                    if 32 * b + t < n:
                        x[32 * b + t] = 2.0 * x[32 * b + t] + 1.0
                        y[it, 32 * b + t] = x[32 * b + t]


def test_host_loop_launches_a_kernel_per_iteration() -> None:
    """A sequential loop outside the kernels launches them once per iteration, in order;
    the kernel gets the loop variable as a trailing parameter. (The kernel's name, ``step``,
    is also a libc function: the emulation's launcher must still call the kernel.)"""
    src = steps.cuda_source()
    assert "step(int_fast64_t n, int_fast64_t k, float *__restrict__ x, " in src
    assert "float *__restrict__ y, int_fast64_t it)" in src
    f = steps.compile(target="cuda-emulated", check_races=True)
    x0 = np.linspace(-1, 1, 45, dtype=np.float32)
    x, y = x0.copy(), np.full((3, 45), np.nan, np.float32)
    f(45, 3, x, y)
    want = [x0 * 2 + 1]
    for _ in range(2):
        want.append(want[-1] * 2 + 1)
    np.testing.assert_array_equal(y, np.stack(want))
    np.testing.assert_array_equal(x, want[-1])


def test_parallel_host_loop_is_refused() -> None:
    @proc
    def par_steps(n: size, x: f32[n] @ GLOBAL):
        assert n >= 32
        for it in par(0, 2):  # noqa: B007
            with scope("k", target="cuda"):
                for t in par(0, 32, axis="threadIdx.x"):
                    x[t] = 1.0

    with pytest.raises(CodegenError, match=r"`for it in par\(0, 2\):` is outside every cuda"):
        par_steps.cuda_source()


def test_no_kernel_is_refused() -> None:
    @proc
    def nothing(n: size, x: f32[n] @ GLOBAL):
        with scope("plain"):
            pass

    with pytest.raises(CodegenError, match="no scope with target='cuda'"):
        nothing.cuda_source()
    with pytest.raises(CodegenError, match="is outside every cuda scope"):
        rev.cuda_source()


def test_global_workspace_passes_between_kernels() -> None:
    # a top-level GLOBAL allocation is scratch the kernels share: a trailing kernel parameter,
    # allocated by the runtime for each call (split_scan's chunk totals on the CUDA target)
    @proc
    def twice(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):
        assert n % 32 == 0
        w: f32[n] @ GLOBAL
        with scope("first", target="cuda"):
            for b in par(0, n / 32, axis="blockIdx.x"):
                for t in par(0, 32, axis="threadIdx.x"):
                    w[32 * b + t] = 2.0 * x[32 * b + t]
        with scope("second", target="cuda"):
            for b in par(0, n / 32, axis="blockIdx.x"):
                for t in par(0, 32, axis="threadIdx.x"):
                    y[32 * b + t] = w[32 * b + t] + 1.0

    src = twice.cuda_source()
    assert src.count("float *__restrict__ y, float *__restrict__ w)") == 2
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    twice.compile(target="cuda-emulated", check_races=True)(64, x, y)
    assert np.array_equal(y, 2 * x + 1)


def test_missing_barrier_refused_at_compile_time() -> None:
    with pytest.raises(MissingBarrierError):
        kernel(rev, barriers=False).compile(target="cuda-emulated")
    # the text is still there when asked for without the check
    assert "__syncthreads" not in kernel(rev, barriers=False).cuda_source(unsafe_skip_checks=True)


# ----------------------------------------------------------------------- memories


def test_kernel_arguments_are_global() -> None:
    @proc
    def host_arg(n: size, x: f32[n] @ DRAM):
        with scope("k", target="cuda"):
            for t in par(0, 32, axis="threadIdx.x"):  # noqa: B007
                x[0] = 1.0

    with pytest.raises(KernelMemoryError, match="GLOBAL"):
        host_arg.cuda_source(unsafe_skip_checks=True)


def test_kernel_allocations_are_shared_or_register() -> None:
    @proc
    def heap(n: size, x: f32[n] @ GLOBAL):
        with scope("k", target="cuda"):
            t0: f32[4] @ DRAM
            for t in par(0, 4, axis="threadIdx.x"):
                t0[t] = 1.0
                x[0] = t0[t]

    with pytest.raises(KernelMemoryError, match="SHARED or REGISTER"):
        heap.cuda_source(unsafe_skip_checks=True)


def test_shared_outside_thread_loops() -> None:
    @proc
    def inner_shared(n: size, x: f32[n] @ GLOBAL):
        assert n >= 32
        with scope("k", target="cuda"):
            for t in par(0, 32, axis="threadIdx.x"):
                s: f32[4] @ SHARED
                s[0] = 1.0
                x[t] = s[0]

    with pytest.raises(SharedPlacementError):
        inner_shared.cuda_source(unsafe_skip_checks=True)


def test_register_indexed_by_a_thread_variable() -> None:
    @proc
    def bad_reg(n: size, x: f32[n] @ GLOBAL):
        assert n >= 32
        with scope("k", target="cuda"):
            for t in par(0, 32, axis="threadIdx.x"):
                r: f32[32] @ REGISTER
                r[t] = 1.0
                x[t] = r[t]

    with pytest.raises(RegisterThreadIndexError):
        bad_reg.cuda_source()


def test_register_shared_by_threads_is_refused() -> None:
    @proc
    def not_private(n: size, x: f32[n] @ GLOBAL):
        assert n >= 32
        with scope("k", target="cuda"):
            r: f32[2] @ REGISTER
            for t in par(0, 32, axis="threadIdx.x"):
                r[0] = x[t]
                x[t] = r[0]

    with pytest.raises(RegisterNotPerThreadError):
        not_private.cuda_source(unsafe_skip_checks=True)


# ---------------------------------------------------------------------- emulation


def test_emulated_matches_the_interpreter() -> None:
    rng = np.random.default_rng(1)
    for p, shape in ((widths, (3, 48)), (per_thread, (2, 32))):
        x = rng.standard_normal(shape).astype(np.float32)
        y = np.zeros(shape, np.float32)
        want = np.zeros(shape, np.float32)
        p.compile(target="cuda-emulated", check_races=True)(shape[0], x, y)
        p.interpret(shape[0], x, want)
        np.testing.assert_array_equal(y, want)
    x = rng.standard_normal(192).astype(np.float32)
    y = np.zeros(192, np.float32)
    kernel(rev).compile(target="cuda-emulated", check_races=True)(192, x, y)
    np.testing.assert_array_equal(y, x.reshape(3, 64)[:, ::-1].reshape(-1))


def test_emulator_catches_a_missing_barrier() -> None:
    f = kernel(rev, barriers=False).compile(
        target="cuda-emulated", check_races=True, unsafe_skip_checks=True
    )
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(ThreadOrderError, match=r"kernel rev: .* y\[\d+\]"):
        f(128, x, np.zeros(128, np.float32))


@proc
def divergent(n: size, x: f32[n] @ GLOBAL):
    assert n >= 32
    with scope("k", target="cuda"):
        for t in par(0, 32, axis="threadIdx.x"):
            if t < 16:
                sync_threads()
            x[t] = 0.0


def test_emulator_reports_a_divergent_barrier() -> None:
    f = divergent.compile(target="cuda-emulated", unsafe_skip_checks=True)
    with pytest.raises(BarrierDivergenceError, match="16 thread"):
        f(32, np.zeros(32, np.float32))


@proc
def two_barriers(n: size, x: f32[n] @ GLOBAL):
    assert n >= 32
    with scope("k", target="cuda"):
        for t in par(0, 32, axis="threadIdx.x"):
            if t < 16:
                sync_threads()
            else:
                sync_threads()
            x[t] = 0.0


def test_emulator_does_not_merge_two_barriers() -> None:
    """Threads waiting at two different barriers at once are a divergence, not one barrier
    reached by all (the error names both lines of the .cu text)."""
    f = two_barriers.compile(target="cuda-emulated", unsafe_skip_checks=True)
    src = two_barriers.cuda_source(unsafe_skip_checks=True).splitlines()
    with pytest.raises(BarrierDivergenceError, match="threads 0 and 16") as e:
        f(32, np.zeros(32, np.float32))
    lines = [int(x) for x in re.findall(r"lines (\d+) and (\d+)", str(e.value))[0]]
    assert len(lines) == 2 and lines[0] != lines[1]
    assert all("__syncthreads();" in src[k - 1] for k in lines)


def test_arguments_are_checked_before_any_launch() -> None:
    f = kernel(rev).compile(target="cuda-emulated")
    x = np.zeros(128, np.float32)
    with pytest.raises(ArgumentError, match="dtype float64"):
        f(128, x.astype(np.float64), x)
    with pytest.raises(ArgumentError, match="shape"):
        f(128, x[:64], x)
    with pytest.raises(ArgumentError, match="assert"):
        f(100, x[:100], x[:100])
    with pytest.raises(ArgumentError, match="sizes are positive"):
        f(0, x, x)
    with pytest.raises(ArgumentError, match="C-contiguous"):
        f(64, x[::2], x[:64])
    with pytest.raises(ArgumentError, match="missing"):
        f(128, x)


def test_gpu_target_without_cupy_or_with_numpy() -> None:
    if _gpu():
        f = kernel(rev).compile(target="cuda")
        with pytest.raises(ArgumentError, match=r"cupy\.asarray"):
            f(128, np.zeros(128, np.float32), np.zeros(128, np.float32))
    elif importlib.util.find_spec("cupy") is None:
        with pytest.raises(BuildError, match="needs cupy"):
            kernel(rev).compile(target="cuda")


# ------------------------------------------------------------------------- nvcc


PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 8 bytes cumulative stack size, 512 bytes smem
"""


def test_parse_ptxas() -> None:
    r = parse_ptxas(PTXAS)["k"]
    assert (r.registers, r.spill_stores, r.spill_loads, r.shared_bytes) == (40, 4, 8, 512)
    assert r.spills


@needs_nvcc
def test_golden_kernels_compile_with_nvcc() -> None:
    for p, name, smem in (
        (kernel(rev), "rev", 256),
        (widths, "widths", 192),
        (per_thread, "per_thread", 0),
    ):
        res = kernel_resources(generate_cuda(p.ir()).source)
        assert set(res) == {name}
        assert res[name].shared_bytes == smem
        assert not res[name].spills, res[name]
        assert res[name].registers > 0


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="no GPU (cupy not available)")
def test_on_the_gpu() -> None:
    import cupy

    x = cupy.arange(128, dtype=cupy.float32)
    y = cupy.zeros(128, dtype=cupy.float32)
    kernel(rev).compile(target="cuda")(128, x, y)
    np.testing.assert_array_equal(
        cupy.asnumpy(y), np.arange(128, dtype=np.float32).reshape(2, 64)[:, ::-1].reshape(-1)
    )


def test_cli_compile_target_cuda(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).with_name("cuda_example.py")
    assert main(["compile", str(example), "-o", str(tmp_path), "--target", "cuda"]) == 0
    text = (tmp_path / "cuda_example.cu").read_text()
    assert 'extern "C" __global__ void __launch_bounds__(32) double_(' in text
    assert "cuda_example.cu" in capsys.readouterr().out
    # a C schedule file has no kernel: one line, exit 1
    c_file = Path(__file__).with_name("schedule_example.py")
    assert main(["compile", str(c_file), "-o", str(tmp_path), "--target", "cuda"]) == 1
    assert "cursched: error:" in capsys.readouterr().err


def test_elf_check_reads_file_sizes_not_memory_sizes(tmp_path: Path) -> None:
    # the emulation's __shared__ arrays are static: a .bss larger than the file, which a
    # check reading p_memsz instead of p_filesz took for a truncated library
    import subprocess

    from cursched.codegen.build import elf_complete

    src = tmp_path / "bss.c"
    src.write_text("static float big[1 << 16];\nfloat *get(void) { return big; }\n")
    lib = tmp_path / "bss.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    data = lib.read_bytes()
    assert elf_complete(data)
    assert not elf_complete(data[: len(data) // 2])
