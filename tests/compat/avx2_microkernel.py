"""The AVX2 6x16 sgemm micro-kernel in Exo's spelling, after the structure of Exo's x86
sgemm example: ``C[0:6, 0:16]`` lives in a register tile ``C_reg: f32[6, 2, 8] @ AVX2``
(twelve ``__m256``, a tile of rank 3), ``B``'s row in two registers, ``A``'s element broadcast;
the instructions are written here with Exo's template convention (``&{src_data}``)."""

# ruff: noqa: F403, F405
from __future__ import annotations

import numpy as np

from cursched.compat.exo import *
from cursched.platforms.x86 import AVX2

# exo: from exo.platforms.x86 import AVX2


@instr("{dst_data} = _mm256_loadu_ps(&{src_data});")
def load8(dst: [f32][8] @ AVX2, src: [f32][8] @ DRAM):
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = src[i]


@instr("_mm256_storeu_ps(&{dst_data}, {src_data});")
def store8(dst: [f32][8] @ DRAM, src: [f32][8] @ AVX2):
    assert stride(src, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = src[i]


@instr("{out_data} = _mm256_broadcast_ss(&{val_data});")
def bcast8(out: [f32][8] @ AVX2, val: [f32][1] @ DRAM):
    assert stride(out, 0) == 1
    for i in seq(0, 8):
        out[i] = val[0]


@instr("{dst_data} = _mm256_fmadd_ps({a_data}, {b_data}, {dst_data});")
def fmadd8(dst: [f32][8] @ AVX2, a: [f32][8] @ AVX2, b: [f32][8] @ AVX2):
    assert stride(a, 0) == 1
    assert stride(b, 0) == 1
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] += a[i] * b[i]


@proc
def sgemm_6x16(K: size, A: f32[6, K] @ DRAM, B: f32[K, 16] @ DRAM, C: f32[6, 16] @ DRAM):
    for k in seq(0, K):
        for i in seq(0, 6):
            for j in seq(0, 16):
                C[i, j] += A[i, k] * B[k, j]


def schedule(p):
    p = divide_loop(p, p.find_loop("j"), 8, ["jo", "ji"], perfect=True)
    # the C tile in twelve registers, loaded before the k loop and stored after it
    p = stage_mem(p, p.find_loop("k"), "C[0:6, 0:16]", "C_reg")
    # the inner loops of the load and store nests (each system names them its own way)
    p = divide_loop(p, p.find_loop("k").prev().body()[0], 8, ["i1o", "i1i"], perfect=True)
    p = divide_loop(p, p.find_loop("k").next().body()[0], 8, ["i1o", "i1i"], perfect=True)
    p = divide_dim(p, "C_reg : _", 1, 8)
    p = simplify(p)
    p = set_memory(p, "C_reg : _", AVX2)
    p = replace(p, p.find_loop("i1i"), load8)
    p = replace(p, p.find_loop("i1i"), store8)
    # B's row in a register per jo, shared by the six rows of A
    p = reorder_loops(p, "i jo")
    p = stage_mem(p, p.find_loop("i"), "B[k, 8 * jo:8 * jo + 8]", "B_reg")
    p = simplify(p)
    p = set_memory(p, "B_reg : _", AVX2)
    p = replace(p, p.find_loop("i").prev(), load8)  # the staging loop (named apart by each)
    # A's element broadcast to a register, then one multiply-add per register of the tile
    p = bind_expr(p, p.find("A[_]"), "A_reg")
    p = expand_dim(p, "A_reg : _", 8, "ji")
    p = lift_alloc(p, "A_reg : _")
    p = fission(p, p.find("A_reg[_] = _").after())
    p = set_memory(p, "A_reg : _", AVX2)
    p = replace(p, p.find_loop("ji"), bcast8)
    p = replace(p, p.find_loop("ji"), fmadd8)
    return p


SCHEDULED = schedule(sgemm_6x16)


def inputs(rng):
    K = 7
    A = rng.standard_normal((6, K)).astype(np.float32)
    B = rng.standard_normal((K, 16)).astype(np.float32)
    C = rng.standard_normal((6, 16)).astype(np.float32)
    return [K, A, B, C]


def reference(args):
    _, A, B, C = args
    return C + (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)


OUTPUT = 3
