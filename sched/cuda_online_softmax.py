"""Row softmax as one CUDA kernel, a warp of 32 threads per row: the max and the sum fused
into one online pass with ``scan_fuse``, that pass split by ``split_online`` into one online
pass per thread over the strided columns ``j = 32 * jo + t`` (coalesced: consecutive threads
read consecutive columns), the threads' partial (max, sum) pairs in SHARED folded by a tree
reduction (5 levels of 16, 8, 4, 2, 1 threads, each pair rescaled to the larger max), the
row's max and sum taken from the tree's root by every thread (uniform values in REGISTER),
and the output written by the 32 threads over the same strided columns. ``insert_barriers``
places the barriers (one after the partial pairs and after each level).

Run it with ``python sched/cuda_online_softmax.py``: it prints the final proc and its kernel,
runs the kernel in the CPU emulation (both thread orders) on 333 rows of 77 columns (rows
starting with ``-inf`` and rows of equal values included) and on 45 rows of 5 columns (fewer
columns than threads), and checks it against numpy in float64; on a machine with a GPU and
cupy it also runs it there. The only pattern is the first step's (the three column loops);
every later step uses returned cursors.
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
    insert_barriers,
    proc,
    reorder_loops,
    scan_fuse,
    scope,
    set_memory,
    split,
    split_online,
)
from cursched.codegen.cuda import gpu_available

ROW_THREADS = 32  # the threads of a row: one warp


@proc
def softmax(R: size, C: size, x: f32[R, C] @ GLOBAL, y: f32[R, C] @ GLOBAL):
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        for j in seq(0, C):
            y[r, j] = exp(x[r, j] - m) / s


def schedule(p: Proc) -> Proc:
    """One online pass per row (``scan_fuse``) split over a warp (``split_online``), one
    block per row."""
    # the only pattern: the max loop, the sum loop and the output loop
    first, second, out = p.find_loop("j", many=True)
    row = out.parent()
    # m is the running max, s the sum rescaled by exp(m_old - m) when m grows
    p, fused = scan_fuse(p, first, second)
    # thread t runs the same online pass over the columns 32 * jo + t; the row's pair is the
    # fold of the threads' pairs
    p, warp = split_online(p, fused.fused, ROW_THREADS, ("t", "jo"), tree=True)
    # the output over the same strided columns, the thread loop outside
    p, cols = split(p, out, ROW_THREADS, ("jo", "t"), tail="guard")
    p, by_thread = reorder_loops(p, cols.outer)
    # the partial pairs are what the threads share; every other value is a register: the
    # locals per thread, the row's max and sum (and the fold's) the same on every thread
    for part in warp.parts:
        p, _ = set_memory(p, part, SHARED)
    local, fold = warp.local.body(), warp.combine.body()
    news = tuple(level.body()[0] for level in warp.levels)
    regs = (fused.saved[0], fused.factor[0], local[0], local[2], *news, fold[0], fold[3])
    for alloc in regs:
        p, _ = set_memory(p, alloc, REGISTER)
    for name in ("m", "s"):
        p, _ = set_memory(p, name, REGISTER)
    # one block per row, the warp's threads over the columns
    p, k = scope(p, row, "softmax_rows", target="cuda")
    p, _ = bind_loop(p, row, "blockIdx.x")
    for nest in (warp.local, *warp.levels, by_thread.outer):
        p, _ = bind_loop(p, nest, "threadIdx.x")
    # each level of the tree reads what the previous level's threads wrote, the fold what
    # the last level wrote: one barrier after each
    p, _ = insert_barriers(p, k.scope)
    return p


def rows(r: int, c: int, seed: int = 0) -> np.ndarray:
    """Random rows; row 0 starts with ``-inf``, row 1 is constant."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((r, c)).astype(np.float32) * 3
    x[0, :3] = -np.inf
    x[1, :] = 0.75
    return x


def reference(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1)[:, None])
    out: np.ndarray = e / e.sum(axis=1)[:, None]
    return out


def check(f: object, r: int, c: int, *, gpu: bool = False) -> float:
    """Run the compiled proc ``f`` on ``r`` rows of ``c``; the max abs error against numpy."""
    x = rows(r, c)
    y = np.full_like(x, np.nan)
    if gpu:
        import cupy

        cy = cupy.asarray(y)
        f(r, c, cupy.asarray(x), cy)  # type: ignore[operator]
        y = cupy.asnumpy(cy)
    else:
        f(r, c, x, y)  # type: ignore[operator]
    return float(np.abs(y - reference(x)).max())


def scheduled() -> list[Proc]:
    """The procs this file produces (``cursched compile FILE --target cuda`` writes them)."""
    return [schedule(softmax)]


def main() -> int:
    p = schedule(softmax)
    print(p)
    print(p.cuda_source())
    f = p.compile(target="cuda-emulated", check_races=True)
    err = max(check(f, 333, 77), check(f, 45, 5))
    print(f"emulated 333 rows x 77 and 45 x 5: max |y - numpy| = {err:.1e}")
    if not err <= 1e-6:
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    if gpu_available():
        g = p.compile(target="cuda")
        gerr = max(check(g, 333, 77, gpu=True), check(g, 45, 5, gpu=True))
        print(f"GPU: max |y - numpy| = {gerr:.1e}")
        if not gerr <= 1e-6:
            return 1
    else:
        print("no GPU (cupy not available): ran the emulation only")
    print("ok: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
