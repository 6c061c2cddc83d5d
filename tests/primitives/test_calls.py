"""inline, extract_subproc, call_eqv: golden output, one negative test per precondition,
forwarding, differential equivalence (interpreter, and the C backend for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    DRAM,
    GLOBAL,
    Proc,
    call_eqv,
    extract_subproc,
    inline,
    proc,
    rename,
    reorder_stmts,
    set_precision,
    split,
)
from cursched.cursors import BlockCursor, CallCursor, Tombstone
from cursched.ir.alpha import alpha_equal
from cursched.primitives.calls.call_eqv import (
    CallEqvNotCallError,
    CallEqvNotProvenError,
    CallEqvSignatureError,
    equivalence_story,
)
from cursched.primitives.calls.calls import InlineNotCallError
from cursched.primitives.calls.extract import (
    ExtractBoundLoopError,
    ExtractBoundsError,
    ExtractEscapeError,
    ExtractNameError,
)
from cursched.testing import assert_equivalent


@proc
def scal(n: size, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        x[i] = x[i] * 2.0


@proc
def axpy(n: size, y: [f32][n] @ DRAM, a: f32 @ DRAM, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        y[i] += a * x[i]


@proc
def strided(n: size, x: [f32][n] @ DRAM, out: f32[1] @ DRAM):
    out[0] = 0.0
    for i in seq(0, n):
        if stride(x, 0) == 1:
            out[0] += x[i]


@proc
def nested(x: [f32][8] @ DRAM):
    for h in seq(0, 2):
        scal(4, x[4 * h : 4 * h + 4])


@proc
def caller(n: size, A: f32[n, 8] @ DRAM, s: f32[n] @ DRAM):
    for i in seq(0, n):
        scal(8, A[i, 0:8])
        axpy(4, A[i, 4:8], s[i], A[i, 0:4])
        nested(A[i, 0:8])


@proc
def whole(n: size, A: f32[n, 8] @ DRAM, B: f32[8] @ DRAM, out: f32[1] @ DRAM):
    for i in seq(0, n):
        strided(8, A[i, 0:8], out)
    strided(8, B, out)


# ---------------------------------------------------------------------------------- inline


def test_inline_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    first, second = caller.find("scal(_)"), caller.find("axpy(_)")
    p, c = inline(caller, first)
    p, d = inline(p, second)
    p, e = inline(p, "nested(_)")
    p, f = inline(p, e.body[0].body()[0])
    golden.check(p)
    assert isinstance(c.body, BlockCursor) and isinstance(d.body, BlockCursor)
    for dead in (first, second):
        t = p.forward(dead)
        assert isinstance(t, Tombstone) and "use .body" in t.story()
    assert len(f.body) == 1
    assert_equivalent(caller, p, trials=3)


def test_inline_stride_and_whole_buffer(golden) -> None:  # type: ignore[no-untyped-def]
    p, _ = inline(whole, "strided(_) #0")
    p, _ = inline(p, "strided(_)")
    golden.check(p)
    assert "stride(A, 1) == 1" in str(p) and "stride(B, 0) == 1" in str(p)
    assert_equivalent(whole, p, trials=3)


def test_inline_compiles() -> None:
    p, _ = inline(caller, "axpy(_)")
    rng = np.random.default_rng(2)
    n = 3
    a = rng.standard_normal((n, 8)).astype(np.float32)
    s = rng.standard_normal(n).astype(np.float32)
    a1, a2 = a.copy(), a.copy()
    p.compile()(n, a1, s)
    caller.interpret(n, a2, s)
    np.testing.assert_allclose(a1, a2, rtol=1e-6)


def test_inline_twice_shares_no_variable() -> None:
    p, c = inline(caller, "scal(_)")
    p, d = inline(p, "axpy(_)")
    assert c.body[0].loop().iter is not p.forward(d.body[0]).loop().iter  # type: ignore[union-attr]


def test_inline_not_a_call() -> None:
    with pytest.raises(InlineNotCallError):
        inline(caller, caller.find_loop("i"))


# ------------------------------------------------------------------------ extract_subproc


@proc
def blocky(n: size, A: f32[n, 8] @ DRAM, B: f32[n, 8] @ DRAM):
    assert n > 2
    for i in seq(0, n):
        t: f32[8] @ DRAM
        for j in seq(0, 8):
            t[j] = A[i, j] * 2.0
        for j in seq(0, 8):
            B[i, j] = t[j] + 1.0


def test_extract_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop = blocky.find_loop("j #1")
    stmt = blocky.find("B[_] = _")
    p, c = extract_subproc(blocky, loop, "add_one")
    assert isinstance(c.call, CallCursor) and isinstance(c.subproc, Proc)
    assert isinstance(c.subproc_body, BlockCursor) and c.subproc_body.proc() is c.subproc
    golden.check(str(p) + "\n" + str(c.subproc))
    t = p.forward(stmt)
    assert isinstance(t, Tombstone) and "extracted into `add_one`" in t.story()
    assert p.forward(blocky.find_loop("j")) == p.forward(c.call.prev())
    assert_equivalent(blocky, p, trials=3)


def test_extract_then_inline_round_trip() -> None:
    p, c = extract_subproc(blocky, blocky.find_loop("i").body(), "row")
    q, _ = inline(p, c.call)
    assert alpha_equal(q.ir(), blocky.ir())
    assert_equivalent(blocky, p, trials=2)


def test_extract_compiles() -> None:
    p, _ = extract_subproc(blocky, blocky.find_loop("j #1"), "add_one")
    rng = np.random.default_rng(4)
    n = 4
    a = rng.standard_normal((n, 8)).astype(np.float32)
    b1, b2 = np.zeros((n, 8), np.float32), np.zeros((n, 8), np.float32)
    p.compile()(n, a, b1)
    blocky.interpret(n, a, b2)
    np.testing.assert_array_equal(b1, b2)


def test_extract_bad_name() -> None:
    with pytest.raises(ExtractNameError):
        extract_subproc(blocky, blocky.find_loop("j"), "not a name")


def test_extract_escaping_allocation() -> None:
    alloc = blocky.find("t: _")
    with pytest.raises(ExtractEscapeError, match="t"):
        extract_subproc(blocky, alloc.expand(0, 1), "fill")


def test_extract_bounds_not_expressible() -> None:
    """The else branch of an ``or`` condition: its negation is not kept as an assert, so the
    new proc cannot prove its access in bounds."""

    @proc
    def guarded(A: f32[4] @ DRAM):
        for i in seq(0, 8):
            if i < 2 or i > 5:
                pass
            else:
                A[i - 2] = 0.0

    with pytest.raises(ExtractBoundsError):
        extract_subproc(guarded, guarded.find("A[_] = _"), "set")


@proc
def doubled(n: size, x: f32[n] @ GLOBAL):
    assert n % 32 == 0
    with scope("double", target="cuda"):
        for b in par(0, n / 32, axis="blockIdx.x"):
            for t in par(0, 32, axis="threadIdx.x"):
                x[32 * b + t] = 2.0 * x[32 * b + t]


def test_extract_bound_loop_refused() -> None:
    """A bound loop needs its kernel: the block loop and the thread loop are refused, with or
    without the loops around them; the whole kernel and a thread's body are extracted."""
    for pattern in ("b", "t"):
        with pytest.raises(ExtractBoundLoopError, match="bound to"):
            extract_subproc(doubled, doubled.find_loop(pattern).as_block(), "part")
    p, c = extract_subproc(doubled, doubled.find_scope("double").as_block(), "kernel")
    assert 'axis="threadIdx.x"' in str(c.subproc)
    assert_equivalent(doubled, p, trials=1, sizes={"n": 64})
    p, c = extract_subproc(doubled, doubled.find_loop("t").body(), "body")
    assert "axis" not in str(c.subproc)


# ---------------------------------------------------------------------------------- call_eqv


def test_call_eqv_derived_proc(golden) -> None:  # type: ignore[no-untyped-def]
    call = caller.find("scal(_)")
    fast, _ = split(scal, "i", 4, ("io", "ii"), tail="cut")
    fast, _ = rename(fast, "scal4")
    p, c = call_eqv(caller, call, fast)
    golden.check(p)
    assert p.forward(call) == c.call and c.call.name() == "scal4"
    assert equivalence_story(scal.ir(), fast)[0]
    assert_equivalent(caller, p, trials=3)
    rng = np.random.default_rng(6)
    a, sv = rng.standard_normal((3, 8)).astype(np.float32), np.ones(3, np.float32)
    a1, a2 = a.copy(), a.copy()
    p.compile()(3, a1, sv)
    caller.interpret(3, a2, sv)
    np.testing.assert_allclose(a1, a2, rtol=1e-6)


def test_call_eqv_alpha_equal() -> None:
    @proc
    def scal_again(n: size, x: [f32][n] @ DRAM):
        for k in seq(0, n):
            x[k] = x[k] * 2.0

    p, c = call_eqv(caller, "scal(_)", scal_again)
    assert c.call.name() == "scal_again"
    assert_equivalent(caller, p, trials=2)


def test_call_eqv_not_a_call() -> None:
    with pytest.raises(CallEqvNotCallError):
        call_eqv(caller, caller.find_loop("i"), scal)
    with pytest.raises(CallEqvNotCallError):
        call_eqv(caller, "scal(_)", scal.ir())


def test_call_eqv_signature() -> None:
    with pytest.raises(CallEqvSignatureError):
        call_eqv(caller, "scal(_)", axpy)


def test_call_eqv_unrelated_proc() -> None:
    @proc
    def triple(n: size, x: [f32][n] @ DRAM):
        for i in seq(0, n):
            x[i] = x[i] * 3.0

    with pytest.raises(CallEqvNotProvenError, match="alpha-equal"):
        call_eqv(caller, "scal(_)", triple)


@proc
def two(n: size, x: [f32][n] @ DRAM):
    x[0] = 1.0
    x[0] = 2.0


@proc
def uses_two(x: f32[4] @ DRAM):
    two(4, x)


def test_call_eqv_unchecked_step() -> None:
    swapped, _ = reorder_stmts(two, "x[0] = 1.0; x[0] = 2.0", unsafe_skip_checks=True)
    with pytest.raises(CallEqvNotProvenError, match="unsafe_skip_checks"):
        call_eqv(uses_two, "two(_)", swapped)


def test_call_eqv_precision_change() -> None:
    @proc
    def acc(n: size, x: [f32][n] @ DRAM, out: f32[1] @ DRAM):
        t: f32
        t = 0.0
        for i in seq(0, n):
            t += x[i]
        out[0] = t

    @proc
    def uses_acc(x: f32[4] @ DRAM, out: f32[1] @ DRAM):
        acc(4, x, out)

    wide, _ = set_precision(acc, "t", "f64")
    with pytest.raises(CallEqvNotProvenError, match="set_precision"):
        call_eqv(uses_acc, "acc(_)", wide)


# --------------------------------------------------------------- scalars, windows, history


@proc
def bump(s: f32 @ DRAM, v: [f32][4] @ DRAM):
    w = v[1:3]
    tmp: f32[2] @ DRAM
    for i in seq(0, 2):
        tmp[i] = w[i]
    s = s + tmp[0] * tmp[1]
    s += 1.0


@proc
def bumps(n: size, x: f32[n] @ DRAM, M: f32[n, 4] @ DRAM):
    for i in seq(0, n):
        bump(x[i], M[i, 0:4])


def test_inline_scalar_parameter_and_window_statement() -> None:
    p, c = inline(bumps, "bump(_)")
    text = str(p)
    assert "w = M[i, 1:3]" in text
    assert "x[i] = x[i] + tmp[0] * tmp[1]" in text and "x[i] += 1.0" in text
    assert len(c.body) == 5
    assert_equivalent(bumps, p, trials=3)


@proc
def windowed(n: size, M: f32[n, 8] @ DRAM):
    for i in seq(0, n):
        r = M[i, 2:6]
        for j in seq(0, 4):
            r[j] = r[j] * 3.0


def test_extract_window_parameter_round_trip() -> None:
    p, c = extract_subproc(windowed, windowed.find_loop("j"), "triple")
    assert "triple(r)" in str(p)
    assert str(c.subproc).startswith("def triple(r: [f32][4] @ DRAM):")
    assert_equivalent(windowed, p, trials=2)
    q, _ = inline(p, c.call)
    assert alpha_equal(q.ir(), windowed.ir())


@proc
def summed(n: size, x: f32[n] @ DRAM):
    acc: f32 @ DRAM
    acc = 0.0
    for i in seq(0, n):
        acc += x[i]
    x[0] = acc


def test_extract_scalar_allocation_and_history_replays() -> None:
    p, c = extract_subproc(summed, summed.find_loop("i"), "total")
    assert "total(n, x, acc)" in str(p)
    assert str(c.subproc).startswith("def total(n: size, x: f32[n] @ DRAM, acc: f32 @ DRAM):")
    assert_equivalent(summed, p, trials=2)
    script = p.history()
    assert "(call, subproc, subproc_body) = extract_subproc(" in script
    env: dict[str, object] = {"summed": summed}
    exec(script, env)
    assert alpha_equal(env["p"].ir(), p.ir())  # type: ignore[attr-defined]


def test_call_eqv_common_ancestor_and_back() -> None:
    """Once a call holds a scheduled version (its Proc is in the caller's history), a sibling
    scheduled from the same ancestor, and the ancestor itself, are accepted."""
    by4, _ = split(scal, "i", 4, ("io", "ii"), tail="cut")
    by2, _ = split(scal, "i", 2, ("io", "ii"), tail="guard")
    p, c = call_eqv(caller, "scal(_)", by4)
    p, d = call_eqv(p, c.call, by2)
    assert p.forward(c.call) == d.call
    ok, why = equivalence_story(by4.ir(), by2, by4)
    assert ok and "scal v0" in why
    p, _ = call_eqv(p, d.call, scal)
    assert_equivalent(caller, p, trials=2)
    # Without the history (a call written in the source), an ancestor is not accepted.
    assert not equivalence_story(by4.ir(), scal)[0]


def test_call_eqv_common_ancestor_with_an_unchecked_step() -> None:
    renamed, _ = rename(two, "two_b")
    swapped, _ = reorder_stmts(two, "x[0] = 1.0; x[0] = 2.0", unsafe_skip_checks=True)
    p, c = call_eqv(uses_two, "two(_)", renamed)
    with pytest.raises(CallEqvNotProvenError, match="unsafe_skip_checks"):
        call_eqv(p, c.call, swapped)


@proc
def maybe(flag: bool, k: index, x: [f32][4] @ DRAM):
    assert k >= 0 and k < 4
    if flag:
        x[k] = 1.0


@proc
def flags(n: size, A: f32[n, 4] @ DRAM, f: bool):
    for i in seq(0, n):
        maybe(f, 2, A[i, 0:4])
        maybe(f and n > 2, 3, A[i, 0:4])


def test_inline_bool_and_index_parameters() -> None:
    p, _ = inline(flags, "maybe(_)")
    p, _ = inline(p, "maybe(_)")
    text = str(p)
    assert "if f:\n            A[i, 2] = 1.0" in text
    assert "if f and n > 2:\n            A[i, 3] = 1.0" in text
    assert_equivalent(flags, p, trials=4)


def test_extract_brings_the_loop_bounds_names() -> None:
    @proc
    def partial(n: size, m: size, A: f32[n] @ DRAM):
        assert m <= n
        for i in seq(0, m):
            A[i] = 1.0

    p, c = extract_subproc(partial, partial.find("A[_] = _"), "one")
    assert "one(n, m, A, i)" in str(p)
    assert "assert i < m" in str(c.subproc)
    assert_equivalent(partial, p, trials=2)
