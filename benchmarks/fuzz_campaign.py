"""A long soundness-fuzzing campaign over every exported primitive, in resumable shards.

Runs the property of ``tests/primitives/test_soundness_fuzz.py`` (every check of it) on many
random schedules and, unlike the test (which stops and shrinks at the first failure), records
every distinct finding (keyed by the primitive of the failing step, the exception class and
the first line of its message) with the index of the first schedule that showed it.

Schedule ``i`` of seed ``S`` is a pure function of ``(S, i)`` and of the fuzzer's source
(``tests/primitives/fuzzrandom.py``), so a campaign is run as shards, in any order, on any
machine, and summed::

    # schedules [0, 100000) in shards of 5,000 under benchmarks/results/fuzz/: what the
    # directory already holds (of this seed and fuzzer) is skipped, a stopped shard resumes
    # where it stopped; rerun the same command to continue a campaign
    nice -n 19 python benchmarks/fuzz_campaign.py --seed 2026 --start 0 --count 100000 \\
        --shard-size 5000 --out-dir benchmarks/results/fuzz [--time-limit SECONDS]
    python benchmarks/fuzz_campaign.py --merge benchmarks/results/fuzz/seed2026-*.json
    # one shard to one file; one schedule again, alone (a finding's index), verbosely
    python benchmarks/fuzz_campaign.py --seed 2026 --start 5000 --count 5000 --out s.json
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.primitives import fuzzcampaign as fc


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--start", type=int, default=0, help="first schedule index")
    ap.add_argument("--count", type=int, default=1000, help="schedules to run")
    ap.add_argument("--out", type=Path, help="one shard: its JSON file")
    ap.add_argument("--out-dir", type=Path, help="shards of --shard-size, resumable")
    ap.add_argument("--shard-size", type=int, default=5000)
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


def _covered(out_dir: Path, seed: int, tries: int) -> list[tuple[int, int]]:
    """The ranges the shards in ``out_dir`` of this campaign already ran (sorted)."""
    digest = fc.fuzzer_digest()
    got = []
    for path in sorted(out_dir.glob(f"seed{seed}-*.json")):
        s = fc.read_shard(path)
        if s.seed == seed and s.tries == tries and s.fuzzer == digest and s.done:
            got.append((s.start, s.start + s.done))
        else:
            print(f"(not of this campaign, left alone: {path})")
    return sorted(got)


def _todo(covered: list[tuple[int, int]], lo: int, hi: int, size: int) -> list[tuple[int, int]]:
    """The pieces of ``[lo, hi)`` no shard covers, cut at multiples of ``size``."""
    out = []
    k = lo
    while k < hi:
        inside = [b for a, b in covered if a <= k < b]
        if inside:
            k = max(inside)
            continue
        nxt = min([a for a, _ in covered if a > k] + [hi, (k // size + 1) * size])
        out.append((k, nxt))
        k = nxt
    return out


def _run(args: argparse.Namespace, start: int, count: int, stop: Any) -> fc.Shard:
    return fc.run_shard(
        args.seed,
        start,
        count,
        compile_every=args.compile_every,
        batch=args.batch,
        tries=args.tries,
        stop=stop,
        progress=args.progress,
        verbose=args.verbose,
    )


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

    if args.out_dir:
        end = args.start + args.count
        pieces = _todo(
            _covered(args.out_dir, args.seed, args.tries), args.start, end, args.shard_size
        )
        shards = []
        for a, b in pieces:
            if stop():
                break
            print(f"shard [{a}, {b}) -> {args.out_dir}/seed{args.seed}-{a}.json", flush=True)
            shard = _run(args, a, b - a, stop)
            if shard.done:
                fc.write_shard(shard, args.out_dir / f"seed{args.seed}-{a}.json")
            shards.append(shard)
    else:
        shards = [_run(args, args.start, args.count, stop)]
        if args.out:
            fc.write_shard(shards[0], args.out)
    # a shard fails on a finding or a mismatch; the counts are the merged campaign's verdict
    merged = fc.merge(shards, args.min_accepted, counts=False)
    if shards:
        print(fc.table(merged, args.min_accepted))
    left = sum(s.count - s.done for s in shards)
    if left or stopped:
        print("stopped early: rerun the same command to continue")
    sys.exit(1 if merged.problems else 0)


if __name__ == "__main__":
    main()
