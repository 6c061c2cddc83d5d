"""Procs shared by the cursor tests."""

from __future__ import annotations

from cursched import DRAM, proc


@proc
def two_loops(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
        y[i] = 2.0
    for j in seq(0, n):
        y[j] += x[j] * 2.0


@proc
def nest(n: size, m: size, A: f32[n, m] @ DRAM, s: f32 @ DRAM):
    t: f32[m] @ DRAM
    for i in seq(0, n):
        for j in seq(0, m):
            t[j] = A[i, j]
        if i < 2:
            s += t[0]
        else:
            s += t[0] * 3.0
    for i in seq(0, n):  # noqa: B007
        pass
