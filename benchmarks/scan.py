"""Parallel scans (sched/parallel_scan.py) against numpy.cumsum, scipy.signal.lfilter and
the unscheduled sequential C loop, at 1 thread and at all cores.

Run: ``python benchmarks/scan.py [--quick] [--reps N]``. Prints the machine, then per length
the best time of each kernel over interleaved rounds and the ratios peer / cursched:

- prefix sum: ``numpy.cumsum`` (float32) against ``schedule(prefix_sum)``;
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


def kernels(
    n: int,
    x: np.ndarray,
    d: np.ndarray,
    cumsum: Callable[..., None],
    disc: Callable[..., None],
    disc_plain: Callable[..., None],
) -> dict[str, dict[str, Callable[[], object]]]:
    """Per benchmark row, the peer's and our call on the same data."""
    from scipy.signal import lfilter

    x64, y = x.astype(np.float64), np.zeros(n, np.float32)
    g = 0.99
    dg = np.full(n, g, np.float32)
    return {
        "prefix sum": {"peer": lambda: np.cumsum(x), "ours": lambda: cumsum(n, x, y)},
        "const disc.": {
            "peer": lambda: lfilter([1.0], [1.0, -g], x64),
            "ours": lambda: disc(n, dg, x, y),
        },
        "varying disc.": {"peer": lambda: disc_plain(n, d, x, y), "ours": lambda: disc(n, d, x, y)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 and 1e6 only")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    ps = load("parallel_scan")
    cumsum_ours = ps.schedule(ps.prefix_sum).compile()
    disc_ours = ps.schedule(ps.discounted).compile()
    disc_plain = ps.discounted.compile()
    cores = os.cpu_count() or 1
    print(
        f"machine: {platform.processor() or platform.machine()}, {cores} cores,"
        f" load average {os.getloadavg()}"
    )
    print(f"chunk {ps.CHUNK}; best of {args.reps} interleaved rounds; ratio = peer / cursched")
    print(f"{'kernel':>14} {'n':>10} {'threads':>7} {'peer':>10} {'cursched':>10} {'ratio':>7}")
    sizes = [10**5, 10**6] if args.quick else [10**5, 10**6, 10**7, 10**8]
    rng = np.random.default_rng(0)
    for n in sizes:
        x = rng.standard_normal(n).astype(np.float32)
        # discounts of RL returns and SSMs are near 1; with smaller ones a chunk's running
        # product of d (kept by the split linear recurrence) falls into float32 denormals,
        # which cost ~100 cycles a multiply on x86 without flush-to-zero (not set: IEEE)
        d = rng.uniform(0.99, 1.0, n).astype(np.float32)
        for threads in sorted({1, cores}):
            with threadpool_limits(limits=threads, user_api="openmp"):
                for name, fns in kernels(n, x, d, cumsum_ours, disc_ours, disc_plain).items():
                    t = best_of(fns, args.reps)
                    print(
                        f"{name:>14} {n:>10} {threads:>7} {t['peer'] * 1e3:>8.2f}ms"
                        f" {t['ours'] * 1e3:>8.2f}ms {t['peer'] / t['ours']:>6.2f}x",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
