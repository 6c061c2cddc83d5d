"""Derive one attention row and the tiled flash attention 2 forward from naive attention.

Run it with ``python sched/attention.py``. The naive program makes three passes over the keys
per query row (scores, max, then the sum and the weighted values) and materialises the score
row. The schedule:

1. ``fuse`` the sum and the weighted-value loops (two accumulators, ``l`` and ``O``);
2. ``split`` the max loop and the fused loop into key tiles and ``scan_fuse`` them: one running
   max, one correction per key tile (flash attention 2's granularity); ``bind_expr`` the
   weight ``exp(S - m)`` that both accumulations use, so it is computed once, and give the
   weights of a tile a loop of their own (``expand_dim``, ``lift_alloc``, ``fission``);
3. ``split`` the score loop, put the head dimension outside the keys of a tile (``fission``,
   ``reorder_loops``), ``fuse`` it in, then shrink the score row to one tile (``sink_alloc``,
   ``resize_dim``);
4. query tiles: ``split`` the row loop, give ``m`` and ``l`` one element per row of the tile
   (``expand_dim``, ``lift_alloc``), ``fission`` the row loop around the key loop and
   ``reorder_loops`` so that each key tile is visited once per query tile, then ``stage_mem``
   the key tile (transposed by ``rearrange_dim``) and the value tile;
5. the weighted values for all rows of a query tile at once: give the weights one row per
   query row (``expand_dim``, ``lift_alloc``), ``fission`` the row loop before the
   accumulation and the sum out of it, and ``reorder_loops`` so that the rows are inside the
   keys (independent accumulations, each value row loaded once per query tile);
6. then the head dimension outermost and the query rows innermost (``rearrange_dim`` of the
   weights, ``reorder_loops`` twice; the sums of the weights too, so that the rows' sums
   are added side by side, each still in key order), and ``stage_mem`` a column of the
   output tile in a buffer of ``query_tile`` values: the compiler keeps it in vector
   registers over the keys of the tile, as it keeps the score row over the head dimension.
   This wants a query tile of at least two vector registers (32 floats with AVX-512), so
   ``schedule_flash`` takes it from 32 rows on (``stage_columns``); the benchmark uses 64.

The patterns are all at the start (on the naive proc); every step uses cursors found there or
returned by an earlier step. ``Q`` is taken pre-scaled (by ``1 / sqrt(D)``). The script prints
the final procs, compiles them and checks them against numpy in float64.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import (
    DRAM,
    Proc,
    bind_expr,
    expand_dim,
    fission,
    fuse,
    lift_alloc,
    proc,
    rearrange_dim,
    reorder_loops,
    resize_dim,
    scan_fuse,
    sink_alloc,
    split,
    stage_mem,
)


@proc
def attention_row(
    Nk: size,
    D: size,
    q: f32[D] @ DRAM,
    K: f32[Nk, D] @ DRAM,
    V: f32[Nk, D] @ DRAM,
    o: f32[D] @ DRAM,
):
    m: f32
    m = -inf
    l: f32
    l = 0.0
    for d in seq(0, D):
        o[d] = 0.0
    S: f32[Nk] @ DRAM
    for i in seq(0, Nk):
        S[i] = 0.0
        for k in seq(0, D):
            S[i] += q[k] * K[i, k]
    for i in seq(0, Nk):
        m = fmax(m, S[i])
    for i in seq(0, Nk):
        l += exp(S[i] - m)
    for i in seq(0, Nk):
        for d in seq(0, D):
            o[d] += exp(S[i] - m) * V[i, d]
    for d in seq(0, D):
        o[d] = o[d] / l


@proc
def attention(
    Nq: size,
    Nk: size,
    D: size,
    Q: f32[Nq, D] @ DRAM,
    K: f32[Nk, D] @ DRAM,
    V: f32[Nk, D] @ DRAM,
    O: f32[Nq, D] @ DRAM,
    L: f32[Nq] @ DRAM,
):
    assert Nq % 4 == 0
    assert Nk % 16 == 0
    for r in seq(0, Nq):
        m: f32
        m = -inf
        l: f32
        l = 0.0
        for d in seq(0, D):
            O[r, d] = 0.0
        S: f32[Nk] @ DRAM
        for i in seq(0, Nk):
            S[i] = 0.0
            for k in seq(0, D):
                S[i] += Q[r, k] * K[i, k]
        for i in seq(0, Nk):
            m = fmax(m, S[i])
        for i in seq(0, Nk):
            l += exp(S[i] - m)
        for i in seq(0, Nk):
            for d in seq(0, D):
                O[r, d] += exp(S[i] - m) * V[i, d]
        for d in seq(0, D):
            O[r, d] = O[r, d] / l
        L[r] = m + log(l)


def schedule_row(p: Proc) -> Proc:
    """One attention row: the naive passes become one online pass (no tiles)."""
    # the patterns: the four key loops
    scores, maxes, sums, values = p.find_loop("i", many=True)
    p, acc = fuse(p, sums, values)
    p, online = scan_fuse(p, maxes, acc.fused)
    l_up, o_up = online.second_updates
    p, _ = bind_expr(p, (l_up.rhs(), o_up.rhs().lhs()), "w")  # each weight computed once
    p, _ = fuse(p, scores, online.fused)
    return p


def schedule_flash(
    p: Proc, key_tile: int = 16, query_tile: int = 4, stage_columns: bool | None = None
) -> Proc:
    """Flash attention 2: key tiles of ``key_tile``, query tiles of ``query_tile`` rows;
    step 6 (output columns staged) when ``stage_columns``, by default when ``query_tile`` is
    at least 32 (with fewer rows its one or two register chains are slower than step 5)."""
    # the patterns: the four key loops, the row loop, the score row and the statistics
    scores, maxes, sums, values = p.find_loop("i", many=True)
    rows = p.find_loop("r")
    score_row, m, l = (p.find_alloc_or_arg(x) for x in ("S", "m", "l"))
    # 1. one loop for both accumulators
    p, acc = fuse(p, sums, values)
    # 2. key tiles, then the online max with one correction per tile
    p, mt = split(p, maxes, key_tile, ("io", "ii"), tail="perfect")
    p, at = split(p, acc.fused, key_tile, ("io", "ii"), tail="perfect")
    p, online = scan_fuse(p, mt.outer, at.outer)
    # the weights exp(S - m) of a tile computed once, in a loop of their own
    l_up, o_up = online.second_updates
    p, w = bind_expr(p, (l_up.rhs(), o_up.rhs().lhs()), "w")
    p, wt = expand_dim(p, w.alloc, key_tile, "ii")
    p, _ = lift_alloc(p, wt.alloc)
    p, pv = fission(p, w.assign.after())
    # 3. the scores of a tile computed in the same pass (the key dimension innermost, so a
    # score row is an axpy), kept for one tile only
    p, st = split(p, scores, key_tile, ("io", "ii"), tail="perfect")
    p, zero = fission(p, st.inner.body()[0].after())
    p, _ = reorder_loops(p, zero.second)
    p, keys = fuse(p, st.outer, online.fused)
    p, sunk = sink_alloc(p, score_row)
    p, _ = resize_dim(p, sunk.alloc, 0, key_tile, f"{key_tile} * io")
    # 4. query tiles: per-row statistics, the key loop outside the rows of a tile
    p, qt = split(p, rows, query_tile, ("rt", "rr"), tail="perfect")
    for stat in (m, l):
        p, ex = expand_dim(p, stat, query_tile, "rr")
        p, _ = lift_alloc(p, ex.alloc)
    p, _ = fission(p, keys.fused.before())
    p, around = fission(p, keys.fused.after())
    p, swapped = reorder_loops(p, around.first)
    window = f"{key_tile} * io:{key_tile} * io + {key_tile}, 0:D"
    p, kt = stage_mem(p, swapped.inner, f"K[{window}]", "Kt")
    p, _ = rearrange_dim(p, kt.alloc, (1, 0))  # the key tile transposed
    p, _ = stage_mem(p, swapped.inner, f"V[{window}]", "Vt")
    # 5. the weighted values of a key tile for all rows of the query tile at once, the rows
    # inside the keys: each row's output is an independent chain (no store-to-load
    # forwarding of one row's output from one key to the next) and a value row is loaded
    # once for the whole query tile
    p, wq = expand_dim(p, wt.alloc, query_tile, "rr")
    p, _ = lift_alloc(p, wq.alloc)
    p, rows_pv = fission(p, pv.second.before())
    p, sum_out = fission(p, pv.second.body()[0].after(), n_lifts=2)
    p, keys_out = reorder_loops(p, sum_out.second)
    if stage_columns is None:
        stage_columns = query_tile >= 32
    if stage_columns:
        # 6. the query rows innermost and contiguous (the weights transposed), the head
        # dimension outermost: a column of the output tile is staged in a buffer of
        # ``query_tile`` values that the compiler keeps in vector registers over the keys of
        # the tile, like the score row in the score loop
        p, _ = rearrange_dim(p, wq.alloc, (1, 0))
        p, _ = reorder_loops(p, keys_out.inner)
        p, heads_out = reorder_loops(p, keys_out.outer)
        p, _ = reorder_loops(p, sum_out.first)  # the rows' sums side by side, in key order
        column = f"O[{query_tile} * rt:{query_tile} * rt + {query_tile}, d]"
        p, _ = stage_mem(p, heads_out.inner, column, "acc")
    del qt, rows_pv
    return p


def inputs(nq: int, nk: int, d: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random ``Q`` (pre-scaled), ``K``, ``V`` in float32."""
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((nq, d)) / np.sqrt(d)).astype(np.float32)
    k = rng.standard_normal((nk, d)).astype(np.float32)
    v = rng.standard_normal((nk, d)).astype(np.float32)
    return {"Q": q, "K": k, "V": v}


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(output, log-sum-exp per row) in float64."""
    s = q.astype(np.float64) @ k.astype(np.float64).T
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    den = e.sum(axis=1, keepdims=True)
    return (e / den) @ v.astype(np.float64), (m + np.log(den))[:, 0]


def check_row(p: Proc, nk: int, d: int, *, compiled: bool, seed: int = 0) -> list[str]:
    """Run a row proc on one query; the problems found (atol 1e-5, rtol 1e-5)."""
    x = inputs(1, nk, d, seed)
    o = np.zeros(d, np.float32)
    (p.compile() if compiled else p.interpret)(nk, d, x["Q"][0], x["K"], x["V"], o)
    ref, _ = reference(x["Q"], x["K"], x["V"])
    if not np.allclose(o, ref[0], atol=1e-5, rtol=1e-5):
        return [f"{p.name()}: max |o - ref| = {np.abs(o - ref[0]).max():.1e}"]
    return []


def check_flash(p: Proc, nq: int, nk: int, d: int, *, compiled: bool, seed: int = 0) -> list[str]:
    """Run an attention proc; the problems found (atol 1e-5, rtol 1e-4)."""
    x = inputs(nq, nk, d, seed)
    o, lse = np.zeros((nq, d), np.float32), np.zeros(nq, np.float32)
    (p.compile() if compiled else p.interpret)(nq, nk, d, x["Q"], x["K"], x["V"], o, lse)
    ref, ref_lse = reference(x["Q"], x["K"], x["V"])
    bad = []
    if not np.allclose(o, ref, atol=1e-5, rtol=1e-4):
        bad.append(f"{p.name()}: max |O - ref| = {np.abs(o - ref).max():.1e}")
    if not np.allclose(lse, ref_lse, atol=1e-5, rtol=1e-4):
        bad.append(f"{p.name()}: max |L - ref| = {np.abs(lse - ref_lse).max():.1e}")
    return bad


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule_row(attention_row), schedule_flash(attention)]


def main() -> int:
    row = schedule_row(attention_row)
    print(row, end="\n\n")
    flash = schedule_flash(attention)
    print(flash, end="\n\n")
    bad = check_row(row, 48, 8, compiled=False) + check_row(row, 256, 64, compiled=True)
    bad += check_flash(flash, 8, 32, 8, compiled=False)
    bad += check_flash(flash, 64, 256, 64, compiled=True)
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: the attention row and flash attention 2 match numpy (float64 reference)\n")
    print(flash.history())
    return 0


if __name__ == "__main__":
    sys.exit(main())
