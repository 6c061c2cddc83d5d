"""The reference interpreter against the one it replaced and against plain Python loops.

Three runners, timed interleaved in one run (best of ``--repeat`` each, so that a loaded
machine slows all of them alike):

- ``new``: ``cursched.interp.interpret`` (each proc compiled to Python source);
- ``old``: the closure-tree interpreter of commit ``b00ea71``, read with ``git show`` into a
  temporary package (it is not part of cursched any more);
- ``loop``: a plain Python loop nest over numpy arrays, without any check (hand-written for
  sgemm; for the corpus, each proc's statements transliterated to Python over numpy arrays
  and numpy scalars of the destination's type, as one would write them by hand);
- with ``--base COMMIT``, also ``base``: the interpreter of that commit (the same way as
  ``old``), to show a change's before and after in one interleaved run.

Measured: every corpus proc (``tests/corpus``) at its registered sizes, the same procs with
every size argument scaled by ``--scale`` (where their inputs allow it), and a 64^3 sgemm.

Besides each table's total (the sum of the procs' times, so the big procs weigh most), the
geometric mean of the per-proc ratios is printed, and the time to compile the corpus (the
interpreter compiles each proc once; the fuzzer and the tests make many procs).

Usage:
    python benchmarks/interp.py [--repeat 5] [--sgemm 64] [--scale 8] [--verbose]
    python benchmarks/interp.py --quick      # --repeat 3 --scale 4 --sgemm 16
    python benchmarks/interp.py --base 42397eb   # and the interpreter of commit 42397eb
"""

from __future__ import annotations

import argparse
import importlib
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from corpus import CASES
from corpus.procs_kernels import sgemm

from cursched.errors import CurschedError
from cursched.interp import compile as compile_module
from cursched.interp import compiled, eval_control, interpret
from cursched.interp.compile import Compiler
from cursched.ir.types import ControlType, TensorType

OLD_COMMIT = "b00ea71"


def load_old(commit: str = OLD_COMMIT, package: str = "_old_interp") -> Callable[..., None]:
    """The interpreter of ``commit``, as the package ``package`` in a temp dir."""
    tmp = Path(tempfile.mkdtemp(prefix="cursched-old-interp-"))
    pkg = tmp / package
    pkg.mkdir()
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{commit}:cursched/interp/"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in (n for n in listing if n.endswith(".py")):
        text = subprocess.run(
            ["git", "show", f"{commit}:cursched/interp/{name}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        text = text.replace("cursched.interp.", f"{package}.").replace(
            "from cursched.interp import", f"from {package} import"
        )
        (pkg / name).write_text(text)
    sys.path.insert(0, str(tmp))
    return importlib.import_module(package).interpret  # type: ignore[no-any-return]


def copy_args(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


def best(fn: Callable[[], Any], repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def timed(fn: Callable[..., Any], args: dict[str, Any]) -> float:
    """Seconds of one ``fn(**args)`` on fresh copies (copying is not timed)."""
    fresh = copy_args(args)
    t = time.perf_counter()
    fn(**fresh)
    return time.perf_counter() - t


def row(name: str, t: dict[str, float]) -> str:
    out = (
        f"{name:24s} {t['old'] * 1e3:9.3f} {t['new'] * 1e3:9.3f} {t['loop'] * 1e3:9.3f}"
        f" {t['old'] / t['new']:8.1f} {t['loop'] / t['new']:9.2f}"
    )
    if "base" in t:
        out += f" {t['base'] * 1e3:9.3f} {t['base'] / t['new']:9.2f}"
    return out


def scaled(pd: Any, args: dict[str, Any], k: int, rng: np.random.Generator) -> dict[str, Any]:
    """``args`` with every size multiplied by ``k`` and new random tensors of the new shapes."""
    out = dict(args)
    values: dict[Any, Any] = {}
    for a in pd.args:
        if isinstance(a.type, ControlType):
            v = args[a.sym.name] * k if a.type.name == "size" else args[a.sym.name]
            out[a.sym.name] = values[a.sym] = v
    for a in pd.args:
        if isinstance(a.type, TensorType):
            shape = tuple(eval_control(e, values) for e in a.type.shape)
            dt = a.type.elem.np_dtype
            data = rng.uniform(0.5, 2.0, shape) if dt.kind == "f" else rng.integers(0, 4, shape)
            out[a.sym.name] = data.astype(dt)
    return out


def sgemm_loop(M: int, N: int, K: int, A: Any, B: Any, C: Any) -> None:
    """sgemm as a plain Python triple loop over numpy arrays (numpy float32 scalars)."""
    for i in range(M):
        for j in range(N):
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sgemm", type=int, default=64, help="sgemm size n (n^3 multiply-adds)")
    ap.add_argument("--scale", type=int, default=8, help="size factor of the scaled corpus")
    ap.add_argument("--verbose", action="store_true", help="a row per proc when scaled too")
    ap.add_argument("--quick", action="store_true", help="--repeat 3 --scale 4 --sgemm 16")
    ap.add_argument("--base", help="a commit whose interpreter is timed too (column base)")
    opts = ap.parse_args()
    if opts.quick:
        opts.repeat, opts.scale, opts.sgemm = 3, 4, 16
    old = load_old()
    base = load_old(opts.base, "_base_interp") if opts.base else None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import loops  # the transliterated plain loops (benchmarks/loops.py)

    rng = np.random.default_rng(0)
    print("machine: shared by several sessions (timings noisy; ratios are of one run)")
    header = f"{'old ms':>9s} {'new ms':>9s} {'loop ms':>9s} {'old/new':>8s} {'loop/new':>9s}"
    if base is not None:
        header += f" {'base ms':>9s} {'base/new':>9s}"
    for scale in (1, opts.scale):
        print(f"\n{f'corpus, sizes x{scale}':24s} {header}")
        tot = {"old": 0.0, "new": 0.0, "loop": 0.0}
        logs = {"old": 0.0, "loop": 0.0}
        if base is not None:
            tot["base"] = logs["base"] = 0.0
        skipped = []
        for case in CASES:
            args = case.inputs(rng)
            pd = case.proc.ir()
            if scale != 1:
                args = scaled(pd, args, scale, rng)
            runners: dict[str, Callable[..., Any]] = {
                "old": lambda pd=pd, **a: old(pd, **a),
                "new": lambda pd=pd, **a: interpret(pd, **a),
                "loop": loops.transliterate(pd),
            }
            if base is not None:
                runners["base"] = lambda pd=pd, **a: base(pd, **a)
            try:
                for f in runners.values():
                    f(**copy_args(args))  # compile, warm up
            except CurschedError:
                skipped.append(case.name)  # scaled sizes break its asserts or bounds
                continue
            t = {k: float("inf") for k in runners}
            for _ in range(opts.repeat):  # interleaved: each round times each runner once
                for k, f in runners.items():
                    t[k] = min(t[k], timed(f, args))
            for k in tot:
                tot[k] += t[k]
            for k in logs:
                logs[k] += math.log(t[k] / t["new"])
            if opts.verbose or scale == 1:
                print(row(case.name, t))
        print(row("corpus total", tot))
        count = len(CASES) - len(skipped)
        geo = {k: math.exp(v / count) for k, v in logs.items()}
        line = f"{'per-proc geomean':24s} {'':29s} {geo['old']:8.1f} {geo['loop']:9.2f}"
        if base is not None:
            line += f" {'':9s} {geo['base']:9.2f}"
        print(line)
        if skipped:
            print(f"  (not scalable, skipped: {', '.join(skipped)})")
    compile_module._CODE.clear()  # compiled from scratch, not from the code object cache
    start = time.perf_counter()
    cps = [Compiler(case.proc.ir(), compiled).compile() for case in CASES]
    runs = time.perf_counter() - start
    for cp in cps:  # what calls from other procs and the general binding compile
        cp.general()
    both = time.perf_counter() - start
    print(
        f"\ncompiling the corpus's {len(CASES)} procs: {runs:.3f} s their runs"
        f" ({both:.3f} s with the general functions, compiled when first needed;"
        " from scratch)"
    )
    n = opts.sgemm
    A, B = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    C = np.zeros((n, n), np.float32)
    pd = sgemm.ir()
    interpret(pd, n, n, n, A, B, C.copy())
    sgemm_runs: dict[str, Callable[[], Any]] = {
        "old": lambda: old(pd, n, n, n, A, B, C.copy()),
        "new": lambda: interpret(pd, n, n, n, A, B, C.copy()),
        "loop": lambda: sgemm_loop(n, n, n, A, B, C.copy()),
    }
    if base is not None:
        sgemm_runs["base"] = lambda: base(pd, n, n, n, A, B, C.copy())
    ts = {k: float("inf") for k in sgemm_runs}
    for _ in range(max(1, opts.repeat // 2)):
        for k, f in sgemm_runs.items():
            ts[k] = min(ts[k], best(f, 1))
    print(f"\n{'':24s} {header}")
    print(row(f"sgemm {n}^3", ts))


if __name__ == "__main__":
    main()
