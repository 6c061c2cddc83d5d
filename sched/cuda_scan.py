"""A prefix sum on CUDA derived from the sequential loop: one block per chunk of 256 with the
work-efficient tree scan in SHARED, a carry kernel, a fix-up kernel (issue 18).

Run it with ``python sched/cuda_scan.py``: it prints the final proc and its kernels, runs them
in the CPU emulation (both thread orders) at lengths that are not multiples of the chunk and
checks them against float64 numpy; on a machine with a GPU and cupy it also runs them there.

The schedule, from the plain loop ``s += x[i]; y[i] = s``:

1. ``split_scan`` into per-chunk local scans, a carry over the chunks' totals and a fix-up;
   the chunk totals, the carries and the running value in ``GLOBAL``: they are the workspace
   the kernels pass each other (``cursched.codegen.cuda.unit``); the running value's start
   moves down to the carry (``reorder_stmts``), so that it runs in a kernel;
2. the partial last chunk cut off both chunk loops (``cut_loop``), the full chunks' guards
   dropped (``eliminate_dead_code``);
3. kernel ``scan_chunks``, one block per full chunk: the chunk of ``y`` staged in ``SHARED``
   (``stage_mem``), the chunk's scan into the Brent-Kung up-sweep/down-sweep form
   (``tree_scan``: ``2 log2 256 - 1`` levels of independent iterations, one thread each), the
   single statements (the chunk's start and total) on thread 0, barriers by
   ``insert_barriers``;
4. kernel ``carry``, one thread: the partial chunk's scan, then the carry across the chunks'
   totals (sequential: ``n / 256`` steps);
5. kernels ``fixup`` and ``fixup_tail``: one block per chunk, one thread per element.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import (
    GLOBAL,
    REGISTER,
    SHARED,
    Proc,
    add_loop,
    bind_loop,
    cut_loop,
    eliminate_dead_code,
    insert_barriers,
    proc,
    reorder_stmts,
    scope,
    set_memory,
    split_scan,
    stage_mem,
    tree_scan,
)
from cursched.codegen.cuda import gpu_available
from cursched.cursors import AllocCursor, ForCursor

#: elements per chunk: the threads of a block, the tree scan's size (a power of two)
CHUNK = 256


@proc
def prefix_sum(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += x[i]
        y[i] = s


def schedule(p: Proc, chunk: int = CHUNK) -> Proc:
    """The four kernels of the prefix sum (module doc); ``chunk`` a power of two."""
    # the only patterns: the running value's start and the scan loop
    init = p.find("s = 0.0")
    # 1. split; the values passed between kernels in GLOBAL; the start moves to the carry
    p, c = split_scan(p, p.find_loop("i"), chunk)
    for buf in (c.totals, c.carries, p.forward(init).node().sym.name):
        p, _ = set_memory(p, buf, GLOBAL)
    while p.forward(init).next() != p.forward(c.carry):
        p, _ = reorder_stmts(p, p.forward(init).expand(0, 1))
    # 2. the partial last chunk apart: the full chunks run guard-free
    p, lc = cut_loop(p, c.local, f"n / {chunk}")
    p, fc = cut_loop(p, c.fixup, f"n / {chunk}")
    for loop in (lc.first, fc.first):
        p, _ = eliminate_dead_code(p, _element_loop(p, loop).body()[0])
    p = _scan_kernel(p, lc.first, chunk)
    p = _carry_kernel(p, lc.second)
    # 5. the fix-ups: a block per chunk, a thread per element
    for loop, name in ((fc.first, "fixup"), (fc.second, "fixup_tail")):
        p, _ = scope(p, p.forward(loop).as_block(), name, target="cuda")
        p, _ = bind_loop(p, loop, "blockIdx.x")
        p, _ = bind_loop(p, _element_loop(p, loop), "threadIdx.x")
    return p


def _scan_kernel(p: Proc, local: ForCursor, chunk: int) -> Proc:
    """3. One block per full chunk: the tree scan in SHARED, one thread per level step."""
    inner = _element_loop(p, local)
    p, staged = stage_mem(
        p, inner, f"y[{chunk} * io:{chunk} * io + {chunk}]", "y_sh", memory=SHARED
    )
    p, tree = tree_scan(p, inner)
    # the chunk's running value is the block's: one SHARED scalar, set and read by thread 0
    running = p.forward(local).body()[0]
    assert isinstance(running, AllocCursor)
    p, _ = set_memory(p, running, SHARED)
    p, k = scope(p, p.forward(local).as_block(), "scan_chunks", target="cuda")
    p, _ = bind_loop(p, local, "blockIdx.x")
    for loop in (tree.copy, *tree.up, *tree.down, staged.store):
        p, _ = bind_loop(p, loop, "threadIdx.x")
    singles = [s for s in p.forward(local).body() if not isinstance(s, ForCursor | AllocCursor)]
    for stmt in singles:
        p, one = add_loop(p, p.forward(stmt).as_block(), "t", 1, guard=True)
        p, _ = bind_loop(p, one.loop, "threadIdx.x")
    p, _ = insert_barriers(p, k.scope)
    return p


def _carry_kernel(p: Proc, partial: ForCursor) -> Proc:
    """4. One thread: the partial chunk's scan, the running value's start, the carry."""
    p, one = add_loop(p, p.forward(partial).expand(0, 2), "t", 1, guard=True)
    running = p.forward(partial).body()[0]
    assert isinstance(running, AllocCursor)
    p, _ = set_memory(p, running, REGISTER)
    p, _ = scope(p, p.forward(one.loop).as_block(), "carry", target="cuda")
    p, _ = bind_loop(p, one.loop, "threadIdx.x")
    return p


def _element_loop(p: Proc, loop: ForCursor) -> ForCursor:
    """The loop over a chunk's elements in a chunk loop."""
    return next(s for s in p.forward(loop).body() if isinstance(s, ForCursor))


def check(f: object, n: int, *, gpu: bool = False, seed: int = 0) -> float:
    """Run the compiled proc ``f`` at length ``n``; the max error against float64 numpy,
    relative to ``sum |x|`` (the sums are regrouped)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    if gpu:
        import cupy

        cy = cupy.asarray(y)
        f(n, cupy.asarray(x), cy)  # type: ignore[operator]
        y = cupy.asnumpy(cy)
    else:
        f(n, x, y)  # type: ignore[operator]
    x64 = x.astype(np.float64)
    return float(np.abs(y - np.cumsum(x64)).max() / np.abs(x64).sum())


def scheduled() -> list[Proc]:
    """The procs this file produces (``cursched compile FILE --target cuda`` writes them)."""
    return [schedule(prefix_sum)]


def main() -> int:
    p = schedule(prefix_sum)
    print(p)
    print(p.cuda_source())
    f = p.compile(target="cuda-emulated", check_races=True)
    for n in (1, 255, 1001):
        err = check(f, n, seed=n)
        print(f"emulated n = {n}: max |y - numpy| / sum |x| = {err:.1e}")
        if not err <= 1e-6:
            print("MISMATCH with numpy", file=sys.stderr)
            return 1
    if gpu_available():
        g = p.compile(target="cuda")
        for n in (1001, 10**6 + 3):
            gerr = check(g, n, gpu=True, seed=n)
            print(f"GPU n = {n}: max |y - numpy| / sum |x| = {gerr:.1e}")
            if not gerr <= 1e-6:
                print("MISMATCH with numpy on the GPU", file=sys.stderr)
                return 1
    else:
        print("no GPU (cupy not available): ran the emulation only")
    print("ok: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
