"""The sgemm proc written for exo-lang, the peer of benchmarks/schedule_speed.py.

Kept in its own module because Exo's ``@proc`` reads the function's source from its file.
"""

# ruff: noqa
from __future__ import annotations

from exo import DRAM, proc


@proc
def sgemm_exo(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    assert M % 4 == 0
    assert N % 8 == 0
    assert K % 8 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]
