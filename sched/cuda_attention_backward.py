"""The flash attention 2 backward as CUDA kernels (issue 17, part 4), derived from the naive
backward program as ``sched/attention_backward.py`` derives its CPU version, then kernelised.

Run it with ``python sched/cuda_attention_backward.py``: it prints the final proc and its
kernels, runs them in the CPU emulation (both thread orders, races checked) at sizes that are
not multiples of the tiles and checks dQ, dK, dV against the float64 backward formulas and
torch autograd of ``scaled_dot_product_attention`` (float64), within 1e-3 relative; on a
machine with a GPU and cupy it also runs them there.

The naive program is ``sched/attention_backward.py``'s, repeated here (sched scripts are run
as files, not imported) with the head dimension fixed at 64, so that the per-thread register
rows and the shared tiles have constant shapes, every tensor in ``GLOBAL``, and no asserts on
the lengths: the tiles are guarded. The schedule, with primitives and the cursors they return:

1.-6. ``sched/attention_backward.py``'s steps 1-6 with guarded tiles (``split(tail="guard")``)
   of ``KEY_TILE`` keys and ``QUERY_TILE`` queries: D (``Drow``) first, the key tiles
   outermost and the query tiles inside, ``P``, ``dP``, ``dS`` one tile each, dK and dV of a
   key block in local tiles zeroed there and written once;
7. dQ: each key block's contribution to a query tile summed in a tile of its own
   (``stage_mem(accum=True)``), kept per (query tile, key block) in a top-level ``GLOBAL``
   workspace ``dQ_part`` (``expand_dim`` twice, ``lift_alloc``), the adds into dQ taken out of
   the key loop (``fission``) and turned into a sum over the key blocks per element of dQ
   (``reorder_loops``), with dQ's zeroing moved down and fused into it (``reorder_stmts``,
   ``split``, ``fuse``). This is the brief's option (b): the key-block kernel writes only its
   own slice of ``dQ_part``, so blocks never touch one element of dQ (no atomics, no race),
   and no recomputation primitive is needed. Each element of dQ still sums its keys in order,
   key block by key block (the reassociation is ``stage_mem(accum=True)``'s, proven there);
8. kernel ``drow``: a block per 64 query rows, a thread per row;
9. kernel ``dkdv``: a block per key tile, a thread per key row (``bind_loop``): the Q and dO
   tiles of a query tile staged in ``SHARED`` (``stage_mem(memory=SHARED)``, loaded one
   column per thread, coalesced), dK and dV of the thread's key row in ``REGISTER`` (zeroed
   at the start, written once at the end), the thread's column of ``P`` and ``dP`` in
   ``REGISTER`` (``rearrange_dim``: the key first), ``dS`` in ``SHARED`` (the dQ product
   reads a whole row of it), the dQ product a thread per head column (``lift_scope``,
   ``reorder_loops``); barriers by ``insert_barriers``;
10. kernel ``dq_sum``: a block per query tile, a thread per head column: dQ = the sum of the
   partial tiles over the key blocks.

The patterns are all at the start (on the naive proc).

Not tuned (no GPU was at hand): ptxas (sm_90) gives ``dkdv`` 255 registers with a few spilled
words (the two register rows are 128 floats of each thread), 24 KiB of shared memory, 64
threads a block; the K and V rows of a thread are read from global memory (through L1) for
every query row; the workspace ``dQ_part`` holds ``Nq x 64`` floats per key block.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from cursched import (
    GLOBAL,
    REGISTER,
    SHARED,
    Proc,
    bind_loop,
    expand_dim,
    fission,
    fuse,
    insert_barriers,
    lift_alloc,
    lift_scope,
    merge_writes,
    proc,
    reorder_loops,
    reorder_stmts,
    resize_dim,
    scope,
    set_memory,
    sink_alloc,
    split,
    stage_mem,
)
from cursched.codegen.cuda import gpu_available


def _cpu_script() -> ModuleType:
    """``sched/attention_backward.py`` (its inputs and references), loaded by path."""
    path = Path(__file__).resolve().with_name("attention_backward.py")
    spec = importlib.util.spec_from_file_location("attention_backward_cpu", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CPU = _cpu_script()
"""The CPU script: ``inputs``, ``reference``, ``torch_reference``, ``errors``, ``TOLERANCE``."""


@proc
def attention_backward(
    Nq: size,
    Nk: size,
    Q: f32[Nq, 64] @ GLOBAL,
    K: f32[Nk, 64] @ GLOBAL,
    V: f32[Nk, 64] @ GLOBAL,
    O: f32[Nq, 64] @ GLOBAL,
    dO: f32[Nq, 64] @ GLOBAL,
    L: f32[Nq] @ GLOBAL,
    dQ: f32[Nq, 64] @ GLOBAL,
    dK: f32[Nk, 64] @ GLOBAL,
    dV: f32[Nk, 64] @ GLOBAL,
):
    Drow: f32[Nq] @ GLOBAL
    P: f32[Nq, Nk] @ GLOBAL
    dP: f32[Nq, Nk] @ GLOBAL
    dS: f32[Nq, Nk] @ GLOBAL
    for i in seq(0, Nq):
        for j in seq(0, Nk):
            s: f32
            s = 0.0
            for d in seq(0, 64):
                s += Q[i, d] * K[j, d]
            P[i, j] = exp(s - L[i])
    for j in seq(0, Nk):
        for d in seq(0, 64):
            dV[j, d] = 0.0
            for i in seq(0, Nq):
                dV[j, d] += P[i, j] * dO[i, d]
    for i in seq(0, Nq):
        for j in seq(0, Nk):
            dP[i, j] = 0.0
            for d in seq(0, 64):
                dP[i, j] += dO[i, d] * V[j, d]
    for i in seq(0, Nq):
        Drow[i] = 0.0
        for d in seq(0, 64):
            Drow[i] += dO[i, d] * O[i, d]
    for i in seq(0, Nq):
        for j in seq(0, Nk):
            dS[i, j] = P[i, j] * (dP[i, j] - Drow[i])
    for i in seq(0, Nq):
        for d in seq(0, 64):
            dQ[i, d] = 0.0
            for j in seq(0, Nk):
                dQ[i, d] += dS[i, j] * K[j, d]
    for j in seq(0, Nk):
        for d in seq(0, 64):
            dK[j, d] = 0.0
            for i in seq(0, Nq):
                dK[j, d] += dS[i, j] * Q[i, d]


KEY_TILE = 64
"""Keys of a tile: one ``dkdv`` block, a thread per key row (its dK and dV rows, 2 x 64
floats, in registers)."""
QUERY_TILE = 32
"""Query rows of a tile: the Q, dO and dS tiles in SHARED take 3 x 32 x 64 x 4 = 24 KiB."""


class _Nest(NamedTuple):
    """A tiled nest (as ``sched/attention_backward.py``'s): its key-tile loop, the loop
    directly inside it and, in the products, the loops over the head dimension (``head``) and
    over the terms of the sum (``terms``)."""

    keys: Any
    inner: Any
    head: Any = None
    terms: Any = None


def _fa2_nest(p: Proc, kt: int = KEY_TILE, qt: int = QUERY_TILE) -> tuple[Proc, dict[str, _Nest]]:
    """Steps 1-6 of ``sched/attention_backward.py`` (its ``_fa2_nest`` with ``tail="guard"``,
    tiles of ``kt`` keys and ``qt`` queries, the head dimension 64): the key-block-outer nest of
    flash attention 2's backward at any lengths. Returns the proc and the tiled nests by name
    (also the dK/dV accumulators, ``"dK acc"``: store nest and allocation, and the nests of
    Drow and of dQ's zeroing)."""
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
        p, nests[name] = _rows_keys(p, rows, keys, kt, qt)
    p, nests["dQ"] = _rows_head_keys(p, dq_sum, p.forward(j_dq).parent(), j_dq, kt, qt)
    for name, keys, rows in (("dV", dv_sum, i_dv), ("dK", dk_sum, i_dk)):
        p, nests[name] = _keys_head_rows(p, keys, p.forward(rows).parent(), rows, kt, qt)
    for name, zero in (("dV zero", dv_zero), ("dK zero", dk_zero)):
        p, t = split(p, zero, kt, ("jt", "jj"), tail="guard")
        nests[name] = _Nest(t.outer, t.inner)
    nests["dQ zero"], nests["Drow"] = _Nest(None, dq_zero), _Nest(None, i_d)
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
        p, _ = resize_dim(p, buf, 0, qt, f"{qt} * it")
        p, _ = resize_dim(p, buf, 1, kt, f"{kt} * jt")
    # 6. dV and dK of a key block in local tiles, zeroed there, written once
    for out, zero, more in (("dV", "dV zero", 1), ("dK", "dK zero", None)):
        block = p.forward(nests[zero].inner).expand(0, more)
        window = f"{out}[{kt} * jt:{kt} * jt + {kt}, 0:64]"
        p, st = stage_mem(p, block, window, f"{out}_acc")
        p = _zero_instead_of_load(p, st.load, nests[zero].inner)
        nests[f"{out} acc"] = _Nest(st.store, st.alloc)
    return p, nests


def _rows_keys(p: Proc, rows: Any, keys: Any, kt: int, qt: int) -> tuple[Proc, _Nest]:
    """Tile a nest ``for i: for j: ...`` into ``for jt: for it: for ii: for jj: ...``."""
    p, r = split(p, rows, qt, ("it", "ii"), tail="guard")
    p, k = split(p, keys, kt, ("jt", "jj"), tail="guard")
    p, _ = lift_scope(p, k.outer)
    p, _ = reorder_loops(p, r.inner)
    p, _ = reorder_loops(p, r.outer)
    return p, _Nest(k.outer, r.outer)


def _rows_head_keys(
    p: Proc, rows: Any, head: Any, keys: Any, kt: int, qt: int
) -> tuple[Proc, _Nest]:
    """Tile ``for i: for d: for j: ...`` (dQ) into ``for jt: for it: for ii: for d: for
    jj: ...``: each element still sums over the keys in order."""
    p, r = split(p, rows, qt, ("it", "ii"), tail="guard")
    p, k = split(p, keys, kt, ("jt", "jj"), tail="guard")
    p, _ = reorder_loops(p, head)
    p, _ = lift_scope(p, k.outer)
    p, _ = reorder_loops(p, r.inner)
    p, _ = reorder_loops(p, r.outer)
    return p, _Nest(k.outer, r.outer, head, k.inner)


def _keys_head_rows(
    p: Proc, keys: Any, head: Any, rows: Any, kt: int, qt: int
) -> tuple[Proc, _Nest]:
    """Tile ``for j: for d: for i: ...`` (dV, dK) into ``for jt: for it: for jj: for d: for
    ii: ...``: each element still sums over the queries in order."""
    p, k = split(p, keys, kt, ("jt", "jj"), tail="guard")
    p, r = split(p, rows, qt, ("it", "ii"), tail="guard")
    p, _ = reorder_loops(p, head)
    p, _ = lift_scope(p, r.outer)
    p, _ = reorder_loops(p, k.inner)
    return p, _Nest(k.outer, r.outer, head, r.inner)


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


def _zero_instead_of_load(p: Proc, load: Any, zero: Any) -> Proc:
    """The guarded load nest of a staged accumulator followed by its guarded zeroing nest:
    one nest whose only write of each element is the zero (``fuse``, ``lift_scope``,
    ``merge_writes``)."""
    p, rows = fuse(p, load, zero)
    first, second = rows.first_body[0], rows.second_body[0]
    p, up = lift_scope(p, first.body()[0])
    p, guards = fuse(p, up.outer, second)
    first, second = guards.first_body[0], guards.second_body[0]
    p, cols = fuse(p, first, second)
    p, _ = merge_writes(p, cols.fused.body())
    return p


def schedule(p: Proc, key_tile: int = KEY_TILE, query_tile: int = QUERY_TILE) -> Proc:
    """The three kernels of the flash attention 2 backward of ``attention_backward`` (the
    steps of the module docstring): key tiles of ``key_tile`` keys (the threads of a
    ``dkdv`` block), query tiles of ``query_tile`` rows."""
    # the patterns (steps 1-6 find theirs in _fa2_nest): the score's start and buffer, the
    # writes of P, dP, dS, the dK update, the tiles
    score_zero, score = p.find("s = 0.0"), p.find_alloc_or_arg("s")
    dp_zero, ds_set = p.find("dP[_] = 0.0"), p.find("dS[_] = _")
    dv_sum, dk_sum = p.find("dV[_] += _"), p.find("dK[_] += _")
    tiles = [p.find_alloc_or_arg(x) for x in ("P", "dP", "dS")]
    p, nests = _fa2_nest(p, key_tile, query_tile)
    p, part = _dq_partials(p, nests, key_tile, query_tile)
    # 8. kernel drow: a block per 64 query rows, a thread per row
    p, dr = split(p, nests["Drow"].inner, 64, ("it", "ii"), tail="guard")
    p, _ = scope(p, dr.outer.as_block(), "drow", target="cuda")
    p, _ = bind_loop(p, dr.outer, "blockIdx.x")
    p, _ = bind_loop(p, dr.inner, "threadIdx.x")
    # 9. kernel dkdv. The per-key work of a query tile in one pass over its rows, for each
    # key row (a thread) and query row: the score, P, dP, dS, the dV and dK updates, under
    # one key guard and one query guard; P and dP one value each
    queries = p.forward(nests["P"].inner)
    ds_nest = _child_of(p, ds_set, queries)
    dk_nest = p.forward(nests["dK"].head).parent().parent()
    p = _move_up(p, dk_nest, ds_nest)
    p = _move_down(p, p.forward(nests["dV"].head).parent().parent(), dk_nest)
    rows = []
    for stmt in (score, dp_zero, ds_set):
        p, lv = _keys_outside(p, stmt)
        rows.append(lv)
    for name, upd in (("dV", dv_sum), ("dK", dk_sum)):
        p, lv = _rows_inside(p, nests[name].head, upd)
        rows.append(lv)
    fused = []
    for level in range(4):  # the key loops, the key guards, the query loops, the query guards
        acc = rows[0][level]
        for other in rows[1:]:
            p, f = fuse(p, acc, other[level])
            acc = f.fused
        fused.append(acc)
    for buf in tiles[:2]:
        p = _move_down(p, buf, fused[0])
        for _ in range(4):
            p, _ = sink_alloc(p, buf)
        for dim, at in enumerate(("ii", "jj")):
            p, _ = resize_dim(p, buf, dim, 1, at)
    for buf in (*tiles[:2], score):
        p, _ = set_memory(p, buf, REGISTER)
    p, _ = set_memory(p, tiles[2], SHARED)
    threads = [fused[0]]
    # the Q and dO tiles staged, loaded a column per thread (coalesced)
    first = _child_of(p, score_zero, queries)
    last = _child_of(p, nests["dQ"].head, queries)
    block = first.expand(0, last.index() - first.index())
    for buf, name in (("Q", "Qt"), ("dO", "dOt")):
        window = f"{buf}[{query_tile} * it:{query_tile} * it + {query_tile}, 0:64]"
        p, st = stage_mem(p, block, window, name, memory=SHARED)
        block = st.block
        p, ld = reorder_loops(p, st.load)
        threads.append(ld.outer)
    # dK and dV a row per thread in registers, zeroed first, written once at the end
    for name in ("dK", "dV"):
        p, _ = set_memory(p, nests[f"{name} acc"].inner, REGISTER)
        threads += [p.forward(nests[f"{name} acc"].inner).next(), nests[f"{name} acc"].keys]
    p, z = reorder_loops(p, part.load)  # the partial tile zeroed a column per thread
    threads.append(z.outer)
    p, _ = lift_scope(p, nests["dQ"].head)  # the dQ product a head column per thread
    p, _ = reorder_loops(p, p.forward(nests["dQ"].head).parent())
    threads.append(nests["dQ"].head)
    p, dkdv = scope(p, nests["P"].keys.as_block(), "dkdv", target="cuda")
    p, _ = bind_loop(p, nests["P"].keys, "blockIdx.x")
    for loop in threads:
        p, _ = bind_loop(p, loop, "threadIdx.x")
    p, _ = insert_barriers(p, dkdv.scope)
    return p


def _dq_partials(p: Proc, nests: dict[str, _Nest], kt: int, qt: int) -> tuple[Proc, Any]:
    """Steps 7 and 10: dQ as partial tiles per (query tile, key block) in a workspace, summed
    over the key blocks by kernel ``dq_sum``. Returns the proc and ``stage_mem``'s cursors
    of the partial tile (its zeroing is ``load``)."""
    dq_rows = p.forward(nests["dQ"].head).parent().parent()
    window = f"dQ[{qt} * it:{qt} * it + {qt}, 0:64]"
    p, part = stage_mem(p, dq_rows.as_block(), window, "dQ_part", accum=True)
    p, _ = expand_dim(p, part.alloc, f"(Nk + {kt - 1}) / {kt}", "jt")
    p, _ = expand_dim(p, part.alloc, f"(Nq + {qt - 1}) / {qt}", "it")
    p, _ = lift_alloc(p, part.alloc, n_lifts=2)
    p, _ = set_memory(p, part.alloc, GLOBAL)
    # the adds into dQ out of the query loop (after the dK update), then out of the key loop
    p = _move_down_last(p, part.store)
    p, f1 = fission(p, p.forward(part.store).before())
    p = _move_down_last(p, f1.second)
    p, f2 = fission(p, p.forward(f1.second).before())
    # (jt, it, ii, d) -> (it, ii, d, jt): a sum over the key blocks per element, the row
    # guard outside it
    p, sums = reorder_loops(p, f2.second)
    for _ in range(2):
        p, _ = reorder_loops(p, f2.second)
    guard = p.forward(f2.second).body()[0]
    for _ in range(2):
        p, _ = lift_scope(p, guard)
    # dQ zeroed right before its sum, in the same nest
    p = _move_down(p, nests["dQ zero"].inner, sums.outer)
    p, z = split(p, nests["dQ zero"].inner, qt, ("it", "ii"), tail="guard")
    p, rows = fuse(p, z.outer, sums.outer)
    p, row = fuse(p, rows.first_body[0], rows.second_body[0])
    p, g = fuse(p, row.first_body[0], row.second_body[0])
    p, col = fuse(p, g.first_body[0], g.second_body[0])
    # 10. kernel dq_sum: a block per query tile, a thread per head column (coalesced)
    p, cols = lift_scope(p, col.fused)
    p, _ = reorder_loops(p, row.fused)
    p, _ = scope(p, rows.fused.as_block(), "dq_sum", target="cuda")
    p, _ = bind_loop(p, rows.fused, "blockIdx.x")
    p, _ = bind_loop(p, cols.outer, "threadIdx.x")
    return p, part


def _keys_outside(p: Proc, stmt: Any) -> tuple[Proc, tuple[Any, ...]]:
    """``for ii: if gi: for jj: if gj: stmt ...`` (a nest of P, dP or dS) to ``for jj: if gj:
    for ii: if gi: stmt ...``; the proc and the four, outermost first."""
    gj = p.forward(stmt).parent()
    keys = gj.parent()
    p, _ = lift_scope(p, keys)
    p, _ = reorder_loops(p, p.forward(keys).parent())
    p, up = lift_scope(p, gj)
    p, up2 = lift_scope(p, gj)
    return p, (keys, gj, up2.inner, up.inner)


def _rows_inside(p: Proc, head: Any, update: Any) -> tuple[Proc, tuple[Any, ...]]:
    """``for jj: if gj: for d: for ii: if gi: update`` (dV, dK) to ``for jj: if gj: for ii:
    if gi: for d: update``; the proc and the four loops and guards, outermost first."""
    gj = p.forward(head).parent()
    keys = gj.parent()
    p, rows = reorder_loops(p, head)
    p, gi = lift_scope(p, p.forward(update).parent())
    return p, (keys, gj, rows.outer, gi.outer)


def _child_of(p: Proc, stmt: Any, loop: Any) -> Any:
    """The statement of ``loop``'s body that holds ``stmt``."""
    s, loop = p.forward(stmt), p.forward(loop)
    while s.parent() != loop:
        s = s.parent()
    return s


def _move_down_last(p: Proc, stmt: Any) -> Proc:
    """Swap ``stmt`` with the statement after it until it is the last of its block."""
    while p.forward(stmt).next():
        p, _ = reorder_stmts(p, p.forward(stmt).expand(0, 1))
    return p


# -- running and checking

OUTPUTS = CPU.OUTPUTS
TOLERANCE = CPU.TOLERANCE


def inputs(nq: int, nk: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``sched/attention_backward.py``'s inputs at head dimension 64."""
    x: dict[str, np.ndarray] = CPU.inputs(nq, nk, 64, seed)
    return x


def run(f: object, x: dict[str, np.ndarray], *, gpu: bool = False) -> dict[str, np.ndarray]:
    """dQ, dK, dV computed by ``f`` (the compiled proc, or ``Proc.interpret``)."""
    nq, nk = x["Q"].shape[0], x["K"].shape[0]
    out = {n: np.full((nq if n == "dQ" else nk, 64), np.nan, np.float32) for n in OUTPUTS}
    names = ("Q", "K", "V", "O", "dO", "L")
    if gpu:
        import cupy

        dev = {n: cupy.asarray(v) for n, v in (*x.items(), *out.items())}
        f(nq, nk, *(dev[n] for n in (*names, *OUTPUTS)))  # type: ignore[operator]
        return {n: cupy.asnumpy(dev[n]) for n in OUTPUTS}
    f(nq, nk, *(x[n] for n in names), *(out[n] for n in OUTPUTS))  # type: ignore[operator]
    return out


def check(f: object, nq: int, nk: int, *, gpu: bool = False, seed: int = 0) -> list[str]:
    """Run ``f``; the problems found against the float64 formulas and torch autograd of
    SDPA (when torch is installed), each gradient within ``TOLERANCE`` relative."""
    x = inputs(nq, nk, seed)
    got = run(f, x, gpu=gpu)
    refs = {"numpy": CPU.reference(x)}
    if (t := CPU.torch_reference(x)) is not None:
        refs["torch"] = t
    bad = []
    for who, ref in refs.items():
        for n, err in CPU.errors(got, ref).items():
            if not err <= TOLERANCE:
                bad.append(f"{nq}x{nk}: {n} off {who} by {err:.1e} (relative)")
    return bad


def scheduled() -> list[Proc]:
    """The procs this file produces (``cursched compile FILE --target cuda`` writes them)."""
    return [schedule(attention_backward)]


def main() -> int:
    p = schedule(attention_backward)
    print(p)
    print(p.cuda_source())
    f = p.compile(target="cuda-emulated", check_races=True)
    bad = check(f, 100, 77) + check(f, 33, 130)
    if gpu_available():
        g = p.compile(target="cuda")
        bad += [f"GPU: {b}" for b in check(g, 333, 333, gpu=True) + check(g, 1000, 77, gpu=True)]
    else:
        print("no GPU (cupy not available): ran the emulation only")
    if bad:
        print("MISMATCH:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: the emulated flash attention 2 backward (100 x 77 and 33 x 130) matches the")
    print("float64 formulas and torch autograd within 1e-3 relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
