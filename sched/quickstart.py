"""cursched in one file: define a proc, print it, run it on numpy arrays, check it.

Run it with ``python sched/quickstart.py``. It defines a 3-pass softmax in the cursched
language, prints the proc (the printer's output parses back to the same proc), runs it in the
reference interpreter (f32 arithmetic, as declared) and compares the result with numpy.
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import DRAM, Proc, proc


@proc
def softmax(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmaxf(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        y[i] = expf(x[i] - m)
        s += y[i]
    for i in seq(0, n):
        y[i] = y[i] / s


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [softmax]  # nothing to schedule: the proc as written


def main() -> int:
    print(softmax)

    rng = np.random.default_rng(0)
    x = rng.standard_normal(256).astype(np.float32)
    y = np.zeros_like(x)
    softmax.interpret(n=x.size, x=x, y=y)  # outputs are written in place

    e = np.exp(x.astype(np.float64) - x.max())
    expected = e / e.sum()
    err = float(np.max(np.abs(y - expected)))
    print(f"interpreted softmax of {x.size} floats: max |y - numpy| = {err:.1e}")
    if not np.allclose(y, expected, rtol=1e-5, atol=1e-7):
        print("MISMATCH with numpy", file=sys.stderr)
        return 1
    print("ok: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
