"""tree_scan: golden output, one negative test per precondition, forwarding, differential
equivalence (interpreter, within the reassociation tolerance), every level accepted by
parallelize_loop, and the compiled form against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import parallelize_loop, proc, tree_scan
from cursched.cursors import Tombstone
from cursched.primitives.scans.tree_scan import TreeScanFormError, TreeScanSizeError
from cursched.testing import assert_equivalent


@proc
def prefix8(x: f32[8], y: f32[8]):
    s: f32
    s = 1.5
    for i in seq(0, 8):
        s += x[i]
        y[i] = s


@proc
def max16(x: f32[16], y: f32[20], out: f32[1]):
    m: f32
    m = -inf
    for i in seq(0, 16):
        m = fmaxf(m, x[i])
        y[i + 2] = m
    out[0] = m


@proc
def prod4(x: f64[4], y: f64[4]):
    h: f64
    h = 1.0
    for i in seq(0, 4):
        h = x[i] * h
        y[i] = h


@pytest.mark.parametrize("p", [prefix8, max16, prod4], ids=lambda p: p.name())
def test_tree_scan_is_equivalent_and_parallel(p) -> None:  # type: ignore[no-untyped-def]
    q, c = tree_scan(p, "i")
    assert len(c.up) == len(c.down) + 1
    for level in (*c.up, *c.down):
        q, _ = parallelize_loop(q, level)
    assert_equivalent(p, q, trials=4, rtol=1e-5, atol=1e-5)


def test_golden_and_forwarding(golden) -> None:  # type: ignore[no-untyped-def]
    loop = prefix8.find_loop("i")
    update = loop.body()[0]
    q, c = tree_scan(prefix8, loop)
    golden.check(q)
    assert q.forward(loop) == c.copy
    assert isinstance(q.forward(update), Tombstone)
    assert [lv.loop().hi.value for lv in c.up] == [4, 2, 1]
    assert [lv.loop().hi.value for lv in c.down] == [1, 3]
    assert c.final.node().sym.name == "s"


def test_compiled_matches_numpy() -> None:
    q, _ = tree_scan(prefix8, "i")
    x = np.arange(1, 9, dtype=np.float32)
    y = np.zeros(8, np.float32)
    q.compile()(x, y)
    assert np.allclose(y, 1.5 + np.cumsum(x))


@proc
def sized(n: size, x: f32[n], y: f32[n]):
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += x[i]
        y[i] = s


@proc
def six(x: f32[6], y: f32[6]):
    s: f32
    s = 0.0
    for i in seq(0, 6):
        s += x[i]
        y[i] = s


@proc
def from_one(x: f32[9], y: f32[9]):
    s: f32
    s = 0.0
    for i in seq(1, 9):
        s += x[i]
        y[i] = s


@proc
def exclusive(x: f32[8], y: f32[8]):
    s: f32
    s = 0.0
    for i in seq(0, 8):
        y[i] = s
        s += x[i]


@proc
def linear(d: f32[8], x: f32[8], y: f32[8]):
    s: f32
    s = 0.0
    for i in seq(0, 8):
        s = d[i] * s + x[i]
        y[i] = s


@proc
def no_write(x: f32[8], out: f32[1]):
    s: f32
    s = 0.0
    for i in seq(0, 8):
        s += x[i]
    out[0] = s


@proc
def strided(x: f32[8], y: f32[16]):
    s: f32
    s = 0.0
    for i in seq(0, 8):
        s += x[i]
        y[2 * i] = s


@pytest.mark.parametrize(
    ("p", "error"),
    [
        (sized, TreeScanSizeError),
        (six, TreeScanSizeError),
        (from_one, TreeScanSizeError),
        (exclusive, TreeScanFormError),
        (linear, TreeScanFormError),
        (no_write, TreeScanFormError),
        (strided, TreeScanFormError),
    ],
    ids=lambda x: x.name() if hasattr(x, "name") else x.__name__,
)
def test_precondition_errors(p, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        tree_scan(p, "i")


# The campaign's schedule 54789 (seed 2026): a scan nested in an outer loop whose outputs
# feed back into its operands, through products and differences, until the f32 values
# reach 1e5-1e6 and are cancelled. There the f32 results of the sequential and the tree
# forms differed by 15% (-58.9 vs -50.4), while each is already 9% off its own f64 value and
# the two f64 results agree: rounding of the regrouped sums, amplified by the proc's
# conditioning, not an unsound rewrite. These pin both halves of that diagnosis.
@proc
def nested_feedback(n: size, x: f64[n + 8], y: f64[n + 8], z: f64[n + 8]):
    assert n >= 3
    for j in seq(0, n):
        acc: f64
        acc = 0.0
        for i in seq(0, 8):
            acc += y[i]
            x[i] = acc
        y[0] = x[3] * z[j] - x[7]
        y[j % 8] = x[j % 8] - x[(j + 5) % 8] * y[1]


def test_nested_scan_with_feedback_is_exact_in_f64() -> None:
    """The finding's shape (scan in an outer loop, its outputs fed back into its operands)
    is equivalent at f64's default tolerance: the rewrite is exact in real arithmetic."""
    q, _ = tree_scan(nested_feedback, "i")
    assert_equivalent(nested_feedback, q, trials=4)


@proc
def cancel4(x: f32[4], y: f32[4]):
    s: f32
    s = 0.0
    for i in seq(0, 4):
        s += x[i]
        y[i] = s


@proc
def cancel4_f64(x: f64[4], y: f64[4]):
    s: f64
    s = 0.0
    for i in seq(0, 4):
        s += x[i]
        y[i] = s


@pytest.mark.parametrize(
    ("p", "dt", "want"), [(cancel4, np.float32, (1.0, 0.0)), (cancel4_f64, np.float64, (2.0, 2.0))]
)
def test_f32_difference_is_rounding_of_the_regrouped_sum(p, dt, want) -> None:  # type: ignore[no-untyped-def]
    """In f32, ``1 + 1e8 - 1e8 + 1`` is 1 sequentially but 0 in the tree form (it adds
    ``-1e8 + 1``, which rounds to -1e8, to ``1 + 1e8``); in f64 both give the exact 2. A
    tree scan's f32 results are equal only within a tolerance that the data's conditioning
    sets, as the docstring says."""
    q, _ = tree_scan(p, "i")
    x = np.array([1.0, 1e8, -1e8, 1.0], dt)
    ys, yt = np.zeros(4, dt), np.zeros(4, dt)
    p.interpret(x, ys)
    q.interpret(x, yt)
    assert (ys[3], yt[3]) == want
