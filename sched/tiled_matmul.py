"""Tile sgemm with the loop primitives, using only the cursors each step returns.

Run it with ``python sched/tiled_matmul.py``. The one pattern string is the first step's
(find the initialisation of ``C``); every later step is addressed by a cursor some earlier
step returned (forwarded automatically to the current version). The script prints the final
proc, compiles it with the C backend, checks it against numpy, and prints ``history()``: the
schedule as a replayable script.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import DRAM, Proc, fission, proc, reorder_loops, split


@proc
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM):
    assert M % 16 == 0
    assert N % 16 == 0
    assert K % 8 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def schedule(p: Proc) -> Proc:
    """Split the initialisation from the product, then tile the product 16 x 16 x 8."""
    # the only pattern of the schedule
    init = p.find("C[_] = 0.0")
    # two nests: one zeroes C, one accumulates into it
    p, nests = fission(p, init.after(), n_lifts=2)
    # tile i and j by 16 (the asserts prove there is no tail)
    p, si = split(p, nests.second, 16, ("io", "ii"), tail="perfect")
    p, sj = split(p, si.body[0], 16, ("jo", "ji"), tail="perfect")
    # io, ii, jo, ji -> io, jo, ii, ji
    p, _ = reorder_loops(p, si.inner)
    # split k by 8 and hoist ko above ii and ji: io, jo, ko, ii, ji, ki
    p, sk = split(p, sj.body[0], 8, ("ko", "ki"), tail="perfect")
    p, _ = reorder_loops(p, sj.inner)
    p, _ = reorder_loops(p, si.inner)
    # the zeroing nest gets the same 16 x 16 tiles
    p, zi = split(p, nests.first, 16, ("io", "ii"), tail="perfect")
    p, zj = split(p, zi.body[0], 16, ("jo", "ji"), tail="perfect")
    p, _ = reorder_loops(p, zi.inner)
    del sk, zj
    return p


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(sgemm)]


def main() -> int:
    p = schedule(sgemm)
    print(p)

    rng = np.random.default_rng(0)
    m, n, k = 48, 64, 40
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    p.compile()(m, n, k, a, b, c)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.max(np.abs(c - expected)))
    print(f"\ncompiled tiled sgemm {m}x{n}x{k}: max |C - numpy| = {err:.1e}")
    if not np.allclose(c, expected, rtol=1e-4, atol=1e-4):
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    print("ok: matches numpy\n")
    print(p.history())
    return 0


if __name__ == "__main__":
    sys.exit(main())
