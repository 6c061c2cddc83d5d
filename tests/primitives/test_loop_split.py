"""split: golden output per tail mode, one negative test per precondition, forwarding,
differential equivalence (interpreter, and the C backend for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, proc, split
from cursched.cursors import BlockCursor, ForCursor, IfCursor, InvalidCursor, edits
from cursched.cursors.forwarding import Dead, forward_loc
from cursched.cursors.locs import BlockLoc, GapLoc, Loc, NodeLoc
from cursched.cursors.tree import walk
from cursched.ir.nodes import ProcDef, Stmt
from cursched.primitives.loops.loop_split import (
    SplitFactorError,
    SplitNamesError,
    SplitNotPerfectError,
    SplitTailError,
    SplitTripCountError,
)
from cursched.testing import assert_equivalent


@proc
def scale(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] * 2.0
        for j in seq(0, 3):  # noqa: B007
            y[i] += x[i]


@proc
def fixed(x: f32[16] @ DRAM):
    for i in seq(2, 18):
        x[i - 2] = 1.0


@proc
def maybe_empty(n: size, x: f32[n] @ DRAM):
    for i in seq(2, n):
        x[i - 2] = 1.0


@proc
def add4(a: [f32][4] @ DRAM, b: [f32][4] @ DRAM):
    for k in seq(0, 4):
        a[k] += b[k]


@proc
def windows(n: size, x: f32[4 * n + 4] @ DRAM, y: f32[4 * n + 4] @ DRAM):
    for i in seq(0, n):
        w = x[4 * i : 4 * i + 4]
        t: f32[4] @ DRAM
        for k in seq(0, 4):
            t[k] = y[4 * i + k]
        add4(w, t)
        add4(x[4 * i + 1 : 4 * i + 5], y[4 * i : 4 * i + 4])


@proc
def aligned(n: size, x: f32[n] @ DRAM):
    assert n % 8 == 0
    for i in seq(0, n):
        x[i] = 3.0


@pytest.mark.parametrize("tail", ["guard", "cut", "cut_and_guard"])
def test_split_golden_and_equivalent(tail: str, golden) -> None:  # type: ignore[no-untyped-def]
    p, c = split(scale, "i", 4, ("io", "ii"), tail=tail)
    golden.check(p)
    assert_equivalent(scale, p, trials=4)
    assert isinstance(c.outer, ForCursor) and c.outer.name() == "io"
    assert isinstance(c.inner, ForCursor) and c.inner.name() == "ii"
    assert c.inner.parent() == c.outer
    assert isinstance(c.body, BlockCursor) and len(c.body) == 2
    if tail == "guard":
        assert isinstance(c.guard, IfCursor) and not c.tail
        assert c.body.parent() == c.guard
    elif tail == "cut":
        assert isinstance(c.tail, ForCursor) and not c.guard
        assert c.tail.prev() == c.outer
    else:
        assert isinstance(c.guard, IfCursor) and isinstance(c.tail, ForCursor)
        assert c.tail.parent() == c.guard


def test_split_readable_indices() -> None:
    p, _ = split(scale, "i", 4, ("io", "ii"), tail="cut")
    text = str(p)
    assert "for io in seq(0, n / 4):" in text
    assert "y[4 * io + ii] = x[4 * io + ii] * 2.0" in text
    assert "for ii in seq(0, n % 4):" in text


def test_split_constant_bounds_no_tail(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = split(fixed, "i", 4)
    golden.check(p)
    assert isinstance(c.tail, InvalidCursor) and isinstance(c.guard, InvalidCursor)
    assert c.outer.name() == "io" and c.inner.name() == "ii"
    assert_equivalent(fixed, p, trials=2)


def test_split_perfect_proven_from_assert(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = split(aligned, "i", 8, ("io", "ii"), tail="perfect")
    golden.check(p)
    assert not c.tail and not c.guard
    assert_equivalent(aligned, p, trials=3)


def test_split_perfect_exo_spelling() -> None:
    p, c = split(aligned, "i", 8, ["io", "ii"], perfect=True)
    q, _ = split(aligned, "i", 8, ("io", "ii"), tail="perfect")
    assert str(p) == str(q) and not c.tail and not c.guard
    with pytest.raises(SplitNotPerfectError):
        split(scale, "i", 4, perfect=True)


def test_split_iterates_as_cursors() -> None:
    _, (outer, inner, tail, guard, body) = split(scale, "i", 4, tail="cut")
    assert outer.name() == "io" and inner.name() == "ii" and tail and not guard
    assert len(body) == 2


@pytest.mark.parametrize("tail", ["guard", "cut", "cut_and_guard"])
def test_split_rewrites_windows_allocs_and_calls(tail: str) -> None:
    # window types carry shapes in the loop variable; the cut tail gets fresh names
    p, _ = split(windows, "i", 3, tail=tail)
    assert "w = x[12 * io + 4 * ii:12 * io + 4 * ii + 4]" in str(p)
    assert_equivalent(windows, p, trials=3)


# ------------------------------------------------------------------------- preconditions


@pytest.mark.parametrize("factor", [1, 0, -4, 2.5, True])
def test_split_bad_factor(factor: object) -> None:
    with pytest.raises(SplitFactorError, match="split: factor"):
        split(scale, "i", factor)


@pytest.mark.parametrize("names", [("a", "a"), ("a", "1b"), ("a",), "ab", ("a", 3)])
def test_split_bad_names(names: object) -> None:
    with pytest.raises(SplitNamesError, match="two different identifiers"):
        split(scale, "i", 4, names)


def test_split_bad_tail() -> None:
    with pytest.raises(SplitTailError, match="tail must be one of"):
        split(scale, "i", 4, tail="round")


def test_split_perfect_unproven_has_counterexample() -> None:
    with pytest.raises(SplitNotPerfectError) as e:
        split(scale, "i", 4, tail="perfect")
    assert e.value.counterexample is not None  # type: ignore[attr-defined]
    assert "counterexample: n = " in str(e.value)
    assert "# <--" in str(e.value)  # the loop is marked


@pytest.mark.parametrize("tail", ["cut", "cut_and_guard"])
def test_split_cut_needs_a_non_negative_trip_count(tail: str) -> None:
    # with n = 1 the loop is empty, but (n - 2) % 4 == 3 would run a tail of 3 iterations
    with pytest.raises(SplitTripCountError) as e:
        split(maybe_empty, "i", 4, tail=tail)
    assert "counterexample: n = 1" in str(e.value)


def test_split_guard_of_possibly_empty_loop_is_fine() -> None:
    p, _ = split(maybe_empty, "i", 4, tail="guard")
    assert_equivalent(maybe_empty, p, trials=4)


# ----------------------------------------------------------------------------- forwarding


def test_split_forwarding() -> None:
    loop = scale.find_loop("i")
    first = scale.find("y[_] = _")
    inner_loop = scale.find_loop("j")
    p, c = split(scale, loop, 4, ("io", "ii"), tail="cut")
    assert p.forward(loop) == c.outer
    assert p.forward(first) == c.body[0]
    assert p.forward(inner_loop) == c.body[1]
    # the tail holds fresh copies: its nested loop is another loop
    tail_j = c.tail.body()[1]
    assert tail_j != p.forward(inner_loop)


@proc
def nested(n: size, m: size, x: f32[n, m] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(1, n):
        t: f32 @ DRAM
        t = 0.0
        for j in seq(0, m):
            if j < i:
                t += x[i, j]
        y[i] = t


@pytest.mark.parametrize("tail", ["guard", "cut", "cut_and_guard"])
@pytest.mark.parametrize("name", ["scale", "windows", "nested", "aligned", "fixed"])
def test_split_fresh_tail_forwards_as_the_full_search(
    name: str, tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """split claims its tail fresh (``replace(fresh=...)``: the survivor search does not
    index it); every location of the old proc (the loop, each statement and expression of
    its body and below, each block and gap) forwards as it does with the tail searched,
    and the returned cursors (outer, inner, tail, guard, body) are the same."""
    procs = {"scale": scale, "windows": windows, "nested": nested}
    p0 = {**procs, "aligned": aligned, "fixed": fixed}[name]
    loop = p0.find_loop("i")
    p, c = split(p0, loop, 4, ("io", "ii"), tail=tail)
    monkeypatch.setattr(edits, "_fresh_ids", lambda *_: frozenset())  # no claim trusted
    q, d = split(p0, loop, 4, ("io", "ii"), tail=tail)
    assert str(p) == str(q)
    assert [x.loc for x in c] == [x.loc for x in d]
    fp, fq = p.step().fmap, q.step().fmap  # type: ignore[union-attr]
    locs = _every_loc(p0.ir())
    assert len(locs) > 10
    assert [forward_loc(fp, x) for x in locs] == [forward_loc(fq, x) for x in locs]
    assert any(not isinstance(forward_loc(fp, x), Dead) for x in locs[1:])  # some survive
    made = c.guard if tail == "cut_and_guard" else c.tail  # the statement claimed fresh
    if made:
        assert not {id(n) for _, n in walk(made.node())} & {id(n) for _, n in walk(p0.ir())}


def _every_loc(ir: ProcDef) -> list[Loc]:
    """A node location per node of the body, a block per statement list, a gap on each
    side of each statement."""
    out: list[Loc] = []
    for path, node in walk(ir):
        if not path or path[0][0] != "body":
            continue
        out.append(NodeLoc(path))
        if isinstance(node, Stmt):
            out += [GapLoc(path, "before"), GapLoc(path, "after")]
        for attr in ("body", "orelse"):
            stmts = getattr(node, attr, ())
            if isinstance(node, Stmt) and stmts:
                out.append(BlockLoc(path, attr, 0, len(stmts)))
    return out


def test_split_input_cursor_of_older_version_is_forwarded() -> None:
    loop_j = scale.find_loop("j")
    p, c = split(scale, "i", 4, tail="guard")
    p2, c2 = split(p, loop_j, 3, ("jo", "ji"))  # a cursor of version 0
    assert c2.outer.name() == "jo" and c2.outer.parent() == p2.forward(c.guard)
    assert_equivalent(scale, p2, trials=3)


def test_split_compiles_and_matches_interpreter() -> None:
    p, _ = split(scale, "i", 4, tail="cut_and_guard")
    f = p.compile()
    rng = np.random.default_rng(1)
    for n in (1, 7, 12):
        x = rng.standard_normal(n).astype(np.float32)
        y1, y2 = np.zeros_like(x), np.zeros_like(x)
        f(n, x, y1)
        scale.interpret(n, x, y2)
        np.testing.assert_allclose(y1, y2, rtol=1e-6)
