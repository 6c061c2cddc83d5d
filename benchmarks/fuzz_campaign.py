"""A long soundness-fuzzing campaign over every exported primitive, in resumable shards.

Runs the property of ``tests/primitives/test_soundness_fuzz.py`` (every check of it) on many
random schedules and, unlike the test (which stops and shrinks at the first failure), records
every distinct finding (keyed by the primitive of the failing step, the exception class and
the first line of its message) with the index of the first schedule that showed it.

Schedule ``i`` of seed ``S`` is a pure function of ``(S, i)`` (``tests/primitives/
fuzzrandom.py``), so a campaign is run as shards, in any order, on any machine, and summed::

    # 100,000 schedules as 20 shards of 5,000 (each writes its JSON; rerun a missing one)
    for k in $(seq 0 5000 95000); do
        nice -n 19 python benchmarks/fuzz_campaign.py --seed 2026 --start $k --count 5000 \\
            --out benchmarks/results/fuzz/seed2026-$k.json
    done
    python benchmarks/fuzz_campaign.py --merge benchmarks/results/fuzz/seed2026-*.json
    # one schedule again, alone (a finding's index): its proc, calls and verdict
    python benchmarks/fuzz_campaign.py --seed 2026 --start 1234 --count 1 --verbose

One schedule in ``--compile-every`` (by index) also has its last accepted proc compiled with
the C backend, ``--batch`` procs per C unit, and compared with the interpreter
(``tests/primitives/fuzzcompile.py``). A shard and ``--merge`` exit 1 on a finding or a
mismatch; ``--merge`` also on an exported primitive accepted fewer than 50 times per 5,000
schedules (``--min-accepted``), on overlapping shards or on different seeds. ``SIGTERM``
or ``--time-limit`` stops a shard early: its file records how far it got (``done``), and the
rest is the shard ``--start START+done``.

To minimise a finding, rerun the test restricted to its primitives and let hypothesis shrink:
``CURSCHED_FUZZ_ONLY=split,fuse CURSCHED_FUZZ_EXAMPLES=2000 pytest
tests/primitives/test_soundness_fuzz.py``.
"""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.primitives import fuzzcampaign as fc


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--start", type=int, default=0, help="first schedule index")
    ap.add_argument("--count", type=int, default=1000, help="schedules in this shard")
    ap.add_argument("--out", type=Path, help="the shard's JSON file")
    ap.add_argument("--merge", type=Path, nargs="+", help="sum these shard files instead")
    ap.add_argument("--compile-every", type=int, default=10, help="compile one in N")
    ap.add_argument("--batch", type=int, default=40, help="procs per C unit (default 40)")
    ap.add_argument("--tries", type=int, default=3, help="calls a step makes until one is accepted")
    ap.add_argument("--time-limit", type=float, default=0, help="stop after S seconds")
    ap.add_argument("--progress", type=int, default=500, help="a line every N schedules")
    ap.add_argument("--verbose", action="store_true", help="print each schedule's calls")
    ap.add_argument(
        "--min-accepted",
        type=float,
        default=fc.MIN_ACCEPTED,
        help="fail if an exported primitive is accepted in fewer than this fraction",
    )
    return ap.parse_args()


def main() -> None:
    args = _args()
    if args.merge:
        merged = fc.merge([fc.read_shard(p) for p in args.merge], args.min_accepted)
        print(fc.table(merged, args.min_accepted))
        sys.exit(1 if merged.problems else 0)
    stopped = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopped
        stopped = True

    # kill -USR1 PID: where it is now (a schedule that takes long), on stderr
    faulthandler.register(signal.SIGUSR1)
    # kill PID (or ^C): the schedule running ends, then the shard is written
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    t0 = time.time()

    def stop() -> bool:
        return stopped or bool(args.time_limit and time.time() - t0 > args.time_limit)

    shard = fc.run_shard(
        args.seed,
        args.start,
        args.count,
        compile_every=args.compile_every,
        batch=args.batch,
        tries=args.tries,
        stop=stop,
        progress=args.progress,
        verbose=args.verbose,
    )
    if args.out:
        fc.write_shard(shard, args.out)
    # a shard fails on a finding or a mismatch; the counts are the merged campaign's verdict
    merged = fc.merge([shard], args.min_accepted, counts=False)
    print(fc.table(merged, args.min_accepted))
    if shard.done < shard.count:
        print(
            f"stopped after {shard.done} of {shard.count}: rerun from --start "
            f"{shard.start + shard.done}"
        )
    sys.exit(1 if merged.problems else 0)


if __name__ == "__main__":
    main()
