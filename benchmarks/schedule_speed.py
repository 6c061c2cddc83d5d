"""Scheduling speed: the same 20-step loop schedule of sgemm in exo-lang and in cursched.

Both libraries run the same rewrites (split, reorder, fission, fuse, unroll, cut, shift,
simplify), addressed by the same patterns, on the same sgemm proc, in this one process. Each
schedule is replayed ``--repeat`` times from the unscheduled proc; per step we keep the
fastest replay (the first replay pays for imports, solver start-up and caches warming, in both
libraries). Prints the per-primitive time of each library and the ratio exo / cursched.
Three schedules: loops (20 steps), buffers (stage_mem, expand_dim, lift_alloc) and ``replace``
by 8-wide instructions (declared in both libraries with the same bodies and asserts).

Run: ``python benchmarks/schedule_speed.py [--repeat 5] [--json PATH]`` (``--json``: the
per-primitive times as JSON, plotted by notebooks/benchmarks.py). Needs ``pip install -e '.[dev]'``
(which installs exo-lang).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _results
import exo.API_scheduling as exo_api
from _exo_instrs import fma8_exo, zero8_exo
from _exo_procs import sgemm_exo

import cursched as cs
from cursched import DRAM, instr, proc


@proc
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM):
    assert M % 4 == 0
    assert N % 8 == 0
    assert K % 8 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@instr("for (int t_ = 0; t_ < 8; t_++) {dst_data}[t_] = 0.0f;")
def zero8(dst: [f32][8] @ DRAM):
    assert stride(dst, 0) == 1
    for i in seq(0, 8):
        dst[i] = 0.0


@instr("for (int t_ = 0; t_ < 8; t_++) {dst_data}[t_] += {a_data}[0] * {b_data}[t_];")
def fma8(dst: [f32][8] @ DRAM, a: [f32][1] @ DRAM, b: [f32][8] @ DRAM):
    assert stride(dst, 0) == 1
    assert stride(b, 0) == 1
    for i in seq(0, 8):
        dst[i] += a[0] * b[i]


Step = tuple[str, Callable[[Any], Any], Callable[[Any], Any]]


def _cs(f: Callable[..., tuple[Any, Any]]) -> Callable[..., Any]:
    """A cursched primitive returning only the proc, for the step table."""
    return lambda *a, **k: f(*a, **k)[0]


# The first steps of every schedule: tile i by 4 and j by 8, the i tile outside the j tile.
TILE_STEPS: list[Step] = [
    (
        "split",
        lambda p: _cs(cs.split)(p, p.find_loop("i"), 4, ("io", "ii"), tail="perfect"),
        lambda p: exo_api.divide_loop(p, p.find_loop("i"), 4, ["io", "ii"], perfect=True),
    ),
    (
        "split",
        lambda p: _cs(cs.split)(p, p.find_loop("j"), 8, ("jo", "ji"), tail="perfect"),
        lambda p: exo_api.divide_loop(p, p.find_loop("j"), 8, ["jo", "ji"], perfect=True),
    ),
    (
        "reorder_loops",
        lambda p: _cs(cs.reorder_loops)(p, p.find_loop("ii")),
        lambda p: exo_api.reorder_loops(p, p.find_loop("ii")),
    ),
]

SIMPLIFY: Step = ("simplify", lambda p: _cs(cs.simplify)(p), lambda p: exo_api.simplify(p))

STEPS: list[Step] = [
    *TILE_STEPS,
    (
        "split",
        lambda p: _cs(cs.split)(p, p.find_loop("k"), 4, ("ko", "ki"), tail="perfect"),
        lambda p: exo_api.divide_loop(p, p.find_loop("k"), 4, ["ko", "ki"], perfect=True),
    ),
    (
        "fission",
        lambda p: _cs(cs.fission)(p, p.find("C[_] = _").after(), n_lifts=2),
        lambda p: exo_api.fission(p, p.find("C[_] = _").after(), n_lifts=2),
    ),
    (
        "fuse",
        lambda p: _cs(cs.fuse)(p, p.find_loop("ii"), p.find_loop("ii #1")),
        lambda p: exo_api.fuse(p, p.find_loop("ii"), p.find_loop("ii #1")),
    ),
    (
        "fuse",
        lambda p: _cs(cs.fuse)(p, p.find_loop("ji"), p.find_loop("ji #1")),
        lambda p: exo_api.fuse(p, p.find_loop("ji"), p.find_loop("ji #1")),
    ),
    (
        "fission",
        lambda p: _cs(cs.fission)(p, p.find("C[_] = _").after(), n_lifts=2),
        lambda p: exo_api.fission(p, p.find("C[_] = _").after(), n_lifts=2),
    ),
    (
        "reorder_loops",
        lambda p: _cs(cs.reorder_loops)(p, p.find_loop("ji #1")),
        lambda p: exo_api.reorder_loops(p, p.find_loop("ji #1")),
    ),
    (
        "reorder_loops",
        lambda p: _cs(cs.reorder_loops)(p, p.find_loop("ii #1")),
        lambda p: exo_api.reorder_loops(p, p.find_loop("ii #1")),
    ),
    (
        "unroll_loop",
        lambda p: _cs(cs.unroll_loop)(p, p.find_loop("ki")),
        lambda p: exo_api.unroll_loop(p, p.find_loop("ki")),
    ),
    SIMPLIFY,
    (
        "cut_loop",
        lambda p: _cs(cs.cut_loop)(p, p.find_loop("jo"), 1),
        lambda p: exo_api.cut_loop(p, p.find_loop("jo"), 1),
    ),
    (
        "split",
        lambda p: _cs(cs.split)(p, p.find_loop("ko"), 2, ("koo", "koi"), tail="cut"),
        lambda p: exo_api.divide_loop(p, p.find_loop("ko"), 2, ["koo", "koi"], tail="cut"),
    ),
    SIMPLIFY,
    (
        "cut_loop",
        lambda p: _cs(cs.cut_loop)(p, p.find_loop("io"), 1),
        lambda p: exo_api.cut_loop(p, p.find_loop("io"), 1),
    ),
    (
        "shift_loop",
        lambda p: _cs(cs.shift_loop)(p, p.find_loop("jo #1"), 0),
        lambda p: exo_api.shift_loop(p, p.find_loop("jo #1"), 0),
    ),
    (
        "unroll_loop",
        lambda p: _cs(cs.unroll_loop)(p, p.find_loop("koi")),
        lambda p: exo_api.unroll_loop(p, p.find_loop("koi")),
    ),
    (
        "reorder_loops",
        lambda p: _cs(cs.reorder_loops)(p, p.find_loop("ii")),
        lambda p: exo_api.reorder_loops(p, p.find_loop("ii")),
    ),
    SIMPLIFY,
]


# The buffer primitives on the same sgemm: tile i and j, stage a 4x8 tile of C around the
# tile's loops, give the tile a jo dimension and move its allocation out of the jo loop (Exo
# resolves expand_dim's index at the allocation, so the dimension comes before the lift).
BUFFER_STEPS: list[Step] = [
    *TILE_STEPS,
    (
        "stage_mem",
        lambda p: _cs(cs.stage_mem)(
            p, p.find_loop("ii"), "C[4 * io:4 * io + 4, 8 * jo:8 * jo + 8]", "tile"
        ),
        lambda p: exo_api.stage_mem(
            p, p.find_loop("ii"), "C[4 * io:4 * io + 4, 8 * jo:8 * jo + 8]", "tile"
        ),
    ),
    (
        "stage_mem",
        lambda p: _cs(cs.stage_mem)(p, p.find_loop("k"), "tile[ii, ji]", "acc"),
        lambda p: exo_api.stage_mem(p, p.find_loop("k"), "tile[ii, ji]", "acc"),
    ),
    # Exo leaves the tile's shape as 4 * io + 4 - 4 * io, which lift_alloc refuses to move
    SIMPLIFY,
    (
        "expand_dim",
        lambda p: _cs(cs.expand_dim)(p, p.find_alloc_or_arg("tile"), "N / 8", "jo"),
        lambda p: exo_api.expand_dim(p, p.find_alloc_or_arg("tile"), "N / 8", "jo"),
    ),
    (
        "lift_alloc",
        lambda p: _cs(cs.lift_alloc)(p, p.find_alloc_or_arg("tile")),
        lambda p: exo_api.lift_alloc(p, p.find_alloc_or_arg("tile")),
    ),
    (
        "expand_dim",
        lambda p: _cs(cs.expand_dim)(p, p.find_alloc_or_arg("acc"), 8, "ji"),
        lambda p: exo_api.expand_dim(p, p.find_alloc_or_arg("acc"), "8", "ji"),
    ),
    (
        "lift_alloc",
        lambda p: _cs(cs.lift_alloc)(p, p.find_alloc_or_arg("acc"), n_lifts=2),
        lambda p: exo_api.lift_alloc(p, p.find_alloc_or_arg("acc"), n_lifts=2),
    ),
]


# replace on the same sgemm: tile i by 4 and j by 8, then replace the zeroing rows and the
# multiply-add rows by 8-wide instructions (the same instruction bodies and asserts in both
# libraries; Exo 1.0 does not check the asserts, cursched proves them at each call).
REPLACE_STEPS: list[Step] = [
    *TILE_STEPS,
    (
        "fission",
        lambda p: _cs(cs.fission)(p, p.find("C[_] = _").after()),
        lambda p: exo_api.fission(p, p.find("C[_] = _").after()),
    ),
    (
        "reorder_loops",
        lambda p: _cs(cs.reorder_loops)(p, p.find_loop("ji #1")),
        lambda p: exo_api.reorder_loops(p, p.find_loop("ji #1")),
    ),
    (
        "replace",
        lambda p: _cs(cs.replace)(p, p.find_loop("ji"), zero8),
        lambda p: exo_api.replace(p, p.find_loop("ji"), zero8_exo),
    ),
    (
        "replace",
        lambda p: _cs(cs.replace)(p, p.find_loop("ji"), fma8),
        lambda p: exo_api.replace(p, p.find_loop("ji"), fma8_exo),
    ),
]


def run(steps: list[Step], start: Any, which: int, repeat: int) -> tuple[list[float], Any]:
    """Replay the schedule ``repeat`` times; the fastest time of each step, and the result."""
    best = [float("inf")] * len(steps)
    p = start
    for _ in range(repeat):
        p = start
        for n, step in enumerate(steps):
            t0 = time.perf_counter()
            p = step[which](p)
            best[n] = min(best[n], time.perf_counter() - t0)
    return best, p


def report(title: str, names: list[str], ours: list[float], theirs: list[float]) -> None:
    """Print per-primitive totals and the overall ratio."""
    print(title)
    print(f"{'primitive':<16}{'calls':>6}{'exo ms':>10}{'cursched ms':>13}{'exo/cursched':>14}")
    for name in dict.fromkeys(names):
        idx = [i for i, n in enumerate(names) if n == name]
        e = sum(theirs[i] for i in idx) * 1e3
        c = sum(ours[i] for i in idx) * 1e3
        print(f"{name:<16}{len(idx):>6}{e:>10.2f}{c:>13.2f}{e / c:>13.1f}x")
        _results.record(schedule=title, primitive=name, calls=len(idx), exo_ms=e, cursched_ms=c)
    e_total, c_total = sum(theirs) * 1e3, sum(ours) * 1e3
    print(
        f"{'total':<16}{len(names):>6}{e_total:>10.2f}{c_total:>13.2f}{e_total / c_total:>13.1f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="replays of each schedule")
    _results.add_json_flag(ap)
    args = ap.parse_args()
    from cursched.testing import assert_equivalent

    schedules = [
        ("20-step loop schedule of sgemm", STEPS),
        ("buffer schedule of sgemm (tile staging)", BUFFER_STEPS),
        ("replace by instructions on sgemm", REPLACE_STEPS),
    ]
    for n, (title, steps) in enumerate(schedules):
        ours, final = run(steps, sgemm, 1, args.repeat)
        theirs, _ = run(steps, sgemm_exo, 2, args.repeat)
        # The two schedules must do the same thing: cursched's result is checked against sgemm.
        assert_equivalent(sgemm, final, sizes={"M": 8, "N": 16, "K": 24})
        if n:
            print()
        report(f"{title}, best of {args.repeat}", [s[0] for s in steps], ours, theirs)
    _results.write_if_asked(args, "schedule_speed", f"per-primitive best of {args.repeat} replays")


if __name__ == "__main__":
    main()
