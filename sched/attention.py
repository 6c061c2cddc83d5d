"""Derive one attention row and the tiled flash attention 2 forward from naive attention.

Run it with ``python sched/attention.py``. The naive program makes three passes over the keys
per query row (scores, max, then the sum and the weighted values) and materialises the score
row. The schedule:

1. ``fuse`` the sum and the weighted-value loops (two accumulators, ``l`` and ``O``);
2. ``split`` the max loop and the fused loop into key tiles and ``scan_fuse`` them: one running
   max, one correction per key tile (flash attention 2's granularity); ``bind_expr`` the
   weight ``exp(S - m)`` that both accumulations use, so it is computed once, and give the
   weights of a tile a loop of their own (``expand_dim``, ``lift_alloc``, ``fission``);
3. ``split`` the score loop, put the head dimension outside the keys of a tile (``fission``,
   ``reorder_loops``), ``fuse`` it in, then shrink the score row to one tile (``sink_alloc``,
   ``resize_dim``);
4. query tiles: ``split`` the row loop, give ``m`` and ``l`` one element per row of the tile
   (``expand_dim``, ``lift_alloc``), ``fission`` the row loop around the key loop and
   ``reorder_loops`` so that each key tile is visited once per query tile;
5. every per-row scalar (``m_prev``, ``alpha``) and row (scores ``S``, weights ``w``) one
   element per row of the query tile (``expand_dim``, ``lift_alloc`` out of the key loop: no
   allocation in it), scores and weights stored ``[key, row]`` (``rearrange_dim``); the query
   tile staged transposed once per query tile (``Qt[d, row]``) and the output tile
   accumulated transposed over all key tiles (``Ot[d, row]``; ``stage_mem``, ``rearrange_dim``):
   the row is the contiguous dimension everywhere;
6. one loop nest per statement of the row loop (``fission``), the rows innermost
   (``reorder_loops``): the running max, the correction, the rescale, the weights and the
   sums are each one loop across the rows of the tile, every row's reductions still in key
   order;
7. the QK^T micro-kernels: ``split`` keys and rows into ``QK_KEYS`` x ``ROWS`` tiles (4 x
   24: 12 accumulators; the rows of a query tile past a multiple of ``ROWS``, 16 of 64, in
   tiles of their own, ``tail="cut"`` + ``fission`` + ``reorder_stmts``), ``reorder_loops``
   the head dimension inside a tile, ``fuse`` the zeroing in and ``stage_mem`` the tile of
   scores (the compiler keeps it in vector registers);
8. the PV micro-kernels likewise: ``PV_HEADS`` head columns x ``ROWS`` rows of ``Ot`` staged
   over the keys of the tile (the head columns past a multiple of ``PV_HEADS`` in a loop of
   their own, ``tail="cut"``; the rows as in 7); V and K staged once per call before the
   query tiles (``stage_mem``, ``divide_dim``, ``rearrange_dim``): V transposed within each
   key tile (``Vt[io, d, key]``), K packed by QK^T kernel (``Kp[io, iq, d, key]``), so that
   every kernel's broadcasts stream along one or ``PV_HEADS`` rows instead of reading a
   line of K (V) per key; in step 10, ``Qt`` by vectors of rows (``Qt[row / 8, d, row %
   8]``: ``divide_dim``, ``rearrange_dim``), each vector operand of a QK^T kernel one
   contiguous stream over the head dimension;
9. ``parallelize_loop`` the query tiles (OpenMP): each thread owns its tiles' rows, so the
   results do not depend on the number of threads;
10.-12. on a CPU with AVX2, the vector code as instructions of ``cursched.platforms.x86``
   (``KERNELS``: AVX-512 where the CPU has it, 16 lanes, a query tile of 64 rows one
   micro-kernel tile of 4 vectors x 4 keys (head columns), no tile of leftover rows; else
   AVX2, 8 lanes, the tiles of 7-8): ``split`` into lanes, ``divide_dim`` + ``set_memory``
   of the register tiles, each operand bound to a register by ``bind_expr``/``expand_dim``/
   ``fission``, then ``replace``: the micro-kernels' fused multiply-adds with a broadcast of
   K (V), their vector operand (a tile's rows of ``Qt`` or ``w``) staged in registers once
   per step of the reduction for all the tile's broadcasts (``stage_mem`` into the
   registers, ``mm256_loadu_ps_reg`` / ``mm512_loadu_ps_reg``: gcc would fold a plain load
   into each FMA's memory operand and read the vector 4 times; ``tools/inner_loops.py``
   shows the compiled loop), the running max (``mm256_max_ps``, ``fmaxf``'s NaN rule), the
   weights' guarded exponent and ``mm256_exp_ps``; 13. the sums of the weights fused into
   the weights' loop (``fuse``), each vector of rows' sums in a register over the keys.
   Every reduction keeps the scalar program's order: each score sums over the head
   dimension in order, each row's max, sum and output over the keys in order (each product
   fused into its add, as the compiler contracts the scalar C code).

The patterns are all at the start (on the naive proc); every step uses cursors found there or
returned by an earlier step. ``Q`` is taken pre-scaled (by ``1 / sqrt(D)``). The script prints
the final procs, compiles them and checks them against numpy in float64.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from cursched import (
    DRAM,
    Proc,
    bind_expr,
    divide_dim,
    expand_dim,
    fission,
    fuse,
    lift_alloc,
    parallelize_loop,
    proc,
    rearrange_dim,
    reorder_loops,
    reorder_stmts,
    replace,
    resize_dim,
    scan_fuse,
    set_memory,
    simplify,
    sink_alloc,
    split,
    stage_mem,
    tune,
)
from cursched.platforms.x86 import (
    AVX2,
    AVX512,
    VectorMemory,
    isa,
    mm256_acc_ps,
    mm256_exp_ps,
    mm256_fmadd_ps_broadcast,
    mm256_loadu_ps,
    mm256_loadu_ps_reg,
    mm256_max_ps,
    mm256_setzero_ps,
    mm256_storeu_ps,
    mm256_sub_guarded_ps,
    mm512_acc_ps,
    mm512_exp_ps,
    mm512_fmadd_ps_broadcast,
    mm512_loadu_ps,
    mm512_loadu_ps_reg,
    mm512_max_ps,
    mm512_setzero_ps,
    mm512_storeu_ps,
    mm512_sub_guarded_ps,
)


@proc
def attention_row(
    Nk: size,
    D: size,
    q: f32[D] @ DRAM,
    K: f32[Nk, D] @ DRAM,
    V: f32[Nk, D] @ DRAM,
    o: f32[D] @ DRAM,
):
    m: f32
    m = -inf
    l: f32
    l = 0.0
    for d in seq(0, D):
        o[d] = 0.0
    S: f32[Nk] @ DRAM
    for i in seq(0, Nk):
        S[i] = 0.0
        for k in seq(0, D):
            S[i] += q[k] * K[i, k]
    for i in seq(0, Nk):
        m = fmax(m, S[i])
    for i in seq(0, Nk):
        l += exp(S[i] - m)
    for i in seq(0, Nk):
        for d in seq(0, D):
            o[d] += exp(S[i] - m) * V[i, d]
    for d in seq(0, D):
        o[d] = o[d] / l


@proc
def attention(
    Nq: size,
    Nk: size,
    D: size,
    Q: f32[Nq, D] @ DRAM,
    K: f32[Nk, D] @ DRAM,
    V: f32[Nk, D] @ DRAM,
    O: f32[Nq, D] @ DRAM,
    L: f32[Nq] @ DRAM,
):
    assert Nq % 64 == 0
    assert Nk % 64 == 0
    for r in seq(0, Nq):
        m: f32
        m = -inf
        l: f32
        l = 0.0
        for d in seq(0, D):
            O[r, d] = 0.0
        S: f32[Nk] @ DRAM
        for i in seq(0, Nk):
            S[i] = 0.0
            for k in seq(0, D):
                S[i] += Q[r, k] * K[i, k]
        for i in seq(0, Nk):
            m = fmax(m, S[i])
        for i in seq(0, Nk):
            l += exp(S[i] - m)
        for i in seq(0, Nk):
            for d in seq(0, D):
                O[r, d] += exp(S[i] - m) * V[i, d]
        for d in seq(0, D):
            O[r, d] = O[r, d] / l
        L[r] = m + log(l)


ROWS = 24
"""Query rows of a micro-kernel tile: three AVX2 vectors, 12 accumulators with ``QK_KEYS``
keys or ``PV_HEADS`` head columns (the rows of a query tile past a multiple of ``ROWS``,
16 of 64, a tile of their own: 8 accumulators)."""
QK_KEYS = 4
"""Keys of a QK^T micro-kernel tile (``QK_KEYS * ROWS / 8`` accumulators with AVX2)."""
PV_HEADS = 4
"""Head columns of a PV micro-kernel tile."""
LANES = 8
"""Floats of one AVX2 register."""


class Kernels(NamedTuple):
    """The vector code of steps 7-13 for one instruction set: its registers (``memory``,
    ``lanes`` floats each), the micro-kernels' tiles (``rows`` query rows x ``qk_keys`` keys,
    x ``pv_heads`` head columns) and the instructions ``replace`` puts in."""

    memory: VectorMemory
    lanes: int
    rows: int
    qk_keys: int
    pv_heads: int
    load: Proc
    store: Proc
    zero: Proc
    load_reg: Proc
    fma: Proc
    max: Proc
    sub_guarded: Proc
    exp: Proc
    acc: Proc


KERNELS = {
    "avx2": Kernels(
        AVX2, LANES, ROWS, QK_KEYS, PV_HEADS, mm256_loadu_ps, mm256_storeu_ps,
        mm256_setzero_ps, mm256_loadu_ps_reg, mm256_fmadd_ps_broadcast, mm256_max_ps,
        mm256_sub_guarded_ps, mm256_exp_ps, mm256_acc_ps,
    ),
    # 16 lanes, 32 registers: a query tile of 64 rows is one micro-kernel tile of 4 vectors
    # (16 accumulators with 4 keys or head columns, 4 vectors of rows loaded per step)
    "avx512": Kernels(
        AVX512, 16, 64, 4, 4, mm512_loadu_ps, mm512_storeu_ps, mm512_setzero_ps,
        mm512_loadu_ps_reg, mm512_fmadd_ps_broadcast, mm512_max_ps, mm512_sub_guarded_ps,
        mm512_exp_ps, mm512_acc_ps,
    ),
}  # fmt: skip
"""Steps 7-13 by instruction set (``isa()``'s names). A CPU with AVX-512 gets 16-lane
vectors: on the Zen 5 the benchmarks ran on, 512-bit FMAs issue at the rate of 256-bit ones
(7.1 G/s each, 12 independent chains), so each does twice the work; 32 registers hold the
16 accumulators and 4 vectors of rows of a 64-row tile."""


def schedule_row(p: Proc) -> Proc:
    """One attention row: the naive passes become one online pass (no tiles)."""
    # the patterns: the four key loops
    scores, maxes, sums, values = p.find_loop("i", many=True)
    p, acc = fuse(p, sums, values)
    p, online = scan_fuse(p, maxes, acc.fused)
    l_up, o_up = online.second_updates
    p, _ = bind_expr(p, (l_up.rhs(), o_up.rhs().lhs()), "w")  # each weight computed once
    p, _ = fuse(p, scores, online.fused)
    return p


def schedule_flash(
    p: Proc, key_tile: int = 64, query_tile: int = 64, vector: bool | str = True
) -> Proc:
    """Flash attention 2: key tiles of ``key_tile``, query tiles of ``query_tile`` rows, the
    query tiles in parallel, every per-row quantity vectorised across the rows of a tile, and
    register-tiled products (``qk_keys`` keys x ``rows`` rows, ``pv_heads`` head columns x
    ``rows`` rows of the instruction set's ``Kernels``). ``key_tile`` must be a multiple of
    ``qk_keys``, ``query_tile`` of the lanes. ``vector``: True, the widest instruction set of
    ``KERNELS`` this CPU has (AVX-512, else AVX2; none: the compiler vectorises what it can);
    ``"avx2"`` or ``"avx512"``, that one (scheduled on any CPU, compiled on one that has it);
    False, none (with AVX2's tiles)."""
    kern = _kernels(vector)
    shape = kern or KERNELS["avx2"]
    # the patterns: the four key loops, the row loop, the score row and the statistics
    scores, maxes, sums, values = p.find_loop("i", many=True)
    rows = p.find_loop("r")
    score_row, m, l = (p.find_alloc_or_arg(x) for x in ("S", "m", "l"))
    # 1. one loop for both accumulators
    p, acc = fuse(p, sums, values)
    # 2. key tiles, then the online max with one correction per tile
    p, mt = split(p, maxes, key_tile, ("io", "ii"), tail="perfect")
    p, at = split(p, acc.fused, key_tile, ("io", "ii"), tail="perfect")
    p, online = scan_fuse(p, mt.outer, at.outer)
    # the weights exp(S - m) of a tile computed once, in a loop of their own
    l_up, o_up = online.second_updates
    p, w = bind_expr(p, (l_up.rhs(), o_up.rhs().lhs()), "w")
    p, wt = expand_dim(p, w.alloc, key_tile, "ii")
    p, _ = lift_alloc(p, wt.alloc)
    p, _ = fission(p, w.assign.after())
    # 3. the scores of a tile computed in the same pass, kept for one tile only
    p, st = split(p, scores, key_tile, ("io", "ii"), tail="perfect")
    p, zero = fission(p, st.inner.body()[0].after())
    p, _ = reorder_loops(p, zero.second)
    p, keys = fuse(p, st.outer, online.fused)
    p, sunk = sink_alloc(p, score_row)
    p, _ = resize_dim(p, sunk.alloc, 0, key_tile, f"{key_tile} * io")
    # 4. query tiles: per-row statistics, the key loop outside the rows of a tile
    p, qt = split(p, rows, query_tile, ("rt", "rr"), tail="perfect")
    for stat in (m, l):
        p, ex = expand_dim(p, stat, query_tile, "rr")
        p, _ = lift_alloc(p, ex.alloc)
    p, _ = fission(p, keys.fused.before())
    p, around = fission(p, keys.fused.after())
    p, swapped = reorder_loops(p, around.first)
    # 5. every per-row scalar and row of a tile one element per row of the query tile,
    # allocated once per query tile (none in the key loop); scores and weights [key, row]
    for buf in (sunk.alloc, online.saved[0], online.factor[0], wt.alloc):
        p, ex = expand_dim(p, buf, query_tile, "rr")
        p, _ = lift_alloc(p, ex.alloc, n_lifts=2)
    for buf in (sunk.alloc, wt.alloc):
        p, _ = rearrange_dim(p, buf, (1, 0))
    # the query tile transposed once (Qt[d, row]) and the output tile accumulated transposed
    # (Ot[d, row]) over all key tiles: the row is the contiguous, vector dimension
    block = f"{query_tile} * rt:{query_tile} * rt + {query_tile}, 0:D"
    p, qs = stage_mem(p, swapped.outer, f"Q[{block}]", "Qt")
    p, _ = rearrange_dim(p, qs.alloc, (1, 0))
    p, ot = stage_mem(p, swapped.outer, f"O[{block}]", "Ot")
    p, _ = rearrange_dim(p, ot.alloc, (1, 0))
    # 6. one loop nest per statement of the row loop, the rows innermost
    parts = []
    for stmt in list(p.forward(swapped.inner).body())[:-1]:
        p, f = fission(p, p.forward(stmt).after())
        parts.append(f.first)
    zero_s, qk, _, maxes_r, _, _, rescale_o, weights, sums_pv = [*parts, f.second]
    outer = []
    for loop in (zero_s, maxes_r, rescale_o, weights):
        p, ro = reorder_loops(p, loop)
        outer.append(ro.outer)
    p, pv2 = fission(p, p.forward(sums_pv).body()[0].body()[0].after(), n_lifts=2)
    p, sums_l = reorder_loops(p, pv2.first)  # the rows' sums side by side, each in key order
    p, _ = reorder_loops(p, p.forward(pv2.second).body()[0])
    p, by_head = reorder_loops(p, pv2.second)
    p, pv_keys = reorder_loops(p, by_head.inner)
    # 7. the QK^T micro-kernels: tiles of QK_KEYS keys x ROWS rows in registers over the
    # head dimension, their zeroing fused in; the rows past the last whole tile (64 =
    # 2 * 24 + 16) one tile of their own (a block of rows: ``_split_rows``)
    p, zk = split(p, outer[0], shape.qk_keys, ("iq", "ij"), tail="perfect")
    p, zero_rows = _split_rows(p, p.forward(zk.inner).body()[0], query_tile, shape.rows, 2)
    p, qk_rows = _split_rows(p, qk, query_tile, shape.rows, 0)
    if len(qk_rows) == 2:  # [zero, zero tail, qk, qk tail] -> [zero, qk, zero tail, qk tail]
        p, _ = reorder_stmts(p, p.forward(zero_rows[1].outer).parent().parent().expand(0, 1))
    tiles = []
    blocks = _row_blocks(query_tile, shape.rows)
    for (base, rows), zr, qr in zip(blocks, zero_rows, qk_rows, strict=True):
        # the zeroing (iq, ij, rq, rj) -> (iq, rq, ij, rj)
        p, _ = reorder_loops(p, p.forward(zr.outer).parent())
        p, qk_keys = split(
            p, p.forward(qr.inner).body()[0].body()[0], shape.qk_keys, ("iq", "ij"), tail="perfect"
        )
        for _ in range(3):  # (rq, rj, k, iq, ij) -> (rq, k, iq, ij, rj)
            p, _ = reorder_loops(p, qr.inner)
        p, _ = reorder_loops(p, p.forward(qr.outer).body()[0])
        p, _ = reorder_loops(p, qr.outer)  # -> (iq, rq, k, ij, rj)
        p, _ = fuse(p, p.forward(zr.outer).parent(), qk_keys.outer)
        p, tile = fuse(p, zr.outer, qr.outer)
        n = shape.qk_keys
        keys, r0 = f"{n} * iq:{n} * iq + {n}", f"{base} + {rows} * rq"
        name = "s_acc" if base == 0 else "s_tail"
        p, acc = stage_mem(p, tile.fused.body(), f"S[{keys}, {r0}:{r0} + {rows}]", name)
        # the rows outside the keys: the tile's rows of Qt (ROWS x D) stay in L1 while all
        # the key tiles' K rows stream past (at head 128 all of Qt is 32 KiB, L1's size)
        p, _ = reorder_loops(p, p.forward(tile.fused).parent())
        tiles.append(
            _Tile(acc, qr.inner, zr.inner, r0, rows, "Qt[k, ", "qt_v" if base == 0 else "qt_tail")
        )
    # 8. the PV micro-kernels: tiles of PV_HEADS head columns x ROWS rows in registers over
    # the keys (the head columns past a multiple of PV_HEADS in a loop of their own, the rows
    # past the last whole tile one tile)
    p, _ = split(p, by_head.outer, shape.pv_heads, ("dq", "dj"), tail="cut")
    p, pv_rows = _split_rows(p, pv_keys.inner, query_tile, shape.rows, 2)
    for (base, rows), pr in zip(blocks, pv_rows, strict=True):
        keys_loop = p.forward(pr.outer).parent()
        for loop in (keys_loop.parent(), keys_loop.parent(), keys_loop):  # (dq, dj, ii, rq,
            p, _ = reorder_loops(p, p.forward(loop))  # rj) -> (dq, rq, ii, dj, rj)
        n = shape.pv_heads
        heads, r0 = f"{n} * dq:{n} * dq + {n}", f"{base} + {rows} * rq"
        name = "o_acc" if base == 0 else "o_tail"
        p, acc = stage_mem(p, p.forward(keys_loop), f"Ot[{heads}, {r0}:{r0} + {rows}]", name)
        tiles.append(
            _Tile(acc, pr.inner, None, r0, rows, "w[ii, ", "w_v" if base == 0 else "w_tail")
        )
    # V staged once per call, before the query tiles, transposed within each key tile
    # (Vt[io, d, key]): a PV kernel's broadcasts then stream along PV_HEADS rows of Vt like
    # QK^T's along K's rows; read in place, V's rows (one line per key at head 64, 256 B
    # apart, like the rows of w) conflict in L1 and the PV kernels ran ~25% slower per FMA
    p, vs = stage_mem(p, qt.outer, "V[0:Nk, 0:D]", "Vt")
    p, _ = divide_dim(p, vs.alloc, 0, key_tile)
    p, _ = rearrange_dim(p, vs.alloc, (0, 2, 1))
    p, _ = split(p, vs.load, key_tile, ("vo", "vi"), tail="perfect")
    # K likewise, packed by QK^T micro-kernel (Kp[io, iq, d, key]): a kernel's QK_KEYS
    # broadcasts per step read one 16-byte run, its keys' rows one stream (at head 128 the
    # four rows of K, 512 B each, and the 32 KiB of Qt overflowed L1)
    p, ks = stage_mem(p, qt.outer, "K[0:Nk, 0:D]", "Kp")
    p, _ = divide_dim(p, ks.alloc, 0, key_tile)
    p, _ = divide_dim(p, ks.alloc, 1, shape.qk_keys)
    p, _ = rearrange_dim(p, ks.alloc, (0, 1, 3, 2))
    p, kl = split(p, ks.load, key_tile, ("ko", "ki"), tail="perfect")
    p, _ = split(p, kl.inner, shape.qk_keys, ("kq", "kj"), tail="perfect")
    p, _ = simplify(p)
    # 9. the query tiles in parallel
    p, _ = parallelize_loop(p, qt.outer)
    if kern is None:
        return p
    lanes, reg = kern.lanes, kern.memory
    # 10. the instructions of kern (AVX-512 or AVX2), every vector one row of lanes: the
    # micro-kernels' tiles in registers, fused multiply-adds with a broadcast of K (V)
    # Qt by vectors of rows (Qt[row / lanes, d, row % lanes]): each vector operand of a QK^T
    # kernel one contiguous stream over the head dimension, not 32 of every 256 bytes (at head 128
    # the QK^T kernels' Qt, 32 KiB, overflowed L1; ~5-8% faster there, neutral at 64)
    # (not with a tile of one vector of rows, query_tile 32: the lanes' split of its rows,
    # a loop of one iteration, leaves the staged vector's index a lane offset)
    pack_qt = all(rows > lanes for _, rows in blocks)
    if pack_qt:
        p, _ = divide_dim(p, qs.alloc, 1, lanes)
        p, _ = rearrange_dim(p, qs.alloc, (1, 0, 2))
        p, _ = split(p, qs.load, lanes, ("qo", "ql"), tail="perfect")
        p, _ = simplify(p)
    for t in tiles:
        # the vector operand (the tile's rows of Qt or w) loaded once per step of the
        # reduction into registers that all the tile's FMAs share
        packed = pack_qt and t.row.startswith("Qt[")  # its vectors of rows a dimension
        if packed:  # r0 = "{base} + {rows} * rq": vectors base / 8 + rows / 8 * rq on;
            # the rows in vectors first, so that the staged operand is [vector, lane]
            nvec = t.rows // lanes
            v0 = f"{int(t.r0.split(' + ')[0]) // lanes} + {nvec} * rq"
            window = f"Qt[{v0}:{v0} + {nvec}, k, 0:{lanes}]"
            p, fm = _lanes(p, lanes, t.fma, "r")
            p, _ = simplify(p)
        else:
            window = f"{t.row}{t.r0}:{t.r0} + {t.rows}]"
        p, vec = stage_mem(p, p.forward(t.fma).parent(), window, t.vector, memory=reg)
        p, ld = _lanes(p, lanes, t.acc.load.body()[0], "l")
        p, st = _lanes(p, lanes, t.acc.store.body()[0], "s")
        if packed:  # the load a nest (vector, lane) already
            lanes_load = p.forward(vec.load).body()[0]
        else:
            p, vl = _lanes(p, lanes, vec.load, "q")
            lanes_load = vl.inner
            p, fm = _lanes(p, lanes, t.fma, "r")
        p, zero_v = _lanes(p, lanes, t.zero, "z") if t.zero is not None else (p, None)
        p, _ = divide_dim(p, t.acc.alloc, 1, lanes)
        if not packed:
            p, _ = divide_dim(p, vec.alloc, 0, lanes)
        p, _ = simplify(p)
        p, _ = set_memory(p, t.acc.alloc, reg)
        p, _ = replace(p, ld.inner, kern.load)
        p, _ = replace(p, st.inner, kern.store)
        if zero_v is not None:
            p, _ = replace(p, zero_v.inner, kern.zero)
        p, _ = replace(p, lanes_load, kern.load_reg)
        p, _ = replace(p, fm.inner, kern.fma)
    # 11. the running max of the rows in registers over the keys of a tile
    p, mv = stage_mem(p, outer[1], f"m[0:{query_tile}]", "m_v")
    p, ld = _lanes(p, lanes, mv.load, "l")
    p, st = _lanes(p, lanes, mv.store, "s")
    p, mx = _lanes(p, lanes, p.forward(outer[1]).body()[0], "r")
    p, _ = divide_dim(p, mv.alloc, 0, lanes)
    p, _ = simplify(p)
    p, _ = set_memory(p, mv.alloc, reg)
    p, _ = replace(p, ld.inner, kern.load)
    p, _ = replace(p, st.inner, kern.store)
    update = p.forward(mx.inner).body()[0]
    p, _, score_v, rest = _lane_operand(p, kern, (update.rhs().args()[1],), "rl", "score_v")
    p, _ = replace(p, score_v, kern.load)
    p, _ = replace(p, rest, kern.max)
    # 12. the weights: the scores minus the guarded max, then exp, a vector of rows at a time
    p, wx = _lanes(p, lanes, p.forward(outer[3]).body()[0], "r")
    # the vectors of rows outside the keys: a vector's guarded max is the same for all keys
    # (the compiler hoists it; with 8 vectors inside it recomputed it per key)
    p, w_rows = reorder_loops(p, outer[3])
    update = p.forward(wx.inner).body()[0]
    p, _, score_v, _ = _lane_operand(p, kern, (update.rhs().args()[0].lhs(),), "rl", "score_w")
    guard = p.forward(update).rhs().args()[0].rhs()
    p, _, max_v, _ = _lane_operand(p, kern, (guard.args()[1], guard.args()[2]), "rl", "max_w")
    update = p.forward(update)
    p, _, arg_v, _ = _lane_operand(p, kern, (update.rhs().args()[0],), "rl", "arg_w")
    update = p.forward(update)
    p, _, exp_v, store_w = _lane_operand(p, kern, (update.rhs(),), "rl", "exp_w")
    for loads in (score_v, max_v):
        p, _ = replace(p, loads, kern.load)
    p, _ = replace(p, arg_v, kern.sub_guarded)
    p, _ = replace(p, exp_v, kern.exp)
    p, _ = replace(p, store_w, kern.store)
    # 13. the sums of the weights in the weights' loop (no pass of their own over w): each
    # vector of rows' sums in a register over the keys, still in key order
    p, lx = _lanes(p, lanes, p.forward(sums_l.outer).body()[0], "r")
    p, l_rows = reorder_loops(p, sums_l.outer)
    p, _ = fuse(p, w_rows.outer, l_rows.outer)
    p, keys = fuse(p, w_rows.inner, l_rows.inner)
    p, lv = stage_mem(p, keys.fused, f"l[{lanes} * rv:{lanes} * rv + {lanes}]", "l_v", memory=reg)
    p, _ = replace(p, lv.load, kern.load)
    p, _ = replace(p, lv.store, kern.store)
    update = p.forward(lx.inner).body()[0]
    p, _, w_l, acc_l = _lane_operand(p, kern, (update.rhs(),), "rl", "w_l")
    p, _ = replace(p, w_l, kern.load)
    p, _ = replace(p, acc_l, kern.acc)
    return p


class _Tile(NamedTuple):
    """A micro-kernel of steps 7-8, for step 10: its staged accumulators, its FMA's and
    zeroing's innermost (row) loops, its rows (``r0``, ``rows``), the window of its vector
    operand up to the rows (``row``) and that operand's register name (``vector``)."""

    acc: Any
    fma: Any
    zero: Any
    r0: str
    rows: int
    row: str
    vector: str


def _kernels(vector: bool | str) -> Kernels | None:
    """The instruction set of steps 10-13 that ``vector`` asks for (``schedule_flash``)."""
    if vector is True:
        name = isa()
        return KERNELS[name] if name is not None else None
    return KERNELS[vector] if vector else None


def _row_blocks(query_tile: int, rows: int) -> list[tuple[int, int]]:
    """(first row, rows of a tile) of each block of rows of a query tile: whole tiles of
    ``rows`` rows, then one tile of the rows past them."""
    main = rows * (query_tile // rows)
    rest = [(main, query_tile - main)] if query_tile > main else []
    return ([(0, rows)] if main else []) + rest


def _split_rows(
    p: Proc, loop: Any, query_tile: int, rows: int, lifts: int
) -> tuple[Proc, list[Any]]:
    """``split`` a loop over the rows of a query tile into tiles of ``rows`` (``rq``,
    ``rj``), one ``SplitCursors`` per block of ``_row_blocks``; a second block's nest of its
    own (``fission`` out of ``lifts`` loops)."""
    blocks = _row_blocks(query_tile, rows)
    tail = "perfect" if len(blocks) == 1 else "cut"
    p, main = split(p, loop, blocks[0][1], ("rq", "rj"), tail=tail)
    if len(blocks) == 1:
        return p, [main]
    if lifts:
        p, _ = fission(p, main.outer.after(), n_lifts=lifts)
    p, rest = split(p, p.forward(main.tail), blocks[1][1], ("rq", "rj"), tail="perfect")
    return p, [main, rest]


def _lanes(p: Proc, lanes: int, loop: Any, name: str) -> tuple[Proc, Any]:
    """``split`` a loop into vectors of ``lanes`` (``{name}v``, ``{name}l``)."""
    return split(p, loop, lanes, (f"{name}v", f"{name}l"), tail="perfect")


def _lane_operand(
    p: Proc, kern: Kernels, reads: tuple[Any, ...], lane: str, name: str
) -> tuple[Any, ...]:
    """Compute ``reads`` (equal expressions of one statement in a loop over the lanes
    ``lane``) into a register ``name`` of ``kern`` in a loop of its own before the statement:
    ``bind_expr``, ``expand_dim`` by the lane, ``lift_alloc``, ``fission``, ``set_memory``.
    Returns the proc, the register, the loop computing it and the loop of the statement."""
    p, b = bind_expr(p, reads, name)
    p, e = expand_dim(p, b.alloc, kern.lanes, lane)
    p, _ = lift_alloc(p, e.alloc)
    p, f = fission(p, b.assign.after())
    p, _ = set_memory(p, e.alloc, kern.memory)
    return p, e.alloc, f.first, f.second


def inputs(nq: int, nk: int, d: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random ``Q`` (pre-scaled), ``K``, ``V`` in float32."""
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((nq, d)) / np.sqrt(d)).astype(np.float32)
    k = rng.standard_normal((nk, d)).astype(np.float32)
    v = rng.standard_normal((nk, d)).astype(np.float32)
    return {"Q": q, "K": k, "V": v}


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(output, log-sum-exp per row) in float64."""
    s = q.astype(np.float64) @ k.astype(np.float64).T
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    den = e.sum(axis=1, keepdims=True)
    return (e / den) @ v.astype(np.float64), (m + np.log(den))[:, 0]


def check_row(p: Proc, nk: int, d: int, *, compiled: bool, seed: int = 0) -> list[str]:
    """Run a row proc on one query; the problems found (atol 1e-5, rtol 1e-5)."""
    x = inputs(1, nk, d, seed)
    o = np.zeros(d, np.float32)
    (p.compile() if compiled else p.interpret)(nk, d, x["Q"][0], x["K"], x["V"], o)
    ref, _ = reference(x["Q"], x["K"], x["V"])
    if not np.allclose(o, ref[0], atol=1e-5, rtol=1e-5):
        return [f"{p.name()}: max |o - ref| = {np.abs(o - ref[0]).max():.1e}"]
    return []


def check_flash(p: Proc, nq: int, nk: int, d: int, *, compiled: bool, seed: int = 0) -> list[str]:
    """Run an attention proc; the problems found (atol 1e-5, rtol 1e-4)."""
    x = inputs(nq, nk, d, seed)
    o, lse = np.zeros((nq, d), np.float32), np.zeros(nq, np.float32)
    (p.compile() if compiled else p.interpret)(nq, nk, d, x["Q"], x["K"], x["V"], o, lse)
    ref, ref_lse = reference(x["Q"], x["K"], x["V"])
    bad = []
    if not np.allclose(o, ref, atol=1e-5, rtol=1e-4):
        bad.append(f"{p.name()}: max |O - ref| = {np.abs(o - ref).max():.1e}")
    if not np.allclose(lse, ref_lse, atol=1e-5, rtol=1e-4):
        bad.append(f"{p.name()}: max |L - ref| = {np.abs(lse - ref_lse).max():.1e}")
    return bad


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule_row(attention_row), schedule_flash(attention)]


# -- the tuning space (``cursched tune sched/attention.py``): the flash schedule's tiles


def schedule_tuned(p: Proc, key_tile: int, query_tile: int) -> Proc:
    """``schedule_flash`` with its key and query tiles as the parameters."""
    return schedule_flash(p, key_tile, query_tile)


def tune_inputs() -> tuple[object, ...]:
    """The timed call: 1024 queries and keys, head 64."""
    n, d = 1024, 64
    x = inputs(n, n, d)
    out = (np.zeros((n, d), np.float32), np.zeros(n, np.float32))
    return (n, n, d, x["Q"], x["K"], x["V"], *out)


space = tune.Space(key_tile=[64, 32, 128], query_tile=[64, 32, 128])
tunable = tune.Tunable(attention, schedule_tuned, space, tune_inputs)


def main() -> int:
    row = schedule_row(attention_row)
    print(row, end="\n\n")
    flash = schedule_flash(attention)
    print(flash, end="\n\n")
    bad = check_row(row, 48, 8, compiled=False) + check_row(row, 256, 64, compiled=True)
    bad += check_flash(flash, 64, 64, 3, compiled=False)
    bad += check_flash(flash, 128, 256, 64, compiled=True)
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: the attention row and flash attention 2 match numpy (float64 reference)\n")
    print(flash.history())
    return 0


if __name__ == "__main__":
    sys.exit(main())
