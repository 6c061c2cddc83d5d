"""A Gemmini-style configuration schedule in Exo's spelling: a scaled copy is blocked for an
8-wide "accelerator" load whose scale factor is configuration state. ``bind_config`` moves the
scale into ``ConfigLoad.scale``, and ``replace`` turns the configuration write and the
blocked loop into the two instructions (the C templates keep the unit's state in a global
of their own, as hardware keeps it in a register, so the same C runs under both systems)."""

# ruff: noqa: F403, F405
from __future__ import annotations

import numpy as np

from cursched.compat.exo import *

_HW = "static float hw_load_scale;"


@config
class ConfigLoad:
    scale: f32


@instr("hw_load_scale = *{scale_data};", _HW)
def config_ld(scale: f32):
    ConfigLoad.scale = scale


@instr("for (int k = 0; k < 8; k++) (&{dst_data})[k] = (&{src_data})[k] * hw_load_scale;", _HW)
def ld_scaled_8(dst: [f32][8] @ DRAM, src: [f32][8] @ DRAM):
    for k in seq(0, 8):
        dst[k] = src[k] * ConfigLoad.scale


@proc
def scaled_copy(n: size, scale: f32, x: f32[8 * n] @ DRAM, y: f32[8 * n] @ DRAM):
    for i in seq(0, 8 * n):
        y[i] = x[i] * scale


def schedule(p):
    p = divide_loop(p, p.find_loop("i"), 8, ["io", "ii"], perfect=True)
    p = bind_config(p, p.find("scale"), ConfigLoad, "scale")
    p = autofission(p, p.find("ConfigLoad.scale = _").after(), n_lifts=2)
    p = replace(p, p.find_loop("ii"), ld_scaled_8)
    p = replace(p, p.find("ConfigLoad.scale = _"), config_ld)
    return p


SCHEDULED = schedule(scaled_copy)


def inputs(rng):
    n = 5
    x = rng.standard_normal(8 * n).astype(np.float32)
    return [n, np.array(1.5, dtype=np.float32), x, np.zeros(8 * n, dtype=np.float32)]


def reference(args):
    return args[2] * args[1]


OUTPUT = 3
