"""Two variants of sched/sgemm_x86.py's schedule timed in one loop: the before/after of a change.

Each variant is the running CPU's target with some fields replaced (``--old right=0``: the
right edge over the whole K as before wave 5; ``--new ""``: the target as it is). For each
size the two compiled procs and numpy (OpenBLAS, 1 thread) run alternately, old, new, numpy,
``--reps`` times; the best of each by the thread's CPU time. ``new/old`` above 1 means the new
variant is faster. Unchanged code paths read 0.98-1.02 on the loaded 2-core machine: an
effect under 2% needs several rounds (``--sizes 1000,1000,1000``) to show.

A field's value is a number or the name of an x86 instruction (``--old load=mm512_loadu_ps``).

Run: python benchmarks/sgemm_ab.py [--old right=0] [--new ""] [--sizes 1000,1999] [--reps 15]
"""

from __future__ import annotations

import os

for _k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_k, None)

import argparse
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

from cursched.platforms import x86
from cursched.platforms.x86 import isa


def parse_fields(spec: str) -> dict[str, object]:
    """``"kc=512, mcb=8"`` as ``{"kc": 512, "mcb": 8}`` (empty: no field); a value that is
    not a number names an instruction of ``cursched.platforms.x86`` (``load=mm512_loadu_ps``)."""
    fields: dict[str, object] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        key, value = (part.strip() for part in item.split("="))
        fields[key] = int(value) if value.lstrip("-").isdigit() else getattr(x86, value)
    return fields


def variant(mod: dict[str, Any], spec: str) -> Callable[..., None]:
    """The compiled schedule of the running CPU's target with ``spec``'s fields replaced
    (``parse_fields``; a field the target lacks is ``_replace``'s ValueError)."""
    t = mod["target"]()._replace(**parse_fields(spec))
    f: Callable[..., None] = mod["schedule"](mod["sgemm"], t).compile()
    return f


def time_one(n: int, fo: Callable[..., None], fn: Callable[..., None], reps: int) -> list[float]:
    """Best thread CPU times of old, new and numpy at ``n^3``, run alternately."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c, c_np = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    best = [float("inf")] * 3
    for _ in range(reps):
        for i, f in enumerate((fo, fn)):
            t0 = time.thread_time()
            f(n, n, n, a, b, c)
            best[i] = min(best[i], time.thread_time() - t0)
        t0 = time.thread_time()
        np.matmul(a, b, out=c_np)
        best[2] = min(best[2], time.thread_time() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default="right=0", help="fields of the old variant")
    ap.add_argument("--new", default="", help="fields of the new variant")
    ap.add_argument("--sizes", default="1000,1999")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    if isa() not in ("avx2", "avx512"):
        print(f"sgemm_ab: this CPU's isa() is {isa()}, neither AVX2 nor AVX-512")
        return 0
    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    fo, fn = variant(mod, args.old), variant(mod, args.new)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; old {args.old!r},"
          f" new {args.new!r}; thread CPU time, best of {args.reps}, alternated")  # fmt: skip
    with threadpool_limits(1):
        for n in (int(s) for s in args.sizes.split(",") if s):
            t_old, t_new, t_np = time_one(n, fo, fn, args.reps)
            gf = [2.0 * n**3 / t / 1e9 for t in (t_old, t_new, t_np)]
            print(
                f"n {n:5d}: old {gf[0]:6.1f} new {gf[1]:6.1f} numpy {gf[2]:6.1f} GF/s"
                f"  new/old {t_old / t_new:.3f}  old/np {t_np / t_old:.3f}"
                f"  new/np {t_np / t_new:.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
