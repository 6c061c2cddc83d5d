"""Derive the flash attention 2 backward pass from the naive backward program of attention.

Run it with ``python sched/attention_backward.py``. The naive program (one head, ``Q``
pre-scaled by ``1 / sqrt(D)``, ``L`` the forward's log-sum-exp per query row) computes each
quantity of the backward pass in a loop nest of its own and materialises the ``Nq x Nk``
matrices ``P``, ``dP`` and ``dS``:

    P = exp(Q K^T - L)    dV = P^T dO    dP = dO V^T    Drow = rowsum(dO * O)
    dS = P * (dP - Drow)  dQ = dS K      dK = dS^T Q

The schedule (``schedule``), with primitives and the cursors they return:

1. the zeroing of each accumulated output (``dV``, ``dQ``, ``dK``) in a nest of its own
   (``fission``);
2. every nest tiled by ``QUERY_TILE`` queries and ``KEY_TILE`` keys (``split``) with the key
   tiles outermost and the query tiles inside (``reorder_loops``); every reduction keeps its
   order (each element of dQ sums over the keys in order, of dK and dV over the queries);
3. ``Drow`` computed first and ``dQ`` zeroed before the key loop (``reorder_stmts``);
4. one key loop (``fuse``), the zeroing of dK and dV at its start, one query loop inside it:
   the key-block-outer loop nest of flash attention 2's backward;
5. ``P``, ``dP`` and ``dS`` recomputed per tile: allocated in the query loop and shrunk to one
   tile (``sink_alloc``, ``resize_dim``): nothing ``Nq x Nk`` is left;
6. dK and dV of a key block accumulated in a local tile (``stage_mem``) zeroed in place of
   the load (``fuse`` of the load with the zeroing, ``merge_writes``) and written once after
   the query loop; dQ accumulates in place across the key blocks;
7. the loop orders of the tile products for the compiler's vectoriser (``reorder_loops``):
   the head dimension innermost in dV, dK and dQ (each element still sums in order);
8. the scores and dP as sums of rows of the transposed K (V) tile, the keys innermost: one
   score per key of the tile (``expand_dim``, ``lift_alloc``), the head dimension outside the
   keys (``fission``, ``reorder_loops``), the K and V tiles staged transposed
   (``stage_mem``, ``rearrange_dim``); every score still sums over the head dimension in
   order;
9. on a CPU with AVX2 (``vector``), each of the five products ``C[row, col] += A[row, t] *
   B[t, col]`` (scores, dP, dV, dK, dQ) a micro-kernel of ``cursched.platforms.x86``
   instructions: ``TILE_ROWS`` x ``TILE_COLS`` of ``C`` in registers over the terms, the
   vectors of ``B`` of a term loaded once, a fused multiply-add by a broadcast of ``A`` per
   register (``split``, ``reorder_loops``, ``stage_mem``, ``divide_dim``, ``set_memory``,
   ``replace``; the head columns past a multiple of 32 in a scalar loop, ``tail="cut"``);
10. the weights ``P = exp(s - L)`` 8 keys at a time (``mm256_exp_ps``, 1 ulp).

Every reduction keeps the naive program's order (up to the contraction of each product into its
add, which the compiler does to the scalar C code too), whatever the tiles.

``schedule`` needs sequence lengths that are multiples of the tiles (``assert Nq % 64 ==
0``, ``Nk % 64 == 0``), as ``sched/attention.py``; the head dimension is free.
``schedule_guarded`` runs steps 1-6 with guarded tiles (``split(tail="guard")``) on the
naive program without its asserts (``without_asserts``): the same loop nest at any lengths,
the ragged tiles' elements under guards (the AVX2 steps are for whole tiles only).

The patterns are all at the start (on the naive proc); every step uses cursors found there or
returned by an earlier step. The script prints the final proc, compiles it and checks it
against a float64 numpy formula (and torch autograd when torch is installed).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, NamedTuple

import numpy as np

from cursched import (
    DRAM,
    Proc,
    bind_expr,
    commute_expr,
    divide_dim,
    expand_dim,
    fission,
    fuse,
    lift_alloc,
    lift_scope,
    merge_writes,
    proc,
    rearrange_dim,
    rename,
    reorder_loops,
    reorder_stmts,
    replace,
    resize_dim,
    set_memory,
    simplify,
    sink_alloc,
    split,
    stage_mem,
)
from cursched.platforms.x86 import (
    AVX2,
    isa,
    mm256_broadcast_ss,
    mm256_exp_ps,
    mm256_fmadd_ps_broadcast,
    mm256_loadu_ps,
    mm256_storeu_ps,
    mm256_sub_ps,
)


@proc
def attention_backward(
    Nq: size,
    Nk: size,
    D: size,
    Q: f32[Nq, D] @ DRAM,
    K: f32[Nk, D] @ DRAM,
    V: f32[Nk, D] @ DRAM,
    O: f32[Nq, D] @ DRAM,
    dO: f32[Nq, D] @ DRAM,
    L: f32[Nq] @ DRAM,
    dQ: f32[Nq, D] @ DRAM,
    dK: f32[Nk, D] @ DRAM,
    dV: f32[Nk, D] @ DRAM,
):
    assert Nq % 64 == 0
    assert Nk % 64 == 0
    Drow: f32[Nq] @ DRAM
    P: f32[Nq, Nk] @ DRAM
    dP: f32[Nq, Nk] @ DRAM
    dS: f32[Nq, Nk] @ DRAM
    for i in seq(0, Nq):
        for j in seq(0, Nk):
            s: f32
            s = 0.0
            for d in seq(0, D):
                s += Q[i, d] * K[j, d]
            P[i, j] = exp(s - L[i])
    for j in seq(0, Nk):
        for d in seq(0, D):
            dV[j, d] = 0.0
            for i in seq(0, Nq):
                dV[j, d] += P[i, j] * dO[i, d]
    for i in seq(0, Nq):
        for j in seq(0, Nk):
            dP[i, j] = 0.0
            for d in seq(0, D):
                dP[i, j] += dO[i, d] * V[j, d]
    for i in seq(0, Nq):
        Drow[i] = 0.0
        for d in seq(0, D):
            Drow[i] += dO[i, d] * O[i, d]
    for i in seq(0, Nq):
        for j in seq(0, Nk):
            dS[i, j] = P[i, j] * (dP[i, j] - Drow[i])
    for i in seq(0, Nq):
        for d in seq(0, D):
            dQ[i, d] = 0.0
            for j in seq(0, Nk):
                dQ[i, d] += dS[i, j] * K[j, d]
    for j in seq(0, Nk):
        for d in seq(0, D):
            dK[j, d] = 0.0
            for i in seq(0, Nq):
                dK[j, d] += dS[i, j] * Q[i, d]


LANES = 8
"""Floats of one AVX2 register."""
TILE_ROWS = 2
"""Rows of a micro-kernel's register tile (each a broadcast of the left operand)."""
TILE_COLS = 32
"""Columns of a micro-kernel's register tile: four AVX2 vectors (2 x 4 accumulators; gcc folds
each load of B into its FMA, so wide rows load least per FMA: 2 x 32 measured 15% faster than
4 x 16 at 1024 and 2048 x 64, interleaved CPU time)."""
QUERY_TILE = 64
"""Query rows of a tile (the naive program asserts ``Nq % 64 == 0``)."""
KEY_TILE = 64
"""Keys of a tile (the naive program asserts ``Nk % 64 == 0``)."""


class _Nest(NamedTuple):
    """A tiled nest: its key-tile loop (outermost), the loop directly inside it and, in the
    products ``C[row, d] += A[row, t] * B[t, d]`` (dV, dK, dQ), the loops over the head
    dimension (``head``) and over the terms of the sum (``terms``)."""

    keys: Any
    inner: Any
    head: Any = None
    terms: Any = None


def schedule(p: Proc, vector: bool = True) -> Proc:
    """The flash attention 2 backward of the naive ``attention_backward`` (the steps of the
    module docstring); key tiles of ``KEY_TILE``, query tiles of ``QUERY_TILE``. With
    ``vector`` and a CPU with AVX2, steps 9-10 (the AVX2 micro-kernels); else it stops after
    step 8 and the compiler vectorises what it can."""
    # the patterns of steps 7-10 (steps 1-6 find theirs in _fa2_nest)
    score, score_zero, dp_zero = p.find_alloc_or_arg("s"), p.find("s = 0.0"), p.find("dP[_] = 0.0")
    score_sum, p_exp = p.find("s += _").parent(), p.find("P[_] = exp(_)")
    p, nests = _fa2_nest(p, "perfect")
    # 7. the head dimension innermost in the tile products
    for name in ("dV", "dK", "dQ"):
        p, _ = reorder_loops(p, nests[name].head)
    # 8. the products over the head dimension (scores, dP) as sums of rows of K^T (V^T):
    # one score per key of the tile, the head dimension outside the keys, K and V tiles
    # staged transposed (Kt[d, key], Vt[d, key]) for each query tile
    p, ex = expand_dim(p, score, KEY_TILE, "jj")
    p, _ = lift_alloc(p, ex.alloc)
    p, _ = fission(p, score_zero.after())
    p, sums = fission(p, p.forward(score_sum).after())
    p, score_keys = reorder_loops(p, sums.first)
    p, dps = fission(p, dp_zero.after())
    p, dp_keys = reorder_loops(p, dps.second)
    for buf, name, nest in (("K", "Kt", p_exp), ("V", "Vt", dp_zero)):
        block = p.forward(nest).parent().parent().as_block()
        window = f"{buf}[{KEY_TILE} * jt:{KEY_TILE} * jt + {KEY_TILE}, 0:D]"
        p, st = stage_mem(p, block, window, name)
        p, _ = rearrange_dim(p, st.alloc, (1, 0))
    if not vector or isa() is None:
        return p
    # 9. the five products as register-tiled AVX2 micro-kernels: the scores and dP (one
    # score per row and key of the tile, each product nest alone in its row loop), then
    # dV, dK and dQ (the head columns past a multiple of TILE_COLS in a loop of their own)
    p, ex = expand_dim(p, ex.alloc, QUERY_TILE, "ii")
    p, _ = lift_alloc(p, ex.alloc)
    p, _ = fission(p, p.forward(score_sum).before())
    p, _ = fission(p, p.forward(score_sum).after())
    p, _ = fission(p, p.forward(dp_keys.outer).before())
    rows_of = {"i": f"{QUERY_TILE} * it + ii", "j": f"{KEY_TILE} * jt + jj"}
    kernels = [  # the sum's loops, C, C's row and column loops, cut, B's row
        (score_sum, score_keys.inner, "s", "i", "j", False, "Kt", "d"),
        (dp_keys.outer, dp_keys.inner, "dP", "i", "j", False, "Vt", "d"),
        (nests["dV"].terms, nests["dV"].head, "dV_acc", "j", "d", True, "dO", rows_of["i"]),
        (nests["dK"].terms, nests["dK"].head, "dK_acc", "j", "d", True, "Q", rows_of["i"]),
        (nests["dQ"].terms, nests["dQ"].head, "dQ", "i", "d", True, "K", rows_of["j"]),
    ]
    for terms, cols, c_buf, r, c, cut, b_buf, b_row in kernels:
        base = f"{QUERY_TILE} * it + " if c_buf == "dQ" else ""
        c_cols = f"{TILE_COLS} * {c}q:{TILE_COLS} * {c}q + {TILE_COLS}"
        c_win = (
            f"{c_buf}[{base}{TILE_ROWS} * {r}q:{base}{TILE_ROWS} * {r}q + {TILE_ROWS}, {c_cols}]"
        )
        windows = (c_win, f"{b_buf}[{b_row}, {c_cols}]", c_buf)
        p = _micro_kernel(p, p.forward(terms).parent(), terms, cols, windows, cut)
    # 10. the weights P = exp(s - L) 8 keys at a time: the scores, the broadcast L of the
    # row, the difference and its exp in AVX2 registers
    p, _ = _lanes(p, p.forward(p_exp).parent(), "e")
    operands = (
        (0, "lhs", "score_v"),
        (0, "rhs", "lse_v"),
        (0, None, "arg_v"),
        (None, None, "exp_v"),
    )
    for arg, side, name in operands:
        e = p.forward(p_exp).rhs()
        e = e if arg is None else e.args()[arg]
        e = e if side is None else getattr(e, side)()
        p, _, vec, rest = _lane_operand(p, (e,), "el", name)
        p, _ = replace(p, vec, _EXP_STEPS[name])
    p, _ = replace(p, rest, mm256_storeu_ps)
    return p


def schedule_guarded(p: Proc) -> Proc:
    """Steps 1-6 with guarded tiles (``split(tail="guard")``): the flash attention 2 backward
    loop nest at any sequence lengths, for ``without_asserts(attention_backward)``; the
    compiler vectorises what it can."""
    p, _ = _fa2_nest(p, "guard")
    p, _ = rename(p, "attention_backward_guarded")  # beside schedule's proc in one C unit
    return p


def without_asserts(p: Proc) -> Proc:
    """``p`` without its asserts (the tile multiples): a new proc, version 0, named as ``p``."""
    return Proc(dataclasses.replace(p.ir(), preds=()))


def _fa2_nest(p: Proc, tail: str) -> tuple[Proc, dict[str, _Nest]]:
    """Steps 1-6: the key-block-outer nest of flash attention 2's backward; ``tail`` is
    ``"perfect"`` (the asserted tile multiples) or ``"guard"`` (any lengths). Returns the proc
    and the tiled nests by name."""
    # the patterns: the nests (by their query and key loops), the zeroings, the buffers
    i_p, i_dv, i_dp, i_d, i_ds, _, i_dk = p.find_loop("i", many=True)
    j_p, _, j_dp, j_ds, j_dq, _ = p.find_loop("j", many=True)
    zeros = [p.find(f"{out}[_] = 0.0") for out in ("dV", "dQ", "dK")]
    drow, *tiles = (p.find_alloc_or_arg(x) for x in ("Drow", "P", "dP", "dS"))
    # 1. the zeroing of every accumulated output in a nest of its own
    split_off = []
    for zero in zeros:
        p, f = fission(p, zero.after(), n_lifts=2)
        split_off.append((f.first, f.second))
    (dv_zero, dv_sum), (dq_zero, dq_sum), (dk_zero, dk_sum) = split_off
    # 2. key tiles outermost, query tiles inside, in every nest
    nests: dict[str, _Nest] = {}
    for name, rows, keys in (("P", i_p, j_p), ("dP", i_dp, j_dp), ("dS", i_ds, j_ds)):
        p, nests[name] = _rows_keys(p, rows, keys, tail)
    p, nests["dQ"] = _rows_head_keys(p, dq_sum, p.forward(j_dq).parent(), j_dq, tail)
    for name, keys, rows in (("dV", dv_sum, i_dv), ("dK", dk_sum, i_dk)):
        p, nests[name] = _keys_head_rows(p, keys, p.forward(rows).parent(), rows, tail)
    for name, zero in (("dV zero", dv_zero), ("dK zero", dk_zero)):
        p, t = split(p, zero, KEY_TILE, ("jt", "jj"), tail=tail)
        nests[name] = _Nest(t.outer, t.inner)
    # 3. Drow first, dQ zeroed before the key loop
    p = _move_up(p, i_d, drow)
    p = _move_up(p, dq_zero, i_d)
    # 4. one key loop: the zeroing of dK and dV first, then one query loop
    order = ("P", "dV zero", "dV", "dP", "dS", "dQ", "dK zero", "dK")
    keys = nests["P"].keys
    for name in order[1:]:
        p, fk = fuse(p, keys, nests[name].keys)
        keys = fk.fused
    p, _ = reorder_stmts(p, p.forward(nests["dV zero"].inner).expand(1, 0))
    p = _move_up(p, nests["dK zero"].inner, nests["dV zero"].inner)
    p, _ = reorder_stmts(p, p.forward(nests["dV zero"].inner).expand(0, 1))
    queries = nests["P"].inner
    for name in ("dV", "dP", "dS", "dQ", "dK"):
        p, fq = fuse(p, queries, nests[name].inner)
        queries = fq.fused
    # 5. P, dP and dS one tile each, in the query loop
    for buf in reversed(tiles):
        p, _ = sink_alloc(p, buf)
        p = _move_down(p, buf, queries)
        p, _ = sink_alloc(p, buf)
        p, _ = resize_dim(p, buf, 0, QUERY_TILE, f"{QUERY_TILE} * it")
        p, _ = resize_dim(p, buf, 1, KEY_TILE, f"{KEY_TILE} * jt")
    # 6. dV and dK of a key block in local tiles, zeroed there, written once: dV around its
    # zeroing and the query loop, dK around its zeroing and everything after it
    for out, zero, more in (("dV", "dV zero", 1), ("dK", "dK zero", None)):
        block = p.forward(nests[zero].inner).expand(0, more)
        window = f"{out}[{KEY_TILE} * jt:{KEY_TILE} * jt + {KEY_TILE}, 0:D]"
        p, st = stage_mem(p, block, window, f"{out}_acc")
        p = _zero_instead_of_load(p, st.load, nests[zero].inner, tail)
    return p, nests


def _rows_keys(p: Proc, rows: Any, keys: Any, tail: str) -> tuple[Proc, _Nest]:
    """Tile a nest ``for i: for j: ...`` into ``for jt: for it: for ii: for jj: ...``."""
    p, r = split(p, rows, QUERY_TILE, ("it", "ii"), tail=tail)
    p, k = split(p, keys, KEY_TILE, ("jt", "jj"), tail=tail)
    if tail == "guard":  # the key tiles out of the query guard
        p, _ = lift_scope(p, k.outer)
    p, _ = reorder_loops(p, r.inner)
    p, _ = reorder_loops(p, r.outer)
    return p, _Nest(k.outer, r.outer)


def _rows_head_keys(p: Proc, rows: Any, head: Any, keys: Any, tail: str) -> tuple[Proc, _Nest]:
    """Tile ``for i: for d: for j: ...`` (dQ) into ``for jt: for it: for ii: for d: for
    jj: ...``: each element still sums over the keys in order."""
    p, r = split(p, rows, QUERY_TILE, ("it", "ii"), tail=tail)
    p, k = split(p, keys, KEY_TILE, ("jt", "jj"), tail=tail)
    p, _ = reorder_loops(p, head)
    if tail == "guard":
        p, _ = lift_scope(p, k.outer)
    p, _ = reorder_loops(p, r.inner)
    p, _ = reorder_loops(p, r.outer)
    return p, _Nest(k.outer, r.outer, head, k.inner)


def _keys_head_rows(p: Proc, keys: Any, head: Any, rows: Any, tail: str) -> tuple[Proc, _Nest]:
    """Tile ``for j: for d: for i: ...`` (dV, dK) into ``for jt: for it: for jj: for d: for
    ii: ...``: each element still sums over the queries in order."""
    p, k = split(p, keys, KEY_TILE, ("jt", "jj"), tail=tail)
    p, r = split(p, rows, QUERY_TILE, ("it", "ii"), tail=tail)
    p, _ = reorder_loops(p, head)
    if tail == "guard":
        p, _ = lift_scope(p, r.outer)
    p, _ = reorder_loops(p, k.inner)
    return p, _Nest(k.outer, r.outer, head, r.inner)


def _micro_kernel(
    p: Proc, rows: Any, terms: Any, cols: Any, windows: tuple[str, str, str], cut: bool
) -> Proc:
    """The product nest ``for row: for t: for col: C[row, col] += A[row, t] * B[t, col]`` as
    a micro-kernel: ``TILE_ROWS`` x ``TILE_COLS`` of ``C`` in AVX2 registers over the terms,
    the ``TILE_COLS`` of ``B`` of a term loaded once into registers, each update a fused
    multiply-add of a vector of ``B`` by a broadcast of ``A``. ``windows``: the window of
    ``C``, the window of ``B`` (one term) and the name of ``C``; ``cut``: the columns past a
    multiple of ``TILE_COLS`` in a loop of their own."""
    r, c = p.forward(rows).name()[0], p.forward(cols).name()[0]
    update = p.forward(cols).body()[0]
    p, _ = commute_expr(p, (update.rhs(),))  # B first, as the instruction has it
    p, tr = split(p, rows, TILE_ROWS, (f"{r}q", f"{r}r"), tail="perfect")
    p, tc = split(p, cols, TILE_COLS, (f"{c}q", f"{c}r"), tail="cut" if cut else "perfect")
    if cut:
        p, _ = fission(p, tc.outer.after(), n_lifts=2)
    # (rq, rr, t, cq, cr) -> (rq, cq, t, rr, cr)
    for loop in (terms, tr.inner, tr.inner):
        p, _ = reorder_loops(p, loop)
    p, acc = stage_mem(p, p.forward(terms).as_block(), windows[0], f"{windows[2]}_reg")
    p, bs = stage_mem(p, p.forward(tr.inner).as_block(), windows[1], f"{windows[2]}_b")
    p, ld = _lanes(p, acc.load.body()[0], "l")
    p, st = _lanes(p, acc.store.body()[0], "s")
    p, bl = _lanes(p, bs.load, "b")
    p, fm = _lanes(p, tc.inner, "r")
    p, _ = divide_dim(p, acc.alloc, 1, LANES)
    p, _ = divide_dim(p, bs.alloc, 0, LANES)
    p, _ = simplify(p)
    for reg in (acc.alloc, bs.alloc):
        p, _ = set_memory(p, reg, AVX2)
    for vec in (ld.inner, bl.inner):
        p, _ = replace(p, vec, mm256_loadu_ps)
    p, _ = replace(p, st.inner, mm256_storeu_ps)
    p, _ = replace(p, fm.inner, mm256_fmadd_ps_broadcast)
    return p


_EXP_STEPS = {
    "score_v": mm256_loadu_ps,
    "lse_v": mm256_broadcast_ss,
    "arg_v": mm256_sub_ps,
    "exp_v": mm256_exp_ps,
}
"""The instruction computing each operand of step 10."""


def _lane_operand(p: Proc, reads: tuple[Any, ...], lane: str, name: str) -> tuple[Any, ...]:
    """Compute ``reads`` (equal expressions of one statement in a loop over the lanes
    ``lane``) into an ``AVX2`` register ``name`` in a loop of its own before the statement
    (``sched/attention.py``'s helper): ``bind_expr``, ``expand_dim`` by the lane,
    ``lift_alloc``, ``fission``, ``set_memory``. Returns the proc, the register, the loop
    computing it and the loop of the statement."""
    p, b = bind_expr(p, reads, name)
    p, e = expand_dim(p, b.alloc, LANES, lane)
    p, _ = lift_alloc(p, e.alloc)
    p, f = fission(p, b.assign.after())
    p, _ = set_memory(p, e.alloc, AVX2)
    return p, e.alloc, f.first, f.second


def _lanes(p: Proc, loop: Any, name: str) -> tuple[Proc, Any]:
    """``split`` a loop into vectors of ``LANES`` (``{name}v``, ``{name}l``)."""
    return split(p, loop, LANES, (f"{name}v", f"{name}l"), tail="perfect")


def _move_up(p: Proc, stmt: Any, below: Any) -> Proc:
    """Swap ``stmt`` with the statement before it until it follows ``below``."""
    while p.forward(stmt).prev() != p.forward(below):
        p, _ = reorder_stmts(p, p.forward(stmt).expand(1, 0))
    return p


def _move_down(p: Proc, stmt: Any, above: Any) -> Proc:
    """Swap ``stmt`` with the statement after it until it precedes ``above``."""
    while p.forward(stmt).next() != p.forward(above):
        p, _ = reorder_stmts(p, p.forward(stmt).expand(0, 1))
    return p


def _zero_instead_of_load(p: Proc, load: Any, zero: Any, tail: str) -> Proc:
    """The load nest of a staged accumulator followed by its zeroing nest (both ``for jj: for
    d: ...``): one nest whose only write of each element is the zero (``fuse`` twice, then
    ``merge_writes`` drops the overwritten load)."""
    p, rows = fuse(p, load, zero)
    first, second = rows.first_body[0], rows.second_body[0]
    if tail == "guard":  # the load's guard (inside its columns) and the zeroing's as one
        p, up = lift_scope(p, first.body()[0])
        p, guards = fuse(p, up.outer, second)
        first, second = guards.first_body[0], guards.second_body[0]
    p, cols = fuse(p, first, second)
    p, _ = merge_writes(p, cols.fused.body())
    return p


# -- inputs and references


OUTPUTS = ("dQ", "dK", "dV")
"""The gradients, in the proc's argument order."""
TOLERANCE = 1e-3
"""The issue's tolerance: max |x - ref| / max |ref| per gradient, float32 against float64."""


def inputs(nq: int, nk: int, d: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random ``Q`` (pre-scaled), ``K``, ``V``, ``dO`` in float32, with ``O`` and ``L`` of the
    forward pass (computed in float64, rounded to float32)."""
    rng = np.random.default_rng(seed)
    x = {
        "Q": rng.standard_normal((nq, d)) / np.sqrt(d),
        "K": rng.standard_normal((nk, d)),
        "V": rng.standard_normal((nk, d)),
        "dO": rng.standard_normal((nq, d)),
    }
    x = {k: v.astype(np.float32) for k, v in x.items()}
    s = x["Q"].astype(np.float64) @ x["K"].astype(np.float64).T
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    den = e.sum(axis=1, keepdims=True)
    x["O"] = ((e / den) @ x["V"].astype(np.float64)).astype(np.float32)
    x["L"] = (m + np.log(den))[:, 0].astype(np.float32)
    return x


def reference(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """dQ, dK, dV by the backward formulas in float64 (``Drow`` from the float64 output)."""
    q, k, v, do = (x[n].astype(np.float64) for n in ("Q", "K", "V", "dO"))
    s = q @ k.T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ds = p * (do @ v.T - (do * (p @ v)).sum(axis=1, keepdims=True))
    return {"dQ": ds @ k, "dK": ds.T @ q, "dV": p.T @ do}


def torch_reference(x: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """dQ, dK, dV by torch autograd of ``scaled_dot_product_attention`` in float64 (scale 1:
    ``Q`` is pre-scaled); None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    q, k, v = (torch.tensor(x[n], dtype=torch.float64, requires_grad=True) for n in "QKV")
    out = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], scale=1.0)
    out.backward(torch.tensor(x["dO"], dtype=torch.float64)[None])
    grads = (q.grad, k.grad, v.grad)
    return {n: g.numpy() for n, g in zip(OUTPUTS, grads, strict=True) if g is not None}


def run(p: Proc, x: dict[str, np.ndarray], *, compiled: bool) -> dict[str, np.ndarray]:
    """dQ, dK, dV computed by ``p`` (compiled to C, or in the interpreter)."""
    (nq, d), nk = x["Q"].shape, x["K"].shape[0]
    out = {n: np.zeros((nq if n == "dQ" else nk, d), np.float32) for n in OUTPUTS}
    args = [x[n] for n in ("Q", "K", "V", "O", "dO", "L")] + [out[n] for n in OUTPUTS]
    (p.compile() if compiled else p.interpret)(nq, nk, d, *args)
    return out


def errors(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, float]:
    """max |got - ref| / max |ref| of each gradient."""
    return {n: float(np.abs(got[n] - ref[n]).max() / np.abs(ref[n]).max()) for n in OUTPUTS}


def check(
    p: Proc, nq: int, nk: int, d: int, *, compiled: bool, seed: int = 0, torch: bool = True
) -> list[str]:
    """Run ``p``; the problems found against the numpy formula (and torch autograd, when
    ``torch`` and installed), each gradient within ``TOLERANCE``."""
    x = inputs(nq, nk, d, seed)
    got = run(p, x, compiled=compiled)
    refs = {"numpy": reference(x)}
    if torch and (t := torch_reference(x)) is not None:
        refs["torch"] = t
    bad = []
    for who, ref in refs.items():
        for n, err in errors(got, ref).items():
            if not err <= TOLERANCE:
                bad.append(f"{p.name()} {nq}x{nk}x{d}: {n} off {who} by {err:.1e} (relative)")
    return bad


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(attention_backward), schedule_guarded(without_asserts(attention_backward))]


def main() -> int:
    p = schedule(attention_backward)
    print(p, end="\n\n")
    bad = check(attention_backward, 64, 64, 3, compiled=False)
    bad += check(p, 64, 64, 3, compiled=False)
    bad += check(p, 128, 192, 64, compiled=True)
    bad += check(schedule_guarded(without_asserts(attention_backward)), 100, 77, 5, compiled=True)
    if bad:
        print("MISMATCH:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: the flash attention 2 backward (whole and guarded tiles) matches the float64")
    print("formula (and torch autograd)\n")
    print(p.history())
    return 0


if __name__ == "__main__":
    sys.exit(main())
