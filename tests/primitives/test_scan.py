"""scan_fuse: golden output, one negative test per precondition (with the issue's
counter-examples), forwarding, differential equivalence (interpreter, and the C backend for a
sample), infinities."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, proc, scan_fuse, split
from cursched.cursors import ExprCursor, Tombstone
from cursched.errors import StaleCursorError
from cursched.primitives.scans.scan import (
    AccumulatorAliasError,
    AccumulatorIndexError,
    AccumulatorInitError,
    AccumulatorReadError,
    AccumulatorWritesError,
    NotRescalableError,
    ScanBetweenError,
    ScanBoundsError,
    ScanFirstLoopError,
    ScanLoopOrderError,
)
from cursched.testing import assert_equivalent


@proc
def softmax(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    for i in seq(0, n):
        y[i] = exp(x[i] - m) / s


@proc
def lse(n: size, x: f32[n] @ DRAM, out: f32[1] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    out[0] = m + log(s)


@proc
def attn_row(n: size, d: size, s: f32[n] @ DRAM, v: f32[n, d] @ DRAM, o: f32[d] @ DRAM):
    assert n % 4 == 0
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, s[i])
    l: f32
    l = 0.0
    for j in seq(0, d):
        o[j] = 0.0
    for i in seq(0, n):
        l += exp(s[i] - m)
        for j in seq(0, d):
            o[j] += exp(s[i] - m) * v[i, j]
    for j in seq(0, d):
        o[j] = o[j] / l


@proc
def other_terms(n: size, x: f32[n] @ DRAM, r: f32[4] @ DRAM):
    m: f32
    m = inf
    for i in seq(0, n):
        m = fmin(m, x[i])
    s: f32
    s = 0.0
    t: f32
    t = 0.0
    for i in seq(0, n):
        s += exp(0.5 * (m - x[i])) * x[i]
        t += expf(0.5 * m - 0.5 * x[i]) * (m - m + 1.0)
    r[0] = s
    r[1] = t


@proc
def prefix_weighted(n: size, x: f32[n] @ DRAM, d: f32[n] @ DRAM, r: f32[2] @ DRAM):
    acc: f32
    acc = 0.0
    for i in seq(0, n):
        acc = d[i] * acc + x[i]
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp2(x[i] - acc)
    r[0] = acc
    r[1] = s


def _loops(p):  # type: ignore[no-untyped-def]
    return p.find_loop("i #0"), p.find_loop("i #1")


# ------------------------------------------------------------------------------ positive


def test_softmax_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    first, second = _loops(softmax)
    update = softmax.find("m = fmax(_)")
    acc = softmax.find("s += _")
    p, c = scan_fuse(softmax, first, second)
    golden.check(p)
    assert p.forward(second) == c.fused
    assert p.forward(update) == c.first_updates[0]
    assert p.forward(acc) == c.second_updates[0]
    dead = p.forward(first)
    assert isinstance(dead, Tombstone) and not dead
    assert dead.killer == "scan_fuse" and "first_updates" in dead.hint
    with pytest.raises(StaleCursorError, match="fused into `fused` by scan_fuse"):
        scan_fuse(p, first, c.fused)
    assert [str(x.node().sym) for x in c.saved] == ["m_prev", "m_prev"]
    assert len(c.factor) == 2 and len(c.rescales) == 1
    assert len(c.guards) == 2 and all(isinstance(g, ExprCursor) for g in c.guards)
    assert c.guards[0].node().name == "select"
    assert_equivalent(softmax, p)


def test_lse_and_tiles(golden) -> None:  # type: ignore[no-untyped-def]
    p, _ = scan_fuse(lse, *_loops(lse))
    golden.check(p, name="lse")
    assert_equivalent(lse, p)
    # tile level: one correction per tile of 4 (flash attention 2 granularity)
    first, second = _loops(attn_row)
    q, a = split(attn_row, first, 4, tail="perfect")
    q, b = split(q, second, 4, tail="perfect")
    q, c = scan_fuse(q, a.outer, b.outer)
    golden.check(q, name="attn_tiles")
    assert len(c.rescales) == 2 and len(c.second_updates) == 2 and len(c.guards) == 3
    assert c.fused.name() == "io"
    assert_equivalent(attn_row, q, sizes={"n": 8, "d": 3})


def test_other_rates_directions_and_smt() -> None:
    # fmin running value, rate -1/2, a constant factor, expf, a term only SMT proves
    p, c = scan_fuse(other_terms, *_loops(other_terms))
    assert "alpha = select(m, m_prev, exp(0.5 * (m - m_prev)), 1.0)" in str(p)
    assert "t += expf(0.5 * select(m, inf, m, 0.0) - 0.5 * x[i])" in str(p)
    assert len(c.rescales) == 2 and len(c.guards) == 1 + 1 + 3
    assert_equivalent(other_terms, p)
    # a running value that is no reduction (a discounted scan), base 2, nested guard
    q, c2 = scan_fuse(prefix_weighted, *_loops(prefix_weighted))
    text = str(q)
    assert "exp2(m_prev - m)" not in text and "exp2(acc_prev - acc)" in text
    assert text.count("select(") == 2  # the nested correction guard; no term guard
    assert "s += exp2(x[i] - acc)" in text
    assert len(c2.guards) == 1 and str(c2.saved[1].node().sym) == "acc_prev"
    assert_equivalent(prefix_weighted, q, rtol=1e-4, atol=1e-5)


def test_fused_softmax_compiles() -> None:
    p, _ = scan_fuse(softmax, *_loops(softmax))
    f = p.compile()
    rng = np.random.default_rng(1)
    x = rng.standard_normal(100).astype(np.float32)
    y = np.zeros(100, np.float32)
    f(100, x, y)
    ref = np.exp(x.astype(np.float64) - x.max())
    np.testing.assert_allclose(y, ref / ref.sum(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "row",
    [
        [-np.inf, -np.inf, 1.0, 2.0, 0.5],
        [3.0, 3.0, 3.0, 3.0],
        [-np.inf, 0.0],
        [2.0, -np.inf, 5.0, -np.inf],
    ],
)
def test_infinities(row: list[float]) -> None:
    p, _ = scan_fuse(softmax, *_loops(softmax))
    q, _ = scan_fuse(lse, *_loops(lse))
    x = np.array(row, np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max())
    for version in (p, p.compile()):
        y = np.zeros_like(x)
        if version is p:
            p.interpret(len(x), x, y)
        else:
            version(len(x), x, y)
        assert not np.isnan(y).any()
        np.testing.assert_allclose(y, e / e.sum(), atol=1e-6, rtol=1e-5)
    out = np.zeros(1, np.float32)
    q.interpret(len(x), x, out)
    np.testing.assert_allclose(out[0], x64.max() + np.log(e.sum()), rtol=2e-6)


# ------------------------------------------------------------------------------ negative


@proc
def bad_bounds(n: size, x: f32[n] @ DRAM, r: f32[1] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n - 1):
        s += exp(x[i] - m)
    r[0] = s


@proc
def bad_between(n: size, x: f32[n] @ DRAM, r: f32[2] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    r[1] = m
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    r[0] = s


@proc
def bad_first(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, r: f32[1] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
        y[i] = m
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    r[0] = s


@proc
def bad_first_reads(n: size, x: f32[n] @ DRAM, r: f32[1] @ DRAM):
    m: f32
    m = -inf
    s: f32
    s = 0.0
    for i in seq(0, n):
        m = fmax(m, x[i] + s)
    for i in seq(0, n):
        s += exp(x[i] - m)
    r[0] = s


def _two(term: str, init: str = "0.0", extra: str = "") -> object:
    src = f"""
def p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, r: f32[1] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = {init}
    for i in seq(0, n):
        s += {term}
{extra}
    r[0] = s
"""
    return _parse(src)


def _parse(src: str) -> object:
    from cursched.frontend import parse_source
    from cursched.proc import Proc

    return Proc(parse_source(src, {"DRAM": DRAM}))


@pytest.mark.parametrize(
    ("term", "extra", "why"),
    [
        ("exp(x[i] * m)", "", "not rescalable"),
        ("(x[i] - m) * (x[i] - m)", "", "not rescalable"),
        ("exp(x[i] - m) * m / m", "", "counterexample"),
        ("exp(x[i] - m) + 1.0", "", "not rescalable"),
        ("exp(x[i] - m)", "        y[i] = m", "outside an accumulation"),
    ],
)
def test_not_rescalable(term: str, extra: str, why: str) -> None:
    p = _two(term, extra=extra)
    with pytest.raises(NotRescalableError, match=why) as e:
        scan_fuse(p, *_loops(p))  # type: ignore[arg-type]
    assert "scan_fuse" in str(e.value)


def test_variance_counterexample() -> None:
    p = _two("(x[i] - m) * (x[i] - m)")
    with pytest.raises(NotRescalableError) as e:
        scan_fuse(p, *_loops(p))  # type: ignore[arg-type]
    cex = e.value.counterexample  # type: ignore[attr-defined]
    assert cex is not None and cex["m1"] != cex["m2"]


def test_order_bounds_between_first() -> None:
    first, second = _loops(softmax)
    with pytest.raises(ScanLoopOrderError):
        scan_fuse(softmax, second, first)
    with pytest.raises(ScanBoundsError, match="upper bounds differ"):
        scan_fuse(bad_bounds, *_loops(bad_bounds))
    with pytest.raises(ScanBetweenError, match="between the loops"):
        scan_fuse(bad_between, *_loops(bad_between))
    with pytest.raises(ScanFirstLoopError, match="writes `m` and `y`"):
        scan_fuse(bad_first, *_loops(bad_first))
    with pytest.raises(ScanFirstLoopError, match="reads s, written by the second"):
        scan_fuse(bad_first_reads, *_loops(bad_first_reads))
    q = _two("exp(x[i] - m)", extra="        m = 0.0")
    with pytest.raises(ScanFirstLoopError, match="reads m, written by the second"):
        scan_fuse(q, *_loops(q))  # type: ignore[arg-type]


def test_accumulator_starts_from_zero() -> None:
    p = _two("exp(x[i] - m)", init="1.0")
    with pytest.raises(AccumulatorInitError, match="not a zeroing"):
        scan_fuse(p, *_loops(p))  # type: ignore[arg-type]


def test_accumulator_read_and_written() -> None:
    p = _two("exp(x[i] - m)", extra="        y[i] = s")
    with pytest.raises(AccumulatorReadError, match="read inside the loops"):
        scan_fuse(p, *_loops(p))  # type: ignore[arg-type]
    q = _two("exp(x[i] - m)", extra="        s += 1.0")
    with pytest.raises(AccumulatorWritesError, match="its own `\\+=`"):
        scan_fuse(q, *_loops(q))  # type: ignore[arg-type]


@proc
def bad_alias(n: size, x: f32[n] @ DRAM, o: f32[4] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    w = o[0:4]
    for j in seq(0, 4):
        w[j] = 0.0
    for i in seq(0, n):
        for j in seq(0, 4):
            w[j] += exp(x[i] - m)


@proc
def bad_index(n: size, x: f32[n] @ DRAM, o: f32[n] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    for i in seq(0, n):
        o[i] = 0.0
    for i in seq(0, n):
        o[i] += exp(x[i] - m)


def test_accumulator_alias_and_index() -> None:
    with pytest.raises(AccumulatorAliasError, match="aliases a window"):
        scan_fuse(bad_alias, bad_alias.find_loop("i #0"), bad_alias.find_loop("i #1"))
    with pytest.raises(AccumulatorIndexError, match="indexed by `i`"):
        scan_fuse(bad_index, bad_index.find_loop("i #0"), bad_index.find_loop("i #2"))


# ------------------------------------------------------------------- more positive cases


def test_history_replays_and_between_statements_move() -> None:
    from cursched.ir.alpha import alpha_equal

    init = softmax.find("s = 0.0")
    p, c = scan_fuse(softmax, *_loops(softmax))
    moved = p.forward(init)
    assert moved and moved.node() is init.node()
    assert moved.path()[-1][1] < c.fused.path()[-1][1]  # now before the fused loop
    env: dict[str, object] = {"softmax": softmax}
    exec(p.history(), env)
    assert alpha_equal(env["p"].ir(), p.ir())  # type: ignore[attr-defined]


def test_split_with_guarded_tail() -> None:
    # tiles of 4 with a guarded tail: the accumulations sit inside ifs
    first, second = _loops(lse)
    p, a = split(lse, first, 4, tail="guard")
    p, b = split(p, second, 4, tail="guard")
    p, c = scan_fuse(p, a.outer, b.outer)
    assert str(p).count("if ") == 2 and len(c.rescales) == 1
    assert_equivalent(lse, p, trials=4)


def test_all_minus_inf_row_is_an_empty_sum() -> None:
    # where the reals say nothing: the unfused loops compute exp(-inf - -inf) = NaN, the
    # fused loop sums nothing (as the docstring says)
    p, _ = scan_fuse(lse, *_loops(lse))
    x = np.full(3, -np.inf, np.float32)
    before, after = np.zeros(1, np.float32), np.zeros(1, np.float32)
    lse.interpret(3, x, before)
    p.interpret(3, x, after)
    assert np.isnan(before[0]) and after[0] == -np.inf


@proc
def par_first(n: size, x: f32[n] @ DRAM, r: f32[1] @ DRAM):
    m: f32
    m = -inf
    for i in par(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    r[0] = s


def test_first_loop_must_be_sequential() -> None:
    with pytest.raises(ScanFirstLoopError, match="`par` loop"):
        scan_fuse(par_first, *_loops(par_first))


@proc
def two_rates(n: size, x: f32[n] @ DRAM, r: f32[2] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    t: f32
    t = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
        t += exp(2.0 * (x[i] - m))
    r[0] = s
    r[1] = t


def test_correction_must_not_overflow() -> None:
    # a growing max with terms that grow with it: the first correction exp(m - m_prev) is
    # exp(inf), times the empty sum: NaN; refused (with fmax, and with an assignment from -inf)
    p = _two("exp(m - x[i])")
    with pytest.raises(NotRescalableError, match="grows from -inf"):
        scan_fuse(p, *_loops(p))  # type: ignore[arg-type]
    q = _parse(
        """
def q(n: size, x: f32[n] @ DRAM, r: f32[1] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = x[i]
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(2.0 * (m - x[i]))
    r[0] = s
"""
    )
    with pytest.raises(NotRescalableError, match="rate -2 would grow without bound"):
        scan_fuse(q, *_loops(q))


def test_one_rate_for_all_accumulators() -> None:
    with pytest.raises(NotRescalableError, match="different rates"):
        scan_fuse(two_rates, *_loops(two_rates))


@proc
def lse_f64_sum(n: size, x: f32[n] @ DRAM, out: f64[1] @ DRAM):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f64
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    out[0] = m + log(s)


def test_accumulator_in_another_precision() -> None:
    p, c = scan_fuse(lse_f64_sum, *_loops(lse_f64_sum))
    assert "alpha: f32" in str(p) and c.rescales[0].node().rhs.type.name == "f64"
    assert_equivalent(lse_f64_sum, p, rtol=1e-5, atol=1e-5)
    x = np.random.default_rng(2).standard_normal(50).astype(np.float32)
    out = np.zeros(1)
    p.compile()(50, x, out)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out[0], x64.max() + np.log(np.exp(x64 - x64.max()).sum()), 1e-6)


@proc
def running_window(n: size, x: f32[n] @ DRAM, mb: f32[2] @ DRAM, r: f32[1] @ DRAM):
    w = mb[0:2]
    mb[0] = -inf
    for i in seq(0, n):
        mb[0] = fmax(mb[0], x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - mb[0]) + 0.0 * w[0]
    r[0] = s


def test_running_value_must_not_alias() -> None:
    # a window of the running value's buffer would read it outside the terms
    with pytest.raises(ScanFirstLoopError, match="is a window or has one"):
        scan_fuse(running_window, *_loops(running_window))


@proc
def _peek(a: [f32][1] @ DRAM, out: [f32][1] @ DRAM):
    out[0] = a[0]


@proc
def running_in_call(n: size, x: f32[n] @ DRAM, mb: f32[1] @ DRAM, z: f32[n] @ DRAM):
    mb[0] = -inf
    for i in seq(0, n):
        mb[0] = fmax(mb[0], x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - mb[0])
        _peek(mb[0:1], z[i : i + 1])
    z[0] = s


def test_running_value_passed_to_a_call() -> None:
    # the callee may write what it is passed: the first loop's value is written by the second
    with pytest.raises(ScanFirstLoopError, match="reads mb, written by the second loop"):
        scan_fuse(running_in_call, *_loops(running_in_call))
