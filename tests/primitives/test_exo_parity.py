"""divide_with_recompute, add_unsafe_guard, insert_noop_call, make_instr (issue 15): golden
output, one negative test per precondition, forwarding, differential equivalence."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    add_unsafe_guard,
    divide_with_recompute,
    insert_noop_call,
    instr,
    make_instr,
    proc,
    replace,
)
from cursched.codegen.c.unit import generate_unit
from cursched.cursors import CallCursor, ForCursor, IfCursor
from cursched.primitives.calls.instrs import InstrPlaceholderError, InstrTemplateError
from cursched.primitives.calls.noop import (
    NoopCallArgumentError,
    NoopCallArityError,
    NoopCallHasEffectError,
    NoopCallNotProcError,
    NoopCallPreconditionError,
)
from cursched.primitives.loops.guards import (
    GuardConditionError,
    GuardNotAlwaysTrueError,
    GuardScopeError,
)
from cursched.primitives.loops.loop_common import BadIndexExpressionError
from cursched.primitives.loops.recompute import (
    RecomputeDependenceError,
    RecomputeNamesError,
    RecomputeNotIdempotentError,
    RecomputeNoTileError,
    RecomputeStrideError,
    RecomputeTooManyTilesError,
)
from cursched.testing import assert_equivalent


@proc
def blur(H: size, W: size, inp: f32[H + 2, W], out: f32[H, W]):
    assert H % 4 == 0
    bx: f32[H + 2, W]
    for y in seq(0, H + 2):
        for x in seq(0, W):
            bx[y, x] = inp[y, x] * 2.0
    for y in seq(0, H):
        for x in seq(0, W):
            out[y, x] = bx[y, x] + bx[y + 1, x] + bx[y + 2, x]


@proc
def ragged(n: size, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = x[i] + 1.0


@proc
def carried(n: size, x: f32[n + 1], s: f32[1]):
    for i in seq(0, n):
        x[i + 1] = x[i] * 2.0
    for j in seq(0, n):
        s[0] += x[j]


@proc
def rmw(n: size, x: f32[n]):
    for i in seq(0, n):
        x[i] = x[i] * 2.0


# -------------------------------------------------------------------- divide_with_recompute


def test_recompute_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt = blur.find_loop("y"), blur.find("bx[_] = _")
    inner_x = blur.find_loop("x")
    p, c = divide_with_recompute(blur, loop, "H / 4", 4, ["yo", "yi"])
    golden.check(p)
    assert "for yi in seq(0, 6):" in str(p)
    assert isinstance(c.outer, ForCursor) and isinstance(c.inner, ForCursor)
    assert p.forward(loop) == c.outer
    assert p.forward(inner_x) == c.body[0]
    assert p.forward(stmt) == c.body[0].body()[0]
    assert c.inner.parent() == c.outer
    assert_equivalent(blur, p, trials=4)


def test_recompute_ragged_tiles(golden) -> None:  # type: ignore[no-untyped-def]
    # 3 tiles of stride 3 over n >= 9 iterations: the last tile takes the rest
    @proc
    def long(n: size, x: f32[n], y: f32[n]):
        assert n >= 9
        for i in seq(0, n):
            y[i] = x[i] + 1.0

    p, c = divide_with_recompute(long, "i", 3, 3, ("io", "ii"))
    golden.check(p)
    assert p.forward(long.find_loop("i")) == c.outer and c.inner.hi().node() is not None
    assert_equivalent(long, p, trials=6)
    assert_equivalent(long, p, sizes={"n": 9}, trials=1)


def test_recompute_compiles_and_matches_numpy() -> None:
    p, _ = divide_with_recompute(blur, "y", "H / 4", 4, ["yo", "yi"])
    rng = np.random.default_rng(0)
    inp = rng.standard_normal((10, 5)).astype(np.float32)
    out = np.zeros((8, 5), dtype=np.float32)
    p.compile()(8, 5, inp, out)
    bx = inp * 2.0
    np.testing.assert_allclose(out, bx[:-2] + bx[1:-1] + bx[2:], rtol=1e-5)


@pytest.mark.parametrize("names", [("yo",), ("yo", "yo"), ("yo", "for"), ["1", "b"]])
def test_recompute_names(names: object) -> None:
    with pytest.raises(RecomputeNamesError):
        divide_with_recompute(blur, "y", "H / 4", 4, names)


@pytest.mark.parametrize("stride", [0, -2, 2.5, True])
def test_recompute_stride(stride: object) -> None:
    with pytest.raises(RecomputeStrideError):
        divide_with_recompute(blur, "y", "H / 4", stride, ["yo", "yi"])


def test_recompute_bad_outer_hi() -> None:
    with pytest.raises(BadIndexExpressionError):
        divide_with_recompute(blur, "y", "H * W", 4, ["yo", "yi"])


def test_recompute_too_many_tiles() -> None:
    with pytest.raises(RecomputeTooManyTilesError) as e:
        divide_with_recompute(ragged, "i", "n / 2 + 1", 2, ["io", "ii"])
    assert e.value.counterexample  # type: ignore[attr-defined]


def test_recompute_no_tile() -> None:
    # n / 4 tiles are 0 for n < 4, where the loop still runs: Exo 1.0 accepts this
    with pytest.raises(RecomputeNoTileError):
        divide_with_recompute(ragged, "i", "n / 4", 4, ["io", "ii"])


def test_recompute_dependence() -> None:
    with pytest.raises(RecomputeDependenceError):
        divide_with_recompute(carried, "i", 1, 1, ["io", "ii"])


def test_recompute_not_idempotent() -> None:
    with pytest.raises(RecomputeNotIdempotentError):
        divide_with_recompute(rmw, "i", 1, 1, ["io", "ii"])


def test_recompute_unsafe_skip() -> None:
    p, _ = divide_with_recompute(rmw, "i", 1, 1, ["io", "ii"], unsafe_skip_checks=True)
    assert "for ii in seq(0, n):" in str(p)


# ------------------------------------------------------------------------- add_unsafe_guard


@proc
def guarded(n: size, m: size, x: f32[n]):
    assert m <= n
    for i in seq(0, m):
        t: f32
        t = x[i]
        x[i] = t + 1.0


def test_guard_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    stmt = guarded.find("x[_] = _")
    p, c = add_unsafe_guard(guarded, stmt, "i < n")
    golden.check(p)
    assert isinstance(c.guard, IfCursor)
    assert p.forward(stmt) == c.body[0] == c.guard.body()[0]
    assert p.forward(stmt.as_block()) == c.body
    assert_equivalent(guarded, p, trials=3)


def test_guard_block_of_statements() -> None:
    block = guarded.find("t: _").expand(0, 2)
    p, c = add_unsafe_guard(guarded, block, "m <= n and i >= 0")
    assert len(c.body) == 3
    assert_equivalent(guarded, p, trials=3)


@pytest.mark.parametrize("cond", ["i + ", "x[0] > 0.0", "k < 3", 3])
def test_guard_bad_condition(cond: object) -> None:
    with pytest.raises(GuardConditionError):
        add_unsafe_guard(guarded, "x[_] = _", cond)


def test_guard_scope() -> None:
    with pytest.raises(GuardScopeError, match="declares t"):
        add_unsafe_guard(guarded, "t: _", "i < n")


def test_guard_not_always_true() -> None:
    with pytest.raises(GuardNotAlwaysTrueError) as e:
        add_unsafe_guard(guarded, "x[_] = _", "i < m - 1")
    assert e.value.counterexample  # type: ignore[attr-defined]


def test_guard_unsafe_skip() -> None:
    p, _ = add_unsafe_guard(guarded, "x[_] = _", "i < m - 1", unsafe_skip_checks=True)
    assert "if i < m - 1:" in str(p)


# ------------------------------------------------------------------------- insert_noop_call


@instr("__builtin_prefetch({x_data});")
def prefetch8(x: [f32][8]):
    pass


@proc
def hint(n: size, k: index, flag: bool, s: f32):
    pass


@proc
def writes(x: [f32][8]):
    x[0] = 0.0


@proc
def copy(n: size, x: f32[n + 8], y: f32[n], s: f32):
    for i in seq(0, n):
        y[i] = x[i]


def test_noop_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    stmt = copy.find("y[_] = _")
    p, c = insert_noop_call(copy, stmt.before(), prefetch8, ["x[i:i + 8]"])
    golden.check(p)
    assert isinstance(c.call, CallCursor) and c.call.next() == p.forward(stmt)
    assert_equivalent(copy, p, trials=3)
    x = np.arange(18, dtype=np.float32)
    y = np.zeros(10, dtype=np.float32)
    p.compile()(10, x, y, np.zeros((), dtype=np.float32))
    assert y.tolist() == x[:10].tolist()


def test_noop_controls_and_scalars() -> None:
    gap = copy.find_loop("i").body()[0].after()
    p, c = insert_noop_call(copy, gap, hint, ["n", "i - 1", "n > 2", "s"])
    assert "hint(n, i - 1, n > 2, s)" in str(p)
    q, _ = insert_noop_call(p, c.call.before(), hint, ["n", 0, True, "y[i]"])
    assert "hint(n, 0, True, y[i])" in str(q)
    assert_equivalent(copy, q, trials=2)


def test_noop_not_proc() -> None:
    with pytest.raises(NoopCallNotProcError):
        insert_noop_call(copy, copy.find("y[_] = _").before(), "prefetch8", ["x[i:i + 8]"])


def test_noop_has_effect() -> None:
    with pytest.raises(NoopCallHasEffectError, match="writes x"):
        insert_noop_call(copy, copy.find("y[_] = _").before(), writes, ["x[i:i + 8]"])


@pytest.mark.parametrize("args", [[], ["x[i:i + 8]", "n"], "x[i:i + 8]"])
def test_noop_arity(args: object) -> None:
    with pytest.raises(NoopCallArityError):
        insert_noop_call(copy, copy.find("y[_] = _").before(), prefetch8, args)


@pytest.mark.parametrize(
    "args",
    [["z[i:i + 8]"], ["x[i]"], ["s"], ["x[i:i + 8, 0]"], ["x[j:j + 8]"], ["x[i:"]],
)
def test_noop_bad_argument(args: list[str]) -> None:
    with pytest.raises(NoopCallArgumentError):
        insert_noop_call(copy, copy.find("y[_] = _").before(), prefetch8, args)


@pytest.mark.parametrize("window", ["x[i:i + 4]", "x[i + 4:i + 12]"])
def test_noop_precondition(window: str) -> None:
    # the wrong extent, and a window past the end of x for i = n - 1
    with pytest.raises(NoopCallPreconditionError):
        insert_noop_call(copy, copy.find("y[_] = _").before(), prefetch8, [window])


# ------------------------------------------------------------------------------- make_instr


@proc
def copy8(dst: [f32][8], src: [f32][8]):
    for k in seq(0, 8):
        dst[k] = src[k]


@proc
def double(n: size, x: f32[n, 8], y: f32[n, 8]):
    for i in seq(0, n):
        for k in seq(0, 8):
            y[i, k] = x[i, k]


def test_make_instr_golden_forwarding(golden) -> None:  # type: ignore[no-untyped-def]
    loop = copy8.find_loop("k")
    template = "memcpy({dst_data}, {src_data}, 8 * sizeof(float)); (void){dst_stride_0};"
    p, c = make_instr(copy8, template, "#include <string.h>")
    golden.check(p)
    assert p.is_instr() and not copy8.is_instr() and len(c) == 0
    assert p.ir().instr is not None and p.ir().instr.c_global == "#include <string.h>"
    assert p.forward(loop) == p.find_loop("k")
    # the meaning is unchanged, and calls of it compile through the template
    assert_equivalent(copy8, p, trials=2)
    q, _ = replace(double, double.find_loop("k"), p)
    assert "memcpy(" in generate_unit("u", [q.ir()]).c_source
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    y = np.zeros((3, 8), dtype=np.float32)
    q.compile()(3, x, y)
    assert (y == x).all()


@pytest.mark.parametrize(("c_instr", "c_global"), [("", ""), (3, ""), ("x;", None)])
def test_make_instr_texts(c_instr: object, c_global: object) -> None:
    with pytest.raises(InstrTemplateError):
        make_instr(copy8, c_instr, c_global)


@pytest.mark.parametrize("template", ["{dst_data} = {a_data};", "{src_stride_1};"])
def test_make_instr_placeholders(template: str) -> None:
    with pytest.raises(InstrPlaceholderError):
        make_instr(copy8, template)
