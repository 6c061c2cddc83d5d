"""stage_mem: the issue's motivating example (golden), accum, left-out stages, one negative
test per precondition (Exo issue 527 among them), forwarding, interpreter and C equivalence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from cursched import (
    DRAM,
    DRAM_STACK,
    Proc,
    SchedulingError,
    proc,
    set_memory,
    split,
    stage_mem,
)
from cursched.analysis.bounds import check_bounds
from cursched.cursors import AllocCursor, BlockCursor, ForCursor, InvalidCursor
from cursched.frontend import parse_source
from cursched.primitives.buffers.stage import (
    StageAccumError,
    StageAliasError,
    StageEscapingWindowError,
    StageMemoryError,
    StageNameError,
    StageNeverRunsError,
    StageNoAccessError,
    StageOutsideWindowError,
    StageParallelError,
    StagePartialWriteError,
    StageWindowBoundsError,
    StageWindowError,
)
from cursched.testing import assert_equivalent


# the issue's example, with an integer increment (our type checker rejects `+= 0.2` on i8)
@proc
def foo(n: size, A: i8[n] @ DRAM):
    assert n % 4 == 0
    for io in seq(0, n / 4):
        for ii in seq(0, 4):
            A[4 * io + ii] += 2


@proc
def sgemm(n: size, A: f32[n, n] @ DRAM, B: f32[n, n] @ DRAM, C: f32[n, n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n):
        for j in seq(0, n):
            for k in seq(0, n):
                C[i, j] += A[i, k] * B[k, j]


@proc
def copy(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] * 2.0


@proc
def partial(x: i8[10] @ DRAM):
    for i in seq(0, 8):
        x[i] = 0


@proc
def conditional(n: size, x: f32[n] @ DRAM):
    assert n >= 8
    for i in seq(0, 8):
        if i < 3:
            x[i] = 1.0


@proc
def aliased(x: f32[16] @ DRAM):
    w = x[2:6]
    for i in seq(0, 4):
        w[i] += 1.0
        x[i + 2] += w[i]


@proc
def shifted(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i + 1]


@proc
def two_loops(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
    for i in seq(0, n):
        y[i] = 2.0


@proc
def addv(a: [f32][4] @ DRAM, b: [f32][4] @ DRAM):
    for k in seq(0, 4):
        a[k] += b[k]


@proc
def calls(n: size, x: f32[4 * n] @ DRAM, y: f32[4 * n] @ DRAM):
    for i in seq(0, n):
        addv(x[4 * i : 4 * i + 4], y[4 * i : 4 * i + 4])


@proc
def tail(n: size, x: f32[n] @ DRAM):
    for io in seq(0, (n + 3) / 4):
        for ii in seq(0, 4):
            if 4 * io + ii < n:
                x[4 * io + ii] = x[4 * io + ii] * 2.0


@proc
def par_rows(n: size, x: f32[n] @ DRAM):
    for i in par(0, n):
        x[i] = x[i] * 2.0


def test_stage_mem_motivating_example(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = stage_mem(foo, "for ii in _: _", "A[io*4:io*4+4]", "tile")
    golden.check(p)
    text = str(p)
    assert "tile: i8[4] @ DRAM" in text
    assert "tile[ii] += 2" in text
    assert isinstance(c.alloc, AllocCursor) and c.alloc.name() == "tile"
    assert isinstance(c.load, ForCursor) and c.load.prev() == c.alloc
    assert isinstance(c.block, BlockCursor) and c.block[0].name() == "ii"
    assert isinstance(c.store, ForCursor) and c.store.prev() == c.block[0]
    assert_equivalent(foo, p, trials=4)
    # the returned alloc needs no navigation
    p2, m = set_memory(p, c.alloc, DRAM_STACK)
    assert "tile: i8[4] @ DRAM_STACK" in str(p2)
    assert m.buffer == p2.forward(c.alloc)


def test_stage_mem_accum(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = stage_mem(foo, "for ii in _: _", "A[4 * io:4 * io + 4]", "acc", accum=True)
    golden.check(p)
    assert "acc[i0] = 0" in str(p) and "A[4 * io + i0] += acc[i0]" in str(p)
    assert c.load and c.store
    assert_equivalent(foo, p, trials=4)


def test_stage_mem_sgemm_tile_2d(golden) -> None:  # type: ignore[no-untyped-def]
    p, _ = split(sgemm, "j", 4, ("jo", "ji"), tail="perfect")
    p, c = stage_mem(p, "for k in _: _", "C[i, 4 * jo + ji]", "ctile", memory=DRAM_STACK)
    golden.check(p)
    assert "ctile: f32 @ DRAM_STACK" in str(p)  # a point window stages a scalar
    p2, c2 = stage_mem(p, c.block, "B[0:n, 4 * jo + ji]", "bcol")
    assert not c2.store  # B is only read: no store stage
    assert isinstance(c2.store, InvalidCursor)
    assert_equivalent(sgemm, p2, trials=3)


def test_stage_mem_write_only_leaves_out_the_load(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = stage_mem(partial, "for i in _: _", "x[0:8]", "xtmp")
    golden.check(p)
    assert isinstance(c.load, InvalidCursor) and "does not read" in c.load.describe()
    assert isinstance(c.store, ForCursor)
    assert_equivalent(partial, p, trials=3)


def test_stage_mem_read_only_and_defaults() -> None:
    p, c = stage_mem(copy, "for i in _: _", "x[:]", "xs")
    assert "xs: f32[n] @ DRAM" in str(p)
    assert c.load and not c.store
    assert_equivalent(copy, p, trials=3)


def test_stage_mem_offset_window() -> None:
    p, _ = stage_mem(shifted, "for i in _: _", "x[1:n + 1]", "xs")
    assert "y[i] = xs[i]" in str(p)
    assert_equivalent(shifted, p, trials=3)


def test_stage_mem_windows_passed_to_calls() -> None:
    p, c = stage_mem(calls, "addv(_)", "x[4 * i:4 * i + 4]", "xt")
    assert "addv(xt[0:4], y[4 * i:4 * i + 4])" in str(p)
    assert c.load and c.store  # the callee reduces into x
    assert_equivalent(calls, p, trials=3)
    p2, c2 = stage_mem(calls, "addv(_)", "y[4 * i:4 * i + 4]", "yt")
    assert c2.load and not c2.store  # the callee only reads y
    assert_equivalent(calls, p2, trials=3)


def test_stage_mem_compiles() -> None:
    p, _ = stage_mem(foo, "for ii in _: _", "A[io*4:io*4+4]", "tile")
    f = p.compile()
    a = np.arange(16, dtype=np.int8)
    b = a.copy()
    f(16, a)
    foo.interpret(16, b)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------- preconditions


@pytest.mark.parametrize("window", ["A", "A[0:4, 1]", "Z[0:4]", "A[io * io:4]", "A[[", "A[k]"])
def test_stage_mem_bad_window(window: str) -> None:
    with pytest.raises(StageWindowError):
        stage_mem(foo, "for ii in _: _", window, "tile")


@pytest.mark.parametrize("name", ["A", "io", "1x", ""])
def test_stage_mem_bad_name(name: str) -> None:
    with pytest.raises(StageNameError):
        stage_mem(foo, "for ii in _: _", "A[4 * io:4 * io + 4]", name)


def test_stage_mem_bad_memory() -> None:
    with pytest.raises(StageMemoryError):
        stage_mem(foo, "for ii in _: _", "A[4 * io:4 * io + 4]", "t", memory="DRAM")


def test_stage_mem_alias_is_rejected() -> None:
    # Exo issue 784: a window made before the block aliases the staged window
    with pytest.raises(StageAliasError, match="through `w"):
        stage_mem(aliased, "for i in _: _", "x[2:6]", "b")


@proc
def rowcall(x: f32[4, 4] @ DRAM, y: f32[4, 4] @ DRAM):
    for i in seq(0, 4):
        addv(x[i, 0:4], y[0:4, i])


def test_stage_mem_window_over_a_fixed_dimension() -> None:
    # the call's window of x ranges over dimension 1, which a point window would drop
    with pytest.raises(StageAliasError, match="x"):
        stage_mem(rowcall, "addv(_)", "x[i, 0]", "t")
    p, _ = stage_mem(rowcall, "addv(_)", "y[0:4, i]", "t")
    assert "addv(x[i, 0:4], t[0:4])" in str(p)
    assert_equivalent(rowcall, p, trials=2)


def test_stage_mem_no_access() -> None:
    with pytest.raises(StageNoAccessError):
        stage_mem(two_loops, "for i in _: _ #0", "y[0:n]", "t")


def test_stage_mem_access_outside_window_has_counterexample() -> None:
    with pytest.raises(StageOutsideWindowError) as e:
        stage_mem(foo, "for ii in _: _", "A[4 * io:4 * io + 3]", "tile")
    assert e.value.counterexample is not None  # type: ignore[attr-defined]
    assert "counterexample" in str(e.value) and "ii = 3" in str(e.value)


def test_stage_mem_negative_window_extent() -> None:
    with pytest.raises(StageWindowBoundsError) as e:
        stage_mem(copy, "for i in _: _", "x[2:n]", "xs")
    assert "counterexample: n = 1" in str(e.value)


def test_stage_mem_window_leaving_the_buffer_gets_guards(golden) -> None:  # type: ignore[no-untyped-def]
    # as in Exo (its PR 527): a window rounded up past the end is loaded and stored guarded
    p, c = stage_mem(tail, "for ii in _: _", "x[4 * io:4 * io + 4]", "t")
    golden.check(p)
    assert "if 4 * io + i0 < n:" in str(p)
    assert c.load and c.store
    assert_equivalent(tail, p, trials=4)
    f = p.compile()
    for n in (1, 6, 8):
        a = np.arange(n, dtype=np.float32)
        b = a.copy()
        f(n, a)
        tail.interpret(n, b)
        np.testing.assert_array_equal(a, b)


def test_stage_mem_write_only_window_past_the_end() -> None:
    # the writes fill the part of the window inside x; the guarded store writes back only that
    p, c = stage_mem(copy, "for i in _: _", "y[0:n + 3]", "ys")
    assert not c.load and "if i0 < n:" in str(p)
    assert_equivalent(copy, p, trials=3)


def test_stage_mem_accum_needs_pure_reduction() -> None:
    with pytest.raises(StageAccumError, match="reads"):
        stage_mem(copy, "for i in _: _", "x[0:n]", "xs", accum=True)


def test_stage_mem_exo_issue_527_partial_write() -> None:
    # Exo writes xtmp[8] (garbage) back over x[8]; staging must refuse
    with pytest.raises(StagePartialWriteError, match="does not provably write all of x") as e:
        stage_mem(partial, "for i in _: _", "x[0:9]", "xtmp")
    assert "counterexample: x_index0 = 8" in str(e.value)  # x[8] is never written
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


def test_stage_mem_conditional_write_is_partial() -> None:
    with pytest.raises(StagePartialWriteError):
        stage_mem(conditional, "for i in _: _", "x[0:8]", "xt")
    # staging only what the guard lets through still needs a proof it cannot give
    with pytest.raises(StagePartialWriteError):
        stage_mem(conditional, "for i in _: _", "x[0:3]", "xt")


# ----------------------------------------------------------------------------- forwarding


def test_stage_mem_forwarding() -> None:
    loop = foo.find_loop("ii")
    red = foo.find("A[_] += _")
    p, c = stage_mem(foo, loop, "A[4 * io:4 * io + 4]", "tile")
    assert p.forward(loop) == c.block[0]
    assert p.forward(loop.as_block()) == c.block
    assert p.forward(red) == c.block[0].body()[0]
    # the rewritten index expression died
    idx = foo.find("A[_] += _").idx()[0]
    assert not p.forward(idx)


def test_stage_mem_inside_par_loop() -> None:
    # every iteration would load and store all of x: a race the par loop did not have
    with pytest.raises(StageParallelError, match="carries a dependence"):
        stage_mem(par_rows, "x[_] = _", "x[0:n]", "xs")
    p, _ = stage_mem(par_rows, "x[_] = _", "x[i:i + 1]", "xs")
    assert "for i in par(0, n):" in str(p)
    assert_equivalent(par_rows, p, trials=2)


def test_buffer_schedule_history_replays() -> None:
    from cursched import divide_dim, expand_dim, lift_alloc, set_precision

    p, c = stage_mem(foo, "for ii in _: _", "A[io*4:io*4+4]", "tile")
    p, m = set_memory(p, c.alloc, DRAM_STACK)
    p, e = expand_dim(p, m.buffer, "n / 4", "io")
    p, a = lift_alloc(p, e.alloc)
    p, t = set_precision(p, a.alloc, "i32")
    p, _ = divide_dim(p, t.buffer, 1, 2)
    assert "tile: i32[n / 4, 2, 2] @ DRAM_STACK" in str(p)
    env: dict[str, object] = {"foo": foo}
    exec(p.history(), env)
    assert str(env["p"]) == str(p)
    assert_equivalent(foo, p, trials=3)


# -------------------------------------------------------------------------- random windows

KINDS = ["read", "write", "reduce", "guarded"]


@st.composite
def staged_case(draw: st.DrawFn) -> tuple[str, list[tuple[str, int]], int, int]:
    body = draw(
        st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 4)), min_size=1, max_size=3)
    )
    lo = draw(st.integers(0, 8))
    hi = draw(st.integers(lo, 16))
    lines = []
    for kind, c in body:
        lines.append(
            {
                "read": f"        y[i] = x[i + {c}] * 2.0\n",
                "write": f"        x[i + {c}] = y[i]\n",
                "reduce": f"        x[i + {c}] += y[i]\n",
                "guarded": f"        if i < {c + 2}:\n            x[i + {c}] = 3.0\n",
            }[kind]
        )
    text = "def fz(x: f32[16] @ DRAM, y: f32[16] @ DRAM):\n    for i in seq(0, 8):\n"
    return text + "".join(lines), body, lo, hi


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=staged_case())
def test_stage_mem_random_windows_sound_and_tight_windows_accepted(
    case: tuple[str, list[tuple[str, int]], int, int],
) -> None:
    text, body, lo, hi = case
    p0 = Proc(check_bounds(parse_source(text, {"DRAM": DRAM})))
    try:
        p, _ = stage_mem(p0, "for i in _: _", f"x[{lo}:{hi}]", "xs")
    except SchedulingError:
        pass
    else:
        assert_equivalent(p0, p, trials=2)
    # the tightest window is refused only by the partial-write rule
    tlo = min(c for _, c in body)
    thi = max(c for _, c in body) + 8
    reads = any(k in ("read", "reduce") for k, _ in body)
    full = any(k == "write" and c == tlo for k, c in body) and thi - tlo == 8
    if reads or full:
        p, _ = stage_mem(p0, "for i in _: _", f"x[{tlo}:{thi}]", "xs")
        assert_equivalent(p0, p, trials=2)
    else:
        with pytest.raises(StagePartialWriteError):
            stage_mem(p0, "for i in _: _", f"x[{tlo}:{thi}]", "xs")


@proc
def pair_stmts(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] + 1.0
        x[i] = y[i] * 2.0


def test_stage_mem_block_of_two_statements_forwards() -> None:
    body = pair_stmts.find_loop("i").body()
    first, second = body[0], body[1]
    p, c = stage_mem(pair_stmts, body, "x[i]", "xs")
    assert len(c.block) == 2
    assert p.forward(body) == c.block
    assert p.forward(first) == c.block[0] and p.forward(second) == c.block[1]
    assert str(c.load.node()).startswith("Assign")  # a point window: scalar load, no loop
    assert "xs = x[i]" in str(p) and "x[i] = xs" in str(p)
    assert_equivalent(pair_stmts, p, trials=3)


def test_stage_mem_guards_both_ends() -> None:
    p, _ = stage_mem(copy, "y[_] = _", "x[i - 1:i + 2]", "xs")
    assert "if 0 <= i + i0 - 1 and i + i0 - 1 < n:" in str(p)
    assert_equivalent(copy, p, trials=3)


# --------------------------------------------------------------- F5: code that never runs
# In code that never runs the context proves anything: the window proofs must not pass
# vacuously there (bugs.md F5, found by the soundness fuzzer after divide_dim's).


@proc
def dead(n: size, x: f32[n + 8] @ DRAM):
    assert n >= 1
    for i in seq(n, n):
        x[i] = 1.0


@proc
def dead_inside(n: size, x: f32[n + 8] @ DRAM):
    assert n >= 1
    for j in seq(n, n):
        x[j] = 1.0
    x[0] = 2.0


@proc
def maybe_empty(n: size, m: size, x: f32[n + 8] @ DRAM):
    assert m <= 4
    for i in seq(0, n):  # noqa: B007 - a loop the block sits in, its variable unused
        for j in seq(0, m):
            x[j] = x[j] + 1.0


@pytest.mark.parametrize("window", ["x[0:1]", "x[3:1]", "x[2:2]", "x[0:n + 8]"])
def test_f5_stage_mem_refuses_a_block_that_never_runs(window: str) -> None:
    # each window was accepted, two of them with a shape (-2, 0) that does not parse back
    with pytest.raises(StageNeverRunsError, match="never runs"):
        stage_mem(dead, "x[_] = _", window, "t")
    # the proofs are skipped on request only
    p, _ = stage_mem(dead, "x[_] = _", "x[0:1]", "t", unsafe_skip_checks=True)
    assert "t: f32[1]" in str(p)


def test_f5_a_constant_extent_must_be_positive_whatever_the_context() -> None:
    # the block runs; its accesses lie in a loop that never runs, so the in-window proof is
    # vacuous: the new buffer's shape, f32[0], is decided without the context
    with pytest.raises(StageWindowBoundsError, match="extent 0"):
        stage_mem(dead_inside, "for j in _: _", "x[2:2]", "t")
    # a write-only block must still fill the window: no write of a dead loop does
    with pytest.raises(StagePartialWriteError):
        stage_mem(dead_inside, "for j in _: _", "x[0:1]", "t")


def test_f5_a_block_that_runs_for_some_sizes_is_staged() -> None:
    # m = 0 empties the inner loop, n = 0 the outer one: the block still runs for others
    p, c = stage_mem(maybe_empty, "for j in _: _", "x[0:4]", "t")
    assert c.load and c.store
    assert_equivalent(maybe_empty, p, trials=4)
    check_bounds(parse_source(str(p), {"DRAM": DRAM}))


@proc
def window_escapes(n: size, y: f32[n + 8] @ DRAM, z: f32[n + 8] @ DRAM):
    for i in seq(0, n):
        z[i] = y[i + 1]
        w = y[i : i + 2]
        w[0] += w[1]


def test_stage_mem_refuses_a_window_of_the_block_used_after_it() -> None:
    # the campaign's schedule 59942 (seed 2026): staged, `w` named the new buffer, so the
    # reduction after the block went to it, after the store, and y never got it
    with pytest.raises(StageEscapingWindowError, match="used after the block"):
        stage_mem(window_escapes, "z[_] = _ ; w = _", "y[0:n + 8]", "t")
    # with its uses inside the block the window is staged like any other access
    p, _ = stage_mem(window_escapes, "z[_] = _ ; w = _ ; w[_] += _", "y[0:n + 8]", "t")
    assert_equivalent(window_escapes, p)
