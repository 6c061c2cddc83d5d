"""A small tunable schedule for the autotuner's tests: a gemm tiled by three parameters.

The asserts make 8 and 16 tiles exact and 12 and 32 tiles unprovable, so a quarter of the
space is refused by ``split`` (infeasible candidates); ``wrong_schedule`` swaps two dependent
statements with ``unsafe_skip_checks=True`` (a candidate that computes a wrong result).
"""

from __future__ import annotations

import numpy as np

from cursched import Proc, fission, proc, reorder_loops, reorder_stmts, split, tune


@proc
def gemm(M: size, N: size, K: size, A: f32[M, K], B: f32[K, N], C: f32[M, N]):
    assert M % 16 == 0
    assert N % 16 == 0
    assert K % 16 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def tiled(p: Proc, ti: int, tj: int, order: str) -> Proc:
    """Tile the product by ``ti`` x ``tj``, with the tile loops outside (``order="tiles"``) or
    the row loop outside (``order="rows"``)."""
    p, nests = fission(p, p.find("C[_] = 0.0").after(), n_lifts=2)
    p, si = split(p, nests.second, ti, ("io", "ii"), tail="perfect")
    p, _ = split(p, si.body[0], tj, ("jo", "ji"), tail="perfect")
    if order == "tiles":
        p, _ = reorder_loops(p, si.inner)
    return p


def wrong_schedule(p: Proc, first: bool) -> Proc:
    """Zero C after accumulating into it (refused by the checks, forced past them)."""
    loop = p.find_loop("k")
    p, _ = reorder_stmts(p, loop.prev().expand(0, 1), unsafe_skip_checks=True)
    del first
    return p


def inputs() -> tuple[object, ...]:
    rng = np.random.default_rng(0)
    m = n = k = 32
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return (m, n, k, a, b, np.zeros((m, n), np.float32))


space = tune.Space(ti=[8, 16, 12, 32], tj=[8, 16], order=["tiles", "rows"])
tunable = tune.Tunable(gemm, tiled, space, inputs)
