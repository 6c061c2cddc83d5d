"""A CUDA sgemm derived from the naive triple loop: 64 x 64 block tiles of A and B staged in
SHARED, a 4 x 4 register tile of C per thread (16 x 16 threads), the k loop split by 16 and
unrolled (``#pragma unroll``), barriers placed by ``insert_barriers``.

Run it with ``python sched/cuda_sgemm.py``: it prints the final proc and its kernel, runs the
kernel in the CPU emulation (both thread orders) at 100 x 77 x 130 (no size a multiple of a
tile: guards keep every access in bounds) and checks it against numpy; on a machine with a
GPU and cupy it also runs it there. The loop patterns are the first steps' (the loops of the
naive program); every later step is addressed by a cursor an earlier step returned.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import (
    GLOBAL,
    REGISTER,
    SHARED,
    Proc,
    bind_loop,
    expand_dim,
    fission,
    insert_barriers,
    lift_alloc,
    lift_scope,
    proc,
    reorder_loops,
    scope,
    split,
    stage_mem,
)
from cursched.codegen.cuda import gpu_available

BM = BN = 64  # the block tile of C
BK = 16  # the k step (staged in SHARED, unrolled)
RT = 4  # the register tile of C per thread is RT x RT; the block has 16 x 16 threads


@proc
def sgemm(
    M: size, N: size, K: size, A: f32[M, K] @ GLOBAL, B: f32[K, N] @ GLOBAL, C: f32[M, N] @ GLOBAL
):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def schedule(p: Proc) -> Proc:
    """Tile, stage in registers and shared memory, make a kernel, bind, place barriers."""
    # 1. i = 64 io + 4 ty + r and j = 64 jo + 4 tx + c, with guards for the ragged edges
    p, si = split(p, "i", BM, ("io", "ii"), tail="guard")
    p, sr = split(p, si.inner, RT, ("ty", "r"), tail="perfect")
    p, sj = split(p, "j", BN, ("jo", "ji"), tail="guard")
    p, sc = split(p, sj.inner, RT, ("tx", "c"), tail="perfect")
    # the i guard sinks below the j loops, then io, ty, r, jo, tx, c -> io, jo, ty, tx, r, c
    p, _ = lift_scope(p, sj.outer)
    p, _ = lift_scope(p, sc.outer)
    p, _ = lift_scope(p, sc.inner)
    p, _ = reorder_loops(p, sr.inner)
    p, _ = reorder_loops(p, sr.outer)
    p, _ = reorder_loops(p, sr.inner)
    # 2. per thread: zero the 4 x 4 tile, then run k outside r and c (an outer product)
    init = p.find("C[_] = 0.0")
    p, fz = fission(p, init.after(), n_lifts=4)
    kloop = fz.second.body()[0].body()[0].body()[0].body()[0]
    p, _ = lift_scope(p, kloop)
    p, _ = lift_scope(p, kloop)
    p, _ = reorder_loops(p, fz.second.body()[0])
    p, _ = reorder_loops(p, fz.second)
    p, sk = split(p, kloop, BK, ("ko", "ki"), tail="guard")
    # 3. the thread's tile of C in registers: acc[ty, tx, r, c], one acc[r, c] per thread
    tile = "C[64 * io + 4 * ty:64 * io + 4 * ty + 4, 64 * jo + 4 * tx:64 * jo + 4 * tx + 4]"
    p, sa = stage_mem(p, p.forward(sc.outer).body(), tile, "acc", memory=REGISTER)
    p, _ = expand_dim(p, sa.alloc, 16, "tx")
    p, _ = expand_dim(p, sa.alloc, 16, "ty")
    p, _ = lift_alloc(p, sa.alloc, n_lifts=2)
    # 4. four thread nests (load, zero, product, store); ko moves above the product's threads
    p, f1 = fission(p, sa.load.after(), n_lifts=2)
    p, f2 = fission(p, fz.first.after(), n_lifts=2)
    p, f3 = fission(p, sa.store.before(), n_lifts=2)
    ko = p.forward(sk.outer)
    p, _ = reorder_loops(p, ko.parent())
    p, _ = reorder_loops(p, p.forward(ko).parent())
    # 5. the 64 x 16 tile of A and the 16 x 64 tile of B of each k step in SHARED
    product = p.forward(ko).body()
    p, sA = stage_mem(
        p, product, "A[64 * io:64 * io + 64, 16 * ko:16 * ko + 16]", "As", memory=SHARED
    )
    p, sB = stage_mem(
        p, sA.block, "B[16 * ko:16 * ko + 16, 64 * jo:64 * jo + 64]", "Bs", memory=SHARED
    )
    # cooperative loads: 1024 elements each by 16 x 16 threads, 4 each, consecutive threads
    # reading consecutive addresses
    p, la = split(p, sA.load, 16, ("ra", "ay"), tail="perfect")
    p, _ = reorder_loops(p, la.outer)
    p, _ = reorder_loops(p, la.outer)
    p, lb = split(p, sB.load.body()[0], 16, ("rb", "bx"), tail="perfect")
    p, _ = reorder_loops(p, lb.outer)
    # 6. the kernel: blocks over (io, jo), threads over every (ty, tx) nest
    p, k = scope(p, si.outer, "sgemm_64x64", target="cuda")
    p, _ = bind_loop(p, si.outer, "blockIdx.y")
    p, _ = bind_loop(p, sj.outer, "blockIdx.x")
    for nest in (f1.first, f2.first, sB.block, f3.second, la.inner, sB.load):
        p, b = bind_loop(p, nest, "threadIdx.y")
        p, _ = bind_loop(p, p.forward(b.loop).body()[0], "threadIdx.x")
    # 7. the barriers the shared tiles need (after the loads; before the next step's loads)
    p, _ = insert_barriers(p, k.scope)
    return p


def check(f: object, m: int, n: int, k: int, *, gpu: bool = False) -> float:
    """Run the compiled proc ``f`` at ``m x n x k``; the relative error against numpy."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    if gpu:
        import cupy

        ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.asarray(c)
        f(m, n, k, ca, cb, cc)  # type: ignore[operator]
        c = cupy.asnumpy(cc)
    else:
        f(m, n, k, a, b, c)  # type: ignore[operator]
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))


def scheduled() -> list[Proc]:
    """The procs this file produces (``cursched compile FILE --target cuda`` writes them)."""
    return [schedule(sgemm)]


def main() -> int:
    p = schedule(sgemm)
    print(p)
    print(p.cuda_source())
    err = check(p.compile(target="cuda-emulated", check_races=True), 100, 77, 130)
    print(f"emulated 100x77x130: max |C - numpy| / max |numpy| = {err:.1e}")
    if not err <= 1e-4:
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    if gpu_available():
        gerr = check(p.compile(target="cuda"), 100, 77, 130, gpu=True)
        print(f"GPU 100x77x130: relative error {gerr:.1e}")
        if not gerr <= 1e-4:
            print("MISMATCH with numpy on the GPU", file=sys.stderr)
            return 1
    else:
        print("no GPU (cupy not available): ran the emulation only")
    print("ok: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
