"""Derive online softmax, its denominator and log-sum-exp from the plain two-pass loops.

Run it with ``python sched/online_softmax.py``. Each proc works on the rows of a matrix. The
schedule is the same for all three:

1. the column dimension ``j`` as a reduction: the max and the sum loops ``split`` into tiles
   of ``reduce_tile`` columns and ``scan_fuse``d (one correction per tile);
2. row tiles of one vector of rows (``split``: 16 rows with AVX-512, else 8; where the
   asserts do not prove the tile divides the rows, the rows past the last whole tile in a loop
   of their own: step 9), every per-row value one element per row of the tile
   (``expand_dim``, ``lift_alloc``), the column tiles outside the rows (``fission``,
   ``reorder_loops``);
3. a tile of the rows staged transposed (``stage_mem``, ``rearrange_dim``, allocated once per
   row tile): a column of the tile is one vector of rows;
4. one loop per statement, the rows innermost: each row's max and sum are still reduced in
   column order, the rows of a tile side by side; the row tiles ``par``;
5.-8. with the instructions of ``cursched.platforms.x86`` (``KERNELS``: AVX-512 where the CPU
   has it, else AVX2): with AVX-512 the staging by 16 x 16 transposes; the running max, the
   guarded exponent, ``exp`` and the sums over registers of one vector of rows; the
   normalisation (softmax only) along the row, a vector of columns at a time;
9. with 16-row tiles and ``R % 8 == 0`` (the procs' assert), the rows past the last whole
   tile (0 or 8) in tiles of 8 rows, steps 2-8 again with AVX2's instructions (their loop a
   copy of the row loop's body: its cursors at the places of the main body's).

The two instruction sets give bitwise equal results: the same operations in the same order,
each lane one row (the exp of both is the same formula, rounded the same way).

The only patterns are at the start (the column loops, the row loop, the statistics); every
later step uses cursors an earlier step returned. The script prints each final proc, runs it
in the interpreter and compiled, and checks it against numpy in float64 on rows that include
a row starting with ``-inf`` and a row of equal values.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from cursched import (
    DRAM,
    Proc,
    bind_expr,
    expand_dim,
    fission,
    lift_alloc,
    parallelize_loop,
    proc,
    rearrange_dim,
    reorder_loops,
    replace,
    scan_fuse,
    set_memory,
    split,
    stage_mem,
)
from cursched.platforms.x86 import (
    AVX2,
    AVX512,
    VectorMemory,
    isa,
    mm256_acc_ps,
    mm256_broadcast_ss_scalar,
    mm256_div_ps,
    mm256_exp_ps,
    mm256_loadu_ps,
    mm256_max_ps,
    mm256_storeu_ps,
    mm256_sub_guarded_ps,
    mm256_sub_ps,
    mm512_acc_ps,
    mm512_div_ps,
    mm512_exp_ps,
    mm512_loadu_ps,
    mm512_max_ps,
    mm512_set1_ps_scalar,
    mm512_storeu_ps,
    mm512_sub_guarded_ps,
    mm512_sub_ps,
    mm512_transpose16_ps_prefetch,
)
from cursched.primitives.loops.loop_split import SplitNotPerfectError

LANES = 8
"""Floats of one AVX2 register: the rows of a row tile with AVX2 (and without vector
instructions)."""


@proc
def softmax_denominator(
    R: size, C: size, x: f32[R, C] @ DRAM, mx: f32[R] @ DRAM, den: f32[R] @ DRAM
):
    assert R % 8 == 0
    assert C % 64 == 0
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        mx[r] = m
        den[r] = s


@proc
def softmax(R: size, C: size, x: f32[R, C] @ DRAM, y: f32[R, C] @ DRAM):
    assert R % 8 == 0
    assert C % 64 == 0
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        for j in seq(0, C):
            y[r, j] = exp(x[r, j] - m) / s


@proc
def logsumexp(R: size, C: size, x: f32[R, C] @ DRAM, out: f32[R] @ DRAM):
    assert R % 8 == 0
    assert C % 64 == 0
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        out[r] = m + log(s)


class Kernels(NamedTuple):
    """The vector code of steps 5-8 for one instruction set: its registers (``memory``,
    ``lanes`` floats each, one per row of a row tile) and the instructions ``replace`` puts
    in (``transpose``: a lanes x lanes transpose between tiles in memory, or None: the
    staging stays the compiler's copy)."""

    memory: VectorMemory
    lanes: int
    load: Proc
    store: Proc
    max: Proc
    sub_guarded: Proc
    exp: Proc
    acc: Proc
    broadcast: Proc
    sub: Proc
    div: Proc
    transpose: Proc | None


KERNELS = {
    "avx2": Kernels(
        AVX2, LANES, mm256_loadu_ps, mm256_storeu_ps, mm256_max_ps, mm256_sub_guarded_ps,
        mm256_exp_ps, mm256_acc_ps, mm256_broadcast_ss_scalar, mm256_sub_ps, mm256_div_ps, None,
    ),
    # 16 lanes: a row tile of 16 rows, each instruction twice the work of AVX2's (the Zen 5
    # the benchmarks ran on issues 512-bit operations at the rate of 256-bit ones)
    "avx512": Kernels(
        AVX512, 16, mm512_loadu_ps, mm512_storeu_ps, mm512_max_ps, mm512_sub_guarded_ps,
        mm512_exp_ps, mm512_acc_ps, mm512_set1_ps_scalar, mm512_sub_ps, mm512_div_ps,
        mm512_transpose16_ps_prefetch,
    ),
}  # fmt: skip
"""Steps 5-8 by instruction set (``isa()``'s names)."""


def schedule(
    p: Proc, reduce_tile: int = 64, row_tile: int | None = None, vector: bool | str = True
) -> Proc:
    """Fuse the max and the sum one tile of ``reduce_tile`` columns at a time, ``row_tile``
    rows side by side (one per vector lane, each row's reductions in column order), row tiles
    in parallel. ``vector``: True, the widest instruction set of ``KERNELS`` this CPU has
    (AVX-512, else AVX2; none: the compiler's vector code); ``"avx2"`` or ``"avx512"``, that
    one (scheduled on any CPU, compiled on one that has it); False, none. ``row_tile``
    defaults to the instruction set's lanes (8 without one) and must equal them for its
    instructions (else the compiler's vector code); with AVX-512, ``reduce_tile`` a multiple
    of 16 (the staging's transposes). Where the asserts do not prove that ``row_tile``
    divides the rows (16-row tiles, ``R % 8 == 0``), the rows past the last whole tile run in
    tiles of 8 rows (``row_tile`` a multiple of 8), AVX2's code with an instruction set."""
    kern = _kernels(vector)
    lanes = kern.lanes if kern is not None else LANES
    row_tile = row_tile or lanes
    # the only patterns of the schedule: the column loops, the row loop and the statistics
    loops = p.find_loop("j", many=True)
    rows_loop = p.find_loop("r")
    m, s = p.find_alloc_or_arg("m"), p.find_alloc_or_arg("s")
    first, second, norm = loops[0], loops[1], loops[2:]
    # 1. column tiles, the running max and sum fused with one correction per tile
    p, a = split(p, first, reduce_tile, ("jo", "ji"), tail="perfect")
    p, b = split(p, second, reduce_tile, ("jo", "ji"), tail="perfect")
    p, online = scan_fuse(p, a.outer, b.outer)
    # 2. row tiles (the rows past the last whole tile, if the asserts leave any, in a loop of
    # their own: step 9)
    try:
        p, rt = split(p, rows_loop, row_tile, ("rt", "rr"), tail="perfect")
    except SplitNotPerfectError:
        p, rt = split(p, rows_loop, row_tile, ("rt", "rr"), tail="cut")
    stats = _Rows(m, s, online.saved[0], online.factor[0], online.fused, norm)
    where = _Rows(*(p.forward(c).index() for c in stats[:5]), [p.forward(c).index() for c in norm])
    p = _tile_rows(p, rt, stats, f"{row_tile} * rt", reduce_tile, kern, row_tile)
    if not rt.tail:
        return p
    # 9. the rows past the last whole tile (R % 16 of them with AVX-512, a multiple of 8)
    # in tiles of 8 rows, AVX2's (so every row's result is bitwise the AVX2 schedule's);
    # their loop a copy of the row loop's body: the same statements at the same places
    tail = p.forward(rt.tail)
    body = tail.body()
    fused = body[where.fused]
    stats = _Rows(
        body[where.m], body[where.s], fused.body()[where.saved], fused.body()[where.factor],
        fused, [body[k] for k in where.norm],
    )  # fmt: skip
    p, tt = split(p, tail, LANES, ("rq", "rr"), tail="perfect")
    base = f"{LANES} * rq + {row_tile} * ({rows_loop.hi().name()} / {row_tile})"
    narrow = KERNELS["avx2"] if kern is not None else None
    return _tile_rows(p, tt, stats, base, reduce_tile, narrow, LANES, par=False, sfx="_t")


class _Rows(NamedTuple):
    """The cursors (or the places) of one row loop's statistics ``m`` and ``s``, of the saved
    max and the correction (allocations in the fused column loop), the fused loop and the
    normalisation loop (a list: none for the statistics only)."""

    m: Any
    s: Any
    saved: Any
    factor: Any
    fused: Any
    norm: Any


def _tile_rows(
    p: Proc,
    rt: Any,
    stats: _Rows,
    base: str,
    reduce_tile: int,
    kern: Kernels | None,
    row_tile: int,
    par: bool = True,
    sfx: str = "",
) -> Proc:
    """Steps 2-8 of ``schedule`` on a row loop split into tiles of ``row_tile`` rows
    (``rt``: ``SplitCursors``, the rows ``rr``), the tile's first row ``base``; ``sfx`` ends
    the names of the buffers the steps make (a name may not be reused)."""
    # 2. every per-row value one element per row of the tile
    for stat in (stats.m, stats.s):
        p, ex = expand_dim(p, stat, row_tile, "rr")
        p, _ = lift_alloc(p, ex.alloc)
    for buf in (stats.saved, stats.factor):
        p, ex = expand_dim(p, buf, row_tile, "rr")
        p, _ = lift_alloc(p, ex.alloc, n_lifts=2)
    p, _ = fission(p, stats.fused.before())
    p, around = fission(p, stats.fused.after())
    p, tiles = reorder_loops(p, around.first)
    # 3. the tile of the rows transposed once (xt[column, row], allocated once per row tile):
    # a column of the tile is one vector of rows
    window = f"{base}:{base} + {row_tile}, {reduce_tile} * jo:{reduce_tile} * jo + {reduce_tile}"
    p, xs = stage_mem(p, tiles.inner, f"x[{window}]", f"xt{sfx}")
    p, _ = rearrange_dim(p, xs.alloc, (1, 0))
    p, _ = lift_alloc(p, xs.alloc)
    # 4. one loop per statement of the row loop, the rows innermost
    parts = []
    for stmt in list(p.forward(tiles.inner).body())[:-1]:
        p, f = fission(p, p.forward(stmt).after())
        parts.append(f.first)
    _, maxes, _, _, sums = [*parts, f.second]
    p, mx = reorder_loops(p, maxes)
    p, sm = reorder_loops(p, sums)
    if par:
        p, _ = parallelize_loop(p, rt.outer)
    if kern is None or row_tile != kern.lanes:
        return p
    return _vector_steps(p, kern, xs.load, mx, sm, stats.norm, sfx)


def _kernels(vector: bool | str) -> Kernels | None:
    """The instruction set of steps 5-8 that ``vector`` asks for (``schedule``)."""
    if vector is True:
        name = isa()
        return KERNELS[name] if name is not None else None
    return KERNELS[vector] if vector else None


def _vector_steps(
    p: Proc, kern: Kernels, stage: Any, mx: Any, sm: Any, norm: list[Any], sfx: str
) -> Proc:
    """Steps 5-8 of ``schedule`` with the instructions of ``kern``: ``stage`` the loop
    staging a tile of x transposed (rows outside, columns inside), ``mx`` and ``sm`` the max
    and sum loops (columns outside, rows inside), ``norm`` the normalisation loop (none for
    the statistics only)."""
    lanes = kern.lanes
    if kern.transpose is not None:
        # 5. the staging by square tiles of lanes x lanes, each one transpose instruction
        # (scalar, the copy was ~45% of the AVX-512 kernel's time: one load and one store
        # per float), which prefetches the rows ahead (16 streams of x: see the instruction)
        inner = p.forward(stage).body()[0]
        p, _ = split(p, inner, lanes, ("io", "ii"), tail="perfect")
        p, sq = reorder_loops(p, stage)
        p, _ = replace(p, sq.inner, kern.transpose)
    # 6. the running max of the rows in a register over the tile (fmaxf's NaN rule)
    p, mv = stage_mem(p, mx.outer, f"m[0:{lanes}]", f"m_v{sfx}", memory=kern.memory)
    p, _ = replace(p, mv.load, kern.load)
    p, _ = replace(p, mv.store, kern.store)
    update = p.forward(mx.inner).body()[0]
    p, loads, rest = _lane_operand(p, kern, (update.rhs().args()[1],), "rr", f"x_m{sfx}")
    p, _ = replace(p, loads, kern.load)
    p, _ = replace(p, rest, kern.max)
    # 7. the sums in a register over the tile: guarded exponent, exp, add in column order
    p, sv = stage_mem(p, sm.outer, f"s[0:{lanes}]", f"s_v{sfx}", memory=kern.memory)
    p, _ = replace(p, sv.load, kern.load)
    p, _ = replace(p, sv.store, kern.store)
    update = p.forward(sm.inner).body()[0]
    p, x_s, _ = _lane_operand(p, kern, (update.rhs().args()[0].lhs(),), "rr", f"x_s{sfx}")
    guard = p.forward(update).rhs().args()[0].rhs()
    p, m_s, _ = _lane_operand(p, kern, (guard.args()[1], guard.args()[2]), "rr", f"m_s{sfx}")
    update = p.forward(update)
    p, arg_s, _ = _lane_operand(p, kern, (update.rhs().args()[0],), "rr", f"arg_s{sfx}")
    update = p.forward(update)
    p, exp_s, rest = _lane_operand(p, kern, (update.rhs(),), "rr", f"exp_s{sfx}")
    for loop, ins in (
        (x_s, kern.load),
        (m_s, kern.load),
        (arg_s, kern.sub_guarded),
        (exp_s, kern.exp),
        (rest, kern.acc),
    ):
        p, _ = replace(p, loop, ins)
    if not norm:
        return p
    # 8. the normalisation along the row, a vector of columns at a time (max and sum
    # broadcast)
    p, nj = split(p, norm[0], lanes, ("jv", "jl"), tail="perfect")
    update = p.forward(nj.inner).body()[0]
    p, x_y, _ = _lane_operand(p, kern, (update.rhs().lhs().args()[0].lhs(),), "jl", f"x_y{sfx}")
    update = p.forward(update)
    p, m_y, _ = _lane_operand(p, kern, (update.rhs().lhs().args()[0].rhs(),), "jl", f"m_y{sfx}")
    update = p.forward(update)
    p, s_y, _ = _lane_operand(p, kern, (update.rhs().rhs(),), "jl", f"s_y{sfx}")
    update = p.forward(update)
    p, arg_y, _ = _lane_operand(p, kern, (update.rhs().lhs().args()[0],), "jl", f"arg_y{sfx}")
    update = p.forward(update)
    p, exp_y, _ = _lane_operand(p, kern, (update.rhs().lhs(),), "jl", f"exp_y{sfx}")
    update = p.forward(update)
    p, y_v, rest = _lane_operand(p, kern, (update.rhs(),), "jl", f"y_v{sfx}")
    for loop, ins in (
        (x_y, kern.load),
        (m_y, kern.broadcast),
        (s_y, kern.broadcast),
        (arg_y, kern.sub),
        (exp_y, kern.exp),
        (y_v, kern.div),
        (rest, kern.store),
    ):
        p, _ = replace(p, loop, ins)
    return p


def _lane_operand(
    p: Proc, kern: Kernels, reads: tuple[Any, ...], lane: str, name: str
) -> tuple[Any, ...]:
    """Compute ``reads`` (equal expressions of one statement in a loop over the lanes
    ``lane``) into a register ``name`` of ``kern`` in a loop of its own before the statement
    (``bind_expr``, ``expand_dim``, ``lift_alloc``, ``fission``, ``set_memory``); the proc,
    the loop computing the register and the loop of the statement."""
    p, bound = bind_expr(p, reads, name)
    p, ex = expand_dim(p, bound.alloc, kern.lanes, lane)
    p, _ = lift_alloc(p, ex.alloc)
    p, f = fission(p, bound.assign.after())
    p, _ = set_memory(p, ex.alloc, kern.memory)
    return p, f.first, f.second


def rows(r: int, c: int, seed: int = 0) -> np.ndarray:
    """Random rows, row 0 starting with ``-inf`` and row 1 of equal values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((r, c)).astype(np.float32) * 3
    x[0, :3] = -np.inf
    x[1, :] = 0.75
    return x


def reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(max, denominator, softmax) per row, in float64."""
    x64 = x.astype(np.float64)
    m = x64.max(axis=1)
    e = np.exp(x64 - m[:, None])
    return m, e.sum(axis=1), e / e.sum(axis=1)[:, None]


def check(p: Proc, x: np.ndarray, *, compiled: bool) -> list[str]:
    """Run ``p`` (in the interpreter or compiled) and compare with numpy; the problems found."""
    r, c = x.shape
    m, den, sm = reference(x)
    run = p.compile() if compiled else p.interpret
    bad: list[str] = []
    name = p.name()
    if name == "softmax_denominator":
        mx, d = np.zeros(r, np.float32), np.zeros(r, np.float32)
        run(r, c, x, mx, d)
        if not np.allclose(mx, m, rtol=0, atol=0) or not np.allclose(d, den, rtol=1e-5, atol=0):
            bad.append(f"{name}: max {np.abs(d - den).max():.1e}")
    elif name == "softmax":
        y = np.zeros_like(x)
        run(r, c, x, y)
        if not np.allclose(y, sm, rtol=1e-5, atol=1e-6):
            bad.append(f"{name}: max |y - ref| = {np.abs(y - sm).max():.1e}")
        if np.abs(y.astype(np.float64).sum(axis=1) - 1).max() > 1e-5:
            bad.append(f"{name}: a row does not sum to 1")
    else:
        out = np.zeros(r, np.float32)
        run(r, c, x, out)
        lse = m + np.log(den)
        if not np.allclose(out, lse, rtol=2e-6, atol=0):
            bad.append(f"{name}: max rel err {np.abs((out - lse) / lse).max():.1e}")
    return bad


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(p) for p in (softmax_denominator, softmax, logsumexp)]


def main() -> int:
    x = rows(8, 128)
    bad: list[str] = []
    for p in (softmax_denominator, softmax, logsumexp):
        q = schedule(p)
        print(q, end="\n\n")
        bad += check(q, x, compiled=False) + check(q, x, compiled=True)
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: denominator, softmax and log-sum-exp match numpy (float64 reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
