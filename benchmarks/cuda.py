"""GPU benchmark: cursched's CUDA sgemm (sched/cuda_sgemm.py) against cupy's matmul (cuBLAS),
its flash attention (sched/cuda_flash_attention.py) against torch's
scaled_dot_product_attention and its flash attention backward
(sched/cuda_attention_backward.py) against torch autograd's backward of it, measured in the
same run, best of N, printed as ratios.

Run it with ``python benchmarks/cuda.py [--sizes 1024,2048] [--seqs 333,1024,4096]
[--repeat 20]``, or ``python benchmarks/cuda.py --quick`` (sgemm 1024, sequence lengths 333
and 1024, 5 repeats). On the GPU every timed result is first checked (sgemm against cuBLAS,
attention against numpy in float64 with ``sched/attention.py``'s tolerances, the backward
against the float64 formulas and torch autograd within 1e-3 relative). Without a GPU
(cupy missing or ``cupy.is_available()`` false) it says so and exits 0; the kernels are still
checked in the CPU emulation at small sizes (attention at sequence length 333), so the
script is exercised everywhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "sched" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    import cupy

    return bool(cupy.is_available())


def _time_gpu(fn: object, repeat: int) -> float:
    """Best of ``repeat`` timings (seconds) of ``fn()`` with CUDA events."""
    import cupy

    best = float("inf")
    fn()  # type: ignore[operator]  # warm-up (and NVRTC build)
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()  # type: ignore[operator]
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,2048,4096", help="square sizes, comma-separated")
    ap.add_argument("--seqs", default="333,1024,4096", help="attention sequence lengths")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="sizes 1024, seqs 333,1024, 5 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.seqs, args.repeat = "1024", "333,1024", 5
    sg = _load("cuda_sgemm")
    p = sg.schedule(sg.sgemm)
    err = sg.check(p.compile(target="cuda-emulated"), 100, 77, 130)
    print(f"emulated sgemm 100x77x130: relative error {err:.1e}")
    fa = _load("cuda_flash_attention")
    bad = fa.check(fa.schedule_flash(fa.attention).compile(target="cuda-emulated"), 333, 333)
    print(f"emulated flash attention 333 x 333: {'; '.join(bad) or 'matches numpy'}")
    bw = _load("cuda_attention_backward")
    bad_bw = bw.check(bw.schedule(bw.attention_backward).compile(target="cuda-emulated"), 100, 77)
    print(f"emulated attention backward 100 x 77: {'; '.join(bad_bw) or 'matches torch'}")
    bad += bad_bw
    if err > 1e-4 or bad:
        print("the emulated kernels differ from numpy", file=sys.stderr)
        return 1
    if not _gpu():
        print("no GPU: cupy is not installed or finds no device; nothing to time (exit 0)")
        return 0
    import cupy

    f = p.compile(target="cuda")
    print(
        f"{'size':>6} {'cursched ms':>12} {'cuBLAS ms':>10} {'cursched/cuBLAS':>16} {'GFLOP/s':>8}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(0)
        a = cupy.asarray(rng.standard_normal((n, n)).astype(np.float32))
        b = cupy.asarray(rng.standard_normal((n, n)).astype(np.float32))
        c = cupy.empty((n, n), dtype=cupy.float32)
        ours = _time_gpu(lambda a=a, b=b, c=c, n=n: f(n, n, n, a, b, c), args.repeat)
        ref = _time_gpu(lambda a=a, b=b: cupy.matmul(a, b), args.repeat)
        rel = float(cupy.max(cupy.abs(c - a @ b)) / cupy.max(cupy.abs(a @ b)))
        if rel > 1e-3:
            print(f"size {n}: result differs from cuBLAS (relative {rel:.1e})", file=sys.stderr)
            return 1
        gflops = 2 * n**3 / ours / 1e9
        print(f"{n:>6} {ours * 1e3:>12.3f} {ref * 1e3:>10.3f} {ours / ref:>16.2f} {gflops:>8.0f}")
    seqs = [int(s) for s in args.seqs.split(",")]
    return _attention(fa, seqs, args.repeat) or _backward(bw, seqs, args.repeat)


def _attention(fa: ModuleType, seqs: list[int], repeat: int) -> int:
    """Flash attention (head dimension 64) against torch SDPA, when torch sees the GPU."""
    import cupy

    f = fa.schedule_flash(fa.attention).compile(target="cuda")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("torch has no CUDA device: flash attention timed without a peer")
    print(f"{'seq':>6} {'cursched ms':>12} {'torch SDPA ms':>14} {'cursched/torch':>15}")
    for n in seqs:
        bad = fa.check(f, n, n, gpu=True)
        if bad:
            print(f"seq {n}: differs from numpy: {'; '.join(bad)}", file=sys.stderr)
            return 1
        x = fa.inputs(n, n)
        q, k, v = (cupy.asarray(x[c]) for c in "QKV")
        o, lse = cupy.empty((n, 64), cupy.float32), cupy.empty(n, cupy.float32)
        ours = _time_gpu(lambda q=q, k=k, v=v, o=o, lse=lse, n=n: f(n, n, q, k, v, o, lse), repeat)
        if torch is None or not torch.cuda.is_available():
            print(f"{n:>6} {ours * 1e3:>12.3f} {'-':>14} {'-':>15}")
            continue
        tq, tk, tv = (torch.as_tensor(a, device="cuda")[None, None] for a in (q, k, v))
        ref = _time_gpu(
            lambda tq=tq, tk=tk, tv=tv: F.scaled_dot_product_attention(tq, tk, tv, scale=1.0),
            repeat,
        )
        print(f"{n:>6} {ours * 1e3:>12.3f} {ref * 1e3:>14.3f} {ours / ref:>15.2f}")
    return 0


def _backward(bw: ModuleType, seqs: list[int], repeat: int) -> int:
    """The flash attention backward (head dimension 64, its three kernels) against torch
    autograd's backward of SDPA (the backward alone), when torch sees the GPU."""
    import cupy

    f = bw.schedule(bw.attention_backward).compile(target="cuda")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("torch has no CUDA device: the backward timed without a peer")
    print(f"{'seq':>6} {'cursched bwd ms':>16} {'torch bwd ms':>13} {'cursched/torch':>15}")
    for n in seqs:
        bad = bw.check(f, n, n, gpu=True)
        if bad:
            print(f"seq {n}: backward differs: {'; '.join(bad)}", file=sys.stderr)
            return 1
        x = bw.inputs(n, n)
        dev = {k: cupy.asarray(v) for k, v in x.items()}
        grads = [cupy.empty((n, 64), cupy.float32) for _ in range(3)]
        args = [dev[k] for k in ("Q", "K", "V", "O", "dO", "L")] + grads
        ours = _time_gpu(lambda n=n, args=args: f(n, n, *args), repeat)
        if torch is None or not torch.cuda.is_available():
            print(f"{n:>6} {ours * 1e3:>16.3f} {'-':>13} {'-':>15}")
            continue
        q, k, v = (
            torch.as_tensor(dev[c], device="cuda")[None, None].requires_grad_() for c in "QKV"
        )
        out = F.scaled_dot_product_attention(q, k, v, scale=1.0)
        do = torch.as_tensor(dev["dO"], device="cuda")[None, None]
        ref = _time_gpu(
            lambda out=out, q=q, k=k, v=v, do=do: torch.autograd.grad(
                out, (q, k, v), do, retain_graph=True
            ),
            repeat,
        )
        print(f"{n:>6} {ours * 1e3:>16.3f} {ref * 1e3:>13.3f} {ours / ref:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
