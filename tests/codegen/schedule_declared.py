"""A schedule file that declares what it produces (``scheduled()``), for the CLI tests."""

from __future__ import annotations

from cursched import DRAM, Proc, proc, rename, split


@proc
def helper(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 2.0 * x[i]


@proc
def scale(n: size, a: f32, x: f32[n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n):
        x[i] = a * x[i]


def schedule(p: Proc) -> Proc:
    p, _ = split(p, p.find_loop("i"), 4, ("io", "ii"), tail="perfect")
    return p


# a scheduled proc under a name of its own, made at import time (a file can do both)
scale_tiled, _ = rename(schedule(scale), "scale_tiled")


def scheduled() -> list[Proc]:
    return [schedule(scale)]
