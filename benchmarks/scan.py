"""Parallel scans (sched/parallel_scan.py) against numpy.cumsum, scipy.signal.lfilter and
the unscheduled sequential C loop, at 1 thread and at all cores.

Run: ``python benchmarks/scan.py [--quick] [--reps N] [--sizes N ...] [--blocks B]``.
Prints the machine, then per length the best time of each kernel over interleaved rounds
and the ratios peer / cursched (every kernel's result is first checked against float64
numpy):

- prefix sum: ``numpy.cumsum`` (float32) against ``schedule(prefix_sum)`` (``fixup="rescan"``)
  and, as "prefix sum avx2", ``fixup="combine"`` with its fix-up in AVX2 instructions;
- constant discount ``h = g * h + x``: ``scipy.signal.lfilter([1], [1, -g], x)`` (float64, its
  only precision for this filter) against ``schedule(discounted)`` with ``d = g``;
- time-varying discount ``h = d[i] * h + x[i]``: the unscheduled proc compiled as it is (one
  sequential loop) against the split one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "sched" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def best_of(fns: dict[str, Callable[[], object]], reps: int) -> dict[str, float]:
    """The best time of each function over ``reps`` interleaved rounds."""
    out = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            out[k] = min(out[k], time.perf_counter() - t0)
    return out


Kernel = Callable[..., None]


def kernels(
    n: int, x: np.ndarray, d: np.ndarray, ours: dict[str, Kernel], plain: Kernel
) -> dict[str, dict[str, Callable[[], object]]]:
    """Per benchmark row, the peer's and our call on the same data."""
    from scipy.signal import lfilter

    x64, y = x.astype(np.float64), np.zeros(n, np.float32)
    dg = np.full(n, G, np.float32)
    return {
        "prefix sum": {"peer": lambda: np.cumsum(x), "ours": lambda: ours["sum"](n, x, y)},
        "prefix sum avx2": {
            "peer": lambda: np.cumsum(x),
            "ours": lambda: ours["sum avx2"](n, x, y),
        },
        "const disc.": {
            "peer": lambda: lfilter([1.0], [1.0, -G], x64),
            "ours": lambda: ours["disc"](n, dg, x, y),
        },
        "varying disc.": {
            "peer": lambda: plain(n, d, x, y),
            "ours": lambda: ours["disc"](n, d, x, y),
        },
    }


#: the constant discount
G = 0.99


def check(n: int, x: np.ndarray, d: np.ndarray, ours: dict[str, Kernel]) -> list[str]:
    """Our kernels' results against float64 numpy (``1e-5 * sum |x|``, sums regrouped)."""
    x64, y = x.astype(np.float64), np.zeros(n, np.float32)
    tol = 1e-5 * float(np.abs(x64).sum())
    want_sum = np.cumsum(x64)
    bad = []
    for name in ("sum", "sum avx2"):
        ours[name](n, x, y)
        if np.abs(y - want_sum).max() > tol:
            bad.append(f"{name} at n = {n}")
    ours["disc"](n, d, x, y)
    if np.abs(y - PS.reference_discounted(d, x)).max() > tol:
        bad.append(f"discounted at n = {n}")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 and 1e6 only")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", help="lengths (default 1e5 to 1e8)")
    ap.add_argument(
        "--blocks", type=int, default=PS.BLOCKS, help="chunks per cache block (0: none)"
    )
    args = ap.parse_args(argv)
    ps = PS
    ours = {
        "sum": ps.schedule(ps.prefix_sum, blocks=args.blocks).compile(),
        "sum avx2": ps.schedule(ps.prefix_sum, fixup="combine", blocks=args.blocks).compile(),
        "disc": ps.schedule(ps.discounted, blocks=args.blocks).compile(),
    }
    disc_plain = ps.discounted.compile()
    cores = os.cpu_count() or 1
    print(
        f"machine: {platform.processor() or platform.machine()}, {cores} cores,"
        f" load average {os.getloadavg()}"
    )
    print(
        f"chunk {ps.CHUNK}, {ps.GROUP} chunks side by side, {args.blocks} chunks a cache block;"
        f" best of {args.reps} interleaved"
        " rounds; ratio = peer / cursched"
    )
    print(f"{'kernel':>15} {'n':>10} {'threads':>7} {'peer':>10} {'cursched':>10} {'ratio':>7}")
    sizes = [10**5, 10**6] if args.quick else [10**5, 10**6, 10**7, 10**8]
    sizes = args.sizes or sizes
    rng = np.random.default_rng(0)
    for n in sizes:
        x = rng.standard_normal(n).astype(np.float32)
        # discounts of RL returns and SSMs are near 1; with smaller ones a chunk's running
        # product of d (kept by the split linear recurrence) falls into float32 denormals,
        # which cost ~100 cycles a multiply on x86 without flush-to-zero (not set: IEEE)
        d = rng.uniform(0.99, 1.0, n).astype(np.float32)
        bad = check(n, x, d, ours)
        if bad:
            print("MISMATCH with numpy: " + ", ".join(bad), file=sys.stderr)
            return 1
        for threads in sorted({1, cores}):
            with threadpool_limits(limits=threads, user_api="openmp"):
                for name, fns in kernels(n, x, d, ours, disc_plain).items():
                    t = best_of(fns, args.reps)
                    print(
                        f"{name:>15} {n:>10} {threads:>7} {t['peer'] * 1e3:>8.2f}ms"
                        f" {t['ours'] * 1e3:>8.2f}ms {t['peer'] / t['ours']:>6.2f}x",
                        flush=True,
                    )
    return 0


PS = load("parallel_scan")

if __name__ == "__main__":
    sys.exit(main())
