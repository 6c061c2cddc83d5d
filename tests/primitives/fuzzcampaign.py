"""A soundness-fuzzing campaign in shards: the engine of ``benchmarks/fuzz_campaign.py``.

Schedule ``i`` of the campaign seeded ``S`` is drawn from its own random source
(``fuzzrandom.schedule_random(S, i)``): it is the same schedule in every run, on every
machine, alone or in a shard. A shard runs schedules ``[start, start + count)`` and writes a
JSON file (:func:`run_shard`); :func:`merge` sums shards of one seed, refusing overlaps, and
decides the campaign's verdict: no finding (an unsound acceptance, a crash, an untyped
error), no compiled/interpreted mismatch, and every exported primitive accepted at least
``MIN_ACCEPTED`` times per schedule (50 per 5,000, issue 11). So 100,000 schedules are reached
honestly across runs, machines and interruptions, and any finding reruns alone from its index.

Each schedule is ``test_soundness_fuzz.run_schedule`` (every check of the suite's property),
and one in ``compile_every`` (by index) has its last accepted proc compiled with the C backend,
``batch`` procs per C unit, and compared with the interpreter (``fuzzcompile``).
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import re
import subprocess
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cursched import Proc
from cursched.primitives import settings as prim_settings
from tests.primitives.fuzzcompile import compare_compiled
from tests.primitives.fuzzgen import proc_text
from tests.primitives.fuzzrandom import RandomData, schedule_random
from tests.primitives.fuzzsteps import available_steps
from tests.primitives.test_soundness_fuzz import GeneratorMiss, run_schedule

__all__ = ["MIN_ACCEPTED", "Merged", "Shard", "merge", "read_shard", "run_shard", "table"]

#: accepted steps per schedule each exported primitive needs (issue 11: 50 per 5,000)
MIN_ACCEPTED = 50 / 5000

FORMAT = 1


@dataclass
class Shard:
    """What schedules ``[start, start + done)`` of campaign ``seed`` found (JSON-able)."""

    seed: int
    start: int
    count: int  # asked for; ``done`` fewer when the run was stopped
    done: int = 0
    invalid: int = 0  # drawn procs the generator got wrong (parse/type/bounds): not schedules
    steps: int = 0  # primitive calls made
    compiled: int = 0  # schedules compiled with the C backend and compared
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time (the machine may be loaded)
    commit: str = ""
    only: str = ""  # CURSCHED_FUZZ_ONLY: a restricted run (never a campaign's verdict)
    tries: int = 1  # calls a step may make until one is accepted (run_schedule)
    fuzzer: str = ""  # digest of the fuzzer's source (fuzzer_digest): one campaign, one value
    accepted: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)  # "prim: ErrorClass" -> count
    no_target: dict[str, int] = field(default_factory=dict)  # drawn, nothing to apply to
    slowest: list[tuple[float, int]] = field(default_factory=list)  # (seconds, index), top 10
    mismatches: list[str] = field(default_factory=list)
    # key "prim | class | first line" -> {count, index, text, log, notes, traceback}
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    format: int = FORMAT


#: the files that define what schedule ``i`` of seed ``S`` is (and how it is checked)
FUZZER_FILES = (
    "fuzzgen.py",
    "fuzzsteps.py",
    "fuzzrandom.py",
    "fuzzcompile.py",
    "fuzzcampaign.py",
    "test_soundness_fuzz.py",
)


def fuzzer_digest() -> str:
    """A digest of the fuzzer's source: shards of one campaign must share it (the library
    may change between shards, which is what a campaign checks; the schedules may not)."""
    h = hashlib.sha256()
    for name in FUZZER_FILES:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        )
    except OSError:
        return ""
    return out.stdout.strip()


def _finding_key(prim: str, e: BaseException) -> str:
    first = str(e).split("\n")[0]
    # symbol ids, versions and paths differ between occurrences of one bug
    first = re.sub(r"_\d+|\bv\d+|\[\d+\]|:\d+:\d+", "", first)[:160]
    return f"{prim} | {type(e).__name__} | {first}"


def _record_finding(shard: Shard, key: str, index: int, detail: dict[str, Any]) -> bool:
    """Count a finding; True when it is new to the shard (the caller prints it)."""
    if key in shard.findings:
        shard.findings[key]["count"] += 1
        return False
    shard.findings[key] = {"count": 1, "index": index, **detail}
    return True


def _one(shard: Shard, index: int, verbose: bool = False) -> Proc | None:
    """Run schedule ``index``; the last accepted proc (None when none was accepted)."""
    data = RandomData(schedule_random(shard.seed, index))
    text = data.draw(proc_text())
    log: list[str] = []
    got: list[Proc] = []
    missed: list[str] = []
    if verbose:
        print(f"schedule {index}:\n{text}", end="", flush=True)
    try:
        run_schedule(text, data, log, got, missed, tries=shard.tries)  # type: ignore[arg-type]
    except GeneratorMiss:
        shard.invalid += 1
        return None
    except Exception as e:  # every other exception is a finding: unsound, crash, untyped
        prim = getattr(e, "fuzz_step", None) or (log[-1].split("(")[0] if log else "?")
        detail = {
            "text": text,
            "log": log,
            "notes": list(getattr(e, "__notes__", [])),
            "traceback": "".join(traceback.format_exception(e))[-6000:],
        }
        key = _finding_key(prim, e)
        if _record_finding(shard, key, index, detail):
            print(f"FINDING at schedule {index}: {key}\n{text}\n" + "\n".join(log), flush=True)
        return None
    finally:
        shard.steps += len(log)
        for name in missed:
            shard.no_target[name] = shard.no_target.get(name, 0) + 1
        if verbose:
            print("\n".join(f"    {call}" for call in log), flush=True)
    for call in log:
        name = call.split("(")[0]
        if "# refused: " in call:
            why = f"{name}: {call.split('# refused: ')[1]}"
            shard.refused[why] = shard.refused.get(why, 0) + 1
        elif call.endswith("# accepted"):
            shard.accepted[name] = shard.accepted.get(name, 0) + 1
    return got[-1] if got else None


def _compare(shard: Shard, pending: list[tuple[int, Proc]]) -> None:
    """Compile ``pending`` in one C unit and compare each with the interpreter."""
    if not pending:
        return
    first = pending[0][0]
    try:
        found = compare_compiled([p for _, p in pending], seed=shard.seed * 1_000_003 + first)
    except Exception as e:  # an untyped error of the compiled path is a finding too
        tb = "".join(traceback.format_exception(e))
        indices = [i for i, _ in pending]
        detail = {"text": "", "log": [f"schedules {indices}"], "notes": [], "traceback": tb}
        if _record_finding(shard, _finding_key("compile", e), first, detail):
            print(f"FINDING compiling schedules {indices}: {e!r}", flush=True)
        found = []
    shard.compiled += len(pending)
    for m in found:
        index = next(i for i, p in pending if p.ir() is m.proc)
        shard.mismatches.append(f"schedule {index}: {m}\n{Proc(m.proc)}")
        print(f"MISMATCH at schedule {index}: {m}", flush=True)
    pending.clear()


def run_shard(
    seed: int,
    start: int,
    count: int,
    *,
    compile_every: int = 10,
    batch: int = 40,
    tries: int = 3,
    stop: Callable[[], bool] = lambda: False,
    progress: int = 0,
    verbose: bool = False,
) -> Shard:
    """Run schedules ``[start, start + count)`` of campaign ``seed``.

    Args:
        compile_every: schedule ``i`` with ``i % compile_every == 0`` is also compiled.
        batch: procs per C unit.
        tries: calls a step may make until one is accepted (``run_schedule``).
        stop: polled before each schedule; True ends the shard early (``done`` says where).
        progress: print a line every ``progress`` schedules (0: never).
        verbose: print each schedule's proc and calls.
    """
    prim_settings.verify = True
    only = os.environ.get("CURSCHED_FUZZ_ONLY", "")
    shard = Shard(
        seed, start, count, commit=_commit(), only=only, tries=tries, fuzzer=fuzzer_digest()
    )
    t0, c0 = time.perf_counter(), time.process_time()
    pending: list[tuple[int, Proc]] = []
    for index in range(start, start + count):
        if stop():
            break
        t = time.perf_counter()
        last = _one(shard, index, verbose)
        shard.done += 1
        shard.slowest = sorted([*shard.slowest, (round(time.perf_counter() - t, 2), index)])[-10:]
        if last is not None and compile_every and index % compile_every == 0:
            pending.append((index, last))
            if len(pending) >= batch:
                _compare(shard, pending)
        if progress and shard.done % progress == 0:
            rate = shard.done / (time.perf_counter() - t0)
            print(f"{shard.done} schedules ({rate:.1f}/s)", flush=True)
    _compare(shard, pending)
    shard.seconds = round(time.perf_counter() - t0, 1)
    shard.cpu_seconds = round(time.process_time() - c0, 1)
    return shard


def write_shard(shard: Shard, path: Path) -> None:
    """Write ``shard`` as JSON, atomically (a stopped run never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(asdict(shard), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read_shard(path: Path) -> Shard:
    raw = json.loads(path.read_text())
    if raw.get("format") != FORMAT:
        raise ValueError(f"{path}: not a shard of format {FORMAT}")
    raw["slowest"] = [tuple(x) for x in raw.get("slowest", [])]
    return Shard(**raw)


@dataclass
class Merged:
    """Shards of one campaign summed, with the verdict's inputs."""

    shards: list[Shard]
    problems: list[str]  # why the campaign fails (empty: it passes)
    accepted: collections.Counter[str]
    done: int


def _check_ranges(shards: list[Shard]) -> list[str]:
    problems = []
    seeds = {s.seed for s in shards}
    if len(seeds) > 1:
        problems.append(f"shards of different seeds {sorted(seeds)}: not one campaign")
    tries = {s.tries for s in shards}
    if len(tries) > 1:
        problems.append(f"shards of different --tries {sorted(tries)}: not one campaign")
    fuzzers = {s.fuzzer for s in shards}
    if len(fuzzers) > 1:
        problems.append(f"shards of different fuzzer sources {sorted(fuzzers)}: not one campaign")
    ranges = sorted((s.start, s.start + s.done) for s in shards)
    for (a0, a1), (b0, b1) in itertools.pairwise(ranges):
        if b0 < a1:
            problems.append(f"shards overlap: [{a0}, {a1}) and [{b0}, {b1})")
    restricted = sorted({s.only for s in shards if s.only})
    if restricted:
        problems.append(f"restricted shards (CURSCHED_FUZZ_ONLY={restricted}) cannot pass")
    return problems


def merge(
    shards: Iterable[Shard], min_accepted: float = MIN_ACCEPTED, *, counts: bool = True
) -> Merged:
    """Sum ``shards``; the problems list says why the campaign fails (overlapping shards,
    different seeds, a finding, a mismatch, and with ``counts`` a primitive accepted too
    rarely)."""
    shards = sorted(shards, key=lambda s: s.start)
    problems = _check_ranges(shards)
    accepted: collections.Counter[str] = collections.Counter()
    for s in shards:
        accepted.update(s.accepted)
    done = sum(s.done for s in shards)
    findings = sum(len(s.findings) for s in shards)
    mismatches = sum(len(s.mismatches) for s in shards)
    if findings:
        problems.append(f"{findings} findings (unsound acceptances, crashes, untyped errors)")
    if mismatches:
        problems.append(f"{mismatches} compiled/interpreted mismatches")
    need = min_accepted * done
    low = [n for n in _exported() if accepted.get(n, 0) < need]
    if counts and low:
        problems.append(f"accepted fewer than {need:.0f} times: {', '.join(low)}")
    return Merged(shards, problems, accepted, done)


def _exported() -> list[str]:
    return sorted({n for n, _, _ in available_steps()})


def ranges_text(shards: list[Shard]) -> str:
    """The schedule indices covered, as ``[a, b)`` runs (adjacent shards joined)."""
    runs: list[list[int]] = []
    for s in sorted(shards, key=lambda s: s.start):
        if runs and runs[-1][1] == s.start:
            runs[-1][1] = s.start + s.done
        else:
            runs.append([s.start, s.start + s.done])
    return ", ".join(f"[{a}, {b})" for a, b in runs)


def table(m: Merged, min_accepted: float = MIN_ACCEPTED) -> str:
    """The campaign's summary: totals, the per-primitive accepted counts, the verdict."""
    sh = m.shards
    secs = sum(s.seconds for s in sh)
    cpu = sum(s.cpu_seconds for s in sh)
    lines = [
        f"seed {sh[0].seed if sh else '?'}: {m.done} schedules in {len(sh)} shards "
        f"({ranges_text(sh)}), {secs:.0f} s ({cpu:.0f} s CPU), "
        f"{m.done / secs if secs else 0:.1f} schedules/s ({m.done / cpu if cpu else 0:.1f} per CPU s)",
        f"generator misses (not counted as findings): {sum(s.invalid for s in sh)}; "
        f"primitive calls: {sum(s.steps for s in sh)}, accepted: {sum(m.accepted.values())}",
        f"compiled and compared: {sum(s.compiled for s in sh)}; "
        f"mismatches: {sum(len(s.mismatches) for s in sh)}",
        f"findings (unsound acceptances, crashes, untyped errors): "
        f"{sum(len(s.findings) for s in sh)}",
        f"fuzzer {sorted({s.fuzzer for s in sh})}, tries {sorted({s.tries for s in sh})}, "
        f"commits {sorted({s.commit for s in sh})}",
        "",
        f"| primitive | accepted | per 5,000 | (need >= {min_accepted * m.done:.0f}) |",
        "|---|---|---|---|",
    ]
    for name in _exported():
        n = m.accepted.get(name, 0)
        per = n * 5000 / m.done if m.done else 0
        low = " below" if n < min_accepted * m.done else ""
        lines.append(f"| {name} | {n} | {per:.0f} |{low} |")
    for s in sh:
        for mm in s.mismatches:
            lines += ["=" * 80, mm]
        for key, f in s.findings.items():
            lines += ["=" * 80, f"{key} x {f['count']} (first at schedule {f['index']})"]
            lines += [f["text"], *f["log"], *f["notes"], f["traceback"]]
    lines.append("PASSED" if not m.problems else "FAILED: " + "; ".join(m.problems))
    return "\n".join(lines)
