"""A small schedule file for the CLI tests (``cursched compile`` / ``cursched show``)."""

from __future__ import annotations

from cursched import DRAM, instr, proc


@instr("*{dst_data} = *{src_data};")
def copy1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
    dst[0] = src[0]


@proc
def scale(n: size, a: f32, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = a * x[i]


@proc
def scale_copy(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        copy1(y[i : i + 1], x[i : i + 1])
    scale(n, y[0], x)
