"""Row softmax as one CUDA kernel: the max and the sum fused into one online pass with
``scan_fuse``, one thread per row, the running values in REGISTER.

Run it with ``python sched/cuda_online_softmax.py``: it prints the final proc and its kernel,
runs the kernel in the CPU emulation (both thread orders) on 333 rows of 77 columns (rows
starting with ``-inf`` and rows of equal values included) and checks it against numpy in
float64; on a machine with a GPU and cupy it also runs it there. The only pattern is the
first step's (the two reduction loops); every later step uses returned cursors.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import GLOBAL, REGISTER, Proc, bind_loop, proc, scan_fuse, scope, set_memory, split

ROWS_PER_BLOCK = 64


@proc
def softmax(R: size, C: size, x: f32[R, C] @ GLOBAL, y: f32[R, C] @ GLOBAL):
    for r in seq(0, R):
        m: f32
        m = -inf
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        s: f32
        s = 0.0
        for j in seq(0, C):
            s += exp(x[r, j] - m)
        for j in seq(0, C):
            y[r, j] = exp(x[r, j] - m) / s


def schedule(p: Proc) -> Proc:
    """One online pass per row (``scan_fuse``), rows over threads and blocks."""
    # the only pattern: the max loop and the sum loop
    first, second = p.find_loop("j", many=True)[:2]
    # m is the running max, s the sum rescaled by exp(m_old - m) when m grows
    p, fused = scan_fuse(p, first, second)
    # every value of the pass is private to its row's thread: registers
    row = fused.fused.parent()
    for alloc in (fused.saved[0], fused.factor[0]):
        p, _ = set_memory(p, alloc, REGISTER)
    for name in ("m", "s"):
        p, _ = set_memory(p, name, REGISTER)
    # rows: 64 per block, one per thread; the guard keeps the ragged last block in bounds
    p, sr = split(p, row, ROWS_PER_BLOCK, ("rb", "rt"), tail="guard")
    p, k = scope(p, sr.outer, "softmax_rows", target="cuda")
    p, _ = bind_loop(p, sr.outer, "blockIdx.x")
    p, _ = bind_loop(p, sr.inner, "threadIdx.x")
    del k
    return p


def rows(r: int, c: int, seed: int = 0) -> np.ndarray:
    """Random rows; row 0 starts with ``-inf``, row 1 is constant."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((r, c)).astype(np.float32) * 3
    x[0, :3] = -np.inf
    x[1, :] = 0.75
    return x


def reference(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1)[:, None])
    out: np.ndarray = e / e.sum(axis=1)[:, None]
    return out


def check(f: object, r: int, c: int, *, gpu: bool = False) -> float:
    """Run the compiled proc ``f`` on ``r`` rows of ``c``; the max abs error against numpy."""
    x = rows(r, c)
    y = np.full_like(x, np.nan)
    if gpu:
        import cupy

        cy = cupy.asarray(y)
        f(r, c, cupy.asarray(x), cy)  # type: ignore[operator]
        y = cupy.asnumpy(cy)
    else:
        f(r, c, x, y)  # type: ignore[operator]
    return float(np.abs(y - reference(x)).max())


def gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.is_available())
    except ImportError:
        return False


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [schedule(softmax)]


def main() -> int:
    p = schedule(softmax)
    print(p)
    print(p.cuda_source())
    err = check(p.compile(target="cuda-emulated", check_races=True), 333, 77)
    print(f"emulated 333 rows x 77: max |y - numpy| = {err:.1e}")
    if not err <= 1e-6:
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    if gpu_available():
        gerr = check(p.compile(target="cuda"), 333, 77, gpu=True)
        print(f"GPU: max |y - numpy| = {gerr:.1e}")
        if not gerr <= 1e-6:
            return 1
    else:
        print("no GPU (cupy not available): ran the emulation only")
    print("ok: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
