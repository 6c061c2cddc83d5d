"""Online softmax derived by ``scan_fuse`` (sched/online_softmax.py), compiled to C, against
numpy's two-pass softmax and ``torch.softmax`` on the CPU, all single-threaded, in one run.

Prints, per size, the time of each and the ratios (peer time / cursched time: above 1 means
cursched is faster). Aims (issue 8): at least 1.5x numpy, at par with torch. The derived
kernel runs with the default flags, with ``compile(vector_math=True)`` (libmvec's vector
``expf``, nothing else assumed) and with ``-ffast-math``. Also timed: the naive two-pass proc
compiled as it is, to show what the schedule itself buys.

Run: python benchmarks/online_softmax.py            (sizes up to 4096 x 4096)
     python benchmarks/online_softmax.py --quick    (small sizes, a few seconds)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # single-threaded peers, set before numpy/torch load

import argparse
import importlib.util
import sys
import timeit
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

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


def best(fn: Callable[[], Any], budget: float = 0.5) -> float:
    """The best time of one call over repeats that fit in about ``budget`` seconds."""
    once = timeit.timeit(fn, number=1)
    reps = max(1, min(20, int(budget / max(once, 1e-6))))
    return min(timeit.repeat(fn, number=1, repeat=reps))


def with_tile_asserts(p: Proc, **tiles: int) -> Proc:
    """``p`` with each assert ``size % k == 0`` on a size named in ``tiles`` made
    ``size % tiles[size] == 0``.

    The schedule scripts' procs assert just the tiles the scripts use; the benchmarks time
    larger tiles, whose ``split(..., tail="perfect")`` must follow from the asserts.
    """
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
softmax = with_tile_asserts(SCRIPT.softmax, C=256)
"""sched/online_softmax.py's softmax, asserting ``C % 256 == 0`` to allow larger tiles."""


FAST = ("-ffast-math",)
"""Flags that let gcc vectorise ``expf`` (glibc's libmvec) and the ``fmaxf`` reduction. They
also let the compiler assume no infinities; the run checks rows with ``-inf`` anyway."""


def torch_module() -> Any:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def numpy_softmax(x: np.ndarray, y: np.ndarray) -> None:
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    np.divide(e, e.sum(axis=1, keepdims=True), out=y)


RATIOS = {"cursched": ("numpy/cs", "torch/cs"), "cs vec": ("np/vec", "tc/vec")}
RATIOS |= {"cs fast": ("np/fast", "tc/fast")}
"""The kernels whose times the peers' are divided by, with the header of each ratio."""


def table_row(label: str, times: dict[str, float], ms_format: str = "9.2f") -> str:
    """One line of a benchmark table: ``label``, each time (in ms, in ``times``' order), then
    numpy's and torch's time over each kernel of ``RATIOS`` that ``times`` has."""
    ratios = []
    for k in RATIOS:
        if k in times:
            ratios += [times["numpy"] / times[k], times["torch"] / times[k]]
    cells = [f"{t * 1e3:{ms_format}}ms" for t in times.values()] + [f"{q:10.2f}x" for q in ratios]
    return f"{label:>11} " + " ".join(cells)


def print_table(first: str, kernels: dict[str, Any], rows: Iterable[str | None]) -> int:
    """Print the header (``first``, the kernels, the peers, the ratios of ``table_row``), then
    each row as it comes; 1 at the first row that is None (a wrong kernel), else 0."""
    ratio_heads = [h for k, hs in RATIOS.items() if k in kernels for h in hs]
    head = [first, *kernels, "numpy", "torch", *ratio_heads]
    print(" ".join(f"{h:>11}" for h in head))
    for row in rows:
        if row is None:
            return 1
        print(row)
    return 0


def measure(r: int, c: int, kernels: dict[str, Any], torch: Any) -> str | None:
    """One line of the table for ``r x c`` (None when a kernel's result is wrong)."""
    x = np.random.default_rng(0).standard_normal((r, c)).astype(np.float32)
    x[0, :3] = -np.inf  # a row starting with -inf
    x[1, :] = 0.5  # a row of equal values
    y, y_np = np.empty_like(x), np.empty_like(x)
    numpy_softmax(x, y_np)
    times = {}
    for name, f in kernels.items():
        y.fill(np.nan)  # a kernel that writes nothing must not pass on an earlier result
        f(r, c, x, y)
        if not np.allclose(y, y_np, rtol=1e-5, atol=1e-6):
            print(f"MISMATCH between {name} and numpy", file=sys.stderr)
            return None
        times[name] = best(lambda f=f: f(r, c, x, y))
    times["numpy"] = best(lambda: numpy_softmax(x, y_np))
    times["torch"] = float("nan")
    if torch is not None:
        xt = torch.from_numpy(x)
        times["torch"] = best(lambda: torch.softmax(xt, dim=1))
    _results.record(kernel="softmax", size=[r, c], elements=r * c, times_s=times)
    return table_row(f"{r} x {c}", times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    _results.add_json_flag(ap)
    args = ap.parse_args()
    sizes = [(64, 256), (256, 1024)] if args.quick else [(256, 1024), (1024, 4096), (4096, 4096)]

    derived = SCRIPT.schedule(softmax, reduce_tile=64, norm_tile=256)
    kernels = {
        "cursched": derived.compile(),
        "cs vec": derived.compile(vector_math=True),
        "cs fast": derived.compile(extra_cflags=FAST),
        "naive C": softmax.compile(),
    }
    torch = torch_module()
    print("torch:", torch.__version__ if torch is not None else "not installed")
    print("cursched: the derived kernel, default flags; cs vec: compile(vector_math=True)")
    print("(vectorised expf, IEEE infinities, reductions in order); cs fast:", " ".join(FAST))
    print("naive C: the two-pass proc compiled as written; ratios are peer time / cursched time")
    status = print_table("rows x cols", kernels, (measure(r, c, kernels, torch) for r, c in sizes))
    _results.write_if_asked(args, "online_softmax", "softmax of rows x cols, best time, 1 thread")
    return status


if __name__ == "__main__":
    sys.exit(main())
