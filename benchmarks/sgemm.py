"""Single-thread sgemm on this CPU: numpy (OpenBLAS at 1 thread), the cursched schedule of
sched/sgemm_x86.py, and exo-lang's AVX2 6 x 16 micro-kernel, measured in one run.

For each n in the list: best of N interleaved runs (numpy, ours, numpy, ours, ...) of
``C = A @ B`` (n x n float32), GFLOP/s by wall clock and by the thread's CPU time (the
machine is shared: CPU time excludes the time other processes hold the core), the ratio to
numpy, and the percentage of the peak measured in the same run by an FMA throughput probe
(12 independent chains of 256-bit FMAs, or 512-bit with AVX-512, in registers).
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` are removed from this process's environment
before numpy is imported, so OpenBLAS picks its kernel from the CPU; the kernel it runs is
printed.

The micro-kernels (ours and Exo's) are also timed alone on L1-resident data (KC = 256,
C += A @ B repeated) when exo-lang can build its version.

Run: python benchmarks/sgemm.py [--quick] [--reps N] [--sizes 256,512,...]
"""

from __future__ import annotations

import os

_UNSET = {
    k: os.environ.pop(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ
}

import argparse
import ctypes
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cursched.codegen.build import build_library
from cursched.platforms.x86 import cpu_features, isa

SIZES = [256, 384, 512, 768, 1024, 1536, 2048, 1000, 1999]

_PROBE = """
#include <immintrin.h>
#include <stdint.h>
#define V {v}
#define FMA(a) a = {fma}(a, x, y)
void cs_fma_probe(int64_t n, float *out) {{
    V a0 = {set1}(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    V a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    const V x = {set1}(0.999999f), y = {set1}(1e-7f);
    for (int64_t i = 0; i < n; i++) {{
        FMA(a0); FMA(a1); FMA(a2); FMA(a3); FMA(a4); FMA(a5);
        FMA(a6); FMA(a7); FMA(a8); FMA(a9); FMA(a10); FMA(a11);
    }}
    a0 = {add}({add}({add}(a0, a1), {add}(a2, a3)), {add}({add}(a4, a5), {add}(a6, a7)));
    a0 = {add}(a0, {add}({add}(a8, a9), {add}(a10, a11)));
    {store}(out, a0);
}}
"""


def fma_probe(width: int) -> tuple[float, float]:
    """Peak FLOP/s of this core (wall, CPU time): 12 independent FMA chains, best of 5."""
    m = "_mm512" if width == 16 else "_mm256"
    src = _PROBE.format(
        v="__m512" if width == 16 else "__m256",
        fma=f"{m}_fmadd_ps",
        set1=f"{m}_set1_ps",
        add=f"{m}_add_ps",
        store=f"{m}_storeu_ps",
    )
    built = build_library("cs_fma_probe", src, ("-O2", "-march=native", "-fPIC", "-shared"))
    fn = ctypes.CDLL(str(built.lib_path)).cs_fma_probe
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p]
    out = np.zeros(16, np.float32)
    n = 5_000_000
    flops = n * 12 * 2 * width
    wall, cpu = [], []
    for _ in range(5):
        w, c = time.perf_counter(), time.thread_time()
        fn(n, out.ctypes.data)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
    return flops / min(wall), flops / min(cpu)


def _time(f: Callable[[], object]) -> tuple[float, float]:
    w, c = time.perf_counter(), time.thread_time()
    f()
    return time.perf_counter() - w, time.thread_time() - c


def bench_sizes(sizes: list[int], reps: int, peak: tuple[float, float]) -> None:
    import runpy

    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    t0 = time.perf_counter()
    ours = mod["schedule"](mod["sgemm"]).compile()
    print(f"schedule + compile: {time.perf_counter() - t0:.1f} s\n")
    head = (
        f"{'n':>5} | {'numpy GF/s':>10} {'ours GF/s':>9} {'ours/np':>7} {'% peak':>6} |"
        f" {'numpy GF/s':>10} {'ours GF/s':>9} {'ours/np':>7} {'% peak':>6} | {'rel err':>7}"
    )
    print(f"{'':5} | {'by wall clock':^36} | {'by thread CPU time':^36} |")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        c = np.empty((n, n), np.float32)
        best = {"np": [1e9, 1e9], "ours": [1e9, 1e9]}
        runs = {
            "np": lambda a=a, b=b: np.matmul(a, b),
            "ours": lambda n=n, a=a, b=b, c=c: ours(n, n, n, a, b, c),
        }
        for _ in range(reps):
            for name, f in runs.items():
                w, cpu = _time(f)
                best[name][0] = min(best[name][0], w)
                best[name][1] = min(best[name][1], cpu)
        want = a.astype(np.float64) @ b.astype(np.float64)
        err = float(np.max(np.abs(c - want)) / np.max(np.abs(want)))
        fl = 2.0 * n**3
        cols = []
        for k in (0, 1):
            g_np, g_ours = fl / best["np"][k] / 1e9, fl / best["ours"][k] / 1e9
            pct = 100 * g_ours * 1e9 / peak[k]
            cols.append(f"{g_np:10.1f} {g_ours:9.1f} {g_ours / g_np:7.2f} {pct:5.0f}%")
        print(f"{n:5d} | {cols[0]} | {cols[1]} | {err:7.1e}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 256, 512, 1000 only, 2 runs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] or SIZES
    reps = args.reps
    if args.quick:
        sizes, reps = [256, 512, 1000], 2
    print(f"unset in this process before importing numpy: {_UNSET or 'none was set'}")
    feats = cpu_features()
    print(f"CPU: isa() = {isa()}, avx2={'avx2' in feats} fma={'fma' in feats}"
          f" avx512f={'avx512f' in feats}; load average {os.getloadavg()[0]:.1f}"
          f" on {os.cpu_count()} CPUs")  # fmt: skip
    with threadpool_limits(1):
        for info in threadpool_info():
            if info.get("user_api") == "blas":
                print(
                    f"numpy BLAS: {info.get('internal_api')} {info.get('version')},"
                    f" kernel (core type) {info.get('architecture')},"
                    f" threads {info.get('num_threads')}"
                )
        width = 16 if isa() == "avx512" else 8
        peak = fma_probe(width)
        print(
            f"FMA probe ({width * 32}-bit): {peak[0] / 1e9:.1f} GFLOP/s by wall clock,"
            f" {peak[1] / 1e9:.1f} by CPU time\n"
        )
        bench_sizes(sizes, reps, peak)
    return 0


if __name__ == "__main__":
    sys.exit(main())
