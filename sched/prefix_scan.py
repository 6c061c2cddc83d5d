"""Prefix sums and discounted scans ``acc = d[i] * acc + x[i]`` in the plain loop form.

Run it with ``python sched/prefix_scan.py``. cursched has no ``scan`` statement: a scan is a
loop that updates a running value, and its three outputs are places in that loop:

- the **exclusive** value at step ``i`` is the running value before the update;
- the **inclusive** value is the running value after it;
- the **final** value is the running value after the loop.

``discounted_scan`` writes all three out in the plain form (and is compiled as it is). When a
later loop reduces through a rescalable function of the scan's final value (here
``s += exp(w[i] - acc)``: weights normalised by the discounted total), ``scan_fuse`` makes one
pass of the two, and its cursors name the scan's outputs: ``saved`` is the statement keeping
the exclusive value (``acc_prev = acc``), ``first_updates`` the inclusive update, ``fused`` the
loop after which ``acc`` is final; the accumulator itself becomes a discounted scan whose
discount is the ``factor`` (``alpha = exp(acc_prev - acc)``). The script prints the procs and
the cursors, runs them compiled and checks them against numpy in float64 (tolerance
``1e-6 * sum|x|``).
"""

from __future__ import annotations

import sys

import numpy as np

from cursched import DRAM, Proc, proc, scan_fuse


@proc
def discounted_scan(
    n: size,
    d: f32[n] @ DRAM,
    x: f32[n] @ DRAM,
    excl: f32[n] @ DRAM,
    incl: f32[n] @ DRAM,
    final: f32[1] @ DRAM,
):
    acc: f32
    acc = 0.0
    for i in seq(0, n):
        excl[i] = acc
        acc = d[i] * acc + x[i]
        incl[i] = acc
    final[0] = acc


@proc
def scan_normalised(
    n: size, d: f32[n] @ DRAM, x: f32[n] @ DRAM, w: f32[n] @ DRAM, out: f32[2] @ DRAM
):
    acc: f32
    acc = 0.0
    for i in seq(0, n):
        acc = d[i] * acc + x[i]
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(w[i] - acc)
    out[0] = acc
    out[1] = s


def schedule(p: Proc) -> tuple[Proc, object]:
    """One pass: the scan and the normalised sum fused; returns the proc and the cursors."""
    scan, reduce = p.find_loop("i", many=True)
    return scan_fuse(p, scan, reduce)


def reference(d: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(exclusive, inclusive) discounted scan in float64."""
    acc, excl, incl = 0.0, np.zeros(len(x)), np.zeros(len(x))
    for i, (di, xi) in enumerate(zip(d.astype(np.float64), x.astype(np.float64), strict=True)):
        excl[i] = acc
        acc = di * acc + xi
        incl[i] = acc
    return excl, incl


def check(n: int, *, prefix_sum: bool, seed: int = 0, compiled: bool = True) -> list[str]:
    """Run both procs (compiled, or in the interpreter); the problems found."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    d = np.ones(n, np.float32) if prefix_sum else rng.uniform(0.5, 1.0, n).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    tol = 1e-6 * float(np.abs(x.astype(np.float64)).sum())
    excl_ref, incl_ref = reference(d, x)
    bad: list[str] = []
    excl, incl, final = (np.zeros(k, np.float32) for k in (n, n, 1))
    run = discounted_scan.compile() if compiled else discounted_scan.interpret
    run(n, d, x, excl, incl, final)
    for name, got, want in (("exclusive", excl, excl_ref), ("inclusive", incl, incl_ref)):
        if np.abs(got - want).max() > tol:
            bad.append(f"{name} scan off by {np.abs(got - want).max():.1e} > {tol:.1e}")
    if abs(final[0] - incl_ref[-1]) > tol:
        bad.append("final value")
    fused, _ = schedule(scan_normalised)
    out = np.zeros(2, np.float32)
    (fused.compile() if compiled else fused.interpret)(n, d, x, w, out)
    s_ref = np.exp(w.astype(np.float64) - incl_ref[-1]).sum()
    if abs(out[0] - incl_ref[-1]) > tol:
        bad.append(f"fused scan final value {out[0]} != {incl_ref[-1]}")
    if abs(out[1] - s_ref) > 1e-5 * s_ref + 1e-6 * n * s_ref:
        bad.append(f"normalised sum {out[1]} != {s_ref}")
    return bad


def scheduled() -> list[Proc]:
    """What this file produces, for ``cursched compile``/``show`` (docs/cli.md)."""
    return [discounted_scan, schedule(scan_normalised)[0]]


def main() -> int:
    print(discounted_scan, end="\n\n")
    fused, cursors = schedule(scan_normalised)
    print(fused, end="\n\n")
    print(cursors, end="\n\n")
    bad = check(1000, prefix_sum=True) + check(1000, prefix_sum=False, seed=1)
    if bad:
        print("MISMATCH with numpy:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: prefix sum and discounted scan (exclusive, inclusive, final) match numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
