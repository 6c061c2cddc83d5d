"""The per-call cost of the framework around a primitive, old against new, in one process.

The host is noisy (its speed changes by 1.4x for seconds at a time), so separate runs cannot
be compared. This script loads another revision's ``cursched/primitives/registry.py`` and
``cursched/compat/exo.py`` beside this checkout's (the old primitives wrap the same rewrites;
with ``--old-records`` the old ``StepRecord`` and ``Rewrite`` classes, those of the merge
base of wave 7's per-call work, are swapped in for the old blocks), then applies each
primitive of ``benchmarks/scale.py`` to the middle group of a proc of 10 statements in
blocks of 50 calls, old and new alternated 40 times, and prints the lower decile of each
side's per-call times (us) as a Markdown table.

Run: ``python tools/ab_calls.py [--old main] [--old-records] [--plain] [--only rename,...]``
(``--plain`` also times the plain API, ``cursched.<primitive>``, besides ``compat.exo``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import scale

import cursched.compat.exo as new_exo
import cursched.cursors.edits as edits
import cursched.primitives as P

ROOT = Path(__file__).resolve().parent.parent
SIX = "rename,insert_pass,set_memory,parallelize_loop,commute_expr,lift_alloc"
C = TypeVar("C")


@dataclass(frozen=True, slots=True, eq=False)
class OldStepRecord:
    """``StepRecord`` before wave 7's per-call work: the dataclass's generated ``__init__``."""

    primitive: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    inputs: tuple[Any, ...]
    kw_inputs: tuple[tuple[str, Any], ...]
    fmap: Any
    results: tuple[tuple[str, Any], ...] = field(default=())


@dataclass(frozen=True)
class OldRewrite(Generic[C]):
    """``Rewrite`` before wave 7's per-call work: not slotted, the generated ``__init__``."""

    ir: Any
    fmap: Any
    cursors: type[C]
    fields: dict[str, Any]


def _module(name: str, source: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    sys.modules[name] = mod  # dataclasses look their module up while making a class
    exec(compile(source, f"{name}.py", "exec"), mod.__dict__)
    return mod


def _source(rev: str, path: str) -> str:
    git = ["git", "-C", str(ROOT), "show", f"{rev}:{path}"]
    return subprocess.run(git, capture_output=True, text=True, check=True).stdout


class _OldPrimitives:
    """``cursched.primitives`` as the old registry wraps them (the same rewrites)."""

    def __init__(self, registry: types.ModuleType) -> None:
        self.registry = registry

    def __getattr__(self, name: str) -> Any:
        return self.registry.primitive(getattr(P, name).__wrapped__)


def old_api(rev: str, old_records: bool) -> tuple[Any, Any]:
    """The old primitives: through the old compat layer, and plain."""
    registry = _module("old_registry", _source(rev, "cursched/primitives/registry.py"))
    if old_records:
        registry.StepRecord = OldStepRecord  # type: ignore[attr-defined]
    prims = _OldPrimitives(registry)
    text = _source(rev, "cursched/compat/exo.py")
    text = text.replace("import cursched.primitives as P\n", "P = _OLD_PRIMITIVES\n")
    exo = types.ModuleType("old_exo")
    exo.__dict__["_OLD_PRIMITIVES"] = prims
    sys.modules["old_exo"] = exo
    exec(compile(text, "old_exo.py", "exec"), exo.__dict__)
    exo.Procedure = new_exo.Procedure  # type: ignore[attr-defined]  # one class of procs
    return exo, prims


def _decile(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 10] * 1e6


def compare(
    fns: dict[str, Callable[..., Any]],
    target: Any,
    case: scale.Case,
    make_args: Callable[[], Any],
    swap: Callable[[str], None],
    blocks: int = 40,
    per: int = 50,
) -> tuple[float, float]:
    """Lower deciles (us) of the old and the new calls, alternated in blocks."""
    times: dict[str, list[float]] = {"old": [], "new": []}
    clock = time.perf_counter
    for b in range(blocks):
        for side in ("old", "new") if b % 2 == 0 else ("new", "old"):
            fn, out = fns[side], times[side]
            swap(side)
            args = [make_args() for _ in range(per)]
            for a in args:
                t0 = clock()
                fn(target, *a, **case.kwargs)
                out.append(clock() - t0)
    swap("new")
    return _decile(times["old"]), _decile(times["new"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", default="main", help="the git revision to compare against")
    ap.add_argument("--old-records", action="store_true")
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--only", default=SIX)
    opts = ap.parse_args()
    exo, prims = old_api(opts.old, opts.old_records)
    new_rewrite = edits.Rewrite

    def swap(side: str) -> None:
        if opts.old_records:
            edits.Rewrite = OldRewrite if side == "old" else new_rewrite  # type: ignore[misc]

    text, mid = scale.source(10)
    base = scale.cs_proc(text)
    api = scale._Api("cursched")
    print("| primitive | via | old p10 us | new p10 us | new/old |")
    print("|---|---|---|---|---|")
    for name in opts.only.split(","):
        case = next(c for c in scale.CASES if c.name == name)
        p = case.setup(api, base, mid) if case.setup is not None else base
        vias = ("compat", "plain") if opts.plain else ("compat",)
        for via in vias:
            if via == "compat":
                fns = {"old": getattr(exo, case.exo_name), "new": getattr(new_exo, case.exo_name)}
                target = p
            else:
                fns = {"old": getattr(prims, case.name), "new": getattr(P, case.name)}
                target = p.proc

            def make_args(case: scale.Case = case, p: Any = p, via: str = via) -> Any:
                args = case.args(api, p, mid)
                if via == "plain":
                    args = [a.proc if isinstance(a, new_exo.Procedure) else a for a in args]
                return args

            old, new = compare(fns, target, case, make_args, swap)
            print(f"| {name} | {via} | {old:.1f} | {new:.1f} | {new / old:.3f} |", flush=True)


if __name__ == "__main__":
    main()
