"""Scheduling cost against proc size: one primitive on the middle group of a big proc.

The procs are G independent groups ``for i<k>: for j<k>: x[i<k>, j<k>] = y[j<k>, i<k>] + k``
(issue 16's shape; the middle group has a second statement, so that fission and
reorder_stmts have something to split), of 10, 100, 1,000 and 10,000 statements. Each
primitive (the ones Exo 1.0 has) is applied to the middle group, in cursched (through
``cursched.compat.exo``, a thin layer calling the cursched primitive with every check and the
verification in its default mode) and in exo-lang, interleaved in one run. The arguments'
cursors are found before the clock starts, in both libraries (``find_loop`` has its own row);
a setup step that the primitive needs (an allocation to lift) runs untimed too, and the
cursched proc is verified once before (see ``cs_proc``). Exo's best is of ``--repeat`` calls
(``--exo-repeat-big`` at 10,000 statements, where Exo is slow); cursched's calls are cheap,
so their best is of ``--cs-repeat`` (timings on a loaded machine need many tries).

Prints per primitive and size: cursched ms, Exo ms, Exo / cursched, and the growth exponent of
each between the two largest sizes (``t ~ n^e``; 0 is flat, 1 linear).

Run: ``python benchmarks/scale.py [--quick] [--sizes 10,100] [--only split,fuse]
[--repeat 5] [--cs-repeat 10] [--no-exo] [--verify default|full|off] [--json PATH]``.
``--quick``: sizes up to 1,000 and the seven loop-nest primitives of the issue's aim.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _results

import cursched.compat.exo as csx
from cursched.frontend import parse_source
from cursched.ir.memory import DRAM
from cursched.ir.verify import verify_proc
from cursched.primitives import settings
from cursched.proc import Proc

SIZES = (10, 100, 1000, 10000)
QUICK = ("split", "reorder_loops", "fission", "fuse", "stage_mem", "unroll_loop", "bind_expr")


def source(stmts: int) -> tuple[str, int]:
    """The proc of about ``stmts`` statements, and the index of its middle group."""
    groups = max(3, (stmts - 1) // 3)
    mid = groups // 2
    lines = [
        "def big(n: size, x: f32[n, 8] @ DRAM, y: f32[8, n] @ DRAM, w: f32[n, 8] @ DRAM):",
        "    assert n % 4 == 0",
    ]
    for k in range(groups):
        lines += [
            f"    for i{k} in seq(0, n):",
            f"        for j{k} in seq(0, 8):",
            f"            x[i{k}, j{k}] = y[j{k}, i{k}] + {float(k)}",
        ]
        if k == mid:
            lines.append(f"            w[i{k}, j{k}] = y[j{k}, i{k}] * 2.0")
    return "\n".join(lines) + "\n", mid


def exo_proc(text: str, tag: str) -> Any:
    """Exo parses a proc from its file: ``text`` written as a module and imported."""
    mod_text = "from __future__ import annotations\nfrom exo import proc, DRAM\n\n@proc\n" + text
    path = Path(tempfile.mkdtemp()) / f"scale_{tag}.py"
    path.write_text(mod_text)
    spec = importlib.util.spec_from_file_location(f"scale_{tag}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.big


def cs_proc(text: str) -> Any:
    """The cursched proc, verified once (untimed): in a schedule, a step's input is the
    result of the step before, verified when it was made, so the incremental verification
    has it to compare with (the first step on a freshly parsed proc walks the whole proc)."""
    ir = parse_source(text, {"DRAM": DRAM})
    verify_proc(ir)
    return csx.Procedure(Proc(ir))


@dataclass(frozen=True)
class Case:
    """One primitive: ``args(api, p, m)`` finds its arguments (untimed), ``setup`` prepares
    the proc (untimed), then ``getattr(api, exo_name)(p, *args)`` is timed."""

    name: str
    exo_name: str
    args: Callable[[Any, Any, int], tuple[Any, ...]]
    setup: Callable[[Any, Any, int], Any] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


def _loop(v: str) -> Callable[[Any, Any, int], tuple[Any, ...]]:
    return lambda api, p, m: (p.find_loop(f"{v}{m}"),)


def _stmt(m: int) -> str:
    return f"x[i{m}, j{m}] = _"


def _bind(api: Any, p: Any, m: int) -> Any:
    return api.bind_expr(p, p.find(f"y[j{m}, i{m}]"), "t")


CASES: list[Case] = [
    Case(
        "split",
        "divide_loop",
        lambda a, p, m: (p.find_loop(f"i{m}"), 4, ["io", "ii"]),
        kwargs={"tail": "cut"},
    ),
    Case("reorder_loops", "reorder_loops", _loop("i")),
    Case("fission", "fission", lambda a, p, m: (p.find(_stmt(m)).after(),), kwargs={"n_lifts": 2}),
    Case("fuse", "fuse", lambda a, p, m: (p.find_loop(f"i{m}"), p.find_loop(f"i{m + 1}"))),
    Case("stage_mem", "stage_mem", lambda a, p, m: (p.find_loop(f"j{m}"), f"y[0:8, i{m}]", "ys")),
    Case("unroll_loop", "unroll_loop", _loop("j")),
    Case("bind_expr", "bind_expr", lambda a, p, m: (p.find(f"y[j{m}, i{m}]"), "t")),
    Case("cut_loop", "cut_loop", lambda a, p, m: (p.find_loop(f"j{m}"), 4)),
    Case("shift_loop", "shift_loop", lambda a, p, m: (p.find_loop(f"j{m}"), 1)),
    Case("reorder_stmts", "reorder_stmts", lambda a, p, m: (p.find(_stmt(m)).expand(0, 1),)),
    Case("insert_pass", "insert_pass", lambda a, p, m: (p.find(_stmt(m)).after(),)),
    Case("parallelize_loop", "parallelize_loop", _loop("i")),
    Case("commute_expr", "commute_expr", lambda a, p, m: ([p.find(f"y[j{m}, i{m}] + _")],)),
    Case("specialize", "specialize", lambda a, p, m: (p.find_loop(f"j{m}"), "n > 8")),
    Case("add_loop", "add_loop", lambda a, p, m: (p.find(_stmt(m)), "k", 4)),
    Case("lift_alloc", "lift_alloc", lambda a, p, m: (p.find_alloc_or_arg("t"),), setup=_bind),
    Case(
        "expand_dim",
        "expand_dim",
        lambda a, p, m: (p.find_alloc_or_arg("t"), 8, f"j{m}"),
        setup=_bind,
    ),
    Case(
        "set_precision",
        "set_precision",
        lambda a, p, m: (p.find_alloc_or_arg("t"), "f64"),
        setup=_bind,
    ),
    Case(
        "set_memory",
        "set_memory",
        lambda a, p, m: (p.find_alloc_or_arg("t"), a.DRAM_STACK),
        setup=_bind,
    ),
    Case("simplify", "simplify", lambda a, p, m: ()),
    Case("rename", "rename", lambda a, p, m: ("big2",)),
]


class _Api:
    """One library's scheduling API: ``exo.API_scheduling`` or ``cursched.compat.exo``."""

    def __init__(self, lib: str) -> None:
        self.lib = lib
        if lib == "exo":
            import exo.API_scheduling as mod
            from exo.libs.memories import DRAM_STACK
        else:
            mod = csx  # type: ignore[assignment]
            from cursched.ir.memory import DRAM_STACK  # type: ignore[assignment]
        self.mod = mod
        self.DRAM_STACK = DRAM_STACK

    def __getattr__(self, name: str) -> Any:
        return getattr(self.mod, name)


def time_case(api: _Api, base: Any, mid: int, case: Case, repeat: int) -> float:
    """Best of ``repeat`` calls, in ms (arguments and setup untimed)."""
    p = case.setup(api, base, mid) if case.setup is not None else base
    fn = getattr(api, case.exo_name)
    best = math.inf
    for _ in range(repeat):
        args = case.args(api, p, mid)
        t0 = time.perf_counter()
        fn(p, *args, **case.kwargs)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def time_find(base: Any, mid: int, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        base.find_loop(f"j{mid}")
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def growth(times: dict[int, float], sizes: tuple[int, ...]) -> str:
    a, b = sizes[-2], sizes[-1]
    if a not in times or b not in times or not times[a] > 0 or not times[b] > 0:
        return "-"
    return f"n^{math.log(times[b] / times[a]) / math.log(b / a):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cs-repeat", type=int, default=10, help="repeats of cursched's calls")
    ap.add_argument("--exo-repeat-big", type=int, default=1)
    ap.add_argument("--no-exo", action="store_true")
    ap.add_argument("--verify", choices=("default", "full", "off"), default="default")
    _results.add_json_flag(ap)
    opts = ap.parse_args()
    sizes = tuple(int(s) for s in opts.sizes.split(",")) if opts.sizes else SIZES
    if opts.quick and not opts.sizes:
        sizes = SIZES[:3]
    names = opts.only.split(",") if opts.only else (QUICK if opts.quick else None)
    cases = [c for c in CASES if names is None or c.name in names]
    _set_verify(opts.verify)
    sys.setrecursionlimit(20000)  # Exo's rewrites recurse once per statement
    apis = [_Api("cursched")] + ([] if opts.no_exo else [_Api("exo")])
    res: dict[tuple[str, str], dict[int, float]] = {}
    for n in sizes:
        text, mid = source(n)
        procs = {"cursched": cs_proc(text)}
        if not opts.no_exo:
            procs["exo"] = exo_proc(text, str(n))
        for case in [None, *cases]:
            row = "find_loop" if case is None else case.name
            for api in apis:
                rep = opts.cs_repeat if api.lib == "cursched" else opts.repeat
                if api.lib == "exo" and n >= 10000:
                    rep = opts.exo_repeat_big
                base = procs[api.lib]
                try:
                    ms = (
                        time_find(base, mid, rep)
                        if case is None
                        else time_case(api, base, mid, case, rep)
                    )
                except (RecursionError, Exception) as e:  # Exo fails on big procs
                    print(f"# {api.lib} {row} at {n}: {type(e).__name__}", file=sys.stderr)
                    ms = math.nan
                res.setdefault((row, api.lib), {})[n] = ms
                print(f"# {n} {row} {api.lib}: {ms:.3g} ms", file=sys.stderr, flush=True)
                _results.record(primitive=row, lib=api.lib, stmts=n, ms=ms, verify=opts.verify)
        print(f"# {n} statements done", file=sys.stderr, flush=True)
    _print(res, sizes, [c.name for c in cases], not opts.no_exo, opts.verify)
    _results.write_if_asked(opts, "scale", f"verify={opts.verify}")


def _ms(times: dict[int, float], n: int) -> str:
    return "err" if math.isnan(times[n]) else f"{times[n]:.3g}"


def _ratio(theirs: float, ours: float) -> str:
    return "-" if math.isnan(theirs) or math.isnan(ours) else f"{theirs / ours:.1f}"


def _set_verify(mode: str) -> None:
    settings.verify_mode = "full" if mode == "full" else "incremental"
    settings.verify = mode != "off"


def _print(res: Any, sizes: tuple[int, ...], names: list[str], exo: bool, mode: str) -> None:
    print(f"cursched verification: {mode}; ms, best of N; ratio = exo / cursched")
    head = ["primitive", *(f"{n}" for n in sizes), "growth"]
    if exo:
        head += [*(f"exo {n}" for n in sizes), "exo growth", *(f"x{n}" for n in sizes)]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in ["find_loop", *names]:
        ours = res[(name, "cursched")]
        cells = [name, *(_ms(ours, n) for n in sizes), growth(ours, sizes)]
        if exo:
            theirs = res[(name, "exo")]
            cells += [*(_ms(theirs, n) for n in sizes), growth(theirs, sizes)]
            cells += [_ratio(theirs[n], ours[n]) for n in sizes]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
