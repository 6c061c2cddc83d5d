"""A BLIS-style sgemm for x86 (AVX2 + FMA, or AVX-512), derived from the plain triple loop.

Run it with ``python sched/sgemm_x86.py``. ``schedule(sgemm)`` picks the instruction set and
the tiles from ``cpu_features()`` (``isa()``): a 6 x 16 register tile with AVX2 (12 ``__m256``
accumulators), 14 x 32 with AVX-512 (28 ``__m512``), and derives, with primitives and
``cursched.stdlib`` only:

1. the zeroing of ``C`` split from the product (``fission``); the product's loops ordered
   ``k, i, j`` (``reorder_loops``);
2. the iteration space cut into whole tiles and the edges of C (``cut_loop`` at ``NR * (N /
   NR)``, ``KC * (K / KC)``, ``MR * (M / MR)``): the ``N % NR`` right-edge columns run over
   the whole K on their own packed copy of B (``Be``, ``right_edge``), the ``M % MR`` bottom
   rows inside each K block on the main part's packed panels of B (``bottom_edge``, then
   ``fuse`` of the K-block loops). With AVX-512 (``Target.right``) the right edge's B is
   packed once into ``Be`` and only its ``M % MR``-row corner runs over the whole K; its
   whole MR-row tiles move into the K and MC blocks (``right_rows``, ``right_into_blocks``,
   ``right_block``: ``cut_loop``, ``split``, ``reorder_stmts`` and ``fuse`` with the main
   part's loops), so that they read the packed panels of A, with a kernel whose vector runs
   along A's packed rows (the C tile held transposed, one broadcast-FMA per column of 8:
   ``schedule_right_microkernel``). Each other edge block is a call of an edge micro-kernel
   (``NR``, ``lanes`` or a masked width) whose scheduled version keeps its C tile in
   registers, one row per ``if i < MV`` (``unroll_guarded``: split with a guard, cut,
   unroll), with masked loads, stores and multiply-adds (``mm256_maskload_ps``,
   ``mm256_maskstore_ps``, ``mm256_mask_fmadd_ps_broadcast``) on a row's last register: no
   scalar loop is left. The ``K % KC`` remainder runs the same kernels with a shorter ``k``
   loop, behind ``if K % KC > 0`` (``if_runs``: a kernel's sizes are positive);
3. cache blocking of the main part (``tile``, ``split``): ``ko`` (KC deep), ``ic`` (MC =
   MR * mcb rows), ``jo`` (NR wide panels of B), ``ir`` (MR rows), the micro-kernel's
   ``ki, ii, ji`` inside;
4. packing (``pack``: ``stage_mem`` + ``divide_dim`` + ``rearrange_dim`` + ``lift_alloc``,
   each buffer allocated once): the KC x N strip of B as ``Bp[N / NR, KC, NR]`` once per
   ``ko``, each MC x KC block of A as ``Ap[MC / MR, KC, MR]`` once per ``(ko, ic)``, the rows
   past the last MC block as ``At``; the K remainder's ``Bq``, ``Aq``, ``Au``. The copies are
   split so that no ``/`` or ``%`` is left in their inner loop (``copy_by_rows``); B's
   panels get an odd row count (``resize_dim`` to ``odd(KC)``: ``Bp[N / NR, KC | 1, NR]``),
   so that the copy's writes to the panels do not all fall in one set of L1; with AVX-512
   on AMD a product whose whole K is at most ``rows_k`` (512) reads its rows of A in place
   (``specialize`` on ``K <= 512``: the edge kernel at 14 rows, no ``Aq``, ``Au``), and of
   B too when ``N <= 512`` (no ``Bq``); a deeper one packs (Intel's target always packs);
   every packed buffer is kept
   between calls (``set_memory(..., DRAM_KEPT)``: OpenBLAS keeps its buffers too);
5. the micro-kernel blocks replaced by calls (``replace_all``), then ``call_eqv`` to the
   scheduled versions: the C tile in vector registers (``stage_mem(..., memory=AVX2,
   accum=True)`` + ``divide_dim``: from zero, added to C at the end), C's rows prefetched
   (``insert_noop_call`` of ``mm_prefetch``: all before the ``k`` loop with AVX2, one row
   per 16 steps of it with AVX-512, ``spread_prefetch``), a row of Bp in registers (on Intel
   loaded with a prefetch 3 KiB ahead in the panel, ``Target.bload``), broadcast-FMA
   instructions (``replace_all``), the register tile fully unrolled (``unroll_all``);
6. no zeroing pass over the whole tiles (``Target.first``, ``zero_into_first_block``): the K
   remainder runs before the K blocks (two reductions commute), so with ``K % KC > 0`` it is
   every whole tile's first K block; the zeroing nest is cut to those tiles, ``specialize``d
   and ``fuse``d into each of the remainder's forms and tiled into its MC block and tail
   loops (``zero_tiles``), and a tile's zeroing and product become a ``_first`` kernel
   (``C = A @ B``) whose scheduled version starts from zero registers and stores them
   (``stage_first``: ``stage_mem`` of both, then ``fuse`` and ``merge_writes`` of the load
   and the zeroing): C is never read there. With ``K % KC == 0`` the same goes into the
   K blocks' first iteration (``zero_into_k_blocks``: ``cut_loop`` at 1, ``unroll_loop``).
   The edges keep the pass.

The script prints the final proc, checks it against numpy at a few sizes (odd ones
included) and prints the micro-kernel's C.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from cursched import (
    DRAM,
    DRAM_KEPT,
    Memory,
    Proc,
    call_eqv,
    commute_expr,
    cut_loop,
    divide_dim,
    eliminate_dead_code,
    fission,
    fuse,
    insert_noop_call,
    lift_scope,
    merge_writes,
    proc,
    rearrange_dim,
    rename,
    reorder_loops,
    reorder_stmts,
    resize_dim,
    set_memory,
    shift_loop,
    simplify,
    specialize,
    split,
    stage_mem,
    tune,
    unroll_loop,
)
from cursched.cursors import BlockCursor, ForCursor, IfCursor, StmtCursor
from cursched.platforms import x86
from cursched.primitives.buffers.stage import StageMemCursors
from cursched.stdlib import pack, replace_all, tile, unroll_all


@proc
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


class Target(NamedTuple):
    """An instruction set and the tiles that fit its registers."""

    name: str
    memory: type[Memory]
    lanes: int
    mr: int  # rows of the register tile
    nr: int  # columns of the register tile (a multiple of lanes)
    kc: int  # depth of a K block (measured: B's KC x NR panel in L1 or L2, see below)
    mcb: int  # MR-row tiles per MC block (MC * KC floats of packed A stay in L2)
    load: Proc
    store: Proc
    fmadd: Proc
    maskload: Proc  # lanes i < N of a register (the edges of C and of B)
    maskstore: Proc
    maskfmadd: Proc
    zero: Proc  # the register tile's start (accumulated from zero, BLIS's micro-kernel)
    storeadd: Proc  # C += the tile, at the end
    spread: int = 0  # prefetch C's rows all before the k loop (0), or one every spread k
    rows_k: int = 0  # a K at most this deep runs on A's rows, unpacked (0: always packed)
    right: int = 0  # the right edge in strips this wide inside the K and MC blocks, on the
    # packed A, vector along its rows (0: over the whole K, A's rows in place, NR-wide tiles)
    first: int = 2  # the whole tiles' first K block writes C, no zeroing pass over them
    # (``zero_into_first_block``): 1: the K remainder (run first) when K % KC > 0; 2: also
    # ``ko = 0`` when K % KC == 0; 0: C zeroed, then every block adds
    bload: Proc | None = None  # the kernels' loads of B's rows in their k loops (None:
    # ``load``, as the loads of C's tile): a prefetching load reaches ahead in the packed panel


# kc and mcb: the best of a tuning run on the AMD EPYC (Zen 3) kind, 1024^3, 1 worker
# (benchmarks/results/sgemm_tuning.md); the run before it used 256 and 48
AVX2_TARGET = Target(
    "avx2", x86.AVX2, 8, 6, 16, 384, 32, x86.mm256_loadu_ps_prefetch, x86.mm256_storeu_ps,
    x86.mm256_fmadd_ps_broadcast, x86.mm256_maskload_ps, x86.mm256_maskstore_ps,
    x86.mm256_mask_fmadd_ps_broadcast, x86.mm256_setzero_ps, x86.mm256_storeu_add_ps,
)  # fmt: skip
# kc and mcb: measured on the AMD EPYC (Zen 5, family 26) kind, 1024^3 and 2048^3
# (benchmarks/results/sgemm.md, wave 4): the C tile's update, not L1 room for B's panel,
# bounds this kernel (L2 feeds 128 bytes of B per 28 FMAs easily), so a deep K block that
# touches C K / 1024 times beats one whose KC x NR panel fits L1 (192: 0.84 of numpy at 2048,
# 1024: 0.94-0.97); MC = 12 x 14 rows keeps the 168 x 1024 block of A in the 1 MiB L2.
# rows_k = 512: with K <= 512 (the whole product one short K block) the kernels read A's
# rows in place (the NR-wide edge kernel at MV = 14 runs at the packed kernel's 245 GF/s on
# cached data, and the 168 x K block of A stays in L2 across the panels of B): A's copy,
# reading A from memory, cost 7-10% of the time at 512^3 (section timers); through the
# schedule, interleaved: new/old 1.04-1.09 at 256..512; rows at 640..1000 (hand-edited C):
# 1-4% slower than packing, 576 within the noise. B's rows in place too when N <= 512 as
# well: new/old 1.006-1.044 at 512, 1.02-1.13 at 256..480 (through the schedule); at 1000
# (hand-edited C) 11-16% slower: a panel's 1000 rows lie on 1000 pages (TLB)
# right = 8: the right edge's 14-row tiles in the K and MC blocks on the packed A, 8 columns
# a strip (8 accumulators: FMA latency 4 x 2 pipes), vector along A's 14 packed rows: 150-163
# GF/s on cached data against the masked kernel's 95-104 on A's rows; at 1000^3 its cost
# beyond its flops 2.2-2.4% -> none, new/old 1.016 (median of 11 ab rounds, wave 5)
# first = 2 (both targets): no zeroing pass over the whole tiles, their first K block's
# kernels write C; ab new/old (wave 5, 3 rounds) first 1 against 0: 512 1.04, 768 1.03,
# 1000 1.014-1.029, 1536 1.005-1.018, 1999 1.00-1.02; 2 against 1 (K % KC == 0): 1024
# 1.012-1.019, 2048 1.002-1.008
AVX512_TARGET = Target(
    "avx512", x86.AVX512, 16, 14, 32, 1024, 12, x86.mm512_loadu_ps, x86.mm512_storeu_ps,
    x86.mm512_fmadd_ps_broadcast, x86.mm512_maskload_ps, x86.mm512_maskstore_ps,
    x86.mm512_mask_fmadd_ps_broadcast, x86.mm512_setzero_ps, x86.mm512_storeu_add_ps, 16, 512, 8,
)  # fmt: skip


# The same registers and tiles on Intel's AVX-512 cores (measured on a Xeon of family 6,
# model 207: 48 KiB L1d, 2 MiB L2, two 512-bit FMA pipes; benchmarks/results/sgemm.md,
# wave 7), two measured differences from the AMD EPYC (Zen 5) kind:
# - B's rows prefetched 3 KiB (24 rows of a panel) ahead into L1 by the kernels' loads
#   (``bload``: ``mm512_loadu_ps_prefetch``; the edge kernels' loads of C stay plain): the
#   128 KiB KC x NR panel lives in L2, and Intel's L1
#   prefetchers do not run that far ahead; hand-edited C, ours/numpy base -> prefetch at
#   1000 0.96 -> 1.00, 1024 0.97 -> 0.99, 2048 0.96 -> 0.99, 1999 0.93 -> 1.00, 512 1.03 ->
#   1.07 (2048 and 4096 bytes ahead within 1% of 3072, 1024 ahead 2% worse at 2048);
# - rows_k = 0 (A and B always packed): on A's and B's rows in place the schedule ran 0.83-0.93
#   of numpy at 448-512 (packed: 1.02-1.05); new/old 1.10-1.15 at 448-512, 1.05 at 320,
#   1.00-1.01 at 256 and 384 (sgemm_ab.py --old "" --new rows_k=0, wave 7).
AVX512_INTEL_TARGET = AVX512_TARGET._replace(bload=x86.mm512_loadu_ps_prefetch, rows_k=0)


def target() -> Target:
    """The target for the running CPU (``cursched.platforms.x86.isa()``; with AVX-512, the
    maker's tuning: ``cpu_vendor()``)."""
    isa = x86.isa()
    if isa == "avx512":
        return AVX512_INTEL_TARGET if x86.cpu_vendor() == "intel" else AVX512_TARGET
    if isa == "avx2":
        return AVX2_TARGET
    raise SystemExit("sgemm_x86: this CPU has neither AVX2+FMA nor AVX-512")


def zero_tile(rows: int | str, cols: int | str) -> str:
    """The source of a plain kernel's first statement when it is a first K block's
    (``first``): its C tile zeroed, so that ``C = A @ B`` needs no zeroing pass over C."""
    return f"""
    for i in seq(0, {rows}):
        for j in seq(0, {cols}):
            C[i, j] = 0.0"""


def microkernel(t: Target, kind: str, first: bool = False) -> Proc:
    """The plain micro-kernel ``C[MR, NR] += A @ B[KC, NR]`` for target ``t``: A packed
    (``[KC, MR]``, ``kind="packed"``) or rows of the original A (``[MR, KC]``, ``"rows"``);
    with ``first``, ``C[MR, NR] = A @ B`` (``zero_tile``: the first K block's kernel)."""
    a_type, a_read = (f"[f32][KC, {t.mr}]", "A[k, i]")
    if kind == "rows":
        a_type, a_read = (f"[f32][{t.mr}, KC]", "A[i, k]")
    zero = zero_tile(t.mr, t.nr) if first else ""
    src = f"""
def ukernel_{kind}{"_first" if first else ""}(
    KC: size, A: {a_type} @ DRAM, B: [f32][KC, {t.nr}] @ DRAM, C: [f32][{t.mr}, {t.nr}] @ DRAM
):
    assert stride(A, 1) == 1
    assert stride(B, 1) == 1
    assert stride(C, 1) == 1{zero}
    for k in seq(0, KC):
        for i in seq(0, {t.mr}):
            for j in seq(0, {t.nr}):
                C[i, j] += {a_read} * B[k, j]
"""
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_source

    return Proc(check_bounds(parse_source(src, {"DRAM": DRAM}, "<ukernel>")))


def schedule_microkernel(uk: Proc, t: Target, accum: bool = True) -> Proc:
    """Register-block ``uk``: the C tile and a row of B in vector registers, broadcast-FMA
    instructions, everything but the ``k`` loop unrolled. With ``accum`` (BLIS's way) the
    tile starts at zero and is added to C at the end, C's rows prefetched before the ``k``
    loop (``insert_noop_call`` of ``mm_prefetch_lines``: both lines a row of 16 floats spans
    when C is not 64-byte aligned, as numpy's arrays are not): the loads of C, cold in
    cache, no longer stall the end of every call."""
    p = uk
    k = p.find_loop("k")
    if is_first(uk):  # C = the tile: from zero registers, stored (no load, no add)
        p, ct = stage_first(p, f"C[0:{t.mr}, 0:{t.nr}]", t)
    else:
        p, ct = stage_mem(p, k, f"C[0:{t.mr}, 0:{t.nr}]", "Ct", memory=t.memory, accum=accum)
    for loop in (ct.load.body()[0], p.forward(k).body()[0].body()[0], ct.store.body()[0]):
        p, _ = split(p, loop, t.lanes, ("jo", "ji"), tail="perfect")
    p, _ = divide_dim(p, ct.alloc, 1, t.lanes)
    p, bv = stage_mem(p, p.forward(k).body()[0], f"B[k, 0:{t.nr}]", "Bv", memory=t.memory)
    p, _ = split(p, bv.load, t.lanes, ("jo", "ji"), tail="perfect")
    p, _ = divide_dim(p, bv.alloc, 0, t.lanes)
    p, _ = simplify(p)
    # B * A: the instruction's operand order (a register times a broadcast scalar)
    p, _ = commute_expr(p, (p.find("Ct[_] += _").rhs(),))
    p, _ = replace_all(p, [t.bload or t.load, t.fmadd, t.store, t.zero, t.storeadd])
    p, _ = unroll_all(p, [ct.load, ct.store, bv.load, p.forward(k).body()[-1]])
    if accum and t.spread:
        p = spread_prefetch(p, p.forward(k), t)
    elif accum:
        for i in range(t.mr):
            for j in range(0, t.nr, 16):
                gap = p.forward(k).before()
                p, _ = insert_noop_call(p, gap, x86.mm_prefetch_lines, [f"C[{i}, {j}:{j + 16}]"])
    p, _ = rename(p, f"{uk.name()}_{t.name}")
    return p


def is_first(uk: Proc) -> bool:
    """Whether the plain kernel ``uk`` is a first K block's (``zero_tile``: it writes C)."""
    return uk.name().endswith("_first")


def stage_first(p: Proc, window: str, t: Target) -> tuple[Proc, StageMemCursors]:
    """Stage a first K block's C tile (``window``) in registers ``Ct`` around the kernel's
    two statements, its zeroing and its ``k`` loop: ``stage_mem`` loads the tile, then the
    load and the zeroing are fused and merged (``Ct = C; Ct = 0.0`` -> ``Ct = 0.0``: the
    first write is dead), so the tile starts from zero registers and is stored at the end:
    C is never read. Returns the proc and the staging's cursors (``load``: the zeroing)."""
    body = p.body()
    p, ct = stage_mem(p, body.expand(0, 0), window, "Ct", memory=t.memory)
    zero = p.forward(ct.load).next()
    assert isinstance(zero, ForCursor)
    p, rows = fuse(p, ct.load, zero)
    p, cols = fuse(p, rows.first_body[0], rows.second_body[0])
    p, _ = merge_writes(p, p.forward(cols.fused).body())
    return p, ct


def spread_prefetch(p: Proc, k: ForCursor, t: Target) -> Proc:
    """Prefetch C's rows during the ``k`` loop, not all before it: ``k`` split by
    ``t.spread`` (the tail cut off), row ``ko % MR`` prefetched before each chunk of
    ``t.spread`` steps. Measured on the Zen 5 kind (AVX-512, 14 rows of 3 lines): the 42
    prefetches at the start, all missing to L3 or memory at once, held the miss buffers the
    packed A and B stream through (+3-4% at 1024^3 and 2048^3 spread, none without any
    prefetch); a row fetched again later is an L1 hit, and the last fetches land near the
    update at the end."""
    p, sk = split(p, k, t.spread, ("ko", "ki"), tail="cut")
    for j in range(0, t.nr, 16):
        gap = p.forward(sk.inner).before()
        row = f"C[ko % {t.mr}, {j}:{j + 16}]"
        p, _ = insert_noop_call(p, gap, x86.mm_prefetch_lines, [row])
    return p


def edge_microkernel(t: Target, width: int | None, first: bool = False) -> Proc:
    """The plain edge micro-kernel ``C[MV, W] += A[MV, KC] @ B[KC, W]`` for target ``t``:
    ``1 <= MV <= MR`` rows of the original A, ``W = width`` columns (``NR`` or ``lanes``),
    or ``W = NV <= lanes`` (``width=None``: the masked kernel); with ``first``, ``=``
    (``zero_tile``)."""
    w, nv, cond = (str(width), "", "") if width else ("NV", "NV: size, ", "NV <= t.lanes")
    name = f"ukernel_edge_{width or 'masked'}{'_first' if first else ''}"
    zero = zero_tile("MV", w) if first else ""
    src = f"""
def {name}(
    KC: size, MV: size, {nv}A: [f32][MV, KC] @ DRAM, B: [f32][KC, {w}] @ DRAM,
    C: [f32][MV, {w}] @ DRAM
):
    assert MV >= 1
    assert MV <= {t.mr}
    {f"assert NV <= {t.lanes}" if cond else ""}
    assert stride(A, 1) == 1
    assert stride(B, 1) == 1
    assert stride(C, 1) == 1{zero}
    for k in seq(0, KC):
        for i in seq(0, MV):
            for j in seq(0, {w}):
                C[i, j] += A[i, k] * B[k, j]
"""
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_source

    return Proc(check_bounds(parse_source(src, {"DRAM": DRAM}, "<ukernel>")))


def unroll_guarded(p: Proc, loop: ForCursor, most: int) -> tuple[Proc, list[StmtCursor]]:
    """Unroll ``for i in seq(0, n)``, ``1 <= n <= most`` by the asserts, into ``most`` copies,
    copy ``i`` under ``if i < n`` (the first unguarded): the rows of an edge tile each get
    their own registers (constant indices) while ``n`` stays a run-time size."""
    p, sp = split(p, loop, most, tail="guard")
    p, cut = cut_loop(p, sp.outer, 1)  # 1 <= (n + most - 1) / most by the asserts
    p, _ = eliminate_dead_code(p, cut.second)  # ... and the rest runs no iteration
    p, one = unroll_loop(p, cut.first)
    p, rows = unroll_loop(p, one.copies[0])
    return p, list(rows.copies)


def schedule_edge_microkernel(uk: Proc, t: Target, width: int | None) -> Proc:
    """Register-block an edge micro-kernel: its C tile in ``MR x W / lanes`` registers (one
    masked register when ``width`` is None), each row guarded by ``if i < MV``, B's row in
    registers, masked loads, stores and multiply-adds on the masked lanes."""
    p = uk
    k = p.find_loop("k")
    w = str(width) if width else "NV"
    if is_first(uk):  # from zero registers (a row's whole registers), stored at the end
        p, ct = stage_first(p, f"C[0:MV, 0:{w}]", t)
    else:
        p, ct = stage_mem(p, k, f"C[0:MV, 0:{w}]", "Ct", memory=t.memory)
    p, _ = resize_dim(p, ct.alloc, 0, t.mr)  # MV <= MR rows of registers
    p, bv = stage_mem(p, p.forward(k).body()[0], f"B[k, 0:{w}]", "Bv", memory=t.memory)
    rows = [ct.load, p.forward(k).body()[-1], ct.store]
    if width is None:  # one register, lanes NV.. unused
        p, _ = resize_dim(p, ct.alloc, 1, t.lanes)
        p, _ = resize_dim(p, bv.alloc, 0, t.lanes)
    else:
        for loop in [*(r.body()[0] for r in rows), bv.load]:
            p, _ = split(p, loop, t.lanes, ("jo", "ji"), tail="perfect")
        p, _ = divide_dim(p, ct.alloc, 1, t.lanes)
        p, _ = divide_dim(p, bv.alloc, 0, t.lanes)
    p, _ = simplify(p)
    p, _ = commute_expr(p, (p.find("Ct[_] += _").rhs(),))
    for r in rows:
        p, _ = unroll_guarded(p, p.forward(r), t.mr)
    if t.bload:  # B's rows (in the k loop) first: the loads of C's tile stay plain
        p, _ = replace_all(p, t.bload, within=p.forward(k))
    instrs = [t.load, t.maskload, t.fmadd, t.maskfmadd, t.store, t.maskstore, t.zero]
    p, _ = replace_all(p, instrs)
    p, _ = simplify(p)
    if width is not None:  # the registers of a row
        p, _ = unroll_all(p, p.find_loop("jo", many=True))
    p, _ = rename(p, f"{uk.name()}_{t.name}")
    return p


def right_microkernel(t: Target) -> Proc:
    """The plain right-edge micro-kernel ``C[MR, NV] += A @ B[KC, NV]``, ``1 <= NV <=
    t.right``, A packed (``[KC, MR]``: an MR-row panel of ``Ap``, ``At``, ``Aq`` or ``Au``)."""
    src = f"""
def ukernel_right_packed(
    KC: size, NV: size, A: [f32][KC, {t.mr}] @ DRAM, B: [f32][KC, NV] @ DRAM,
    C: [f32][{t.mr}, NV] @ DRAM
):
    assert NV >= 1
    assert NV <= {t.right}
    assert stride(A, 1) == 1
    assert stride(B, 1) == 1
    for k in seq(0, KC):
        for i in seq(0, {t.mr}):
            for j in seq(0, NV):
                C[i, j] += A[k, i] * B[k, j]
"""
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_source

    return Proc(check_bounds(parse_source(src, {"DRAM": DRAM}, "<ukernel>")))


def schedule_right_microkernel(uk: Proc, t: Target) -> Proc:
    """Register-block the right-edge kernel with its vector along the packed rows of A: the
    C tile held transposed (``Ct[NV, lanes]``, one register per column of C, lanes ``i <
    MR`` used), a masked load of A's MR floats per ``k`` and one broadcast-FMA of
    ``B[k, j]`` per column, each column guarded by ``if j < NV``. Measured on the Zen 5 kind
    (cached data, KC 1000, 14 x 8): 162 GF/s of useful lanes; the masked kernel on A's
    rows (vector along the 8 columns, half of each register masked off), 99."""
    p = uk
    k = p.find_loop("k")
    p, ct = stage_mem(p, k, f"C[0:{t.mr}, 0:NV]", "Ct", memory=t.memory, accum=True)
    p, _ = rearrange_dim(p, ct.alloc, (1, 0))
    p, _ = resize_dim(p, p.forward(ct.alloc), 0, t.right)  # NV <= right registers
    p, _ = resize_dim(p, p.forward(ct.alloc), 1, t.lanes)  # MR of the lanes used
    cols = []
    for nest in (ct.load, p.forward(k).body()[0], ct.store):  # columns outside, rows inside
        p, ro = reorder_loops(p, p.forward(nest))
        cols.append(ro.outer)
    p, av = stage_mem(p, p.forward(k).body()[0], f"A[k, 0:{t.mr}]", "Av", memory=t.memory)
    p, _ = resize_dim(p, av.alloc, 0, t.lanes)
    for c in cols:
        p, _ = unroll_guarded(p, p.forward(c), t.right)
    instrs = [x86.mm512_maskload_ps, x86.mm512_mask_fmadd_ps_broadcast, x86.mm512_mask_setzero_ps]
    p, _ = replace_all(p, [*instrs, x86.mm512_mask_storeu_add_strided_ps])
    p, _ = simplify(p)
    p, _ = rename(p, f"{uk.name()}_{t.name}")
    return p


def right_rows(p: Proc, nest: ForCursor, t: Target) -> tuple[Proc, ForCursor]:
    """With ``t.right``: the ``N % NR`` columns right of the whole tiles (``nest``: ``k, i,
    j``) read their B from ``Be`` (``[K, N % NR]``, packed once, before the main part), and
    the ``M % MR`` rows of the corner run over the whole K, on A's rows, in strips of
    ``t.right`` columns then the masked last ``N % right``, behind ``if M % MR > 0``. Returns
    the proc and the nest of the whole MR-row tiles (``k, i < MR * (M / MR), j``), which
    ``right_block`` moves into the K and MC blocks (there it reads the packed A)."""
    mr, nr, w = t.mr, t.nr, t.right
    p, _ = shift_loop(p, nest.body()[0].body()[0], 0)
    p, be = pack(p, nest, f"B[0:K, {nr} * (N / {nr}):N]", "Be")
    for s in (be.alloc, be.load):  # up before the main part, which the rows join
        p, _ = reorder_stmts(p, p.forward(s).prev().expand(0, 1))
    nest = p.forward(nest)
    assert isinstance(nest, ForCursor)
    p, icut = cut_loop(p, nest.body()[0], f"{mr} * (M / {mr})")
    p, f = fission(p, icut.first.after(), n_lifts=1)
    p = corner_rows(p, f.second, mr, w)
    rows = p.forward(f.first)
    assert isinstance(rows, ForCursor)
    return p, rows


def right_block(
    p: Proc, nest: StmtCursor, ic: StmtCursor, tail: StmtCursor, t: Target
) -> tuple[Proc, StmtCursor]:
    """The right edge of one K range (``nest``: ``k, i, j``, after the main part's MC blocks
    ``ic``, their tail rows ``tail`` and the bottom edge, in the same block): MR-row tiles
    ``io, [jo, k, ii, ji]`` in strips of ``t.right`` columns and the last ``N % right``
    behind an ``if``; ``io`` split as the main part's rows, the MC blocks fused into ``ic``
    (so that they read its packed block of A) and the tail rows moved right after ``tail``.
    Returns the proc and the tail rows' loop."""
    mr, w = t.mr, t.right
    assert isinstance(nest, ForCursor)
    p, _ = split(p, nest.body()[0], mr, ("io", "ii"), tail="perfect")
    p, ro = reorder_loops(p, p.forward(nest))  # io, k, ii, j
    p, js = split(p, ro.inner.body()[0].body()[0], w, ("jo", "ji"), tail="cut_and_guard")
    p, g = fission(p, p.forward(js.outer).after(), n_lifts=2)
    p, _ = reorder_loops(p, g.first.body()[0])  # k, jo, ii
    p, _ = reorder_loops(p, g.first)  # jo, k, ii
    p = lift(p, js.guard, 2)
    p, mc = split(p, p.forward(ro.outer), t.mcb, ("ic", "ir"), tail="cut")
    rtail = p.forward(mc.tail)
    assert isinstance(rtail, StmtCursor)
    while p.forward(mc.outer).prev() != p.forward(ic):  # up to the MC blocks: fused
        p, _ = reorder_stmts(p, p.forward(mc.outer).prev().expand(0, 1))
    p, _ = fuse(p, p.forward(ic), p.forward(mc.outer))
    while p.forward(rtail).prev() != p.forward(tail):
        p, _ = reorder_stmts(p, p.forward(rtail).prev().expand(0, 1))
    return p, p.forward(rtail)


def right_into_blocks(
    p: Proc, rows: ForCursor, t: Target, ko: StmtCursor, rem: StmtCursor, loops: list[StmtCursor]
) -> tuple[Proc, list[StmtCursor]]:
    """Move the right edge's MR-row tiles (``rows``, from ``right_rows``) into the main part's
    K blocks (``ko``) and its K remainder (the ``if`` ``rem``): ``k`` cut at ``KC * (K /
    KC)``, split by KC and fused with ``ko``; the rest under ``if K % KC > 0``, fused with
    ``rem``; each part placed by ``right_block`` (``loops``: the MC block loops and their tail
    rows' loops, of the main part then the remainder). Returns the proc and the two tail rows'
    loops of the right edge."""
    kc = t.kc
    p, kcut = cut_loop(p, rows, f"{kc} * (K / {kc})")
    p, k2 = shift_loop(p, kcut.second, 0)
    p, sp = specialize(p, k2.loop, f"K % {kc} > 0")
    p, _ = eliminate_dead_code(p, sp.fallback[0])
    p, k1 = split(p, kcut.first, kc, ("ko", "ki"), tail="perfect")
    p, _ = reorder_stmts(p, p.forward(k1.outer).prev().expand(0, 1))  # after ko
    p, fk = fuse(p, p.forward(ko), p.forward(k1.outer))
    p, fr = fuse(p, p.forward(rem), p.forward(sp.branches[0]))
    tails = []
    for body, (ic, tail) in ((fk.second_body, loops[:2]), (fr.second_body, loops[2:])):
        p, rt = right_block(p, p.forward(body)[0], ic, tail, t)
        tails.append(rt)
    return p, tails


def zero_into_first_block(
    p: Proc, t: Target, zero: StmtCursor, ko: StmtCursor, rem: StmtCursor
) -> Proc:
    """Drop the zeroing pass over the whole MR x NR tiles (``zero``: ``C = 0`` over all of
    C): the K remainder (the ``if`` ``rem``) moved before the K blocks (``ko``; two
    reductions commute) runs first whenever ``K % KC > 0``, and there each tile's zeroing
    joins its kernel (``zero_tiles``), which then writes C (``microkernel(first=True)``)
    instead of adding to it; the edges (right, bottom) keep the pass.
    The zeroing of the MC blocks' rows (``z``) and of the tail rows past them (``z2``) go
    into each of the remainder's forms (``pack_remainder``: ``specialize`` on the same
    condition, then ``fuse`` of the two ``if``); with ``t.first > 1`` also into the K
    blocks' first iteration when ``K % KC == 0`` (``zero_into_k_blocks``)."""
    mc, mr, nr = t.mr * t.mcb, t.mr, t.nr
    p, icut = cut_loop(p, zero, f"{mc} * (M / {mc})")
    p, tcut = cut_loop(p, icut.second, f"{mr} * (M / {mr})")
    nests = []
    for rows in (icut.first, tcut.first):
        p, jcut = cut_loop(p, p.forward(rows).body()[0], f"{nr} * (N / {nr})")
        p, f = fission(p, jcut.first.after(), n_lifts=1)
        nests.append(f.first)
    z, z2 = nests
    p, _ = reorder_stmts(p, p.forward(ko).expand(0, 1))
    p = sink(p, z, lambda q, s: s == q.forward(rem))
    p = sink(p, z2, lambda q, s: s == q.forward(z))
    p, sp = specialize(p, p.forward(z2).expand(0, 1), f"K % {t.kc} > 0")
    p, fu = fuse(p, sp.branches[0], p.forward(rem))
    if t.first > 1:  # K % KC == 0: into the first K block, ko = 0
        p = zero_into_k_blocks(p, t, fu.fused, ko)
    if not t.rows_k:  # one form: the MC blocks, then the tail rows
        p = zero_tiles(p, t, fu.first_body[1])
        return zero_tiles(p, t, fu.first_body[0], tail=True)
    z2, z = fu.first_body[0], fu.first_body[1]
    p, sp = specialize(p, p.forward(z2).expand(0, 1), f"K <= {t.rows_k} and N <= {t.rows_k}")
    p, fu = fuse(p, sp.branches[0], p.forward(sp.branches[0]).next())
    p = zero_tiles(p, t, fu.first_body[1])  # A's and B's rows in place
    p = zero_tiles(p, t, fu.first_body[0], tail=True)
    z2, z = p.forward(fu.fused).orelse()[0], p.forward(fu.fused).orelse()[1]
    for s in (z, z2):  # B packed: each into its ``if K <= rows_k`` (A's rows or Aq / Au)
        p = sink(p, s, lambda q, n, past=z: isinstance(n, IfCursor) and n != q.forward(past))
        p, sp = specialize(p, p.forward(s), f"K <= {t.rows_k}")
        p, fu = fuse(p, sp.branches[0], p.forward(sp.branches[0]).next())
        for site in (fu.first_body[0], p.forward(fu.fused).orelse()[0]):
            p = zero_tiles(p, t, site, tail=s is z2)
        z = fu.fused  # the tail rows' zeroing goes past the MC blocks' ``if``
    return p


def zero_into_k_blocks(p: Proc, t: Target, rem: StmtCursor, ko: StmtCursor) -> Proc:
    """With ``K % KC == 0`` (the ``else`` of ``rem``, holding the zeroing of the MC blocks'
    and the tail rows' whole tiles) the first K block is ``ko = 0``: the K blocks' loop is
    specialized as ``rem`` and fused into it, cut at 1 in the ``else`` (``K >= KC`` there),
    its first iteration unrolled, and both zeroings tiled into its loops (``zero_tiles``)."""
    p, sp = specialize(p, p.forward(ko), f"K % {t.kc} > 0")
    p, fu = fuse(p, p.forward(rem), sp.branches[0])
    orelse = p.forward(fu.fused).orelse()
    z2, z, loop = orelse[0], orelse[1], orelse[len(orelse) - 1]
    assert isinstance(loop, ForCursor)
    p, cut = cut_loop(p, loop, 1)
    p, _ = unroll_loop(p, cut.first)
    p = zero_tiles(p, t, z)
    return zero_tiles(p, t, z2, tail=True)


def sink(p: Proc, s: StmtCursor, stop: Callable[[Proc, StmtCursor], bool]) -> Proc:
    """Move ``s`` down past the statements after it until ``stop(p, next)``
    (``reorder_stmts``: each swap proven to commute)."""
    while not stop(p, nxt := p.forward(s).next()):
        assert isinstance(nxt, StmtCursor)
        p, _ = reorder_stmts(p, p.forward(s).expand(0, 1))
    return p


def zero_tiles(p: Proc, t: Target, zero: StmtCursor, tail: bool = False) -> Proc:
    """Tile ``zero`` (``C = 0`` on the MC blocks' rows and the whole panels' columns) as the
    MC blocks' loops that follow it (``ic, jo, ir``: maybe past an allocation and A's
    packing) and fuse it into them: each tile's zeroing right before its kernel's nest.
    With ``tail``, ``zero`` is the tail rows' (``jo, ir``)."""
    mr, nr = t.mr, t.nr
    z = p.forward(zero)
    assert isinstance(z, ForCursor)
    if tail:
        p, sh = shift_loop(p, z, 0)
        p, s2 = split(p, sh.loop, mr, ("ir", "ii"), tail="perfect")
        p, _ = split(p, p.forward(s2.inner).body()[0], nr, ("jo", "ji"), tail="perfect")
        p, _ = reorder_loops(p, s2.inner)  # ir, jo, ii
        p, ro = reorder_loops(p, s2.outer)  # jo, ir, ii
        outer: StmtCursor = ro.outer
        p = sink(p, outer, lambda _, s: isinstance(s, ForCursor) and s.name() == "jo")
    else:
        p, s1 = split(p, z, mr * t.mcb, ("ic", "zr"), tail="perfect")
        p, s2 = split(p, s1.inner, mr, ("ir", "ii"), tail="perfect")
        p, _ = split(p, p.forward(s2.inner).body()[0], nr, ("jo", "ji"), tail="perfect")
        p, _ = reorder_loops(p, s2.inner)  # ic, ir, jo, ii
        p, _ = reorder_loops(p, s2.outer)  # ic, jo, ir, ii
        p = sink(p, s1.outer, lambda _, s: isinstance(s, ForCursor) and s.name() == "ic")
        p, fc = fuse(p, p.forward(s1.outer), p.forward(s1.outer).next())
        outer = fc.first_body[0]
        p = sink(p, outer, lambda _, s: isinstance(s, ForCursor) and s.name() == "jo")  # past Ap
    p, fj = fuse(p, p.forward(outer), p.forward(outer).next())
    p, _ = fuse(p, fj.first_body[0], fj.second_body[0])
    return p


def if_runs(p: Proc, nest: ForCursor, depth: int, cond: str) -> tuple[Proc, ForCursor]:
    """Put the loop nest ``nest`` behind ``if cond``, ``cond`` saying that its loop ``depth``
    levels down runs (a kernel's sizes are positive): that loop is moved outermost, the nest
    specialized on ``cond``, the fallback (it runs no iteration) removed, the loop moved back.
    Returns the proc and the nest inside the ``if``."""
    loops = [nest]
    for _ in range(depth):
        loops.append(p.forward(loops[-1]).body()[0])
    for d in reversed(range(depth)):  # the loop ``depth`` down up to the top
        p, _ = reorder_loops(p, loops[d])
    inner = loops[depth]
    p, sp = specialize(p, inner, cond)
    p, _ = eliminate_dead_code(p, sp.fallback[0])
    top = sp.branches[0].body()[0]
    assert isinstance(top, ForCursor)
    for _ in range(depth):  # back down
        p, ro = reorder_loops(p, top)
        top = ro.inner
    return p, p.forward(sp.branches[0]).body()[0]


def lift(p: Proc, s: StmtCursor, times: int) -> Proc:
    """``lift_scope`` the ``if`` ``s`` out of ``times`` enclosing loops."""
    for _ in range(times):
        p, ls = lift_scope(p, s)
        s = ls.outer
    return p


def right_edge(p: Proc, nest: ForCursor, t: Target) -> Proc:
    """The ``N % NR`` columns right of the whole tiles (``nest``: ``k, i, j``), over the whole
    K: their B packed once into ``Be`` (``[K, N % NR]``, contiguous rows read by every row
    tile), ``MR`` rows at a time, then the ``M % MR`` rows of the corner; in strips of
    ``lanes`` columns, then the masked last ``N % lanes``."""
    mr, nr, v = t.mr, t.nr, t.lanes
    p, _ = shift_loop(p, nest.body()[0].body()[0], 0)
    p, nest = if_runs(p, nest, 2, f"N % {nr} > 0")
    p, _ = pack(p, nest, f"B[0:K, {nr} * (N / {nr}):N]", "Be")
    nest = p.forward(nest)
    assert isinstance(nest, ForCursor)
    p, icut = cut_loop(p, nest.body()[0], f"{mr} * (M / {mr})")
    p, f = fission(p, icut.first.after(), n_lifts=1)
    # MR rows at a time: for io: for jo (0 or 1 strips): kernel; if N % v > 0: masked
    p, _ = split(p, f.first.body()[0], mr, ("io", "ii"), tail="perfect")
    p, ro = reorder_loops(p, f.first)  # io, k, ii, j
    p, js = split(p, ro.inner.body()[0].body()[0], v, ("jo", "ji"), tail="cut_and_guard")
    p, g = fission(p, p.forward(js.outer).after(), n_lifts=3)
    p, _ = reorder_loops(p, g.first.body()[0].body()[0])  # io, k, jo, ii
    p, _ = reorder_loops(p, g.first.body()[0])  # io, jo, k, ii
    p = lift(p, js.guard, 3)
    p = corner_rows(p, f.second, mr, v)  # the corner: the M % MR rows
    return p


def corner_rows(p: Proc, rows: ForCursor, mr: int, width: int) -> Proc:
    """The corner's nest ``rows`` (the ``M % MR`` rows left below the row tiles, a ``k`` loop
    of their ``i, j`` loops) behind ``if M % MR > 0``, its columns split by ``width`` with a
    guarded tail, as ``jo, k, i`` loops; the guard lifted out of them."""
    p, _ = shift_loop(p, rows.body()[0], 0)
    p, corner = if_runs(p, rows, 1, f"M % {mr} > 0")
    p, cs = split(p, corner.body()[0].body()[0], width, ("jo", "ji"), tail="cut_and_guard")
    p, h = fission(p, p.forward(cs.outer).after(), n_lifts=2)
    p, _ = reorder_loops(p, h.first.body()[0])  # k, jo, i
    p, _ = reorder_loops(p, h.first)  # jo, k, i
    return lift(p, cs.guard, 2)


def bottom_edge(p: Proc, nest: ForCursor, t: Target, blocked: bool) -> tuple[Proc, StmtCursor]:
    """The ``M % MR`` rows below the whole tiles of one K range (``nest``: ``k, i, j``, ``j <
    NR * (N / NR)``): ``[ko,] jo, k, i, ji`` (``blocked``: the K blocks of ``KC``, so that
    ``ko`` fuses with the main part's and the rows read its packed panels of B), behind
    ``if M % MR > 0``. Returns the proc and the outermost statement."""
    p, _ = shift_loop(p, nest.body()[0], 0)
    p, _ = split(p, nest.body()[0].body()[0], t.nr, ("jo", "ji"), tail="perfect")
    p, _ = reorder_loops(p, nest.body()[0])  # k, jo, i
    p, r = reorder_loops(p, nest)  # jo, k, i
    top: StmtCursor = r.outer
    if blocked:
        p, _ = split(p, r.inner, t.kc, ("ko", "ki"), tail="perfect")
        p, r2 = reorder_loops(p, r.outer)  # ko, jo, ki, i
        top = r2.outer
    return p, top


def copy_by_rows(p: Proc, load: StmtCursor, depth: int, q: int) -> Proc:
    """Tidy a packing copy ``for a: for b: P[x / q, .., x % q] = S[..]``: split its loop
    ``depth`` levels down (the one divided by ``q``) so that the packed index is
    ``P[xo, .., xi]`` without a division; for the A panels (``depth`` 0, rows) the ``q`` rows
    go innermost, so both copies write their buffer in order (4x and 2x faster copies, by a
    C benchmark of the two forms, than the ``/`` and ``%`` in the inner loop)."""
    loop = load if depth == 0 else load.body()[0]
    assert isinstance(loop, ForCursor)
    p, sp = split(p, loop, q, ("xo", "xi"), tail="perfect")
    if depth == 0:
        p, _ = reorder_loops(p, sp.inner)  # xo, b, xi
    p, _ = simplify(p)
    return p


def odd(rows: int | str) -> int | str:
    """``rows`` rounded up to an odd number: the rows of a packed panel of B (``Bp``, ``Bq``),
    so that consecutive panels start at distinct offsets modulo 4 KiB (L1's set period). B's
    copy writes a row of every panel in turn (``k, xo, xi``: B read in order); with ``KC`` rows
    of ``NR`` floats the panels lie ``4 * NR * KC`` bytes apart, and at ``KC = 1024`` (AVX-512,
    ``NR = 32``) all of them fall in one set of L1 (64 sets of 64 B): the 16..64 write
    streams outnumber its 12 ways. With an odd row count the panels cycle through every
    ``4 * NR``-byte offset. Measured in a C benchmark of the copy, the whole strip in cache:
    1024 x 2048 0.65 -> 0.21-0.24 ms, 1024 x 1024 0.31 -> 0.09, 512 x 512 0.047 -> 0.022;
    1000 x 1000 and 975 x 1999 unchanged (their stride already spreads; an even count such
    as 976 rows would put the panels at only 2 offsets)."""
    if isinstance(rows, int):
        return rows | 1
    return f"2 * (({rows}) / 2) + 1"


def with_right(p: Proc, tail: StmtCursor, t: Target) -> StmtCursor | BlockCursor:
    """The tail rows' loop ``tail``, and with ``t.right`` the right edge's after it."""
    s = p.forward(tail)
    assert isinstance(s, StmtCursor)
    return s.expand(0, 1) if t.right else s


def pack_a_unless_short(
    p: Proc, t: Target, stmts: StmtCursor | BlockCursor, window: str, name: str
) -> Proc:
    """Pack the rows of A that the K remainder's ``stmts`` read (``window``) as ``name``
    (``[tiles, K % KC, MR]``, allocated before them, or inside the MC block loop ``ic`` when
    that is all of them); with ``t.rows_k``, only behind ``if K > rows_k``: a short K reads
    A's rows in place (``specialize``, the packed copy in the fallback; see
    ``AVX512_TARGET``)."""
    blk = p.forward(stmts).as_block()
    if t.rows_k:
        p, rs = specialize(p, blk, f"K <= {t.rows_k}")
        blk = rs.fallback
    first = blk[0]
    block: BlockCursor = blk
    lift = 0
    if len(blk) == 1 and isinstance(first, ForCursor) and first.name() == "ic":
        block, lift = first.body(), 1
    p, pk = pack(p, block, window, name, divide=[(0, t.mr)], order=(0, 2, 1), lift=lift)
    return copy_by_rows(p, pk.load, 0, t.mr)


def pack_remainder(
    p: Proc,
    t: Target,
    cut: IfCursor,
    ic: StmtCursor,
    tail: StmtCursor | BlockCursor,
    rows: tuple[str, str],
) -> Proc:
    """Pack the K remainder's operands (inside ``cut``: ``if K % KC > 0``), k = c + k' with
    c = KC * (K / KC): B's strip as ``Bq`` (an odd row count, see ``odd``) and A's rows as
    ``Aq`` (the MC blocks, loop ``ic``) and ``Au`` (the row tiles past them, ``tail``: their
    loop, and the right edge's with ``t.right``; ``rows``: the two row ranges). With
    ``t.rows_k``, a product with K and N both at most ``rows_k`` packs nothing: the kernels
    read A's and B's rows in place (``specialize``; B's panel of K <= 512 rows spans at most
    512 pages)."""
    base, nr = f"{t.kc} * (K / {t.kc})", t.nr
    block: BlockCursor = cut.body()
    if t.rows_k:  # K and N both short: no Bq, no Aq, no Au
        p, bs = specialize(p, block, f"K <= {t.rows_k} and N <= {t.rows_k}")
        block, ic, tail = bs.fallback, bs.fallback[0], bs.fallback[1 : 2 + bool(t.right)]
    p, bq = pack(p, block, f"B[{base}:K, 0:{nr} * (N / {nr})]", "Bq",
                 divide=[(1, nr)], order=(1, 0, 2))  # fmt: skip
    p = copy_by_rows(p, bq.load, 1, nr)
    p, _ = resize_dim(p, p.forward(bq.alloc), 1, odd(f"K - {base}"))
    block_rows = f"{rows[0]}:{rows[0]} + {t.mr * t.mcb}"
    p = pack_a_unless_short(p, t, ic, f"A[{block_rows}, {base}:K]", "Aq")
    return pack_a_unless_short(p, t, tail, f"A[{rows[1]}, {base}:K]", "Au")


def schedule(p: Proc, t: Target | None = None) -> Proc:
    """The BLIS-style schedule of ``sgemm`` (see the module docstring)."""
    t = t or target()
    mr, nr, kc = t.mr, t.nr, t.kc
    # 1. zero C, then accumulate; k outermost in the product
    p, nests = fission(p, p.find("C[_] = 0.0").after(), n_lifts=2)
    p, _ = reorder_loops(p, nests.second.body()[0])
    p, kij = reorder_loops(p, nests.second)
    prod = kij.outer
    # 2. columns: the whole NR-wide panels (K-blocked below) and the right edge (whole K)
    p, jcut = cut_loop(p, prod.body()[0].body()[0], f"{nr} * (N / {nr})")
    p, cols = fission(p, jcut.first.after(), n_lifts=2)
    if t.right:  # its whole MR-row tiles join the K and MC blocks below
        p, right = right_rows(p, cols.second, t)
    else:
        p = right_edge(p, cols.second, t)
    # 3. K blocks: k < KC*(K/KC), and the remainder from 0 behind ``if K % KC > 0``; in
    #    each, the whole MR-row tiles and the bottom edge
    p, kcut = cut_loop(p, cols.first, f"{kc} * (K / {kc})")
    p, ktail = shift_loop(p, kcut.second, 0)
    p, sp = specialize(p, ktail.loop, f"K % {kc} > 0")
    p, _ = eliminate_dead_code(p, sp.fallback[0])
    rem = sp.branches[0].body()[0]
    bottoms = []
    for nest, blocked in ((kcut.first, True), (rem, False)):
        p, icut = cut_loop(p, p.forward(nest).body()[0], f"{mr} * (M / {mr})")
        p, rows = fission(p, icut.first.after(), n_lifts=1)
        p, b = bottom_edge(p, rows.second, t, blocked)
        bottoms.append(b)
    main = kcut.first
    # 3. blocking of the main part: ko, ic (MC rows), jo, ir (MR rows), ki, ii, ji
    p, tl = tile(p, [main, main.body()[0], main.body()[0].body()[0]], [kc, mr, nr],
                 [("ko", "ki"), ("io", "ii"), ("jo", "ji")])  # fmt: skip
    ko, io = tl.outer[0], tl.outer[1]
    p, _ = reorder_loops(p, io)  # ko, jo, io, ki, ii, ji
    p, _ = reorder_loops(p, p.forward(tl.outer[2]))  # ko, io, jo, ki, ii, ji
    p, mc = split(p, p.forward(io), t.mcb, ("ic", "ir"), tail="cut")
    p, _ = reorder_loops(p, mc.inner)  # ic, jo, ir: one MC x KC block of A for all panels
    p, mtail = reorder_loops(p, mc.tail)  # the rows past the last MC block: jo, io
    # ... and of the remainder (one short K block): ic, jo, ir, k, ii, ji
    p, rt = tile(p, [rem.body()[0], rem.body()[0].body()[0]], [mr, nr],
                 [("io", "ii"), ("jo", "ji")])  # fmt: skip
    p, _ = reorder_loops(p, rem)  # io, k, jo
    p, _ = reorder_loops(p, p.forward(rem))  # io, jo, k
    p, rmc = split(p, p.forward(rt.outer[0]), t.mcb, ("ic", "ir"), tail="cut")
    p, _ = reorder_loops(p, rmc.inner)
    p, rtail = reorder_loops(p, rmc.tail)
    # ... the bottom edge: in the main part's K blocks (it reads their packed panels of B)
    p, fu = fuse(p, p.forward(ko), bottoms[0])
    ko = fu.fused
    for b in (p.forward(ko).body()[-1], bottoms[1]):
        p, _ = if_runs(p, p.forward(b), 2, f"M % {mr} > 0")
    # ... the right edge's row tiles (with ``t.right``): in the MC blocks of both parts
    if t.right:
        loops = [mc.outer, mtail.outer, rmc.outer, rtail.outer]
        p, _ = right_into_blocks(p, right, t, ko, sp.branches[0], loops)
    # 4. packing: the KC x N strip of B as [N / NR, KC, NR] once per ko, the MC x KC block
    #    of A as [MC / MR, KC, MR] once per (ko, ic); each buffer allocated once
    ko = p.forward(ko)
    strip = f"B[{kc} * ko:{kc} * ko + {kc}, 0:{nr} * (N / {nr})]"
    p, bp = pack(p, ko.body(), strip, "Bp", divide=[(1, nr)], order=(1, 0, 2), lift=1)
    p = copy_by_rows(p, bp.load, 1, nr)
    p, _ = resize_dim(p, p.forward(bp.alloc), 1, odd(kc))
    rows = f"{mr} * ({t.mcb} * ic)"
    block = f"A[{rows}:{rows} + {mr * t.mcb}, {kc} * ko:{kc} * ko + {kc}]"
    ic = p.forward(mc.outer)
    p, ap = pack(p, ic.body(), block, "Ap", divide=[(0, mr)], order=(0, 2, 1), lift=2)
    p = copy_by_rows(p, ap.load, 0, mr)
    # ... the rows past the last whole MC block, packed the same way (``At``)
    last = f"{mr * t.mcb} * (M / {mr * t.mcb}):{mr} * (M / {mr})"
    p, at = pack(p, with_right(p, mtail.outer, t), f"A[{last}, {kc} * ko:{kc} * ko + {kc}]", "At",
                 divide=[(0, mr)], order=(0, 2, 1), lift=1)  # fmt: skip
    p = copy_by_rows(p, at.load, 0, mr)
    # ... and for the remainder, k = c + k' with c = KC * (K / KC); allocated once, inside
    # the ``if`` (its extent K % KC is then positive)
    cut = p.forward(sp.branches[0])
    assert isinstance(cut, IfCursor)
    p = pack_remainder(p, t, cut, rmc.outer, with_right(p, rtail.outer, t), (rows, last))
    # 5. micro-kernel calls (the remainder's behind ``if K % KC > 0``: a size is positive),
    #    then each callee swapped for its register-blocked version
    if t.first:  # before the kernels they contain: the first K block's, which write C
        p = zero_into_first_block(p, t, nests.first, ko, cut)
    plain, fast = kernels(t)
    p, calls = replace_all(p, plain)
    by_name = {u.name(): f for u, f in zip(plain, fast, strict=True)}
    for c in calls.calls:
        p, _ = call_eqv(p, c, by_name[c.node().proc.name])
    # every packed buffer kept between calls (its block reused: DRAM_KEPT), as OpenBLAS keeps
    # its own: freed at every return, malloc's trimming gave the pages back and each call
    # faulted them in again (109 faults per call at 256^3: 98 GF/s; kept, 208)
    for buf in ("Bp", "Ap", "At", "Bq", "Aq", "Au", "Be"):
        p, _ = set_memory(p, buf, DRAM_KEPT)
    p, _ = simplify(p)
    return p


def kernels(t: Target) -> tuple[list[Proc], list[Proc]]:
    """The plain micro-kernels that ``schedule`` replaces blocks by, in the order tried (a
    kernel before those whose body is part of its own), and their register-blocked versions."""
    plain: list[Proc] = []
    fast: list[Proc] = []
    if t.first:  # the first K block's, which write C (a zeroing, then the product)
        plain = [microkernel(t, "packed", first=True), edge_microkernel(t, t.nr, first=True)]
        fast = [schedule_microkernel(plain[0], t), schedule_edge_microkernel(plain[1], t, t.nr)]
    plain.append(microkernel(t, "packed"))
    fast.append(schedule_microkernel(plain[-1], t))
    if t.right:  # before the masked kernel: the right edge's tiles on packed A
        plain.append(right_microkernel(t))
        fast.append(schedule_right_microkernel(plain[-1], t))
    for w in (t.nr, t.lanes, None):
        plain.append(edge_microkernel(t, w))
        fast.append(schedule_edge_microkernel(plain[-1], t, w))
    return plain, fast


def check(p: Proc, sizes: list[tuple[int, int, int]]) -> float:
    """Worst relative error of the compiled ``p`` against float64 numpy at ``sizes``."""
    f = p.compile()
    rng = np.random.default_rng(0)
    worst = 0.0
    for m, n, k in sizes:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c = np.full((m, n), np.nan, np.float32)
        f(m, n, k, a, b, c)
        want = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        worst = max(worst, float(np.max(np.abs(c - want) / scale)))
    return worst


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(sgemm)]


# -- the tuning space (``cursched tune sched/sgemm_x86.py``): the cache blocking of the
# running CPU's target; the register tile is fixed by the ISA's registers


def schedule_tuned(p: Proc, kc: int, mcb: int) -> Proc:
    """``schedule`` with the K block depth ``kc`` and the MR-row tiles per MC block ``mcb``."""
    return schedule(p, target()._replace(kc=kc, mcb=mcb))


def tune_inputs() -> tuple[object, ...]:
    """The timed product: 1024 x 1024 x 1024 (whole tiles and edges: 1024 = 170 * 6 + 4)."""
    rng = np.random.default_rng(0)
    n = 1024
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    return (n, n, n, a, b, np.zeros((n, n), np.float32))


space = tune.Space(kc=[384, 128, 192, 256, 512, 768, 1024], mcb=[32, 6, 12, 16, 24, 48, 64, 96])
tunable = tune.Tunable(sgemm, schedule_tuned, space, tune_inputs)


def main() -> int:
    p = schedule(sgemm)
    print(p)
    sizes = [(6, 16, 256), (13, 37, 300), (64, 48, 512), (100, 100, 100), (257, 129, 515)]
    sizes.append((43, 70, 1100))  # K blocks of the AVX-512 target (KC 1024) and a remainder
    err = check(p, sizes)
    print(f"\nmax |C - A @ B| / (|A| @ |B|) over {sizes}: {err:.1e}")
    if not err <= 1e-5:
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    print("ok: matches numpy\n")
    c = p.compile().c_source
    start = c.index("void ukernel_packed_")
    print(c[start : c.index("\n}\n", start) + 2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
