"""A 3x3 box blur in Exo's spelling, after the structure of Exo's blur example: the
horizontal pass is tiled in rows with overlapping tiles (``divide_with_recompute``) and the
vertical pass in matching tiles of rows (``divide_loop``)."""

# ruff: noqa: F403, F405
from __future__ import annotations

import numpy as np

from cursched.compat.exo import *


@proc
def blur(H: size, W: size, inp: f32[H + 2, W + 2] @ DRAM, out: f32[H, W] @ DRAM):
    assert H % 4 == 0
    bx: f32[H + 2, W] @ DRAM
    for y in seq(0, H + 2):
        for x in seq(0, W):
            bx[y, x] = (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) / 3.0
    for y in seq(0, H):
        for x in seq(0, W):
            out[y, x] = (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3.0


def schedule(p):
    p = divide_with_recompute(p, p.find_loop("y"), "H / 4", 4, ["yo", "yi"])
    p = divide_loop(p, p.find_loop("y"), 4, ["yo", "yi"], perfect=True)
    p = simplify(p)
    return p


blur_sched = schedule(blur)


def inputs(rng):
    H, W = 16, 12
    inp = rng.standard_normal((H + 2, W + 2)).astype(np.float32)
    return [H, W, inp, np.zeros((H, W), dtype=np.float32)]


def reference(args):
    H, W, inp, _ = args
    bx = (inp[:, 0:W] + inp[:, 1 : W + 1] + inp[:, 2 : W + 2]) / np.float32(3.0)
    return (bx[0:H] + bx[1 : H + 1] + bx[2 : H + 2]) / np.float32(3.0)


SCHEDULED = blur_sched
OUTPUT = 3
