"""bind_expr, inline_assign, inline_window: golden, negative, forwarding, differential."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import bind_expr, inline_assign, inline_window, proc
from cursched.cursors import AllocCursor, AssignCursor, Tombstone
from cursched.primitives.buffers.windows_inline import NotAWindowError
from cursched.primitives.exprs.binds import (
    BadBindNameError,
    ExprsDifferError,
    ExprsNotAfterFirstError,
    NotALocalBufferError,
    NotAnAssignError,
    NotBindableError,
    PrecisionMismatchError,
    ReadElsewhereError,
    ReadsChangedError,
    WrittenElsewhereError,
)
from cursched.primitives.exprs.exprs import NotInBodyError, OverlappingExprsError
from cursched.testing import assert_equivalent
from cursched.testing.plugin import Golden


@proc
def twice(n: size, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM, z: f64[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i, 0] * 2.0 + 1.0
        for j in seq(0, 2):
            y[i] += x[i, 0] * 2.0 * x[i, j]
        z[i] = x[i, 0] * 2.0
        x[i, 0] = 0.0
        y[i] += x[i, 0] * 2.0


@proc
def temp(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f64[n] @ DRAM):
    t: f32
    u: f32
    for i in seq(0, n):
        t = x[i] * a
        y[i] = t + 1.0
        y[i] += t * t
        u = x[i]
        x[i] = 0.0
        y[i] += u
    for k in seq(0, n):
        u = y[k]
        z[k] = u


@proc
def carried(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    t: f32
    t = 0.0
    for i in seq(0, n):
        y[i] = t
        t = x[i]


@proc
def scale4(v: [f32][4] @ DRAM):
    for k in seq(0, 4):
        v[k] = v[k] * 2.0


@proc
def windows(n: size, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        w = x[i, 2:6]
        y[i] += w[1] + w[3]
        w[0] = 3.0
        v = w[1:3]
        v[1] += y[i]
        scale4(w)


# -------------------------------------------------------------------------------- bind_expr


def test_bind_expr_golden_and_forwarding(golden: Golden) -> None:
    first, second = twice.find_all("x[_] * 2.0")[:2]
    stmt = twice.find("y[_] = _")
    p, c = bind_expr(twice, [first, second], "b")
    golden.check(p)
    assert isinstance(c.alloc, AllocCursor) and c.alloc.name() == "b"
    assert isinstance(c.assign, AssignCursor) and c.assign.next() == p.forward(stmt)
    assert [r.name() for r in c.reads] == ["b", "b"]
    assert c.reads[0] == p.forward(stmt).rhs().lhs()
    for old in (first, second, first.lhs()):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and "bound to `b` by bind_expr; use .reads" in (
            dead.story()
        )
    assert_equivalent(twice, p, trials=3, rtol=0, atol=0)


def test_bind_expr_compiles() -> None:
    p, _ = bind_expr(twice, twice.find_all("x[_] * 2.0")[:2], "b")
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((5, 8)).astype(np.float32)
    outs = []
    for q in (twice, p):
        x, y, z = x0.copy(), np.zeros(5, np.float32), np.zeros(5, np.float64)
        q.compile()(5, x, y, z)
        outs.append((x, y, z))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)  # the C of both versions agrees bit for bit
    x, y, z = x0.copy(), np.zeros(5, np.float32), np.zeros(5, np.float64)
    twice.interpret(5, x, y, z)
    # C may contract a * b + c into one fused multiply-add (-march=native), the interpreter
    # rounds twice: the two agree to rounding, not bit for bit.
    np.testing.assert_allclose(outs[1][1], y, rtol=1e-6)


def test_bind_expr_not_in_body() -> None:
    with pytest.raises(NotInBodyError):
        bind_expr(blocked_assert, [blocked_assert.find("n % 4")], "b")


@proc
def blocked_assert(n: size, x: f32[n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n):
        x[i] = 1.0


def test_bind_expr_overlapping() -> None:
    e = twice.find("x[_] * 2.0")
    with pytest.raises(OverlappingExprsError):
        bind_expr(twice, [e, e], "b")


def test_bind_expr_not_bindable() -> None:
    with pytest.raises(NotBindableError):
        bind_expr(twice, [twice.find("x[_] * 2.0").lhs().idx()[0]], "b")


def test_bind_expr_differ() -> None:
    with pytest.raises(ExprsDifferError):
        bind_expr(twice, [twice.find("x[_] * 2.0"), twice.find("x[_] * 2.0 * _")], "b")


def test_bind_expr_bad_name() -> None:
    with pytest.raises(BadBindNameError):
        bind_expr(twice, [twice.find("x[_] * 2.0")], "for")
    with pytest.raises(BadBindNameError):
        bind_expr(twice, [twice.find("x[_] * 2.0")], "2b")


def test_bind_expr_not_after_first() -> None:
    inner = twice.find_all("x[_] * 2.0")[1]  # inside the j loop
    third = twice.find_all("x[_] * 2.0")[2]  # after the loop: another block
    with pytest.raises(ExprsNotAfterFirstError):
        bind_expr(twice, [inner, third], "b")


def test_bind_expr_precision() -> None:
    first, _, third, _ = twice.find_all("x[_] * 2.0")
    with pytest.raises(PrecisionMismatchError):
        bind_expr(twice, [first, third], "b")  # y is f32, z is f64


def test_bind_expr_reads_changed() -> None:
    first, _, _, last = twice.find_all("x[_] * 2.0")
    with pytest.raises(ReadsChangedError, match="reads x") as e:
        bind_expr(twice, [first, last], "b")  # x[i, 0] = 0.0 stands between
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


def test_bind_expr_other_elements_may_change() -> None:
    @proc
    def neighbour(n: size, x: f32[n + 1, 4] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            y[i] = x[i, 1] * 2.0
            for j in seq(0, 4):
                x[i + 1, j] = y[i]
            x[i, 2] = 0.0
            y[i] += x[i, 1] * 2.0

    p, c = bind_expr(neighbour, neighbour.find_all("x[_] * 2.0"), "b")
    assert len(c.reads) == 2
    assert_equivalent(neighbour, p, trials=3, rtol=0, atol=0)
    q, _ = inline_assign(p, c.assign)
    assert_equivalent(neighbour, q, trials=3, rtol=0, atol=0)


def test_bind_expr_reads_changed_through_a_window() -> None:
    @proc
    def alias(n: size, x: f32[n, 4] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            y[i] = x[i, 1] * 2.0
            w = x[i, 0:4]
            w[1] = 5.0
            y[i] += x[i, 1] * 2.0

    with pytest.raises(ReadsChangedError, match="reads x"):
        bind_expr(alias, alias.find_all("x[_] * 2.0"), "b")


# ---------------------------------------------------------------------------- inline_assign


def test_inline_assign_golden_and_forwarding(golden: Golden) -> None:
    assign = temp.find("t = _")
    reads = temp.find_all("t")
    stmt = temp.find("y[_] = t + _")
    p, c = inline_assign(temp, assign)
    golden.check(p)
    assert len(c.reads) == 3 and all(r.node().op == "*" for r in c.reads)
    assert c.reads[0] == p.forward(stmt).rhs().lhs()
    dead = p.forward(assign)
    assert isinstance(dead, Tombstone) and "inlined by inline_assign; use .reads" in dead.story()
    assert len(reads) == 3
    for r in reads:
        gone = p.forward(r)
        assert isinstance(gone, Tombstone) and "use .reads" in gone.story()
    assert_equivalent(temp, p, trials=3, rtol=0, atol=0)


def test_inline_assign_not_an_assign() -> None:
    with pytest.raises(NotAnAssignError):
        inline_assign(temp, "y[_] += t * t")


def test_inline_assign_not_local_buffer() -> None:
    with pytest.raises(NotALocalBufferError):
        inline_assign(temp, "y[_] = _")  # a parameter: the caller reads it


def test_inline_assign_tensor_element() -> None:
    @proc
    def elem(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        t: f32[4]
        for i in seq(0, n):
            t[1] = x[i] * 2.0
            y[i] = t[1] + t[2 - 1]

    p, c = inline_assign(elem, "t[_] = _")
    assert "y[i] = x[i] * 2.0 + x[i] * 2.0" in str(p) and len(c.reads) == 2
    assert_equivalent(elem, p, trials=3, rtol=0, atol=0)

    @proc
    def other(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        t: f32[4]
        for i in seq(0, n):
            t[1] = x[i] * 2.0
            t[2] = 1.0
            y[i] = t[1] + t[2]

    with pytest.raises(WrittenElsewhereError):
        inline_assign(other, "t[1] = _")

    @proc
    def stale(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        t: f32[n]
        for i in seq(0, n):
            t[i] = x[i] * 2.0
            if i > 0:
                y[i] = t[i - 1]

    with pytest.raises(ReadElsewhereError, match="another element"):
        inline_assign(stale, "t[_] = _")


def test_inline_assign_written_elsewhere() -> None:
    with pytest.raises(WrittenElsewhereError):
        inline_assign(carried, "t = 0.0")


def test_inline_assign_read_elsewhere() -> None:
    @proc
    def after_loop(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        assert n > 0
        t: f32
        for i in seq(0, n):
            t = x[i]
        y[0] = t

    with pytest.raises(ReadElsewhereError):
        inline_assign(after_loop, "t = x[_]")  # read after the loop, outside its block


def test_inline_assign_precision() -> None:
    @proc
    def widen(n: size, x: f32[n] @ DRAM, z: f64[n] @ DRAM):
        for i in seq(0, n):
            s: f32
            s = x[i] * 3.0
            z[i] = s

    with pytest.raises(PrecisionMismatchError):
        inline_assign(widen, "s = _")


def test_inline_assign_reads_changed() -> None:
    # Exo 1.0 inlines this one into `y[i] = x[i]`, read after `x[i] = 0.0`.
    @proc
    def clobber(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            s: f32
            s = x[i]
            x[i] = 0.0
            y[i] = s

    with pytest.raises(ReadsChangedError):
        inline_assign(clobber, "s = _")


# ---------------------------------------------------------------------------- inline_window


def test_inline_window_golden_and_forwarding(golden: Golden) -> None:
    win = windows.find("w = _")
    write = windows.find("w[_] = 3.0")
    use = windows.find("w[_] + w[_]").lhs()
    p, c = inline_window(windows, win)
    golden.check(p)
    kinds = [r.kind() for r in c.reads]
    assert kinds == ["Read", "Read", "Assign", "WindowExpr", "WindowExpr"]
    assert p.forward(write) == c.reads[2]  # writes keep their identity
    assert isinstance(p.forward(use), Tombstone)
    dead = p.forward(win)
    assert isinstance(dead, Tombstone) and "inlined by inline_window; use .reads" in dead.story()
    assert_equivalent(windows, p, trials=3, rtol=0, atol=0)
    p, _ = inline_window(p, "v = _")
    assert "x[i, 4] += y[i]" in str(p)
    assert_equivalent(windows, p, trials=3, rtol=0, atol=0)


def test_inline_window_compiles() -> None:
    p, _ = inline_window(windows, "w = _")
    f = p.compile()
    rng = np.random.default_rng(3)
    x1 = rng.standard_normal((4, 8)).astype(np.float32)
    y1 = rng.standard_normal(4).astype(np.float32)
    x2, y2 = x1.copy(), y1.copy()
    f(4, x1, y1)
    windows.interpret(4, x2, y2)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)


def test_inline_window_not_a_window() -> None:
    with pytest.raises(NotAWindowError):
        inline_window(windows, "y[_] += _")
