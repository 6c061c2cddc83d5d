"""Benchmark: forwarding a cursor through a 1000-step history, and finding a loop by pattern
in a 500-statement proc. Prints milliseconds (aim: under 5 ms each).

Run: ``python benchmarks/forwarding.py``. Verification is switched off, as it would be in a
user's schedule; the cache is cleared between forwarding runs so each run walks all steps.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("CURSCHED_VERIFY", "0")

from cursched import insert_pass, proc, reorder_stmts
from cursched.frontend import parse_source
from cursched.primitives import settings
from cursched.proc import Proc

settings.verify = False


def _big_source(n_loops: int) -> str:
    lines = ["def big(n: size, x: f32[n] @ DRAM):"]
    for k in range(n_loops):
        lines.append(f"    for i{k} in seq(0, n):")
        lines.append(f"        x[i{k}] = {float(k)}")
    return "\n".join(lines) + "\n"


def _best(fn: object, repeat: int = 7) -> float:
    assert callable(fn)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


@proc
def chain(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
        y[i] = 2.0


def main() -> None:
    big = Proc(parse_source(_big_source(250), {}))  # 500 statements
    find_ms = _best(lambda: big.find_loop("i249"))
    print(f"find a loop by pattern in a 500-statement proc: {find_ms:.3f} ms")

    p = chain
    target = chain.find("y[_] = _")
    for _ in range(500):
        p, _c = insert_pass(p, p.find_loop("i").body()[0].before())
        p, _c = reorder_stmts(p, p.find_loop("i").body()[:2], unsafe_skip_checks=True)
    assert p.version == 1000

    def fwd() -> None:
        p._fwd_cache = None
        assert p.forward(target)

    fwd_ms = _best(fwd)
    print(f"forward one cursor through a {p.version}-step history: {fwd_ms:.3f} ms")
    cached_ms = _best(lambda: p.forward(target))
    print(f"the same, cached: {cached_ms:.4f} ms")


if __name__ == "__main__":
    main()
