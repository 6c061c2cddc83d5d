"""Where sched/sgemm_x86.py's sgemm spends its time: the whole proc against its parts, one run.

The generated C of the schedule (the running CPU's target: AVX2 or AVX-512) is built with a
small timing harness around its micro-kernel ``ukernel_packed_<isa>``; each part is timed by
the thread's CPU time, best of N, interleaved with the others and with numpy (OpenBLAS at 1
thread):

- ``full``: the scheduled ``sgemm`` proc (packing, edges, K remainder, zeroing of C);
- ``kernel, packed``: the micro-kernel called in the proc's loop order (``ko, ic, jo, ir``)
  over panels packed once beforehand: the whole KC x MC blocks, no packing, no edges;
- ``kernel, C in L1``: the same calls with C replaced by one L1-resident MR x NR tile: the
  difference to the row above is the cost of updating C;
- ``kernel, L1 data``: one call repeated on L1-resident A, B and C (the ceiling);
- ``packing``: the copies into the packed panels alone, as the proc does them (B's KC x N
  strip per K block, A's MC x KC block per (K block, MC block)).

The harness's loops are timing scaffolding written in C here (the sgemm itself is derived by
primitives only); the GF/s of the kernel rows count the flops of the whole blocks they run.

Run: python benchmarks/sgemm_parts.py [--sizes 1024,2048] [--reps N] [--quick]
"""

from __future__ import annotations

import os

for _k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_k, None)

import argparse
import ctypes
import runpy
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cursched.codegen.build import build_library
from cursched.platforms.x86 import isa

_HARNESS = """
#include <time.h>
static double cs_now(void) {{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}}
/* the micro-kernel in the proc's loop order over pre-packed panels, one MC x KC block of A
   for every MC block (as the proc's Ap, repacked in place: warm in L2); one_tile: C is one
   MR x NR tile (ldc NR) */
double cs_macro(int64_t M, int64_t N, int64_t K, int64_t KC, int64_t MCB, float *Ap,
                float *Bp, float *C, int64_t one_tile) {{
    double t0 = cs_now();
    for (int64_t ko = 0; ko < K / KC; ko++)
        for (int64_t ic = 0; ic < M / ({mr} * MCB); ic++)
            for (int64_t jo = 0; jo < N / {nr}; jo++)
                for (int64_t ir = 0; ir < MCB; ir++) {{
                    float *c = one_tile ? C : C + ({mr} * MCB * ic + {mr} * ir) * N + {nr} * jo;
                    ukernel_packed_{name}(KC, Ap + ir * {mr} * KC, {mr}, 1,
                                        Bp + jo * {nr} * KC, {nr}, 1, c, one_tile ? {nr} : N, 1);
                }}
    return cs_now() - t0;
}}
double cs_l1(int64_t KC, int64_t reps, float *a, float *b, float *c) {{
    double t0 = cs_now();
    for (int64_t r = 0; r < reps; r++)
        ukernel_packed_{name}(KC, a, {mr}, 1, b, {nr}, 1, c, {nr}, 1);
    return cs_now() - t0;
}}
/* the proc's copies: Bp[N/{nr}][KC][{nr}] per K block, Ap[MCB][KC][{mr}] per (K block, MC block) */
double cs_pack(int64_t M, int64_t N, int64_t K, int64_t KC, int64_t MCB, float *A, float *B,
               float *Ap, float *Bp) {{
    double t0 = cs_now();
    for (int64_t ko = 0; ko < K / KC; ko++) {{
        for (int64_t k = 0; k < KC; k++)
            for (int64_t xo = 0; xo < N / {nr}; xo++)
                for (int64_t xi = 0; xi < {nr}; xi++)
                    Bp[xo * {nr} * KC + k * {nr} + xi] = B[(KC * ko + k) * N + {nr} * xo + xi];
        for (int64_t ic = 0; ic < M / ({mr} * MCB); ic++)
            for (int64_t xo = 0; xo < MCB; xo++)
                for (int64_t k = 0; k < KC; k++)
                    for (int64_t xi = 0; xi < {mr}; xi++)
                        Ap[xo * {mr} * KC + k * {mr} + xi] =
                            A[({mr} * MCB * ic + {mr} * xo + xi) * K + KC * ko + k];
    }}
    return cs_now() - t0;
}}
double cs_full(int64_t M, int64_t N, int64_t K, float *A, float *B, float *C) {{
    double t0 = cs_now();
    sgemm(M, N, K, A, B, C);
    return cs_now() - t0;
}}
"""


def build(t: Any, kc: int, mcb: int) -> ctypes.CDLL:
    """The schedule for target ``t`` with ``kc`` and ``mcb`` (``schedule_tuned``), built with
    the harness."""
    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    p = mod["schedule_tuned"](mod["sgemm"], kc, mcb)
    src = p.compile().c_source + _HARNESS.format(name=t.name, mr=t.mr, nr=t.nr)
    flags = ("-O3", "-march=native", "-fPIC", "-shared")
    built = build_library(f"cs_sgemm_parts_{t.name}_{kc}_{mcb}", src, flags)
    lib = ctypes.CDLL(str(built.lib_path))
    for name in ("cs_macro", "cs_l1", "cs_pack", "cs_full"):
        getattr(lib, name).restype = ctypes.c_double
    return lib


def measure(lib: ctypes.CDLL, t: Any, n: int, kc: int, mcb: int, reps: int) -> dict[str, float]:
    """Seconds (best of ``reps``, thread CPU time) of each part at ``n`` x ``n`` x ``n``."""
    i64, ptr = ctypes.c_int64, lambda x: ctypes.c_void_p(x.ctypes.data)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    ap, bp = np.zeros(n * kc + 64, np.float32), np.zeros(n * kc + 64, np.float32)
    mr, nr = t.mr, t.nr
    tile = np.zeros(mr * nr, np.float32)
    la, lb = np.full(mr * kc, 1e-3, np.float32), np.full(nr * kc, 1e-3, np.float32)
    calls = max(1, (n // (mr * mcb)) * (n // nr) * mcb * (n // kc))  # the macro rows' calls
    dims = (i64(n), i64(n), i64(n))
    parts = {
        "full": lambda: lib.cs_full(*dims, ptr(a), ptr(b), ptr(c)),
        "kernel, packed": lambda: lib.cs_macro(
            *dims, i64(kc), i64(mcb), ptr(ap), ptr(bp), ptr(c), i64(0)
        ),
        "kernel, C in L1": lambda: lib.cs_macro(
            *dims, i64(kc), i64(mcb), ptr(ap), ptr(bp), ptr(tile), i64(1)
        ),
        "kernel, L1 data": lambda: lib.cs_l1(i64(kc), i64(calls), ptr(la), ptr(lb), ptr(tile)),
        "packing": lambda: lib.cs_pack(*dims, i64(kc), i64(mcb), ptr(a), ptr(b), ptr(ap), ptr(bp)),
    }
    best = dict.fromkeys(["numpy", *parts], 1e9)
    for _ in range(reps):
        t = time.thread_time()
        np.matmul(a, b)
        best["numpy"] = min(best["numpy"], time.thread_time() - t)
        for name, f in parts.items():
            best[name] = min(best[name], f())
    return best


def report(t: Any, n: int, kc: int, mcb: int, best: dict[str, float]) -> None:
    """One table: GF/s of each part (the kernel rows over the flops of the whole blocks they
    run), and for packing its time as a share of the full proc's."""
    flops = 2.0 * n**3
    mr, nr = t.mr, t.nr
    blocks = 2.0 * (n // (mr * mcb) * mr * mcb) * (n // nr * nr) * (n // kc * kc)
    full = flops / best["full"] / 1e9
    np_rate = flops / best["numpy"] / 1e9
    print(f"n = {n}, {t.name} {mr} x {nr}, KC = {kc}, MC = {mr * mcb}: numpy {np_rate:.1f} GF/s")
    print(f"  {'full':16} {full:6.1f} GF/s  full / numpy = {best['numpy'] / best['full']:.2f}")
    for name in ("kernel, packed", "kernel, C in L1", "kernel, L1 data") if blocks else ():
        rate = blocks / best[name] / 1e9
        print(f"  {name:16} {rate:6.1f} GF/s  full / this = {full / rate:.2f}")
    pack = best["packing"]
    share = 100 * pack / best["full"]
    print(f"  {'packing':16} {pack * 1e3:6.2f} ms    {share:.1f}% of full's time")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,2048")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="n = 1024 only, 3 runs")
    ap.add_argument("--kc", type=int, default=0, help="K block (default: the script's)")
    ap.add_argument("--mcb", type=int, default=0, help="MR-row tiles per MC block")
    args = ap.parse_args()
    if isa() not in ("avx2", "avx512"):
        print(f"sgemm_parts: this CPU's isa() is {isa()}, neither AVX2 nor AVX-512")
        return 0
    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    t = mod["target"]()
    kc, mcb = args.kc or t.kc, args.mcb or t.mcb
    sizes, reps = [int(s) for s in args.sizes.split(",") if s], args.reps
    if args.quick:
        sizes, reps = [1024], 3
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; thread CPU time,"
          f" best of {reps}, interleaved\n")  # fmt: skip
    lib = build(t, kc, mcb)
    with threadpool_limits(1):
        for n in sizes:
            report(t, n, kc, mcb, measure(lib, t, n, kc, mcb, reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
