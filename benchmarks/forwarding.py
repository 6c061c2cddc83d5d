"""Benchmark: forwarding one cursor through a long history, and finding a loop by pattern.

Prints milliseconds for cursched (aims: under 5 ms to forward through 1000 steps, under 5 ms
to find a loop in a 500-statement proc) and, measured in the same run, the ratio against
Exo 1.0 doing the same (Exo's history is shorter: building it is quadratic there).

Run: ``python benchmarks/forwarding.py [--no-exo]``. Verification is switched off, as it
would be in a user's schedule; the forwarding cache is cleared before each timed run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CURSCHED_VERIFY", "0")

from cursched import insert_pass, reorder_stmts
from cursched.frontend import parse_source
from cursched.primitives import settings
from cursched.proc import Proc

settings.verify = False

CHAIN = """
def chain(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
        y[i] = 2.0
"""


def big_source(n_loops: int) -> str:
    """A proc of ``2 * n_loops`` statements: loops ``i0 ... i<n-1>``, one statement each."""
    lines = ["def big(n: size, x: f32[n] @ DRAM):"]
    for k in range(n_loops):
        lines += [f"    for i{k} in seq(0, n):", f"        x[i{k}] = {float(k)}"]
    return "\n".join(lines) + "\n"


def best_ms(fn: Callable[[], Any], repeat: int = 7) -> float:
    """The best of ``repeat`` runs, in milliseconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def ours_history(steps: int) -> tuple[Proc, Any]:
    """A ``steps``-step history (insert_pass, reorder_stmts, ...) and a v0 cursor."""
    from cursched.ir.memory import DRAM

    p = Proc(parse_source(CHAIN, {"DRAM": DRAM}))
    target = p.find("y[_] = _")
    for _ in range(steps // 2):
        p, _c = insert_pass(p, p.find_loop("i").body()[0].before())
        p, _c = reorder_stmts(p, p.find_loop("i").body()[:2], unsafe_skip_checks=True)
    return p, target


def ours_forward_ms(steps: int) -> tuple[float, float]:
    """(cold: the cache cleared, warm: the same cursor again), in milliseconds."""
    p, target = ours_history(steps)

    def run() -> None:
        p._fwd_cache = None
        assert p.forward(target)

    return best_ms(run), best_ms(lambda: p.forward(target))


def exo_module(source: str, name: str) -> Any:
    """Exo parses a proc from a file: write ``source`` as a module and import it."""
    text = "from __future__ import annotations\nfrom exo import proc, DRAM\n\n@proc\n" + source
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def exo_forward_ms(steps: int) -> tuple[float, float]:
    """(cold: the first forward call, warm: the best of three more), in milliseconds."""
    from exo.stdlib.scheduling import insert_pass as e_insert
    from exo.stdlib.scheduling import reorder_stmts as e_reorder

    p = exo_module(CHAIN.lstrip(), "exo_chain").chain
    target = p.find("y[_] = _")
    for _ in range(steps // 2):
        p = e_insert(p, p.find_loop("i").body()[0].before())
        p = e_reorder(p, p.find_loop("i").body()[:2])
    cold = best_ms(lambda: p.forward(target), repeat=1)
    return cold, best_ms(lambda: p.forward(target), repeat=3)


def main() -> None:
    with_exo = "--no-exo" not in sys.argv
    from cursched.ir.memory import DRAM

    big = Proc(parse_source(big_source(250), {"DRAM": DRAM}))
    assert sum(1 for _ in big.find_all("_")) == 500
    find_ms = best_ms(lambda: big.find_loop("i249"))
    print(f"cursched: find a loop by pattern in a 500-statement proc: {find_ms:.3f} ms")
    fwd_ms, warm_ms = ours_forward_ms(1000)
    print(
        f"cursched: forward one cursor through a 1000-step history: {fwd_ms:.3f} ms "
        f"(again, cached: {warm_ms:.4f} ms)"
    )
    if not with_exo:
        return
    e_big = exo_module(big_source(250), "exo_big").big
    e_find = best_ms(lambda: e_big.find_loop("i249"))
    print(f"exo:      find the same loop: {e_find:.3f} ms  (cursched is {e_find / find_ms:.1f}x)")
    steps = 100
    ours, ours_warm = ours_forward_ms(steps)
    theirs, theirs_warm = exo_forward_ms(steps)
    print(
        f"exo:      forward through a {steps}-step history: first call {theirs:.3f} ms "
        f"(cursched {ours:.3f} ms: {theirs / ours:.1f}x), again {theirs_warm:.3f} ms "
        f"(cursched {ours_warm:.4f} ms: {theirs_warm / ours_warm:.0f}x)"
    )


if __name__ == "__main__":
    main()
