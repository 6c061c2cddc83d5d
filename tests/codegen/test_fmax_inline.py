"""``fmax``/``fmin`` compile to inline helpers, not libm calls, with libm's results: a NaN
operand is ignored, and on equal operands (``+0.0``, ``-0.0``) the second one is returned, as
glibc's x86-64 ``fmaxf`` (one ``maxss``) does."""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools

import numpy as np
import pytest

from cursched import DRAM, proc


@proc
def min_max32(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM, hi: f32[n] @ DRAM, lo: f32[n] @ DRAM):
    for i in seq(0, n):
        hi[i] = fmax(a[i], b[i])
        lo[i] = fmin(a[i], b[i])


@proc
def min_max64(n: size, a: f64[n] @ DRAM, b: f64[n] @ DRAM, hi: f64[n] @ DRAM, lo: f64[n] @ DRAM):
    for i in seq(0, n):
        hi[i] = fmax(a[i], b[i])
        lo[i] = fmin(a[i], b[i])


SPECIALS = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]


def _libm() -> ctypes.CDLL:
    name = ctypes.util.find_library("m")
    if name is None:
        pytest.skip("no C math library to compare with")
    return ctypes.CDLL(name)


@pytest.mark.parametrize(
    ("p", "dtype", "suffix"), [(min_max32, np.float32, "f"), (min_max64, np.float64, "")]
)
def test_same_bits_as_libm(p, dtype, suffix) -> None:  # type: ignore[no-untyped-def]
    pairs = list(itertools.product(SPECIALS, repeat=2))
    a = np.array([x for x, _ in pairs], dtype)
    b = np.array([y for _, y in pairs], dtype)
    hi, lo = np.zeros_like(a), np.zeros_like(a)
    fn = p.compile()
    assert "fmax(" not in fn.c_source and "fmaxf(" not in fn.c_source  # inline, no call
    fn(len(a), a, b, hi, lo)
    libm = _libm()
    ctype = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    for name, got in ((f"fmax{suffix}", hi), (f"fmin{suffix}", lo)):
        f = getattr(libm, name)
        f.restype, f.argtypes = ctype, [ctype, ctype]
        want = np.array([f(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)], dtype)
        same = (want.view(f"u{want.itemsize}") == got.view(f"u{got.itemsize}")) | (
            np.isnan(want) & np.isnan(got)
        )
        assert same.all(), [
            (x, y, w, g) for x, y, w, g, s in zip(a, b, want, got, same, strict=True) if not s
        ]
