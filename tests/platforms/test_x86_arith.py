"""cursched.platforms.x86.avx2_arith: each instruction replaces its loop and computes its body
bitwise (compiled against the interpreter and against the scalar C code, on random values and
every pair of special values)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import Proc
from cursched.platforms.x86 import (
    cpu_features,
    mm256_acc_ps,
    mm256_div_ps,
    mm256_loadu_ps,
    mm256_storeu_ps,
    mm256_sub_guarded_ps,
    mm256_sub_ps,
)

from .test_x86_instrs import SPECIAL, _binop, _in_dram, _replace_all

pytestmark = pytest.mark.skipif(
    not {"avx2", "fma"} <= cpu_features(), reason="this CPU lacks AVX2+FMA"
)

OPS: dict[str, tuple[str, Proc]] = {
    "sub": ("c[i] = a[i] - b[i]", mm256_sub_ps),
    "div": ("c[i] = a[i] / b[i]", mm256_div_ps),
    "acc": ("c[i] += a[i]", mm256_acc_ps),
    "sub_guarded": ("c[i] = a[i] - select(-inf, b[i], b[i], 0.0)", mm256_sub_guarded_ps),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_arith_instruction_is_the_scalar_code_bitwise(name: str) -> None:
    body, ins = OPS[name]
    plain = _binop(body)
    steps = [("i #0", mm256_loadu_ps)] * 3 + [("i #0", ins), ("i #0", mm256_storeu_ps)]
    vec = _replace_all(plain, steps)
    assert f"mm256_{name}_ps(c[0:8]" in str(vec)
    scalar, vector = _in_dram(plain, "a", "b", "c").compile(), vec.compile()
    rng = np.random.default_rng(2)
    pairs = [(a, b) for a in SPECIAL for b in SPECIAL]
    for k in range(0, len(pairs), 8):
        x = np.array([a for a, _ in pairs[k : k + 8]], np.float32)
        y = np.array([b for _, b in pairs[k : k + 8]], np.float32)
        x, y = np.resize(x, 8), np.resize(y, 8)
        if k % 16:
            x, y = rng.standard_normal((2, 8)).astype(np.float32) * 10
        z = rng.standard_normal(8).astype(np.float32)
        want, got, interp = z.copy(), z.copy(), z.copy()
        with np.errstate(all="ignore"):
            scalar(x, y, want)
            vector(x, y, got)
            plain.interpret(x, y, interp)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        np.testing.assert_array_equal(got, interp)  # NaN = NaN, whatever its payload


def test_sub_guarded_keeps_minus_inf_rows_finite() -> None:
    """The guard: a running max of -inf (or NaN) is subtracted as 0."""
    plain = _binop(OPS["sub_guarded"][0])
    steps = [("i #0", mm256_loadu_ps)] * 3 + [("i #0", mm256_sub_guarded_ps)]
    vec = _replace_all(plain, [*steps, ("i #0", mm256_storeu_ps)])
    x = np.array([-np.inf, 1, 2, 3, -np.inf, 5, 6, 7], np.float32)
    m = np.array([-np.inf, -np.inf, np.nan, 3, 1, np.inf, 0, -0.0], np.float32)
    z = np.zeros(8, np.float32)
    vec.compile()(x, m, z)
    np.testing.assert_array_equal(z, [-np.inf, 1, 2, 0, -np.inf, -np.inf, 6, 7])
