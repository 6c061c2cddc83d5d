"""Derive online softmax, its denominator and log-sum-exp from the plain two-pass loops.

Run it with ``python sched/online_softmax.py``. Each proc works on the rows of a matrix. The
schedule is the same for all three: the column dimension ``j`` is used twice, as a reduction
(the running max and the sum: ``split`` by 8 and ``scan_fuse``d, one correction per tile of 8)
and, in the softmax, as a parallel dimension (the normalisation loop, ``split`` by 16). The
only pattern is the first step's (the first two column loops); every later step uses cursors
an earlier step returned. The script prints each final proc, runs it in the interpreter and
compiled, and checks it against numpy in float64 on rows that include a row starting with
``-inf`` and a row of equal values.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import DRAM, Proc, proc, scan_fuse, split


@proc
def softmax_denominator(
    R: size, C: size, x: f32[R, C] @ DRAM, mx: f32[R] @ DRAM, den: f32[R] @ DRAM
):
    assert C % 8 == 0
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        mx[r] = m
        den[r] = s


@proc
def softmax(R: size, C: size, x: f32[R, C] @ DRAM, y: f32[R, C] @ DRAM):
    assert C % 16 == 0
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


@proc
def logsumexp(R: size, C: size, x: f32[R, C] @ DRAM, out: f32[R] @ DRAM):
    assert C % 8 == 0
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        out[r] = m + log(s)


def schedule(p: Proc, reduce_tile: int = 8, norm_tile: int = 16) -> Proc:
    """Fuse the max and the sum one tile of ``reduce_tile`` columns at a time; tile the
    normalisation loop (when there is one) by ``norm_tile``."""
    # the only pattern of the schedule: the max loop and the sum loop
    loops = p.find_loop("j", many=True)
    first, second, norm = loops[0], loops[1], loops[2:]
    p, a = split(p, first, reduce_tile, ("jo", "ji"), tail="perfect")
    p, b = split(p, second, reduce_tile, ("jo", "ji"), tail="perfect")
    p, fused = scan_fuse(p, a.outer, b.outer)
    if norm:
        p, _ = split(p, norm[0], norm_tile, ("jn", "jj"), tail="perfect")
    del fused
    return p


def rows(r: int, c: int, seed: int = 0) -> np.ndarray:
    """Random rows, row 0 starting with ``-inf`` and row 1 of equal values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((r, c)).astype(np.float32) * 3
    x[0, :3] = -np.inf
    x[1, :] = 0.75
    return x


def reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(max, denominator, softmax) per row, in float64."""
    x64 = x.astype(np.float64)
    m = x64.max(axis=1)
    e = np.exp(x64 - m[:, None])
    return m, e.sum(axis=1), e / e.sum(axis=1)[:, None]


def check(p: Proc, x: np.ndarray, *, compiled: bool) -> list[str]:
    """Run ``p`` (in the interpreter or compiled) and compare with numpy; the problems found."""
    r, c = x.shape
    m, den, sm = reference(x)
    run = p.compile() if compiled else p.interpret
    bad: list[str] = []
    name = p.name()
    if name == "softmax_denominator":
        mx, d = np.zeros(r, np.float32), np.zeros(r, np.float32)
        run(r, c, x, mx, d)
        if not np.allclose(mx, m, rtol=0, atol=0) or not np.allclose(d, den, rtol=1e-5, atol=0):
            bad.append(f"{name}: max {np.abs(d - den).max():.1e}")
    elif name == "softmax":
        y = np.zeros_like(x)
        run(r, c, x, y)
        if not np.allclose(y, sm, rtol=1e-5, atol=1e-6):
            bad.append(f"{name}: max |y - ref| = {np.abs(y - sm).max():.1e}")
        if np.abs(y.astype(np.float64).sum(axis=1) - 1).max() > 1e-5:
            bad.append(f"{name}: a row does not sum to 1")
    else:
        out = np.zeros(r, np.float32)
        run(r, c, x, out)
        lse = m + np.log(den)
        if not np.allclose(out, lse, rtol=2e-6, atol=0):
            bad.append(f"{name}: max rel err {np.abs((out - lse) / lse).max():.1e}")
    return bad


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(p) for p in (softmax_denominator, softmax, logsumexp)]


def main() -> int:
    x = rows(6, 64)
    bad: list[str] = []
    for p in (softmax_denominator, softmax, logsumexp):
        q = schedule(p)
        print(q, end="\n\n")
        bad += check(q, x, compiled=False) + check(q, x, compiled=True)
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: denominator, softmax and log-sum-exp match numpy (float64 reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
