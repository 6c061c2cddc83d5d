"""Stage a tile of sgemm and replace its inner loops by declared instructions.

Run it with ``python sched/stage_and_replace.py``. The one pattern string is the first step's
(find the ``i`` loop); every later step is addressed by a cursor some earlier step returned
(forwarded automatically to the current version), or by navigation from one. The schedule:

1. tile ``i`` and ``j`` by 4 and order the loops ``io, jo, k, ii, ji``;
2. ``stage_mem`` the 4 x 4 tile of ``C`` around the ``k`` loop (``Ct``), and the 4 elements
   of row ``k`` of ``B`` around the ``ii`` loop (``Bk``);
3. ``expand_dim`` ``Bk`` by ``k`` and ``lift_alloc`` it out of the ``k`` loop;
4. ``replace`` the row loads of ``Ct`` and ``Bk``, the row stores of ``Ct`` and the
   multiply-add rows by the plain-C instructions ``load4``, ``store4`` and ``fma4``, whose
   asserts (unit strides) ``replace`` proves at each call.

It prints the final proc, compiles it with the C backend, checks it against numpy, and
prints ``history()``.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import (
    DRAM,
    Proc,
    expand_dim,
    instr,
    lift_alloc,
    proc,
    reorder_loops,
    replace,
    split,
    stage_mem,
)


@instr("for (int t_ = 0; t_ < 4; t_++) {dst_data}[t_] = {src_data}[t_];")
def load4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 4):
        dst[i] = src[i]


@instr("for (int t_ = 0; t_ < 4; t_++) {dst_data}[t_] = {src_data}[t_];")
def store4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    assert stride(dst, 0) == 1
    assert stride(src, 0) == 1
    for i in seq(0, 4):
        dst[i] = src[i]


@instr("for (int t_ = 0; t_ < 4; t_++) {dst_data}[t_] += {a} * {b_data}[t_];")
def fma4(dst: [f32][4] @ DRAM, a: f32 @ DRAM, b: [f32][4] @ DRAM):
    assert stride(dst, 0) == 1
    assert stride(b, 0) == 1
    for i in seq(0, 4):
        dst[i] += a * b[i]


@proc
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM):
    assert M % 4 == 0
    assert N % 4 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def schedule(p: Proc) -> Proc:
    """Tile, stage, lift and expand, then replace by instructions (see the module doc)."""
    # the only pattern of the schedule
    loop_i = p.find_loop("i")
    # io, ii, jo, ji, k -> io, jo, k, ii, ji
    p, si = split(p, loop_i, 4, ("io", "ii"), tail="perfect")
    p, sj = split(p, si.inner.body()[0], 4, ("jo", "ji"), tail="perfect")
    p, _ = reorder_loops(p, si.inner)
    p, _ = reorder_loops(p, sj.inner)
    p, kk = reorder_loops(p, si.inner)
    # the C tile lives in Ct during the whole k loop
    p, ct = stage_mem(p, kk.outer, "C[4 * io:4 * io + 4, 4 * jo:4 * jo + 4]", "Ct")
    # row k of the B tile lives in Bk while ii and ji run
    p, bk = stage_mem(p, kk.outer.body()[0], "B[k, 4 * jo:4 * jo + 4]", "Bk")
    # one row of Bk per k (the index is resolved at the allocation, inside the k loop), then
    # one Bk for the whole k loop
    p, expanded = expand_dim(p, bk.alloc, "K", "k")
    p, _ = lift_alloc(p, expanded.alloc)
    # instructions: C tile rows in and out, B row in, and the multiply-add rows
    p, _ = replace(p, ct.load.body()[0], load4)
    p, _ = replace(p, ct.store.body()[0], store4)
    p, _ = replace(p, bk.load, load4)
    p, _ = replace(p, bk.block[0].body()[0], fma4)
    return p


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(sgemm)]


def main() -> int:
    p = schedule(sgemm)
    print(p)

    rng = np.random.default_rng(0)
    m, n, k = 16, 24, 20
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    p.compile()(m, n, k, a, b, c)
    expected = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.max(np.abs(c - expected)))
    print(f"\ncompiled staged sgemm {m}x{n}x{k}: max |C - numpy| = {err:.1e}")
    if not np.allclose(c, expected, rtol=1e-4, atol=1e-4):
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    print("ok: matches numpy\n")
    print(p.history())
    return 0


if __name__ == "__main__":
    sys.exit(main())
