"""A schedule file with one CUDA proc, for ``cursched compile --target cuda``."""

from __future__ import annotations

from cursched import GLOBAL, proc


@proc
def double(n: size, x: f32[n] @ GLOBAL):
    assert n % 32 == 0
    with scope("double", target="cuda"):
        for b in par(0, n / 32, axis="blockIdx.x"):
            for t in par(0, 32, axis="threadIdx.x"):
                x[32 * b + t] = 2.0 * x[32 * b + t]
