"""lift_scope, specialize, eliminate_dead_code: golden output, one negative test per
precondition, forwarding, differential equivalence (interpreter, and the C backend for a
sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, eliminate_dead_code, lift_scope, proc, specialize
from cursched.cursors import BlockCursor, ExprCursor, ForCursor, IfCursor, Tombstone
from cursched.cursors.tree import walk
from cursched.ir.nodes import BinOp, Const
from cursched.ir.traversal import walk_expr
from cursched.ir.types import BOOL, INT
from cursched.primitives.arguments import Condition, Conditions
from cursched.primitives.loops.scopes import (
    DeadCodeKindError,
    DeadCodeUndecidedError,
    DeadLoopMayRunError,
    LiftConditionUsesLoopError,
    LiftLoopFromElseError,
    LiftNoParentError,
    LiftNotAloneError,
    LiftNotScopeError,
    LiftReorderError,
    SpecializeBadConditionError,
    SpecializeNoConditionsError,
    SpecializeScopeError,
    _fresh_conditions,
)
from cursched.testing import assert_equivalent


@proc
def branchy(n: size, m: size, x: f32[n] @ DRAM, y: f32[4] @ DRAM):
    assert n > 4
    for i in seq(0, n):
        if m > 4:
            x[i] = 1.0
        else:
            x[i] = 2.0
    if m > 2:
        if n > 8:
            y[0] = 1.0
        else:
            y[1] = 1.0
    else:
        y[2] = 3.0
    if m < 3:
        for j in seq(0, 4):
            y[j] += 1.0
    if n > 3:
        y[3] = 0.0
    for k in seq(0, n - 5):
        y[k % 4] = 9.0


@proc
def other_branch(n: size, m: size, y: f32[4] @ DRAM):
    if m > 2:
        y[2] = 3.0
    else:
        if n > 8:
            y[0] = 1.0


@proc
def loops(n: size, A: f32[n, n] @ DRAM, B: f32[n, n] @ DRAM):
    assert n > 1
    for i in seq(0, n):
        for j in seq(0, n):
            B[j, i] = A[i, j]
    for i in seq(1, n):
        for j in seq(0, n - 1):
            A[i, j] = A[i - 1, j + 1]
    for i in seq(0, n):
        if i > 2:
            A[i, 0] = 0.0
        A[i, 1] = 0.0
    for i in seq(0, n):
        x: f32
        x = 0.0
        B[0, i] = x


@proc
def from_else(n: size, y: f32[4] @ DRAM):
    if n > 2:
        y[0] = 1.0
    else:
        for j in seq(0, 4):
            y[j] = 0.0


@proc
def kernel(n: size, x: f32[n] @ DRAM, flag: bool):
    for i in seq(0, n):
        x[i] = x[i] * 2.0


# ------------------------------------------------------------------------------ lift_scope


def test_lift_if_out_of_loop(golden) -> None:  # type: ignore[no-untyped-def]
    scope, loop = branchy.find("if m > 4: _"), branchy.find_loop("i")
    s1, s2 = branchy.find("x[_] = 1.0"), branchy.find("x[_] = 2.0")
    p, c = lift_scope(branchy, scope)
    golden.check(p)
    assert isinstance(c.outer, IfCursor) and isinstance(c.inner, ForCursor)
    assert isinstance(c.orelse, ForCursor)
    assert p.forward(scope) == c.outer and p.forward(loop) == c.inner
    assert p.forward(s1) == c.inner.body()[0]
    assert p.forward(s2) == c.orelse.body()[0]
    assert_equivalent(branchy, p, trials=4)


def test_lift_if_out_of_if(golden) -> None:  # type: ignore[no-untyped-def]
    scope, parent = branchy.find("if n > 8: _"), branchy.find("if m > 2: _")
    s3 = branchy.find("y[2] = _")
    p, c = lift_scope(branchy, scope)
    golden.check(p)
    assert p.forward(scope) == c.outer and p.forward(parent) == c.inner
    assert isinstance(c.orelse, IfCursor)
    assert p.forward(s3) == c.inner.orelse()[0]  # the copy in c.orelse is fresh
    assert c.orelse.orelse()[0] != p.forward(s3)
    assert_equivalent(branchy, p, trials=6)


def test_lift_if_out_of_else_branch(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = lift_scope(other_branch, "if n > 8: _")
    golden.check(p)
    assert isinstance(c.orelse, IfCursor)
    assert_equivalent(other_branch, p, trials=8)


def test_lift_loop_out_of_if(golden) -> None:  # type: ignore[no-untyped-def]
    loop, parent = branchy.find_loop("j"), branchy.find("if m < 3: _")
    p, c = lift_scope(branchy, loop)
    golden.check(p)
    assert p.forward(loop) == c.outer and p.forward(parent) == c.inner
    assert not c.orelse
    assert_equivalent(branchy, p, trials=6)


def test_lift_loop_out_of_loop_compiles() -> None:
    i, j = loops.find_loop("i"), loops.find_loop("j")
    p, c = lift_scope(loops, j)
    assert p.forward(j) == c.outer and p.forward(i) == c.inner
    assert c.outer.name() == "j" and c.outer.body()[0].name() == "i"
    assert_equivalent(loops, p, trials=3)
    f = p.compile()
    rng = np.random.default_rng(1)
    n = 5
    a = rng.standard_normal((n, n)).astype(np.float32)
    b1, b2 = np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)
    a1, a2 = a.copy(), a.copy()
    f(n, a1, b1)
    loops.interpret(n, a2, b2)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(a1, a2)


def test_lift_not_scope() -> None:
    with pytest.raises(LiftNotScopeError):
        lift_scope(branchy, "x[_] = 1.0")


def test_lift_no_parent() -> None:
    with pytest.raises(LiftNoParentError):
        lift_scope(branchy, branchy.find_loop("i"))


def test_lift_not_alone() -> None:
    with pytest.raises(LiftNotAloneError):
        lift_scope(loops, "if i > 2: _")


def test_lift_condition_uses_loop() -> None:
    @proc
    def uses(n: size, x: f32[n] @ DRAM):
        for i in seq(0, n):
            if i > 2:
                x[i] = 0.0

    with pytest.raises(LiftConditionUsesLoopError):
        lift_scope(uses, "if _: _")


def test_lift_loop_from_else() -> None:
    with pytest.raises(LiftLoopFromElseError):
        lift_scope(from_else, from_else.find_loop("j"))


def test_lift_reorder_dependence() -> None:
    with pytest.raises(LiftReorderError) as e:
        lift_scope(loops, loops.find_loop("j #1"))
    assert e.value.counterexample is not None  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ specialize


def test_specialize_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    loop, stmt = branchy.find_loop("i"), branchy.find("x[_] = 1.0")
    p, c = specialize(branchy, loop, ["n == 5", "m > 4 and n % 2 == 0"])
    golden.check(p)
    assert len(c.branches) == 2 and all(isinstance(b, IfCursor) for b in c.branches)
    assert c.branches[1] == c.branches[0].orelse()[0]
    assert isinstance(c.fallback, BlockCursor) and c.fallback.parent() == c.branches[1]
    for old in (loop, stmt):
        dead = p.forward(old)
        assert isinstance(dead, Tombstone) and "specialized" in dead.hint
    assert_equivalent(branchy, p, trials=6)


def test_specialize_condition_from_the_block_lives_on() -> None:
    """A condition given as an expression cursor into the block is that old node: it
    forwards to the new ``if``'s condition (so the copies share nothing then). Given as
    text it is a new node, and the copies share the block's expressions that read no symbol
    bound in it (the inner ``m > 4``), which die like the copied ones."""
    loop = branchy.find_loop("i")
    cond, one = branchy.find("if m > 4: _").cond(), branchy.find("x[_] = 1.0").rhs()
    p, c = specialize(branchy, loop, cond)
    assert p.forward(cond) == c.branches[0].cond()
    assert isinstance(p.forward(one), Tombstone)
    assert_equivalent(branchy, p, trials=3)
    q, d = specialize(branchy, loop, "m > 4")
    then_if, else_if = d.branches[0].body()[0].body()[0], d.fallback[0].body()[0]
    assert then_if.cond().node() is else_if.cond().node()
    assert then_if.node() is not else_if.node()  # statements are never shared
    for old in (cond, one):
        assert isinstance(q.forward(old), Tombstone)
    assert_equivalent(branchy, q, trials=3)


def test_specialize_looks_in_the_block_only_for_conditions_given_as_nodes() -> None:
    """Conditions parsed from text are new nodes throughout (none is a node of the proc), so
    only those given as nodes or expression cursors (``Conditions.given``) are looked for in
    the block: the answer is the one of looking for all, and a cursor condition after text
    ones still lives on as its ``if``'s condition."""
    loop = branchy.find_loop("i")
    cond = branchy.find("if m > 4: _").cond()
    outside = branchy.find("if m > 2: _").cond().node()
    spec = Condition(SpecializeBadConditionError, at="block", many=True)
    stmts = loop.as_block().stmts()
    old = {id(x) for _, x in walk(branchy.ir())}
    cases = (["n == 5", "m > 4"], ["n == 5", cond], [outside, "n > 6"], [cond, outside])
    for given, fresh in zip(cases, (True, False, True, False), strict=True):
        res = spec.resolve(branchy.ir(), given, loop.as_block(), "specialize")
        assert isinstance(res, Conditions) and len(res) == len(given)
        nodes = [c.node() if isinstance(c, ExprCursor) else c for c in given]
        assert [id(e) for e in res.given] == [id(c) for c in nodes if not isinstance(c, str)]
        parsed = [e for e, c in zip(res, given, strict=True) if isinstance(c, str)]
        assert not any(id(x) in old for e in parsed for x in walk_expr(e))
        assert _fresh_conditions(res.given, stmts) == _fresh_conditions(list(res), stmts) == fresh
    p, c = specialize(branchy, loop, ["n == 5", cond])
    assert p.forward(cond) == c.branches[1].cond()
    assert_equivalent(branchy, p, trials=3)


def test_specialize_conditions_forms() -> None:
    cond = BinOp(">", kernel.find_loop("i").hi().node(), Const(3, INT), BOOL)
    for conds in ("flag", "n > 3 and flag or n == 1", cond, "2 < n <= 8", "True"):
        p, c = specialize(kernel, "x[_] = _", conds)
        assert len(c.branches) == 1
        assert_equivalent(kernel, p, trials=3)
    p, c = specialize(kernel, "x[_] = _", "i % 2 == 0")  # loop variables are visible
    f = p.compile()
    x = np.arange(6, dtype=np.float32)
    f(6, x, True)
    np.testing.assert_array_equal(x, 2 * np.arange(6, dtype=np.float32))


def test_specialize_no_conditions() -> None:
    with pytest.raises(SpecializeNoConditionsError):
        specialize(kernel, "x[_] = _", [])


@pytest.mark.parametrize("cond", ["n", "q > 1", "n * n > 1", "x[0] > 1.0", "n >", 3])
def test_specialize_bad_condition(cond: object) -> None:
    with pytest.raises(SpecializeBadConditionError):
        specialize(kernel, "x[_] = _", cond)


def test_specialize_scope() -> None:
    block = loops.find("x: _").expand(0, 1)
    with pytest.raises(SpecializeScopeError, match="declares x"):
        specialize(loops, block, "n > 2")


# --------------------------------------------------------------------- eliminate_dead_code


def test_dead_if_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    stmt, kept = branchy.find("if n > 3: _"), branchy.find("y[3] = _")
    p, c = eliminate_dead_code(branchy, stmt)
    golden.check(p)
    assert isinstance(c.kept, BlockCursor) and p.forward(kept) == c.kept[0]
    dead = p.forward(stmt)
    assert isinstance(dead, Tombstone) and dead.hint == "eliminated as dead code"
    assert_equivalent(branchy, p, trials=3)


def test_dead_if_false_keeps_else() -> None:
    @proc
    def f(n: size, y: f32[4] @ DRAM):
        assert n < 3
        if n > 4:
            y[0] = 1.0
        else:
            y[1] = 1.0
        if n > 5:
            y[2] = 1.0

    p, c = eliminate_dead_code(f, "if n > 4: _")
    assert p.forward(f.find("y[1] = _")) == c.kept[0]
    assert isinstance(p.forward(f.find("y[0] = _")), Tombstone)
    p, c = eliminate_dead_code(p, "if n > 5: _")
    assert not c.kept
    assert "y[2]" not in str(p)
    assert_equivalent(f, p, trials=2)


def test_dead_loop_and_pass() -> None:
    @proc
    def g(n: size, y: f32[4] @ DRAM):
        for i in seq(0, 4):
            for j in seq(n, n):  # noqa: B007
                y[i] = 1.0

    p, c = eliminate_dead_code(g, "for j in _: _")
    assert not c.kept and "pass" in str(p)
    assert_equivalent(g, p, trials=2)


def test_dead_kind() -> None:
    with pytest.raises(DeadCodeKindError):
        eliminate_dead_code(branchy, "y[3] = _")


def test_dead_undecided() -> None:
    with pytest.raises(DeadCodeUndecidedError):
        eliminate_dead_code(branchy, "if m > 2: _")


def test_dead_loop_may_run() -> None:
    with pytest.raises(DeadLoopMayRunError) as e:
        eliminate_dead_code(branchy, "for k in _: _")
    assert e.value.counterexample is not None  # type: ignore[attr-defined]
