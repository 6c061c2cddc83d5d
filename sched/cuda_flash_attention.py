"""Flash attention 2 forward as one CUDA kernel, derived from the naive three-pass program
as ``sched/attention.py`` derives its tiled CPU version (its steps 1-4, repeated here with the
head dimension fixed at 64 so that the shared tiles have constant shapes, and with guards
instead of its ``tail="perfect"`` splits), then kernelised: one block per query tile of 32
rows, one thread per query row, the key and value tiles of 16 keys staged in SHARED, the
running max and sum, the output row, the score row and the weight in REGISTER;
``insert_barriers`` places the barriers.

Any sequence lengths work: the ragged last query tile is kept in bounds by a guard on the
row (``if 32 * rt + rr < Nq``), the ragged last key tile by a guard on every key
(``if 16 * io + ii < Nk``) that the max, the sum and the output update all sit under, so no
exponential of a key outside the sequence reaches the running sum; the staged loads of the
last key tile are guarded the same way.

Run it with ``python sched/cuda_flash_attention.py``: it prints the final proc and its
kernel, runs the kernel in the CPU emulation (both thread orders) at sequence length 333 and
at 45 queries x 77 keys, and checks it against numpy with the tolerances of
``sched/attention.py``; on a machine with a GPU and cupy it also runs it there. The patterns
are all at the start (on the naive proc).
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import (
    GLOBAL,
    REGISTER,
    SHARED,
    Proc,
    bind_expr,
    bind_loop,
    expand_dim,
    fission,
    fuse,
    insert_barriers,
    lift_alloc,
    lift_scope,
    merge_writes,
    proc,
    rearrange_dim,
    reorder_loops,
    resize_dim,
    scan_fuse,
    scope,
    set_memory,
    sink_alloc,
    split,
    stage_mem,
)
from cursched.codegen.cuda import gpu_available


@proc
def attention(
    Nq: size,
    Nk: size,
    Q: f32[Nq, 64] @ GLOBAL,
    K: f32[Nk, 64] @ GLOBAL,
    V: f32[Nk, 64] @ GLOBAL,
    O: f32[Nq, 64] @ GLOBAL,
    L: f32[Nq] @ GLOBAL,
):
    for r in seq(0, Nq):
        m: f32
        m = -inf
        l: f32
        l = 0.0
        for d in seq(0, 64):
            O[r, d] = 0.0
        S: f32[Nk]
        for i in seq(0, Nk):
            S[i] = 0.0
            for k in seq(0, 64):
                S[i] += Q[r, k] * K[i, k]
        for i in seq(0, Nk):
            m = fmax(m, S[i])
        for i in seq(0, Nk):
            l += exp(S[i] - m)
        for i in seq(0, Nk):
            for d in seq(0, 64):
                O[r, d] += exp(S[i] - m) * V[i, d]
        for d in seq(0, 64):
            O[r, d] = O[r, d] / l
        L[r] = m + log(l)


def schedule_flash(p: Proc, key_tile: int = 16, query_tile: int = 32) -> Proc:
    """Steps 1-4 of ``sched/attention.py``'s ``schedule_flash`` with guarded tiles (key tiles
    of ``key_tile``, query tiles of ``query_tile`` rows) and the output row staged in a
    register row, then the kernel: one block per query tile, one thread per query row."""
    # the patterns: the four key loops, the row loop, the score row and the statistics, the
    # output row's zeroing loop
    scores, maxes, sums, values = p.find_loop("i", many=True)
    rows = p.find_loop("r")
    score_row, m, l = (p.find_alloc_or_arg(x) for x in ("S", "m", "l"))
    out_zero = p.find_loop("d")
    # 0. the output row of a query in a buffer of its own (from its zeroing to its division):
    # the accumulator of the online pass, registers in the kernel. The staged block starts by
    # zeroing the row, so the load stage it gets is dead: fused with the zeroing and merged
    p, orow = stage_mem(p, out_zero.expand(0, 7), "O[r, 0:64]", "o")
    p, zero_row = fuse(p, orow.load, out_zero)
    p, _ = merge_writes(p, zero_row.fused.body())
    # 1. one loop for both accumulators
    p, acc = fuse(p, sums, values)
    # 2. key tiles (the ragged last one guarded), then the online max with one correction per
    # tile; every update of the max, the sum and the output row is under the key guard
    p, mt = split(p, maxes, key_tile, ("io", "ii"), tail="guard")
    p, at = split(p, acc.fused, key_tile, ("io", "ii"), tail="guard")
    p, online = scan_fuse(p, mt.outer, at.outer)
    # the weight exp(S - m) of a key computed once for the sum and the output row
    l_up, o_up = online.second_updates
    p, w = bind_expr(p, (l_up.rhs(), o_up.rhs().lhs()), "w")
    # 3. the scores of a tile computed in the same pass (the key dimension innermost, so a
    # score row is an axpy), kept for one tile only
    p, st = split(p, scores, key_tile, ("io", "ii"), tail="guard")
    p, zero = fission(p, st.inner.body()[0].body()[0].after(), n_lifts=2)
    p, _ = lift_scope(p, zero.second.body()[0].body()[0])
    p, _ = reorder_loops(p, zero.second)
    p, keys = fuse(p, st.outer, online.fused)
    p, sunk = sink_alloc(p, score_row)
    p, _ = resize_dim(p, sunk.alloc, 0, key_tile, f"{key_tile} * io")
    # 4. query tiles (the ragged last one guarded): per-row statistics and output rows, the
    # key loop outside the rows of a tile, the key and value tiles staged for all its rows
    p, qt = split(p, rows, query_tile, ("rt", "rr"), tail="guard")
    for stat in (m, l, orow.alloc):
        p, ex = expand_dim(p, stat, query_tile, "rr")
        p, _ = lift_alloc(p, ex.alloc, n_lifts=2)
    p, init = fission(p, keys.fused.before(), n_lifts=2)
    p, around = fission(p, keys.fused.after(), n_lifts=2)
    p, _ = lift_scope(p, keys.fused)
    p, swapped = reorder_loops(p, around.first)
    window = f"{key_tile} * io:{key_tile} * io + {key_tile}, 0:64"
    p, kt = stage_mem(p, swapped.inner, f"K[{window}]", "Kt")
    p, _ = rearrange_dim(p, kt.alloc, (1, 0))  # the key tile transposed
    p, vt = stage_mem(p, swapped.inner, f"V[{window}]", "Vt")
    # 5. the kernel: the key and value tiles in SHARED (loaded by the first threads, one key
    # row each), every per-row value in REGISTER; the query rows are the threads
    for buf in (kt.alloc, vt.alloc):
        p, _ = set_memory(p, buf, SHARED)
    per_row = (m, l, orow.alloc, sunk.alloc, w.alloc, online.saved[0], online.factor[0])
    for buf in per_row:
        p, _ = set_memory(p, buf, REGISTER)
    p, kern = scope(p, qt.outer, "flash_attention", target="cuda")
    p, _ = bind_loop(p, qt.outer, "blockIdx.x")
    for nest in (init.first, swapped.inner, around.second, kt.load, vt.load):
        p, _ = bind_loop(p, nest, "threadIdx.x")
    p, _ = insert_barriers(p, kern.scope)
    return p


def inputs(nq: int, nk: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random ``Q`` (pre-scaled by 1 / 8), ``K``, ``V`` in float32, head dimension 64."""
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((nq, 64)) / 8).astype(np.float32)
    k = rng.standard_normal((nk, 64)).astype(np.float32)
    v = rng.standard_normal((nk, 64)).astype(np.float32)
    return {"Q": q, "K": k, "V": v}


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(output, log-sum-exp per row) in float64."""
    s = q.astype(np.float64) @ k.astype(np.float64).T
    mx = s.max(axis=1, keepdims=True)
    e = np.exp(s - mx)
    den = e.sum(axis=1, keepdims=True)
    return (e / den) @ v.astype(np.float64), (mx + np.log(den))[:, 0]


def check(f: object, nq: int, nk: int, *, gpu: bool = False) -> list[str]:
    """Run the compiled proc ``f``; the problems found (atol 1e-5, rtol 1e-4, as
    ``sched/attention.py``)."""
    x = inputs(nq, nk)
    o, lse = np.zeros((nq, 64), np.float32), np.zeros(nq, np.float32)
    if gpu:
        import cupy

        co, cl = cupy.asarray(o), cupy.asarray(lse)
        f(nq, nk, *(cupy.asarray(x[n]) for n in "QKV"), co, cl)  # type: ignore[operator]
        o, lse = cupy.asnumpy(co), cupy.asnumpy(cl)
    else:
        f(nq, nk, x["Q"], x["K"], x["V"], o, lse)  # type: ignore[operator]
    ref, ref_lse = reference(x["Q"], x["K"], x["V"])
    bad = []
    if not np.allclose(o, ref, atol=1e-5, rtol=1e-4):
        bad.append(f"max |O - ref| = {np.abs(o - ref).max():.1e}")
    if not np.allclose(lse, ref_lse, atol=1e-5, rtol=1e-4):
        bad.append(f"max |L - ref| = {np.abs(lse - ref_lse).max():.1e}")
    return bad


def scheduled() -> list[Proc]:
    """The procs this file produces (``cursched compile FILE --target cuda`` writes them)."""
    return [schedule_flash(attention)]


def main() -> int:
    p = schedule_flash(attention)
    print(p)
    print(p.cuda_source())
    f = p.compile(target="cuda-emulated", check_races=True)
    bad = check(f, 333, 333) + check(f, 45, 77)
    if gpu_available():
        g = p.compile(target="cuda")
        bad += [f"GPU: {b}" for b in check(g, 333, 333, gpu=True) + check(g, 45, 77, gpu=True)]
    else:
        print("no GPU (cupy not available): ran the emulation only")
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: emulated flash attention (333 x 333 and 45 queries x 77 keys) matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
