"""Data arithmetic in every type pair: compiled C equals the interpreter bit for bit.

Each generated proc reads three inputs of one type and writes several expressions into an
output of another type, so every read is converted, and every operation is done, in the
destination's precision (docs/semantics.md). Integers must wrap around like numpy; f16 must
round after each operation. Built with ``-ffp-contract=off`` so that no FMA changes roundings.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cursched.codegen.c import compile_proc
from cursched.frontend import parse_source
from cursched.interp import interpret

TYPES = ["f16", "f32", "f64", "i8", "ui8", "ui16", "i32"]
NUMPY = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "ui8": "uint8"}
NUMPY |= {"ui16": "uint16", "i32": "int32"}
COMMON = [
    "a[i] + b[i] * c[i]",
    "a[i] * b[i] - c[i]",
    "-(a[i] - b[i])",
    "select(a[i], b[i], c[i], a[i] * 3)",
    "relu(a[i] - b[i])",
    "a[i] / c[i]",
    "a[i] * a[i] * a[i] + 7",
    "fmax(a[i], b[i])",
]
FLOAT_ONLY = ["sqrt(a[i] * a[i] + 1.5)", "fmin(a[i], 0.25)"]
INT_ONLY = ["a[i] % c[i]", "(a[i] + 100) * 100"]


def _source(src: str, dst: str) -> str:
    exprs = COMMON + (FLOAT_ONLY if dst.startswith("f") else INT_ONLY)
    body = "\n".join(f"        out[i, {k}] = {e}" for k, e in enumerate(exprs))
    return (
        f"def mix_{src}_{dst}(n: size, a: {src}[n], b: {src}[n], c: {src}[n],"
        f" out: {dst}[n, {len(exprs)}]):\n"
        f"    for i in seq(0, n):\n{body}\n"
    )


def _inputs(t: str, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    dt = np.dtype(NUMPY[t])
    if dt.kind == "f":
        vals = [rng.standard_normal(n) * 4 for _ in range(3)]
    else:
        info = np.iinfo(dt)
        lo, hi = max(info.min, -(2**20)), min(info.max, 2**20)
        vals = [rng.integers(lo, hi, n) for _ in range(3)]
    # no division by zero, even after conversion to an integer destination (the interpreter
    # raises on it; C returns 0)
    vals[2] = np.where(vals[2] >= 0, vals[2] + 1, vals[2] - 1)
    out = [v.astype(dt) for v in vals]
    return out


PAIRS = [(s, d) for s, d in itertools.product(TYPES, TYPES) if s == d or s in ("i8", "f32")]


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_bitwise(src: str, dst: str) -> None:
    p = parse_source(_source(src, dst), {})
    fn = compile_proc(p, fp_contract_off=True)
    rng = np.random.default_rng(11)
    n = 64
    a, b, c = _inputs(src, n, rng)
    k = len(COMMON) + (len(FLOAT_ONLY) if dst.startswith("f") else len(INT_ONLY))
    out_c = np.zeros((n, k), NUMPY[dst])
    out_i = np.zeros((n, k), NUMPY[dst])
    with np.errstate(all="ignore"):
        fn(n, a, b, c, out_c)
        interpret(p, n, a, b, c, out_i)
    bad = np.nonzero(out_c.view(np.uint8) != out_i.view(np.uint8))
    assert out_c.tobytes() == out_i.tobytes(), (
        f"first difference at {bad[0][:1]}: C {out_c.ravel()[:4]} vs interpreter {out_i.ravel()[:4]}"
    )
