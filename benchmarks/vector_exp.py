"""Accuracy of the library's vector exp (``mm256_exp_ps`` / ``mm512_exp_ps``) against glibc's
``expf``: max ulp error and NaN agreement, printed.

Default: 10^7 floats (half uniform bit patterns over the whole float range, half uniform in
[-104, 89] where the result is neither 0 nor inf) plus the special values. ``--all``: every one
of the 2^32 floats (about a minute of CPU). The vector kernel runs in C, 8 (or 16) lanes at a
time, compared lane by lane with the scalar ``expf`` of the same C file.

Run: python benchmarks/vector_exp.py [--all] [--count N]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cursched.codegen.build import build_library
from cursched.platforms.x86 import isa
from cursched.platforms.x86.vmath_c import EXP256, EXP512

_HARNESS = """
#include <math.h>
#include <stdint.h>
#include <string.h>
{kernel}
static int64_t cs_ordered(float f) {{
    int32_t i; memcpy(&i, &f, 4);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
}}
/* max ulp over xs[0:n] (or all 2^32 floats when n < 0); worst input; NaN disagreements */
void cs_exp_check(int64_t n, const float *xs, int64_t *maxulp, float *worst, int64_t *bad) {{
    int64_t m = 0, b = 0; float w = 0;
    uint64_t total = n < 0 ? (1ull << 32) : (uint64_t)n;
    for (uint64_t u = 0; u + {lanes} <= total; u += {lanes}) {{
        float in[{lanes}], out[{lanes}];
        for (int k = 0; k < {lanes}; k++) {{
            if (n < 0) {{ uint32_t bits = (uint32_t)(u + k); memcpy(&in[k], &bits, 4); }}
            else in[k] = xs[u + k];
        }}
        {store}(out, cs_exp{w}_ps({load}(in)));
        for (int k = 0; k < {lanes}; k++) {{
            float e = expf(in[k]);
            if (isnan(e) || isnan(out[k])) {{ b += isnan(e) != isnan(out[k]); continue; }}
            int64_t d = cs_ordered(out[k]) - cs_ordered(e);
            if (d < 0) d = -d;
            if (d > m) {{ m = d; w = in[k]; }}
        }}
    }}
    *maxulp = m; *worst = w; *bad = b;
}}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true", help="every float (2^32)")
    ap.add_argument("--count", type=int, default=10**7)
    args = ap.parse_args()
    wide = isa() == "avx512"
    w, lanes = ("512", 16) if wide else ("256", 8)
    src = _HARNESS.format(
        kernel=EXP512 if wide else EXP256,
        lanes=lanes,
        w=w,
        load=f"_mm{w}_loadu_ps",
        store=f"_mm{w}_storeu_ps",
    )
    built = build_library("cs_exp_check", src, ("-O2", "-march=native", "-fPIC", "-shared"))
    fn = ctypes.CDLL(str(built.lib_path)).cs_exp_check
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p] + [ctypes.c_void_p] * 3
    rng = np.random.default_rng(2026)
    special = np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72283, 88.72284, -87.33654, -103.97, -104.0],
        np.float32,
    )
    if args.all:
        xs, n, what = np.zeros(lanes, np.float32), -1, "all 2^32 floats"
    else:
        half = args.count // 2
        bits = rng.integers(0, 2**32, half, dtype=np.uint64).astype(np.uint32).view(np.float32)
        useful = rng.uniform(-104, 89, args.count - half).astype(np.float32)
        xs = np.concatenate([special, bits, useful])
        xs = xs[: len(xs) // lanes * lanes].copy()
        n, what = len(xs), f"{len(xs)} floats (specials + random)"
    m, bad = np.zeros(1, np.int64), np.zeros(1, np.int64)
    worst = np.zeros(1, np.float32)
    t0 = time.perf_counter()
    fn(n, xs.ctypes.data, m.ctypes.data, worst.ctypes.data, bad.ctypes.data)
    dt = time.perf_counter() - t0
    print(f"cs_exp{w}_ps vs glibc expf on {what}: max {m[0]} ulp (at x = {worst[0]!r}),")
    print(f"  NaN disagreements: {bad[0]}; {dt:.1f} s")
    return 0 if m[0] <= 2 and bad[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
