"""Build and call costs of the C backend, measured in one run.

Prints:
  * the compile time of a proc on a cache miss (fresh cache directory) and on a hit, in this
    process and in a fresh process (timed inside it, after imports);
  * the time of one call of a tiny proc through ``p.compile()`` against a bare ctypes call of
    the very same C function with precomputed pointers, and their ratio.

Aims (issue 3): a hit under 20 ms, call overhead under 5x bare ctypes.

Run: python benchmarks/build_and_call.py
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit
from pathlib import Path

import numpy as np

from cursched import DRAM, proc


@proc
def add_scaled(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] += a * x[i]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def compile_times() -> None:
    t0 = time.perf_counter()
    miss = add_scaled.compile()
    t_miss = time.perf_counter() - t0
    assert not miss.cache_hit
    t0 = time.perf_counter()
    hit = add_scaled.compile()
    t_hit = time.perf_counter() - t0
    assert hit.cache_hit
    child = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import build_and_call as b
        import cursched.codegen.c  # imports are a once-per-process cost, not a build's
        t0 = time.perf_counter()
        f = b.add_scaled.compile()
        assert f.cache_hit
        print(time.perf_counter() - t0)
        """
    )
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    t_fresh = float(r.stdout.split()[-1])
    print(f"compile, cache miss:                {_ms(t_miss)}")
    print(f"compile, cache hit (same process):  {_ms(t_hit)}")
    print(f"compile, cache hit (fresh process): {_ms(t_fresh)}   (aim: < 20 ms)")


def call_overhead() -> None:
    f = add_scaled.compile()
    n = 4
    a = np.ones((), np.float32)
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    lib = ctypes.CDLL(str(f.lib_path))
    bare = lib.add_scaled
    bare.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    bare.restype = None
    pa, px, py = a.ctypes.data, x.ctypes.data, y.ctypes.data
    number, repeat = 100_000, 7
    t_bare = min(timeit.repeat(lambda: bare(n, pa, px, py), number=number, repeat=repeat))
    t_ours = min(timeit.repeat(lambda: f(n, a, x, y), number=number, repeat=repeat))
    t_kw = min(timeit.repeat(lambda: f(n=n, a=a, x=x, y=y), number=number, repeat=repeat))
    us = 1e6 / number
    print(f"bare ctypes call:                   {t_bare * us:8.3f} us")
    print(f"compiled proc call (positional):    {t_ours * us:8.3f} us")
    print(f"compiled proc call (keywords):      {t_kw * us:8.3f} us")
    print(f"overhead ratio (positional / bare): {t_ours / t_bare:8.2f} x   (aim: < 5x)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cursched-bench-") as d:
        os.environ["CURSCHED_CACHE_DIR"] = d
        compile_times()
        call_overhead()


if __name__ == "__main__":
    main()
