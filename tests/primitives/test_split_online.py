"""split_online: golden output, one negative test per precondition, forwarding, differential
equivalence (interpreter, within the reassociation tolerance; a row of -inf, fewer columns
than classes), and the class loop accepted by parallelize_loop."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import Proc, parallelize_loop, proc, scan_fuse, set_precision, split_online
from cursched.cursors import Tombstone
from cursched.primitives.scans.split_online import (
    SplitOnlineLoopError,
    SplitOnlineNameError,
    SplitOnlinePrecisionError,
    SplitOnlineRateError,
    SplitOnlineReadError,
    SplitOnlineShapeError,
    SplitOnlineThreadsError,
)
from cursched.testing import assert_equivalent


@proc
def softmax_stats(R: size, C: size, x: f32[R, C], out: f32[R, 2]):
    for r in seq(0, R):
        m: f32
        m = -inf
        s: f32
        s = 0.0
        t: f32
        t = 0.0
        for j in seq(0, C):
            m = fmax(m, x[r, j])
        for j in seq(0, C):
            s += exp(x[r, j] - m)
            t += x[r, j] * exp(x[r, j] - m)
        out[r, 0] = m + log(s)
        out[r, 1] = t / s


def online(p: Proc = softmax_stats) -> Proc:
    first, second = p.find_loop("j", many=True)
    q, _ = scan_fuse(p, first, second)
    return q


ONLINE = online()


def test_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop = ONLINE.find_loop("j")
    update = ONLINE.find("m = fmax(_)")
    p, c = split_online(ONLINE, loop, 4)
    golden.check(p)
    # the loop forwards to the class loop, its statements to their copies there
    assert p.forward(loop) == c.local and c.local.name() == "jt"
    moved = p.forward(update)
    assert c.inner.is_ancestor_of(moved) and moved.node().sym.name == "m_local"
    assert [a.name() for a in c.parts] == ["m_part", "s_part", "t_part"]
    assert c.combine.name() == "jt" and c.combine.loop().mode == "seq"
    assert "s += s_part[jt] * exp(m_part[jt] - select(-inf, m, m, 0.0))" in str(p)
    # the classes are independent: the class loop can be parallel
    parallelize_loop(p, c.local)
    for sizes in ({"R": 3, "C": 11}, {"R": 2, "C": 3}, {"R": 1, "C": 8}):
        assert_equivalent(softmax_stats, p, trials=2, sizes=sizes, rtol=1e-5, atol=1e-6)


def test_tree_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop = ONLINE.find_loop("j")
    p, c = split_online(ONLINE, loop, 8, tree=True)
    golden.check(p)
    assert p.forward(loop) == c.local
    # levels of 4, 2, 1 classes, each independent; the fold takes in class 0 only
    trips = [lv.node().hi.value for lv in c.levels]  # type: ignore[attr-defined]
    assert trips == [4, 2, 1] and c.combine.node().hi.value == 1  # type: ignore[attr-defined]
    for lv in c.levels:
        parallelize_loop(p, lv)
    for sizes in ({"R": 3, "C": 13}, {"R": 2, "C": 3}, {"R": 1, "C": 16}):
        assert_equivalent(softmax_stats, p, trials=2, sizes=sizes, rtol=1e-5, atol=1e-6)


def test_infinite_rows() -> None:
    """A row of -inf (every class's max stays -inf) and a row with one finite value give
    what the sequential pass gives (the guards keep NaN out)."""
    x = np.full((2, 6), -np.inf, np.float32)
    x[1, 4] = 2.0
    want = np.zeros((2, 2), np.float32)
    ONLINE.interpret(R=2, C=6, x=x, out=want)
    for tree in (False, True):
        p, _ = split_online(ONLINE, ONLINE.find_loop("j"), 4, tree=tree)
        got = np.zeros((2, 2), np.float32)
        p.interpret(R=2, C=6, x=x, out=got)
        np.testing.assert_array_equal(got, want)
        assert got[1, 0] == 2.0


def test_old_loop_statements_tombstone_hint() -> None:
    loop = ONLINE.find_loop("j")
    save = loop.body()[1]
    p, c = split_online(ONLINE, loop, 2)
    assert not isinstance(p.forward(save), Tombstone)
    assert c.inner.is_ancestor_of(p.forward(save))


def test_threads_must_be_positive() -> None:
    for bad in (0, -2, 1.5, True):
        with pytest.raises(SplitOnlineThreadsError):
            split_online(ONLINE, "j", bad)  # type: ignore[arg-type]
    with pytest.raises(SplitOnlineThreadsError, match="power of two"):
        split_online(ONLINE, "j", 6, tree=True)


def test_loop_must_be_sequential() -> None:
    p, _ = parallelize_loop(softmax_stats, "r")
    with pytest.raises(SplitOnlineLoopError):
        split_online(p, "r", 4)


def test_mixed_precisions_are_refused() -> None:
    # the fuzz campaign's schedule 65: the running max set_precision made f64 gave IR the
    # verifier refused (a class's copy typed f32 read as f64); now a typed refusal
    p, _ = set_precision(ONLINE, ONLINE.find("m: _"), "f64")
    with pytest.raises(SplitOnlinePrecisionError, match="f64"):
        split_online(p, "j", 4)


def test_body_must_be_an_online_step() -> None:
    # the sum loop of the plain program (no save, no correction), and the fused loop of a
    # running sum (no max)
    with pytest.raises(SplitOnlineShapeError, match=r"expected 3 \+ 2k statements"):
        split_online(softmax_stats, softmax_stats.find_loop("j #1"), 4)  # two statements

    @proc
    def no_rescale(n: size, x: f32[n], out: f32[1]):
        m: f32
        m = -inf
        s: f32
        s = 0.0
        for j in seq(0, n):
            m_prev: f32
            m_prev = m
            m = fmax(m, x[j])
            alpha: f32
            alpha = select(m_prev, m, exp(m_prev - m), 1.0)
            s = s * alpha
            s += exp(x[j] - select(-inf, m, m, 0.0))
        out[0] = s

    with pytest.raises(SplitOnlineShapeError, match="is not a rescale"):
        split_online(no_rescale, "j", 4)


def test_operands_must_not_read_updated_values() -> None:
    @proc
    def reads_sum(n: size, x: f32[n], out: f32[1]):
        m: f32
        m = -inf
        s: f32
        s = 0.0
        for j in seq(0, n):
            m_prev: f32
            m_prev = m
            m = fmax(m, x[j])
            alpha: f32
            alpha = select(m_prev, m, exp(m_prev - m), 1.0)
            s = alpha * s
            s += exp(x[j] - m)
        out[0] = s

    # the term reads m without its guard
    with pytest.raises(SplitOnlineReadError, match="reads m"):
        split_online(reads_sum, "j", 4)


def test_terms_must_have_rate_one() -> None:
    @proc
    def squared(n: size, x: f32[n], out: f32[1]):
        m: f32
        m = -inf
        s: f32
        s = 0.0
        for j in seq(0, n):
            m_prev: f32
            m_prev = m
            m = fmax(m, x[j])
            alpha: f32
            alpha = select(m_prev, m, exp(m_prev - m), 1.0)
            s = alpha * s
            s += exp(2.0 * (x[j] - select(-inf, m, m, 0.0)))
        out[0] = s

    with pytest.raises(SplitOnlineRateError, match="does not scale as exp"):
        split_online(squared, "j", 4)


def test_names_are_checked() -> None:
    with pytest.raises(SplitOnlineNameError):
        split_online(ONLINE, "j", 4, names=("for", "jo"))
