"""What the edges of sched/sgemm_x86.py's sgemm cost: the proc at n against the shapes where
an edge vanishes, and the edge micro-kernels alone, in one run.

For each n: the compiled schedule (the running CPU's target) at ``n x n x n`` and at the
shapes without the bottom edge (``M`` cut to a multiple of ``MR``), without the right edge
(``N`` cut to a multiple of ``NR``) and without either, interleaved with numpy (OpenBLAS at 1
thread), best of N by the thread's CPU time. Each shape's "excess" is its time minus the time
the edge-free shape's rate would give for its flops: what the edges cost beyond their flops.

The edge micro-kernels are also timed alone (``--kernels``), repeated on cache-resident data
in a small C harness (the timing loop is scaffolding; the kernels are the schedule's): the
full 14 x 32 (or 6 x 16) kernel, the ``NR``-wide and ``lanes``-wide edge kernels at a few row
counts, the masked kernel, whose rate counts only its ``NV`` useful columns, and with AVX-512
the right edge's transposed kernel (A packed, ``NV`` columns, vector along A's rows).

Run: python benchmarks/sgemm_edges.py [--sizes 1000,512] [--reps N] [--kernels]
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
from collections.abc import Callable
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
/* kind 0: the packed kernel (A [KC][MR]); 1: the NR-wide edge; 2: the lanes-wide edge;
   3: the masked edge (NV columns); A's rows for the edges (4, the right edge's transposed
   kernel: A packed, NV columns), C with a row stride of ldc */
double cs_edge(int64_t kind, int64_t KC, int64_t MV, int64_t NV, int64_t reps, float *A,
               float *B, float *C, int64_t ldc) {{
    double t0 = cs_now();
    for (int64_t r = 0; r < reps; r++) {{
        if (kind == 0) ukernel_packed_{name}(KC, A, {mr}, 1, B, {nr}, 1, C, ldc, 1);
        else if (kind == 1) ukernel_edge_{nr}_{name}(KC, MV, A, KC, 1, B, {nr}, 1, C, ldc, 1);
        else if (kind == 2) {narrow}
        else if (kind == 3) ukernel_edge_masked_{name}(KC, MV, NV, A, KC, 1, B, NV, 1, C, ldc, 1);
        else {right}
    }}
    return cs_now() - t0;
}}
"""
# the kernels a schedule may lack: the lanes-wide edge (kind 2: the whole-K right edge's; with
# ``right`` the right edge runs in the blocks instead) and the transposed one (kind 4)
_NARROW = "ukernel_edge_{lanes}_{name}(KC, MV, A, KC, 1, B, {lanes}, 1, C, ldc, 1);"
_RIGHT = "ukernel_right_packed_{name}(KC, NV, A, {mr}, 1, B, NV, 1, C, ldc, 1);"


def shapes(n: int, mr: int, nr: int) -> list[tuple[int, int, int]]:
    """``n^3``, then without the bottom edge, without the right edge, without both."""
    m0, n0 = mr * (n // mr), nr * (n // nr)
    out = [(n, n, n), (m0, n, n), (n, n0, n), (m0, n0, n)]
    return list(dict.fromkeys(out))  # n a multiple of a tile: fewer distinct shapes


def bench_shapes(f: Callable[..., Any], n: int, mr: int, nr: int, reps: int) -> None:
    """One table: each shape's time, GF/s, ratio to numpy and excess over the edge-free rate."""
    rng = np.random.default_rng(0)
    data = {}
    for m, nn, k in shapes(n, mr, nr):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, nn)).astype(np.float32)
        data[(m, nn, k)] = (a, b, np.empty((m, nn), np.float32), np.empty((m, nn), np.float32))
    best = {s: [1e9, 1e9] for s in data}
    for _ in range(reps):
        for s, (a, b, c, c_np) in data.items():
            t = time.thread_time()
            f(*s, a, b, c)
            best[s][0] = min(best[s][0], time.thread_time() - t)
            t = time.thread_time()
            np.matmul(a, b, out=c_np)
            best[s][1] = min(best[s][1], time.thread_time() - t)
    base = list(data)[-1]
    rate = 2.0 * np.prod(base) / best[base][0]
    print(f"n = {n}: shapes M x N x K; excess = time - flops / ({base} rate)")
    for s, (t, t_np) in best.items():
        fl = 2.0 * float(np.prod(s))
        excess = t - fl / rate
        edge = 100 * (fl - 2.0 * float(np.prod(base))) / fl
        print(
            f"  {'x'.join(map(str, s)):>16} {t * 1e3:8.3f} ms {fl / t / 1e9:6.1f} GF/s"
            f"  ours/np {t_np / t:5.3f}  excess {excess * 1e3:6.3f} ms ({100 * excess / t:4.1f}%"
            f" of the time; edge flops {edge:4.1f}%)"
        )


def bench_kernels(p: Any, t: Any, reps: int) -> None:
    """The edge micro-kernels alone on cache-resident data, at KC = 256 and 1000."""
    src = p.compile().c_source.split("/* Runtime shims")[0]
    present = {}
    for key, text in (("narrow", _NARROW), ("right", _RIGHT)):
        call = text.format(name=t.name, mr=t.mr, lanes=t.lanes)
        present[key] = call if f"void {call.split('(')[0]}(" in src else ";"
    src += _HARNESS.format(name=t.name, mr=t.mr, nr=t.nr, **present)
    flags = ("-O3", "-march=native", "-fPIC", "-shared")
    built = build_library(f"cs_sgemm_edges_{t.name}", src, flags)
    lib = ctypes.CDLL(str(built.lib_path))
    lib.cs_edge.restype = ctypes.c_double
    i64, ptr = ctypes.c_int64, lambda x: ctypes.c_void_p(x.ctypes.data)
    c = np.zeros(t.mr * 1024, np.float32)
    cases = [("packed", 0, t.mr, t.nr, t.nr)]
    for mv in (t.mr, t.mr // 2, 1):
        cases.append((f"edge {t.nr}", 1, mv, t.nr, t.nr))
        if present["narrow"] != ";":
            cases.append((f"edge {t.lanes}", 2, mv, t.lanes, t.lanes))
    cases += [("masked", 3, t.mr, nv, nv) for nv in (t.lanes // 2, t.lanes - 1)]
    if present["right"] != ";":  # the masked kernel's first columns, vector along A's rows
        cases += [("right", 4, t.mr, nv, nv) for nv in (t.right, t.right - 1)]
    print("edge micro-kernels alone (cache-resident A, B, C; GF/s of the useful columns):")
    for kc in (256, 1000):
        a = np.full(t.mr * kc, 1e-3, np.float32)
        b = np.full(t.nr * kc, 1e-3, np.float32)
        calls = max(1, 2_000_000 // kc)
        for label, kind, mv, nv, cols in cases:
            dt = min(
                lib.cs_edge(i64(kind), i64(kc), i64(mv), i64(nv), i64(calls), ptr(a), ptr(b),
                            ptr(c), i64(1024))
                for _ in range(reps)
            )  # fmt: skip
            gf = 2.0 * mv * cols * kc * calls / dt / 1e9
            print(f"  KC {kc:4d} {label:9} {mv:2d} x {cols:2d}  {gf:6.1f} GF/s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,512")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--kernels", action="store_true", help="also the edge kernels alone")
    args = ap.parse_args()
    if isa() not in ("avx2", "avx512"):
        print(f"sgemm_edges: this CPU's isa() is {isa()}, neither AVX2 nor AVX-512")
        return 0
    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    t = mod["target"]()
    p = mod["schedule"](mod["sgemm"])
    f = p.compile()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {t.name}"
          f" {t.mr} x {t.nr}; thread CPU time, best of {args.reps}, interleaved\n")  # fmt: skip
    with threadpool_limits(1):
        for n in (int(s) for s in args.sizes.split(",") if s):
            bench_shapes(f, n, t.mr, t.nr, args.reps)
        if args.kernels:
            bench_kernels(p, t, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
