"""Online softmax derived by ``scan_fuse`` (sched/online_softmax.py, ``schedule(softmax)`` with
its default arguments), compiled with the default flags (no ``-ffast-math``), against numpy's
two-pass softmax and ``torch.nn.functional.softmax`` on the CPU, at one thread and at all
cores, in one run.

Prints, per size and thread count, the best time of each (the kernels timed interleaved: one
call of each in turn, ``--reps`` rounds) and the ratios peer time / cursched time (above 1:
cursched is faster). Every kernel's result is checked against numpy before it is timed, on rows
that include a row starting with ``-inf`` and a row of equal values. Aims (issue 13), one
thread: at 4096 x 4096, >= 2.0x numpy and >= 1.2x torch.

Run: python benchmarks/online_softmax.py            (256x1024 .. 4096x8192)
     python benchmarks/online_softmax.py --quick    (two small sizes, a few seconds)
     python benchmarks/online_softmax.py --sizes 4096x4096 --threads 1 --reps 9
     python benchmarks/online_softmax.py --cpu      (1 thread, CPU time of the thread: on a
                                                     shared machine, where wall time counts
                                                     the other processes' time slices)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results

from cursched import Proc
from cursched.ir.nodes import BinOp, Const, Expr, Read

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str) -> ModuleType:
    """A schedule script of ``sched/`` as a module (``sched`` is not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "sched" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def with_tile_asserts(p: Proc, **tiles: int) -> Proc:
    """``p`` with each assert ``size % k == 0`` on a size named in ``tiles`` made
    ``size % tiles[size] == 0`` (to schedule a proc with other tiles than its own)."""
    preds: list[Expr] = []
    todo = dict(tiles)
    for e in p.ir().preds:
        match e:
            case BinOp("==", BinOp("%", Read(sym, ()), Const(int()) as k) as mod, Const(0)) if (
                sym.name in todo
            ):
                k = replace(k, value=todo.pop(sym.name))
                e = replace(e, lhs=replace(mod, rhs=k))
        preds.append(e)
    assert not todo, f"no assert 'size % k == 0' on {sorted(todo)}"
    return Proc(replace(p.ir(), preds=tuple(preds)))


SCRIPT = load_script("online_softmax")


def torch_module() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def thread_counts() -> list[int]:
    """One thread, then all cores (once when there is one core)."""
    return sorted({1, os.cpu_count() or 1})


@contextlib.contextmanager
def threads(n: int, torch: Any) -> Iterator[None]:
    """Run the block with ``n`` threads for OpenMP (the compiled kernels), BLAS and torch."""
    old = torch.get_num_threads() if torch is not None else 0
    with threadpool_limits(limits=n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(old)


def interleaved_best(
    fns: dict[str, Callable[[], Any]], reps: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, float]:
    """The best time of each function over ``reps`` rounds, each round calling every function
    once in turn (so that a change of machine load hits all of them alike); ``clock`` may be
    ``time.thread_time`` (CPU time of the calling thread: one-thread runs on a shared machine,
    where wall time counts the other processes' time slices)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = clock()
            fn()
            best[name] = min(best[name], clock() - t0)
    return best


def machine() -> str:
    """CPU model, cores, vector ISA and the load average (the machine may be shared)."""
    model, flags = platform.processor() or "?", ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name") and model in ("?", "", "x86_64"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line
                break
    isa = [x for x in ("avx2", "fma", "avx512f") if f" {x}" in flags]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (
        f"{model}, {os.cpu_count()} cores, {'+'.join(isa) or 'no AVX2'};"
        f" load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )


def print_header(first: str, peers: Sequence[str]) -> None:
    head = [first, "threads", "cursched", *peers, *(f"{p}/cs" for p in peers)]
    print(" ".join(f"{h:>11}" for h in head))


def table_row(label: str, n_threads: int, times: dict[str, float]) -> str:
    """``label``, the thread count, each time in ms (cursched first), then each peer's time
    over cursched's."""
    cs = times["cursched"]
    peers = [k for k in times if k != "cursched"]
    cells = [f"{times[k] * 1e3:9.2f}ms" for k in ("cursched", *peers)]
    cells += [f"{times[k] / cs:10.2f}x" for k in peers]
    return f"{label:>11} {n_threads:>11} " + " ".join(cells)


def numpy_softmax(x: np.ndarray, y: np.ndarray) -> None:
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    np.divide(e, e.sum(axis=1, keepdims=True), out=y)


def softmax_rows(r: int, c: int) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((r, c)).astype(np.float32)
    x[0, :3] = -np.inf  # a row starting with -inf
    x[1, :] = 0.5  # a row of equal values
    return x


def measure(
    r: int,
    c: int,
    kernel: Callable[..., None],
    torch: Any,
    n_threads: int,
    reps: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float] | None:
    """Times of cursched, numpy and torch for ``r x c`` at ``n_threads`` on ``clock`` (None
    when the kernel's result is wrong)."""
    x = softmax_rows(r, c)
    y, y_np = np.full_like(x, np.nan), np.empty_like(x)
    numpy_softmax(x, y_np)
    with threads(n_threads, torch):
        kernel(r, c, x, y)
        if not np.allclose(y, y_np, rtol=1e-5, atol=1e-6):
            print(f"MISMATCH between cursched and numpy at {r} x {c}", file=sys.stderr)
            return None
        fns: dict[str, Callable[[], Any]] = {
            "cursched": lambda: kernel(r, c, x, y),
            "numpy": lambda: numpy_softmax(x, y_np),
        }
        if torch is not None:
            xt = torch.from_numpy(x)
            fns["torch"] = lambda: torch.nn.functional.softmax(xt, dim=1)
        return interleaved_best(fns, reps, clock)


SIZES = [(256, 1024), (1024, 4096), (4096, 4096), (2048, 8192), (4096, 8192)]
QUICK = [(64, 256), (256, 1024)]


def _sizes(text: str) -> list[tuple[int, int]]:
    """``"4096x4096,1024x4096"`` -> ``[(4096, 4096), (1024, 4096)]``."""
    return [(int(r), int(c)) for r, c in (x.split("x") for x in text.split(",") if x)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two small sizes only")
    ap.add_argument("--reps", type=int, default=0, help="rounds per size (default 5, quick 3)")
    ap.add_argument("--sizes", type=_sizes, default=None, help="rows x cols list: 4096x4096,...")
    ap.add_argument("--threads", default="", help="thread counts: 1,2 (default 1 and all)")
    ap.add_argument("--cpu", action="store_true", help="1 thread, the thread's CPU time")
    _results.add_json_flag(ap)
    args = ap.parse_args(argv)
    reps = args.reps or (3 if args.quick else 5)
    sizes = args.sizes or (QUICK if args.quick else SIZES)
    counts = [int(t) for t in args.threads.split(",") if t] or (
        [1] if args.cpu else thread_counts()
    )
    if args.cpu and counts != [1]:
        ap.error("--cpu times the calling thread only: --threads 1")
    clock = time.thread_time if args.cpu else time.perf_counter
    kernel = SCRIPT.schedule(SCRIPT.softmax).compile()
    torch = torch_module()
    print("machine:", machine())
    print("torch:", torch.__version__ if torch is not None else "not installed")
    print("cursched: sched/online_softmax.py schedule(softmax), default compile() flags")
    print("ratios: peer time / cursched time, best of", reps, "interleaved rounds")
    print("times:", "CPU time of the thread" if args.cpu else "wall")
    peers = ["numpy", "torch"] if torch is not None else ["numpy"]
    print_header("rows x cols", peers)
    for r, c in sizes:
        for n in counts:
            times = measure(r, c, kernel, torch, n, reps, clock)
            if times is None:
                return 1
            print(table_row(f"{r}x{c}", n, times), flush=True)
            _results.record(kernel="softmax", size=[r, c], threads=n, elements=r * c, times_s=times)
    _results.write_if_asked(
        args, "online_softmax", "softmax of rows x cols, best time, by thread count"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
