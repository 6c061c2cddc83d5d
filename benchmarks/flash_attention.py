"""Flash attention 2 forward derived from naive attention (sched/attention.py), compiled to C,
against numpy (score matrix materialised) and torch's ``scaled_dot_product_attention`` on the
CPU, all single-threaded, in one run.

Prints, per size, the time of each and the ratios (peer time / cursched time: above 1 means
cursched is faster). Aim (issue 8): flash attention faster than both. The derived kernel runs
with the default flags, with ``compile(vector_math=True)`` (vectorised ``expf`` only) and with
``-ffast-math`` (vectorised ``expf`` and reductions).

Run: python benchmarks/flash_attention.py            (sequence length up to 4096, head dim 64)
     python benchmarks/flash_attention.py --quick    (small sizes, a few seconds)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # single-threaded peers, set before numpy/torch load

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
from online_softmax import (
    FAST,
    best,
    load_script,
    print_table,
    table_row,
    torch_module,
    with_tile_asserts,
)

SCRIPT = load_script("attention")
attention = with_tile_asserts(SCRIPT.attention, Nq=64, Nk=64)
"""sched/attention.py's naive attention, asserting ``Nq % 64 == 0`` and ``Nk % 64 == 0`` to
allow larger tiles."""


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T
    s -= s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    out: np.ndarray = s @ v
    return out


def measure(n: int, d: int, kernels: dict[str, Any], torch: Any, ref_tol: float) -> str | None:
    """One line of the table (None when a kernel's result is wrong)."""
    x = SCRIPT.inputs(n, n, d)
    q, k, v = x["Q"], x["K"], x["V"]
    o, lse = np.zeros((n, d), np.float32), np.zeros(n, np.float32)
    want = numpy_attention(q, k, v)
    times: dict[str, float] = {}
    for name, f in kernels.items():
        o.fill(np.nan)  # a kernel that writes nothing must not pass on an earlier result
        f(n, n, d, q, k, v, o, lse)
        if not np.allclose(o, want, atol=ref_tol, rtol=1e-4):
            print(f"MISMATCH between {name} and numpy", file=sys.stderr)
            return None
        times[name] = best(lambda f=f: f(n, n, d, q, k, v, o, lse), budget=1.0)
    times["numpy"] = best(lambda: numpy_attention(q, k, v), budget=1.0)
    times["torch"] = float("nan")
    if torch is not None:
        qt, kt, vt = (torch.from_numpy(a)[None, None] for a in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        times["torch"] = best(lambda: sdpa(qt, kt, vt, scale=1.0), budget=1.0)
    _results.record(kernel="attention", size=[n, d], elements=n * n * d, times_s=times)
    return table_row(f"{n} x {d}", times, ms_format="9.1f")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--key-tile", type=int, default=64)
    ap.add_argument("--query-tile", type=int, default=64)
    _results.add_json_flag(ap)
    args = ap.parse_args()
    sizes = [(256, 64), (512, 64)] if args.quick else [(1024, 64), (2048, 64), (4096, 64)]

    derived = SCRIPT.schedule_flash(attention, args.key_tile, args.query_tile)
    kernels = {
        "cursched": derived.compile(),
        "cs vec": derived.compile(vector_math=True),
        "cs fast": derived.compile(extra_cflags=FAST),
    }
    torch = torch_module()
    print("torch:", torch.__version__ if torch is not None else "not installed")
    print(
        f"cursched: flash attention 2 derived by sched/attention.py (key tile {args.key_tile},"
        f" query tile {args.query_tile}); cs vec: compile(vector_math=True); cs fast: the"
        f" same with {' '.join(FAST)}"
    )
    rows = (measure(n, d, kernels, torch, ref_tol=1e-5) for n, d in sizes)
    status = print_table("seq x head", kernels, rows)
    _results.write_if_asked(args, "flash_attention", "attention of seq x head, best time, 1 thread")
    return status


if __name__ == "__main__":
    sys.exit(main())
