"""A long soundness-fuzzing campaign over every exported primitive.

Runs the property of ``tests/primitives/test_soundness_fuzz.py`` on many random schedules and,
unlike the test (which stops and shrinks at the first failure), records every distinct finding
(keyed by the primitive of the failing step, the exception class and the first line of its
message) with the first proc and call that showed it, then prints them and the per-primitive
counts of accepted and refused steps.

Usage (from the repository root)::

    python benchmarks/fuzz_campaign.py [EXAMPLES] [--seed S] [--only split,fuse]
        [--compile-every 10] [--batch 40] [--min-accepted 0.01]

One schedule in ``--compile-every`` (its last accepted proc) is also compiled with the C
backend, ``--batch`` procs per C unit, and compared with the interpreter
(``tests/primitives/fuzzcompile.py``). The run fails (exit 1) on a finding, a mismatch, or a
primitive accepted in fewer than ``--min-accepted`` of the schedules (50 per 5,000).

To minimise a finding, rerun the test restricted to its primitives and let hypothesis shrink:
``CURSCHED_FUZZ_ONLY=split,fuse CURSCHED_FUZZ_EXAMPLES=2000 pytest
tests/primitives/test_soundness_fuzz.py``.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import signal
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from cursched import Proc
from cursched.primitives import settings as prim_settings
from tests.primitives import fuzzsteps
from tests.primitives.fuzzcompile import compare_compiled
from tests.primitives.fuzzgen import proc_text
from tests.primitives.test_soundness_fuzz import run_schedule


class TimeUp(BaseException):
    """The campaign's time is up (a BaseException: hypothesis lets it through unshrunk)."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", type=int, nargs="?", default=2000)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--only", default="")
    ap.add_argument(
        "--compile-every", type=int, default=10, help="compile one schedule in N (default 10)"
    )
    ap.add_argument("--batch", type=int, default=40, help="procs per C unit (default 40)")
    ap.add_argument(
        "--time-limit", type=float, default=0, help="stop after this many seconds (0: none)"
    )
    ap.add_argument(
        "--min-accepted",
        type=float,
        default=50 / 5000,
        help="fail if a primitive is accepted in fewer than this fraction of schedules",
    )
    args = ap.parse_args()
    if args.only:
        os.environ["CURSCHED_FUZZ_ONLY"] = args.only
    prim_settings.verify = True

    findings: dict[tuple[str, str, str], list[str]] = {}
    counts: collections.Counter[str] = collections.Counter()
    accepted: collections.Counter[str] = collections.Counter()
    refused: collections.Counter[str] = collections.Counter()
    runs = 0
    t0 = time.time()
    pending: list[tuple[str, str, object]] = []  # (text, log, proc) waiting to be compiled
    compiled_n = 0
    mismatches: list[str] = []

    def flush() -> None:
        nonlocal compiled_n
        if not pending:
            return
        try:
            found = compare_compiled([p for _, _, p in pending], seed=runs)  # type: ignore[misc]
        except Exception as e:  # an untyped error of the compiled path is a finding too
            found = []
            key = ("compile", type(e).__name__, str(e).split("\n")[0][:160])
            counts[f"{key}"] += 1
            findings.setdefault(key, ["(a batch)", "", "", "".join(traceback.format_exception(e))])
        compiled_n += len(pending)
        for m in found:
            text, log = next((t, lg) for t, lg, p in pending if p.ir() is m.proc)  # type: ignore[attr-defined]
            mismatches.append(f"{m}\n{text}\n{log}\ngave\n{Proc(m.proc)}")
            print(f"MISMATCH {len(mismatches)}: {m}", flush=True)
        pending.clear()

    @seed(args.seed)
    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(text=proc_text(), data=st.data())
    def campaign(text: str, data: st.DataObject) -> None:
        nonlocal runs
        if args.time_limit and time.time() - t0 > args.time_limit:
            raise TimeUp
        runs += 1
        if runs % 500 == 0:
            print(f"{runs} schedules, {sum(accepted.values())} steps accepted", flush=True)
        log: list[str] = []
        got: list[object] = []
        try:
            run_schedule(text, data, log, got)  # type: ignore[arg-type]
        except Exception as e:
            if type(e).__name__ in ("UnsatisfiedAssumption", "StopTest", "Frozen"):
                raise
            prim = log[-1].split("(")[0] if log else "?"
            first = str(e).split("\n")[0]
            # symbol ids, versions and paths differ between occurrences of one bug
            first = re.sub(r"_\d+|\bv\d+|\[\d+\]|:\d+:\d+", "", first)[:160]
            key = (prim, type(e).__name__, first)
            counts[f"{key}"] += 1
            if key not in findings:
                notes = "\n".join(getattr(e, "__notes__", []))
                tb = "".join(traceback.format_exception(e)[-3:])
                findings[key] = [text, "\n".join(log), notes, tb]
                print(f"FINDING {len(findings)}: {key}\n{text}\n{findings[key][1]}", flush=True)
        else:
            for name in log:
                if "# refused: " in name:
                    why = name.split("# refused: ")[1]
                    refused[f"{name.split('(')[0]}: {why}"] += 1
                if name.endswith("# accepted"):
                    accepted[name.split("(")[0]] += 1
            if got and runs % args.compile_every == 0:
                pending.append((text, "\n".join(log), got[-1]))
                if len(pending) >= args.batch:
                    flush()

    def stop(signum: int, frame: object) -> None:
        raise TimeUp

    signal.signal(signal.SIGTERM, stop)  # kill PID: stop, and print what was found so far
    try:
        campaign()
    except (TimeUp, KeyboardInterrupt):
        print(f"stopped after {runs} schedules", flush=True)
    flush()
    print(f"\n{runs} schedules in {time.time() - t0:.0f} s (seed {args.seed})")
    print(f"compiled and compared: {compiled_n} schedules; mismatches: {len(mismatches)}")
    print(f"findings (unsound acceptances, crashes, untyped errors): {len(findings)}")
    need = args.min_accepted * runs
    print(f"\nsteps accepted per primitive (need >= {need:.0f}):")
    low = []
    for name in sorted(fuzzsteps.STEPS):
        n = accepted.get(name, 0)
        flag = "" if n >= need else "   <-- below"
        if flag:
            low.append(name)
        print(f"  {name:28s} {n:7d}{flag}")
    print("refused:", ", ".join(f"{k} {v}" for k, v in sorted(refused.items())))
    for m in mismatches:
        print("=" * 100)
        print(m)
    for k, (text, log, notes, tb) in findings.items():
        print("=" * 100)
        print(k, "x", counts[f"{k}"])
        print(text)
        print(log)
        print(notes)
        print(tb)
    if low or mismatches or findings:
        print(f"FAILED: {len(findings)} findings, {len(mismatches)} mismatches, below: {low}")
        sys.exit(1)


if __name__ == "__main__":
    main()
