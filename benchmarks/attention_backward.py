"""Flash attention 2 backward derived from the naive backward (sched/attention_backward.py,
``schedule(attention_backward)``), compiled with the default flags (no ``-ffast-math``), one
thread, against torch's CPU backward of ``scaled_dot_product_attention`` (autograd, float32;
alone, and with its forward) and a numpy formula (``P``, ``dP``, ``dS`` materialised, BLAS
products), in one run.

Prints, per size, the best time of each (the kernels timed interleaved, ``--reps`` rounds) and
the ratios peer time / cursched time (above 1: cursched is faster). Each kernel's gradients are
checked against the float64 formula first (the issue's 1e-3 relative). Aim (issue 17): faster
than torch at 4096 x 64.

Run: python benchmarks/attention_backward.py            (sequence 1024 .. 4096, head 64)
     python benchmarks/attention_backward.py --quick    (1024 x 64 only, a few seconds)
     add --cpu-time on a loaded machine (the thread's CPU time instead of the wall clock)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
from online_softmax import (
    load_script,
    machine,
    print_header,
    table_row,
    threads,
    torch_module,
)

SCRIPT = load_script("attention_backward")


def numpy_backward(x: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """dQ, dK, dV in float32 by the formulas, the score matrix materialised."""
    q, k, v, do, o, lse = (x[n] for n in ("Q", "K", "V", "dO", "O", "L"))
    p = np.exp(q @ k.T - lse[:, None])
    dv = p.T @ do
    ds = p * (do @ v.T - (do * o).sum(axis=1, keepdims=True))
    return ds @ k, ds.T @ q, dv


def torch_calls(x: dict[str, np.ndarray], torch: Any) -> dict[str, Callable[[], Any]]:
    """torch's SDPA in float32: ``torch`` its forward and backward (autograd), ``torch bwd``
    its backward alone (``autograd.grad`` of one saved forward, the graph retained)."""
    q, k, v = (torch.from_numpy(x[n])[None].requires_grad_() for n in "QKV")
    do = torch.from_numpy(x["dO"])[None]
    sdpa = torch.nn.functional.scaled_dot_product_attention
    saved = sdpa(q, k, v, scale=1.0)

    def both() -> Any:
        return torch.autograd.grad(sdpa(q, k, v, scale=1.0), (q, k, v), do)

    def backward() -> Any:
        return torch.autograd.grad(saved, (q, k, v), do, retain_graph=True)

    return {"torch": both, "torch bwd": backward}


def interleaved_best(
    fns: dict[str, Callable[[], Any]], reps: int, timer: Callable[[], float]
) -> dict[str, float]:
    """The best time of each function over ``reps`` rounds, each round calling every function
    once in turn (benchmarks/online_softmax.py's, with the clock as a parameter: the CPU time
    of the calling thread, ``time.thread_time``, is what a loaded machine distorts least;
    every kernel here runs in the calling thread)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = timer()
            fn()
            best[name] = min(best[name], timer() - t0)
    return best


def measure(
    n: int, d: int, kernel: Callable[..., None], torch: Any, reps: int, timer: Callable[[], float]
) -> dict[str, float] | None:
    """Times of cursched, numpy and torch for sequence ``n`` and head ``d`` at one thread
    (None when the kernel's gradients are wrong)."""
    x = SCRIPT.inputs(n, n, d)
    out = {g: np.full((n, d), np.nan, np.float32) for g in SCRIPT.OUTPUTS}
    args = [x[a] for a in ("Q", "K", "V", "O", "dO", "L")] + [out[g] for g in SCRIPT.OUTPUTS]
    with threads(1, torch):
        kernel(n, n, d, *args)
        bad = {g: e for g, e in SCRIPT.errors(out, SCRIPT.reference(x)).items() if e > 1e-3}
        if bad:
            print(f"MISMATCH at {n} x {d}: {bad}", file=sys.stderr)
            return None
        fns: dict[str, Callable[[], Any]] = {
            "cursched": lambda: kernel(n, n, d, *args),
            "numpy": lambda: numpy_backward(x),
        }
        if torch is not None:
            fns.update(torch_calls(x, torch))
        return interleaved_best(fns, reps, timer)


SIZES = [(1024, 64), (2048, 64), (4096, 64)]
QUICK = [(1024, 64)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1024 x 64 only")
    ap.add_argument("--reps", type=int, default=0, help="rounds per size (default 3)")
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="time the CPU time of this thread, not the wall clock (on a loaded machine)",
    )
    _results.add_json_flag(ap)
    args = ap.parse_args(argv)
    reps = args.reps or 3
    timer = time.thread_time if args.cpu_time else time.perf_counter
    kernel = SCRIPT.schedule(SCRIPT.attention_backward).compile()
    torch = torch_module()
    print("machine:", machine())
    print("torch:", torch.__version__ if torch is not None else "not installed")
    print("cursched: sched/attention_backward.py schedule(attention_backward), default flags;")
    print("one thread; torch = its SDPA forward + backward (autograd), torch bwd = its")
    print("backward alone; ratios: peer time / cursched time, best of", reps, end=", ")
    print("CPU time of the thread" if args.cpu_time else "wall clock")
    peers = ["numpy", "torch", "torch bwd"] if torch is not None else ["numpy"]
    print_header("seq x head", peers)
    for n, d in QUICK if args.quick else SIZES:
        times = measure(n, d, kernel, torch, reps, timer)
        if times is None:
            return 1
        print(table_row(f"{n}x{d}", 1, times), flush=True)
        _results.record(
            kernel="attention_backward", size=[n, d], threads=1, elements=n * d, times_s=times
        )
    _results.write_if_asked(
        args, "attention_backward", "attention backward of seq x head, best time, one thread"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
