"""The instructions of the ``replace`` benchmark, written for exo-lang (peer of
benchmarks/schedule_speed.py).

Kept in its own module because Exo's ``@instr`` reads the function's source from its file.
"""

# ruff: noqa
from __future__ import annotations

from exo import DRAM, instr


@instr("for (int t_ = 0; t_ < 8; t_++) {dst_data}[t_] = 0.0f;")
def zero8_exo(dst: [f32][8] @ DRAM):
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = 0.0


@instr("for (int t_ = 0; t_ < 8; t_++) {dst_data}[t_] += {a_data}[0] * {b_data}[t_];")
def fma8_exo(dst: [f32][8] @ DRAM, a: [f32][1] @ DRAM, b: [f32][8] @ DRAM):
    assert stride(dst, 0) == 1
    assert stride(b, 0) == 1
    for i in seq(0, 8):
        dst[i] += a[0] * b[i]
