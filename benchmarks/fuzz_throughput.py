"""Fuzz campaign throughput: schedules drawn by hypothesis's engine against ``fuzzrandom``.

The campaign used to run ``test_soundness_fuzz.run_schedule`` under ``@given`` (hypothesis
draws every value through its choice tree, mutates earlier examples and scans the imported
modules for constants); it now draws the same strategies from a ``random.Random`` per
schedule (``tests/primitives/fuzzrandom.py``). Both run here on the same generator and the
same checks, interleaved in rounds (a loaded machine slows both alike), and the CPU time of
this process is what is compared (the C oracle is off in both: it costs the same).

- ``hypothesis``: the old driver, one call per step (``tries=1``);
- ``random``: the new driver, ``tries=1`` (the same schedules' shape, other draws);
- ``random/3``: the campaign's default, a refused call gives its step two more calls.

Usage::

    python benchmarks/fuzz_throughput.py [--schedules 60] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from cursched.primitives import settings as prim_settings
from tests.primitives import fuzzcampaign as fc
from tests.primitives.fuzzgen import proc_text
from tests.primitives.test_soundness_fuzz import run_schedule


def by_hypothesis(n: int, s: int) -> tuple[int, int]:
    """(schedules, accepted steps) of ``n`` examples under hypothesis's engine."""
    runs, accepted = 0, 0

    @seed(s)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(text=proc_text(), data=st.data())
    def one(text: str, data: st.DataObject) -> None:
        nonlocal runs, accepted
        runs += 1
        log: list[str] = []
        try:
            run_schedule(text, data, log)
        except Exception as e:
            if type(e).__name__ in ("UnsatisfiedAssumption", "StopTest", "Frozen"):
                raise
        accepted += sum(c.endswith("# accepted") for c in log)

    one()
    return runs, accepted


def by_random(n: int, start: int, tries: int) -> tuple[int, int]:
    shard = fc.run_shard(5, start, n, compile_every=0, tries=tries)
    return shard.done, sum(shard.accepted.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schedules", type=int, default=60, help="per runner and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20 schedules, 2 rounds")
    args = ap.parse_args()
    n, rounds = (20, 2) if args.quick else (args.schedules, args.rounds)
    prim_settings.verify = True
    by_random(2, 10**6, 1)  # imports, the helpers' first compilations: not timed
    runners = {
        "hypothesis": lambda r: by_hypothesis(n, r),
        "random": lambda r: by_random(n, r * n, 1),
        "random/3": lambda r: by_random(n, r * n, 3),
    }
    tot = {k: [0.0, 0, 0] for k in runners}  # CPU seconds, schedules, accepted steps
    for r in range(rounds):  # interleaved: each round runs each driver once
        for k, f in runners.items():
            c = time.process_time()
            done, acc = f(r)
            tot[k][0] += time.process_time() - c
            tot[k][1] += done
            tot[k][2] += acc
    print("machine: shared by several sessions (timings noisy; CPU time of this process)")
    print(f"{'driver':12s} {'CPU s':>7s} {'sched':>6s} {'acc':>6s} {'sched/s':>8s} {'acc/s':>7s}")
    base = tot["hypothesis"]
    for k, (cpu, done, acc) in tot.items():
        print(f"{k:12s} {cpu:7.1f} {done:6d} {acc:6d} {done / cpu:8.2f} {acc / cpu:7.2f}")
    for k in ("random", "random/3"):
        cpu, done, acc = tot[k]
        print(
            f"{k} / hypothesis: {done / cpu / (base[1] / base[0]):.2f}x schedules per CPU s, "
            f"{acc / cpu / (base[2] / base[0]):.2f}x accepted steps per CPU s"
        )


if __name__ == "__main__":
    main()
