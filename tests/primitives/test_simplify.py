"""simplify: golden output, the `changed` statements, forwarding (statements and blocks
forward, rewritten expressions and dead code die), differential equivalence (interpreter,
and the C backend for a sample)."""

from __future__ import annotations

import numpy as np

from cursched import DRAM, mult_loops, proc, simplify, specialize, split, unroll_loop
from cursched.cursors import AssignCursor, BlockCursor, Tombstone
from cursched.testing import assert_equivalent


@proc
def messy(n: size, x: f32[n] @ DRAM, y: f32[4] @ DRAM):
    assert n % 4 == 0
    for io in seq(0, n / 4):
        for ii in seq(0, 4):
            x[io * 4 + 4 - 4 + ii] = 0.0
            if ii < 4:
                y[(4 * io + ii) % 4] = 1.0
            if n > 0 and ii >= 0:
                y[0] = y[(ii + 4) / 4 - 1] + 2.0
    for k in seq(0, 0):  # noqa: B007
        y[1] = 0.0
    if n < 0:
        y[2] = 1.0
    else:
        y[3] = 1.0
        y[3] = y[3] * 2.0


@proc
def clean(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0


def test_simplify_golden_changed_forwarding(golden) -> None:  # type: ignore[no-untyped-def]
    first = messy.find("x[_] = _")
    index = first.idx()[0]
    untouched = first.rhs()
    kept = messy.find("y[3] = 1.0").expand(0, 1)
    dead_branch = messy.find("y[2] = _")
    dead_loop = messy.find_loop("k")
    dead_if = messy.find("if ii < 4: _")
    p, c = simplify(messy)
    golden.check(p)
    assert [str(s.node().sym) for s in c.changed] == ["x", "y", "y"]
    assert all(isinstance(s, AssignCursor) for s in c.changed)
    assert p.forward(first) == c.changed[0]
    assert p.forward(untouched) == c.changed[0].rhs()  # an unchanged expression forwards
    assert isinstance(p.forward(index), Tombstone)  # the rewritten index dies
    moved = p.forward(kept)
    assert isinstance(moved, BlockCursor) and len(moved) == 2
    assert moved[0].node() is kept[0].node()
    for old in (dead_branch, dead_loop, dead_if):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and dead.hint == "removed by simplify"
    # the statement that was inside the always-true `if` forwards out of it
    assert p.forward(messy.find("y[(4 * io + ii) % 4] = _")) == c.changed[1]
    assert_equivalent(messy, p, trials=3)


def test_simplify_nothing_to_do() -> None:
    stmt = clean.find("x[_] = _")
    p, c = simplify(clean)
    assert c.changed == ()
    assert str(p) == str(clean)
    assert p.forward(stmt).node() is stmt.node()
    assert p.forward(stmt.idx()[0]).node() is stmt.idx()[0].node()


def test_simplify_idempotent() -> None:
    p, _ = simplify(messy)
    q, c = simplify(p)
    assert str(q) == str(p) and c.changed == ()


def test_simplify_after_unroll_and_mult_compiles() -> None:
    @proc
    def tiles(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        assert n % 8 == 0
        for i in seq(0, n):
            if i % 2 == 0:
                y[i] = x[i] * 2.0
            else:
                y[i] = x[i] + 1.0

    p, s = split(tiles, "i", 2, ("io", "ii"), tail="perfect")
    p, _ = unroll_loop(p, s.inner)
    p, _ = simplify(p)
    text = str(p)
    assert "if" not in text and "y[2 * io] = x[2 * io] * 2.0" in text
    assert "y[2 * io + 1] = x[2 * io + 1] + 1.0" in text
    assert_equivalent(tiles, p, trials=3)
    f = p.compile()
    rng = np.random.default_rng(3)
    x = rng.standard_normal(16).astype(np.float32)
    y1, y2 = np.zeros(16, np.float32), np.zeros(16, np.float32)
    f(16, x, y1)
    tiles.interpret(16, x, y2)
    np.testing.assert_array_equal(y1, y2)
    q, _ = split(tiles, "i", 4, ("io", "ii"), tail="perfect")
    q, _ = mult_loops(q, "io", "i")
    assert str(q) == str(tiles)


def test_simplify_guard_uses_asserts() -> None:
    @proc
    def guarded(n: size, x: f32[n] @ DRAM):
        assert n % 4 == 0
        for i in seq(0, n):
            x[i] = 1.0

    p, s = split(guarded, "i", 4, ("io", "ii"), tail="guard")
    assert s.guard
    p, _ = simplify(p)
    assert "if" not in str(p)  # 4 * io + ii < n always holds when 4 divides n
    # the guarded body forwards out of the removed guard, into the inner loop
    assert p.forward(s.body) == p.forward(s.inner).body()
    assert isinstance(p.forward(s.guard), Tombstone)
    assert_equivalent(guarded, p, trials=3)


def test_simplify_uses_equalities_of_enclosing_branches(golden) -> None:  # type: ignore[no-untyped-def]
    @proc
    def tiled(M: size, x: f32[M] @ DRAM):
        assert M % 4 == 0
        for io in seq(0, M / 4):
            for ii in seq(0, 4):
                x[4 * io + ii] = 1.0

    p, s = specialize(tiled, tiled.find_loop("io"), "M == 8")
    p, c = simplify(p)
    golden.check(p)
    assert "for io in seq(0, 2):" in str(p)  # M / 4 with M == 8
    assert c.changed[0] == p.forward(s.branches[0]).body()[0]  # the loop whose bound changed
    assert_equivalent(tiled, p, trials=4)
