"""Parallel scans derived with ``split_scan``: a prefix sum, a discounted scan with a
time-varying discount, and a selective-scan-like recurrence of a state-space model.

Run it with ``python sched/parallel_scan.py``. Each scan is written as the plain sequential
loop; ``split_scan`` regroups it into per-chunk local scans, a carry across the chunks'
totals and a fix-up, and ``parallelize_loop`` makes the local and fix-up loops ``par``
(OpenMP). The selective scan ``h[t, s] = exp(dt[t] * A[s]) * h[t-1, s] + dt[t] * B[t, s] *
x[t]``, ``y[t] = sum_s C[t, s] * h[t, s]`` keeps one scalar state per ``s``: its state loop is
``par``, and each state's time loop is the scan (a linear recurrence) that ``split_scan`` could
split further. Results are checked against float64 numpy at lengths that are not multiples of
the chunk; sums are regrouped, so the tolerance is ``1e-5 * sum |x|``.

Speed note: the split linear recurrence keeps each chunk's running product of the discounts;
with discounts well below 1 that product underflows into float32 denormals within a chunk,
and each denormal multiply costs ~100 cycles on x86 (IEEE flags, no flush-to-zero): choose
``chunk`` so that ``d ** chunk`` stays above 1e-38 (``0.99 ** 4096`` is 1.4e-18).
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import (
    Proc,
    cut_loop,
    eliminate_dead_code,
    expand_dim,
    fission,
    instr,
    lift_alloc,
    parallelize_loop,
    proc,
    reorder_loops,
    split,
    split_scan,
    unroll_loop,
)
from cursched.cursors import AllocCursor, ForCursor, IfCursor
from cursched.ir.printer import print_expr
from cursched.platforms.x86 import AVX2, isa, mm256_loadu_ps, mm256_storeu_ps
from cursched.stdlib import vectorize

#: elements per chunk (the local scans' length): 4096 + 64, so that the chunks of a group,
#: read side by side, start 256 bytes apart in the cache's sets, not all in one set (a
#: power-of-two chunk put the group's streams in one set of L1 and L2: 0.1x at 1e7)
CHUNK = 4160
#: chunks scanned side by side (independent chains per element step)
GROUP = 4
#: chunks per cache block: 16 * 4160 elements, 520 KiB of two f32 inputs (an L2 of 512 KiB
#: a core, 2 threads: each rescans its half of the block from its own L2)
BLOCKS = 16
LANES = 8


@instr("{dst} = _mm256_add_ps(_mm256_set1_ps({s}), {dst});")
def mm256_add_scalar_ps(dst: [f32][8] @ AVX2, s: f32):
    # a monoid fix-up: the chunk's carry (broadcast) plus each element
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = s + dst[i]


@instr("{dst} = _mm256_fmadd_ps({p}, _mm256_set1_ps({s}), {dst});")
def mm256_fmadd_scalar_ps(dst: [f32][8] @ AVX2, p: [f32][8] @ AVX2, s: f32):
    # the "products" fix-up y + P * carry; fused, so it rounds once where the body rounds
    # twice (within the scan's reassociation tolerance, as -march=native contracts C)
    assert stride(dst, 0) == 1
    assert stride(p, 0) == 1
    for i in seq(0, 8):
        dst[i] = dst[i] + p[i] * s


@proc
def prefix_sum(n: size, x: f32[n], y: f32[n]):
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += x[i]
        y[i] = s


@proc
def discounted(n: size, d: f32[n], x: f32[n], y: f32[n]):
    h: f32
    h = 0.0
    for i in seq(0, n):
        h = d[i] * h + x[i]
        y[i] = h


@proc
def selective_scan(
    T: size,
    S: size,
    dt: f32[T],
    A: f32[S],
    B: f32[T, S],
    C: f32[T, S],
    x: f32[T],
    H: f32[T, S],
    y: f32[T],
):
    for s in seq(0, S):
        h: f32
        h = 0.0
        for t in seq(0, T):
            h = exp(dt[t] * A[s]) * h + dt[t] * B[t, s] * x[t]
            H[t, s] = h
    for t in seq(0, T):
        y[t] = 0.0
        for s in seq(0, S):
            y[t] += C[t, s] * H[t, s]


def schedule(
    p: Proc,
    chunk: int = CHUNK,
    group: int = GROUP,
    fixup: str = "rescan",
    vector: bool = True,
    blocks: int = BLOCKS,
) -> Proc:
    """Chunked parallel form of a one-loop scan (``prefix_sum``, ``discounted``).

    0. with ``blocks``, the scan loop ``split`` into cache blocks of ``blocks * chunk``
       elements (the last ``n % (blocks * chunk)`` a tail loop): each block is scanned as
       below, its carry starting from the running value the block before left, so that
       the second pass over a block (the rescan) reads it from the cache, not from memory;
    1. ``split_scan`` into a local scan per chunk, the carry and a fix-up (``fixup``);
    2. a partial last chunk cut off both chunk loops (``cut_loop``), so the full chunks'
       guards are provably true (``eliminate_dead_code``);
    3. ``group`` chunks side by side in each chunk loop (:func:`interleave`): each element
       step advances ``group`` independent chains, which is what makes a scan, otherwise
       bound by one multiply-add's latency per element, run at the loads' pace;
    4. the chunk groups ``par``;
    5. a lane-independent fix-up (``"combine"`` for a monoid, ``"products"``) vectorised
       with AVX2 instructions of ``cursched.platforms.x86`` when the CPU has them.
    """
    loop = p.find_loop("i")
    scans: list[ForCursor] = [loop]
    if blocks:
        p, sb = split(p, loop, blocks * chunk, ("ib", "ie"), tail="cut")
        scans = [sb.inner, sb.tail]
    for scan in scans:
        p = _chunked(p, p.forward(scan), chunk, group, fixup, vector)
    return p


def _chunked(p: Proc, loop: ForCursor, chunk: int, group: int, fixup: str, vector: bool) -> Proc:
    """Steps 1-5 of :func:`schedule` on one scan loop."""
    L = loop.loop()
    full = f"({print_expr(L.hi)} - {print_expr(L.lo)}) / {chunk}"
    p, c = split_scan(p, loop, chunk, fixup=fixup)
    local, fix = c.local, c.fixup
    if isinstance(_chunk_inner(p, local).body()[0], IfCursor):  # the last chunk may be partial
        p, lc = cut_loop(p, local, full)
        p, fc = cut_loop(p, fix, full)
        local, fix = lc.first, fc.first
        for chunks in (local, fix):
            p, _ = eliminate_dead_code(p, _chunk_inner(p, chunks).body()[0])
    p, groups = interleave(p, local, group)
    p, _ = parallelize_loop(p, groups)
    if fixup == "rescan":
        p, groups = interleave(p, fix, group)
        p, _ = parallelize_loop(p, groups)
        return p
    p, _ = parallelize_loop(p, fix)
    # a linear recurrence's "combine" fix-up recomputes the running product: a chain
    lane_independent = fixup == "products" or not c.products
    if vector and lane_independent and isa() is not None:
        inner = _chunk_inner(p, fix)
        instrs = [mm256_loadu_ps, mm256_storeu_ps, mm256_add_scalar_ps, mm256_fmadd_scalar_ps]
        p, _ = vectorize(p, inner, LANES, AVX2, instrs)
    return p


def interleave(p: Proc, loop: ForCursor, group: int) -> tuple[Proc, ForCursor]:
    """Run ``group`` iterations of a chunk loop side by side: ``split`` (the last
    ``chunks % group`` chunks a tail loop as they were), every scalar of the chunk one
    element per chunk of the group (``expand_dim``, ``lift_alloc``), the statements before
    and after the element loop in loops of their own (``fission``), the element loop
    outside the group's (``reorder_loops``), the group's loop unrolled (``unroll_loop``).
    The proc and the loop over groups."""
    p, sp = split(p, loop, group, ("ig", "il"), tail="cut")
    for a in [s for s in p.forward(sp.inner).body() if isinstance(s, AllocCursor)]:
        p, ex = expand_dim(p, a, group, "il")
        p, _ = lift_alloc(p, ex.alloc)
    body = list(p.forward(sp.inner).body())
    elem = next(s for s in body if isinstance(s, ForCursor))
    if body[0] != elem:
        p, _ = fission(p, p.forward(elem).before())
    if body[-1] != elem:
        p, _ = fission(p, p.forward(elem).after())
    group_loop = p.forward(elem).parent()
    assert isinstance(group_loop, ForCursor)
    p, ro = reorder_loops(p, group_loop)
    p, _ = unroll_loop(p, ro.inner)
    return p, p.forward(sp.outer)


def _chunk_inner(p: Proc, loop: ForCursor) -> ForCursor:
    """The element loop of a chunk loop."""
    return next(s for s in p.forward(loop).body() if isinstance(s, ForCursor))


def schedule_selective(p: Proc) -> Proc:
    """One thread per group of states: the state loop ``par``, each state's scan in order."""
    p, _ = parallelize_loop(p, p.find_loop("s"))
    return p


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(prefix_sum), schedule(discounted), schedule_selective(selective_scan)]


def reference_discounted(d: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The inclusive discounted scan in float64."""
    out, h = np.zeros(len(x)), 0.0
    for i, (di, xi) in enumerate(zip(d.astype(np.float64), x.astype(np.float64), strict=True)):
        h = di * h + xi
        out[i] = h
    return out


def check(
    n: int, chunk: int = 64, seed: int = 0, fixup: str = "rescan", blocks: int = BLOCKS
) -> list[str]:
    """Compile the schedules (small chunks, so that n spans many) and compare with numpy;
    ``fixup="products"`` is the discounted scan's form, the prefix sum's is then
    ``"combine"`` (both with the AVX2 fix-up)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    d = rng.uniform(0.5, 1.0, n).astype(np.float32)
    tol = 1e-5 * float(np.abs(x.astype(np.float64)).sum())
    bad: list[str] = []
    y = np.zeros(n, np.float32)
    schedule(prefix_sum, chunk, fixup="combine" if fixup == "products" else fixup).compile()(
        n, x, y
    )
    err = float(np.abs(y - np.cumsum(x.astype(np.float64))).max())
    if err > tol:
        bad.append(f"prefix sum off by {err:.1e} > {tol:.1e}")
    schedule(discounted, chunk, fixup=fixup, blocks=blocks).compile()(n, d, x, y)
    err = float(np.abs(y - reference_discounted(d, x)).max())
    if err > tol:
        bad.append(f"discounted scan off by {err:.1e} > {tol:.1e}")
    bad += check_selective(37, 5, rng)
    return bad


def check_selective(T: int, S: int, rng: np.random.Generator) -> list[str]:
    dt = rng.uniform(0.01, 0.1, T).astype(np.float32)
    A = -rng.uniform(0.5, 2.0, S).astype(np.float32)
    B, C = (rng.standard_normal((T, S)).astype(np.float32) for _ in range(2))
    x = rng.standard_normal(T).astype(np.float32)
    H, y = np.zeros((T, S), np.float32), np.zeros(T, np.float32)
    schedule_selective(selective_scan).compile()(T, S, dt, A, B, C, x, H, y)
    h, want = np.zeros(S), np.zeros(T)
    for t in range(T):
        h = np.exp(dt[t] * A.astype(np.float64)) * h + dt[t] * B[t].astype(np.float64) * x[t]
        want[t] = (C[t].astype(np.float64) * h).sum()
    err = float(np.abs(y - want).max())
    return [] if err <= 1e-4 * (1 + np.abs(want).max()) else [f"selective scan off by {err:.1e}"]


def main() -> int:
    print(schedule(discounted, 64), end="\n\n")
    bad = check(1000) + check(4099, chunk=64, seed=1) + check(1001, fixup="products")
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: prefix sum, discounted scan and selective scan match numpy (n = 1000, 4099)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
