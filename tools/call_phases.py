"""Where one primitive call goes: the phases of the registry's call path, per primitive.

Applies each primitive of ``benchmarks/scale.py`` (through ``cursched.compat.exo``, as the
benchmark does) 400 times to the middle group of a proc of N statements, each phase wrapped in
a timer, and prints a Markdown table of the lower decile of each, in microseconds:

- ``resolve``: binding and coercing the arguments (``_Primitive.resolve``);
- ``fn``: the primitive's own checks and edits;
- ``verify``: the verification of the new version (``registry._verify``);
- ``bind``: making the returned cursors (``registry._bind``, all of one call's);
- ``rest``: the compat layer, the step record and the ``Proc`` (the total minus the above).

Each wrapper adds about 0.3 us to its phase. ``--cold`` also times ``parallelize_loop`` with
``check_parallel``'s verdicts cleared before each call (the race proof made every time).

Run: ``python tools/call_phases.py [--sizes 10,1000] [--only insert_pass,rename] [--cold]``
(works on any checkout whose registry has ``_Primitive.resolve``, ``_verify`` and ``_bind``).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import scale

import cursched.primitives as P
import cursched.primitives.registry as R

SIX = "insert_pass,parallelize_loop,commute_expr,lift_alloc,set_memory,rename"
TIMES: dict[str, list[float]] = defaultdict(list)


def _timed(f: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            TIMES[label].append(time.perf_counter() - t0)

    return run


def _prim_of(run: Any) -> Any:
    for cell in run.__closure__ or ():
        if isinstance(cell.cell_contents, R._Primitive):
            return cell.cell_contents
    raise LookupError(f"{run.__name__} is not made by @primitive")


def _decile(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 10] * 1e6


def phases(case: scale.Case, n: int, calls: int = 400) -> list[float]:
    """total, resolve, fn, verify, bind, rest (us) of ``case`` at ``n`` statements."""
    text, mid = scale.source(n)
    base = scale.cs_proc(text)
    api = scale._Api("cursched")
    prim = _prim_of(getattr(P, case.name))
    prim.fn = _timed(prim.fn, "fn")
    try:
        p = case.setup(api, base, mid) if case.setup is not None else base
        fn = getattr(api, case.exo_name)
        args = [case.args(api, p, mid) for _ in range(calls)]
        TIMES.clear()
        total, bind = [], []
        for a in args:
            done = len(TIMES["bind"])
            t0 = time.perf_counter()
            fn(p, *a, **case.kwargs)
            total.append(time.perf_counter() - t0)
            bind.append(sum(TIMES["bind"][done:]))
    finally:
        prim.fn = prim.fn.__wrapped__
    parts = [_decile(TIMES[k]) if TIMES[k] else 0.0 for k in ("resolve", "fn", "verify")]
    parts.append(_decile(bind))
    return [_decile(total), *parts, _decile(total) - sum(parts)]


def cold_parallelize(n: int, repeat: int = 30) -> tuple[float, float]:
    """Best ms of ``parallelize_loop`` with its race verdict kept (warm) and cleared (cold)."""
    from cursched.analysis import checks

    text, mid = scale.source(n)
    base = scale.cs_proc(text)
    api = scale._Api("cursched")
    case = next(c for c in scale.CASES if c.name == "parallelize_loop")
    out = []
    for cold in (False, True):
        best = math.inf
        for _ in range(repeat):
            args = case.args(api, base, mid)
            if cold:
                getattr(checks, "_PARALLEL_OK", {}).clear()
            t0 = time.perf_counter()
            api.parallelize_loop(base, *args)
            best = min(best, time.perf_counter() - t0)
        out.append(best * 1e3)
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,1000")
    ap.add_argument("--only", default=SIX)
    ap.add_argument("--cold", action="store_true")
    opts = ap.parse_args()
    R._Primitive.resolve = _timed(R._Primitive.resolve, "resolve")  # type: ignore[method-assign]
    R._verify = _timed(R._verify, "verify")
    R._bind = _timed(R._bind, "bind")
    names = opts.only.split(",")
    print("| primitive | stmts | total | resolve | fn | verify | bind | rest |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in opts.sizes.split(",")):
        for case in (c for c in scale.CASES if c.name in names):
            cells = " | ".join(f"{x:.1f}" for x in phases(case, n))
            print(f"| {case.name} | {n} | {cells} |", flush=True)
    if opts.cold:
        for n in (int(s) for s in opts.sizes.split(",")):
            warm, cold = cold_parallelize(n)
            print(f"parallelize_loop at {n}: warm {warm:.3f} ms, cold {cold:.3f} ms")


if __name__ == "__main__":
    main()
