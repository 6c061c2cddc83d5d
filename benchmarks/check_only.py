"""Check-only mode against the real call: how much a search saves by asking ``can(...)``.

For a few primitives on the sgemm proc, times the real call (rewrite, new Proc, IR
verification, cursors) and ``check_only=True`` (the preconditions, up to ``checks_passed``),
interleaved in one run, best of N, and prints the ratio. Also times a refused call both ways
(a refusal costs the same: the checks are the work). The SMT cache is warm after the first
round, as in a search that asks the same questions many times.

Usage: ``python benchmarks/check_only.py [N]`` (default 30 rounds).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

from cursched import (
    DRAM,
    SchedulingError,
    fission,
    proc,
    reorder_loops,
    split,
    stage_mem,
    unroll_loop,
)


@proc
def sgemm(n: size, A: f32[n, n] @ DRAM, B: f32[n, n] @ DRAM, C: f32[n, n] @ DRAM):
    assert n % 8 == 0
    for i in seq(0, n):
        for j in seq(0, n):
            for k in seq(0, n):
                C[i, j] += A[i, k] * B[k, j]


@proc
def two(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
        y[i] = x[i] * 2.0


def _tiled() -> Any:
    p, _ = split(sgemm, "i", 8, ("io", "ii"), tail="perfect")
    p, _ = split(p, "j", 8, ("jo", "ji"), tail="perfect")
    p, _ = reorder_loops(p, "ii")
    return p


TILED = _tiled()

CASES: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
    ("split", split, (sgemm, "k", 4)),
    ("reorder_loops", reorder_loops, (sgemm, "j")),
    ("fission", fission, (two, two.find("y[_] = _").before())),
    ("unroll_loop", unroll_loop, (TILED, "ji")),
    (
        "stage_mem",
        stage_mem,
        (TILED, "for ii in _: _", "C[8 * io:8 * io + 8, 8 * jo:8 * jo + 8]", "acc"),
    ),
    ("reorder_loops (refused)", reorder_loops, (sgemm, "k")),
]


def _once(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    with contextlib.suppress(SchedulingError):  # a refused case is timed too
        fn()
    return time.perf_counter() - t0


def main(rounds: int) -> None:
    print(f"{'primitive':26} {'real (us)':>10} {'check (us)':>11} {'real/check':>11}  built")
    for name, prim, args in CASES:
        real = check = float("inf")
        for _ in range(rounds):  # interleaved: both see the same machine load
            real = min(real, _once(lambda p=prim, a=args: p(*a)))
            check = min(check, _once(lambda p=prim, a=args: p(*a, check_only=True)))
        verdict = prim(*args, check_only=True)
        print(
            f"{name:26} {real * 1e6:10.0f} {check * 1e6:11.0f} {real / check:10.1f}x  "
            f"{verdict.built}{'' if verdict else ' (refused)'}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
