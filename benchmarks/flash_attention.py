"""Flash attention 2 forward derived from naive attention (sched/attention.py,
``schedule_flash(attention)`` with its default arguments), compiled with the default flags (no
``-ffast-math``), against numpy (score matrix materialised, BLAS products) and torch's
``scaled_dot_product_attention`` on the CPU, at one thread and at all cores, in one run.

Prints, per size and thread count, the best time of each (the kernels timed interleaved,
``--reps`` rounds) and the ratios peer time / cursched time (above 1: cursched is faster).
Each kernel's output is checked against numpy first. Aims (issue 13), one thread: at
4096 x 64, >= 1.5x numpy and >= 1.0x torch SDPA.

Run: python benchmarks/flash_attention.py            (sequence 1024 .. 8192, head 64 and 128)
     python benchmarks/flash_attention.py --quick    (the aims' size and head 128 at 2048, 1
                                                      thread, best of 5: about 20 s)
     python benchmarks/flash_attention.py --sizes 4096x64,2048x128 --threads 1,2 --reps 5
     python benchmarks/flash_attention.py --asm --quick    (the compiled inner loops first)
     python benchmarks/flash_attention.py --quick --cpu    (1 thread, CPU time of the thread:
                                                      on a loaded machine)
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
from online_softmax import (
    interleaved_best,
    load_script,
    machine,
    print_header,
    table_row,
    thread_counts,
    threads,
    torch_module,
)

SCRIPT = load_script("attention")


def print_inner_loops(lib: str) -> None:
    """The compiled FMA loops of ``lib`` (``tools/inner_loops.py``; needs objdump)."""
    path = Path(__file__).resolve().parent.parent / "tools" / "inner_loops.py"
    spec = importlib.util.spec_from_file_location("inner_loops", path)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for loop in tool.fma_loops(lib):
        print("  " + loop.summary())


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T
    s -= s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    out: np.ndarray = s @ v
    return out


def measure(
    n: int,
    d: int,
    kernel: Callable[..., None],
    torch: Any,
    n_threads: int,
    reps: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float] | None:
    """Times of cursched, numpy and torch for sequence ``n`` and head ``d`` at ``n_threads``
    by ``clock`` (None when the kernel's output is wrong)."""
    x = SCRIPT.inputs(n, n, d)
    q, k, v = x["Q"], x["K"], x["V"]
    o, lse = np.full((n, d), np.nan, np.float32), np.zeros(n, np.float32)
    with threads(n_threads, torch):
        want = numpy_attention(q, k, v)
        kernel(n, n, d, q, k, v, o, lse)
        if not np.allclose(o, want, atol=1e-5, rtol=1e-4):
            print(f"MISMATCH between cursched and numpy at {n} x {d}", file=sys.stderr)
            return None
        fns: dict[str, Callable[[], Any]] = {
            "cursched": lambda: kernel(n, n, d, q, k, v, o, lse),
            "numpy": lambda: numpy_attention(q, k, v),
        }
        if torch is not None:
            qt, kt, vt = (torch.from_numpy(a)[None, None] for a in (q, k, v))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            fns["torch"] = lambda: sdpa(qt, kt, vt, scale=1.0)
        return interleaved_best(fns, reps, clock)


SIZES = [(n, d) for d in (64, 128) for n in (1024, 2048, 4096, 8192)]
QUICK = [(4096, 64), (2048, 128)]
"""``--quick``: the aims' size and head 128, at one thread (``QUICK_REPS`` rounds)."""
QUICK_REPS = 5


def _sizes(text: str) -> list[tuple[int, int]]:
    """``"4096x64,2048x128"`` -> ``[(4096, 64), (2048, 128)]``."""
    return [(int(n), int(d)) for n, d in (x.split("x") for x in text.split(",") if x)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the aims' size and head 128, 1 thread")
    ap.add_argument("--reps", type=int, default=0, help="rounds per size (default 3)")
    ap.add_argument("--sizes", type=_sizes, default=None, help="seq x head list: 4096x64,...")
    ap.add_argument("--threads", default="", help="thread counts: 1,2 (default 1 and all)")
    ap.add_argument("--asm", action="store_true", help="print the kernel's inner FMA loops")
    ap.add_argument("--cpu", action="store_true", help="1 thread, the thread's CPU time")
    _results.add_json_flag(ap)
    args = ap.parse_args(argv)
    reps = args.reps or (QUICK_REPS if args.quick else 3)
    sizes = args.sizes or (QUICK if args.quick else SIZES)
    counts = [int(t) for t in args.threads.split(",") if t] or (
        [1] if args.quick else thread_counts()
    )
    if args.cpu and counts != [1]:
        ap.error("--cpu times the calling thread only: --threads 1")
    clock = time.thread_time if args.cpu else time.perf_counter
    kernel = SCRIPT.schedule_flash(SCRIPT.attention).compile()
    if args.asm:
        print("inner FMA loops of", kernel.lib_path, "(per iteration):")
        print_inner_loops(str(kernel.lib_path))
    torch = torch_module()
    print("machine:", machine())
    print("torch:", torch.__version__ if torch is not None else "not installed")
    print("cursched: sched/attention.py schedule_flash(attention), default compile() flags;")
    print("Q pre-scaled (scale=1.0 for torch); ratios: peer time / cursched time, best of", reps)
    print("times:", "CPU time of the thread" if args.cpu else "wall")
    peers = ["numpy", "torch"] if torch is not None else ["numpy"]
    print_header("seq x head", peers)
    for n, d in sizes:
        for t in counts:
            times = measure(n, d, kernel, torch, t, reps, clock)
            if times is None:
                return 1
            print(table_row(f"{n}x{d}", t, times), flush=True)
            _results.record(
                kernel="attention", size=[n, d], threads=t, elements=n * d, times_s=times
            )
    _results.write_if_asked(
        args, "flash_attention", "attention of seq x head, best time, by thread count"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
