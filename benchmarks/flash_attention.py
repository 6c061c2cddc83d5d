"""Flash attention 2 forward derived from naive attention (sched/attention.py,
``schedule_flash(attention)`` with its default arguments), compiled with the default flags (no
``-ffast-math``), against numpy (score matrix materialised, BLAS products) and torch's
``scaled_dot_product_attention`` on the CPU, at one thread and at all cores, in one run.

Prints, per size and thread count, the best time of each (the kernels timed interleaved,
``--reps`` rounds) and the ratios peer time / cursched time (above 1: cursched is faster).
Each kernel's output is checked against numpy first. Aims (issue 13), one thread: at
4096 x 64, >= 1.5x numpy and >= 1.0x torch SDPA.

Run: python benchmarks/flash_attention.py            (sequence 1024 .. 8192, head 64 and 128)
     python benchmarks/flash_attention.py --quick    (small sizes, a few seconds)
"""

from __future__ import annotations

import argparse
import sys
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


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T
    s -= s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    out: np.ndarray = s @ v
    return out


def measure(
    n: int, d: int, kernel: Callable[..., None], torch: Any, n_threads: int, reps: int
) -> dict[str, float] | None:
    """Times of cursched, numpy and torch for sequence ``n`` and head ``d`` at ``n_threads``
    (None when the kernel's output is wrong)."""
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
        return interleaved_best(fns, reps)


SIZES = [(n, d) for d in (64, 128) for n in (1024, 2048, 4096, 8192)]
QUICK = [(256, 64), (512, 64)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--reps", type=int, default=0, help="rounds per size (default 3)")
    _results.add_json_flag(ap)
    args = ap.parse_args(argv)
    reps = args.reps or 3
    kernel = SCRIPT.schedule_flash(SCRIPT.attention).compile()
    torch = torch_module()
    print("machine:", machine())
    print("torch:", torch.__version__ if torch is not None else "not installed")
    print("cursched: sched/attention.py schedule_flash(attention), default compile() flags;")
    print("Q pre-scaled (scale=1.0 for torch); ratios: peer time / cursched time, best of", reps)
    peers = ["numpy", "torch"] if torch is not None else ["numpy"]
    print_header("seq x head", peers)
    for n, d in QUICK if args.quick else SIZES:
        for t in thread_counts():
            times = measure(n, d, kernel, torch, t, reps)
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
