"""``compile(vector_math=True)``: vectorised ``expf``/``logf`` (glibc's libmvec) that keep
infinities, NaN and the order of reductions, unlike ``-ffast-math``."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from cursched import DRAM, proc
from cursched.codegen.build import compiler, compiler_version
from cursched.codegen.c.vector_math import VECTOR_MATH_PRELUDE


@proc
def exp_log(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = exp(x[i] - 1.0)
    for i in seq(0, n):
        z[i] = log(y[i])


@proc
def row_sum(n: size, x: f32[n] @ DRAM, s: f32[1] @ DRAM):
    s[0] = 0.0
    for i in seq(0, n):
        s[0] += x[i]


def _inputs(n: int) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32) * 10
    x[:4] = [-np.inf, np.inf, np.nan, 0.0]
    return x


def test_results_within_a_few_ulp_of_the_default_build_with_ieee_specials() -> None:
    n = 1003  # not a multiple of any vector length: the scalar epilogue runs too
    x = _inputs(n)
    outs = []
    for vec in (False, True):
        y, z = np.zeros(n, np.float32), np.zeros(n, np.float32)
        exp_log.compile(vector_math=vec)(n, x, y, z)
        outs.append((y, z))
    (y0, z0), (y1, z1) = outs
    # exp(-inf) = 0, exp(inf) = inf, NaN stays NaN, log(0) = -inf: IEEE, as in a default build
    assert y1[0] == 0 and y1[1] == np.inf and np.isnan(y1[2])
    assert z1[0] == -np.inf and z1[1] == np.inf and np.isnan(z1[2])
    np.testing.assert_allclose(y1, y0, rtol=4 * np.finfo(np.float32).eps, atol=0)
    np.testing.assert_allclose(z1[4:], z0[4:], rtol=0, atol=4 * np.finfo(np.float32).eps * 30)


def test_reductions_keep_their_order() -> None:
    # a sum that reassociation changes: 1e8 + 1 + ... in order loses every 1
    x = np.array([1e8] + [1.0] * 64 + [-1e8] + [1.0] * 15, np.float32)
    want = np.float32(0)
    for v in x:
        want = np.float32(want + v)
    s = np.zeros(1, np.float32)
    row_sum.compile(vector_math=True)(len(x), x, s)
    assert s[0] == want == 15.0


def test_the_prelude_leads_the_built_source() -> None:
    fn = exp_log.compile(vector_math=True)
    assert fn.c_source.startswith(VECTOR_MATH_PRELUDE)  # type: ignore[attr-defined]
    assert not exp_log.compile().c_source.startswith(VECTOR_MATH_PRELUDE)  # type: ignore[attr-defined]


def _gcc_on_x86_64() -> bool:
    if platform.machine() != "x86_64":
        return False
    version = compiler_version(tuple(compiler()))
    return "Free Software Foundation" in version and "clang" not in version


@pytest.mark.skipif(
    not _gcc_on_x86_64(), reason="the prelude declares libmvec's variants for GCC on x86-64 only"
)
def test_the_library_calls_a_libmvec_variant_on_x86_64() -> None:
    fn = exp_log.compile(vector_math=True)
    binary = fn.lib_path.read_bytes()  # type: ignore[attr-defined]
    assert b"_ZGV" in binary and b"_expf" in binary  # e.g. _ZGVeN16v_expf
    plain = exp_log.compile().lib_path.read_bytes()  # type: ignore[attr-defined]
    assert b"_ZGV" not in plain
