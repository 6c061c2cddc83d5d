"""insert_pass, delete_pass, reorder_stmts, rename: golden, negative, forwarding, differential."""

from __future__ import annotations

import pytest

from cursched import delete_pass, insert_pass, proc, rename, reorder_stmts
from cursched.analysis.checks import CommuteError
from cursched.cursors import PassCursor, StmtCursor
from cursched.primitives.loops.procs import InvalidNameError
from cursched.primitives.loops.statements import (
    EmptyBodyError,
    NotAPassError,
    NotTwoStatementsError,
    StmtsDontCommuteError,
)
from cursched.testing import assert_equivalent
from cursched.testing.plugin import Golden


@proc
def axpy(n: size, a: f32, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] += a * x[i]
        z[i] = x[i] * 2.0
    for j in seq(0, n):
        pass
        z[j] += y[j]


@proc
def dependent(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    t: f32
    for i in seq(0, n):
        t = x[i]
        y[i] = t
    for j in seq(0, n):  # noqa: B007
        pass


# ------------------------------------------------------------------------------ insert_pass


def test_insert_pass_golden(golden: Golden) -> None:
    p, res = insert_pass(axpy, axpy.find("z[_] = _").before())
    golden.check(p)
    assert isinstance(res.stmt, PassCursor) and res.stmt.proc() is p
    assert p.version == 1 and p.parent() is axpy


def test_insert_pass_forwarding() -> None:
    s = axpy.find("z[_] = _")
    gap = s.before()
    p, res = insert_pass(axpy, gap)
    assert p.forward(s) == res.stmt.next()
    assert p.forward(gap) == res.stmt.after()  # still just before `z[i] = ...`
    assert p.forward(axpy.find_loop("j")) == p.find_loop("j")


def test_insert_pass_at_ends() -> None:
    p, res = insert_pass(axpy, axpy.find_loop("i").before())
    assert res.stmt.path() == (("body", 0),)
    p, res = insert_pass(p, p.find_loop("j").after())
    assert res.stmt.path() == (("body", 3),)


def test_insert_pass_differential() -> None:
    p, _ = insert_pass(axpy, axpy.find("z[_] += _").after())
    assert_equivalent(axpy, p)


# ------------------------------------------------------------------------------ delete_pass


def test_delete_pass_golden(golden: Golden) -> None:
    p, res = delete_pass(axpy, "pass")
    golden.check(p)
    assert list(res) == []


def test_delete_pass_forwarding() -> None:
    ps = axpy.find("pass")
    after = axpy.find("z[_] += _")
    p, _ = delete_pass(axpy, ps)
    assert p.forward(after) == p.find("z[_] += _")
    assert "killed by delete_pass at v1" in repr(p.forward(ps))


def test_delete_pass_differential() -> None:
    p, _ = delete_pass(axpy, "pass")
    assert_equivalent(axpy, p)


def test_delete_pass_not_a_pass() -> None:
    with pytest.raises(NotAPassError) as e:
        delete_pass(axpy, "z[_] += _")
    msg = str(e.value)
    assert msg.startswith("delete_pass: Reduce 'z' is not `pass`")
    assert "z[j] += y[j]  # <--" in msg


def test_delete_pass_only_statement() -> None:
    with pytest.raises(EmptyBodyError, match="delete_pass: the `pass` is the only statement"):
        delete_pass(dependent, "pass")


# ---------------------------------------------------------------------------- reorder_stmts


def test_reorder_stmts_golden(golden: Golden) -> None:
    p, res = reorder_stmts(axpy, "y[_] += _; z[_] = _")
    golden.check(p)
    first, second = res
    assert isinstance(first, StmtCursor) and first.name() == "z" and second.name() == "y"
    golden.check(repr(res), name="cursors")


def test_reorder_stmts_forwarding() -> None:
    a = axpy.find("y[_] += _")
    b = axpy.find("z[_] = _")
    block = a.expand(0, 1)
    p, res = reorder_stmts(axpy, block)
    assert p.forward(a) == res.second and p.forward(b) == res.first
    assert p.forward(a.rhs().lhs()) == res.second.rhs().lhs()
    assert p.forward(block) == res.first.expand(0, 1)
    assert p.forward(b.before()) == res.first.before()


def test_reorder_stmts_differential() -> None:
    p, _ = reorder_stmts(axpy, "y[_] += _; z[_] = _")
    assert_equivalent(axpy, p)
    q, _ = reorder_stmts(axpy, "pass; z[_] += _")
    assert_equivalent(axpy, q)


def test_reorder_stmts_not_two() -> None:
    with pytest.raises(NotTwoStatementsError, match="reorder_stmts: wants a block of exactly two"):
        reorder_stmts(axpy, axpy.find("pass"))
    with pytest.raises(NotTwoStatementsError, match=r"got 1\n  at body\[1\].body\[0:1\]"):
        reorder_stmts(axpy, axpy.find("pass"))


def test_reorder_stmts_dependent() -> None:
    with pytest.raises(StmtsDontCommuteError) as e:
        reorder_stmts(dependent, "t = _; y[_] = _")
    assert isinstance(e.value.internal_cause, CommuteError)
    msg = str(e.value)
    assert msg.startswith("reorder_stmts: the two statements may not commute")
    assert "# BLOCK START" in msg


def test_reorder_stmts_unsafe_skip_checks() -> None:
    _p, res = reorder_stmts(dependent, "t = _; y[_] = _", unsafe_skip_checks=True)
    assert res.first.name() == "y"


# ----------------------------------------------------------------------------------- rename


def test_rename_golden(golden: Golden) -> None:
    p, res = rename(axpy, "axpy2")
    golden.check(p)
    assert p.name() == "axpy2" and len(res) == 0


def test_rename_forwarding() -> None:
    cs = [axpy.find_loop("i"), axpy.find("a * _"), axpy.find("pass").after(), axpy.body()]
    p, _ = rename(axpy, "axpy2")
    for c in cs:
        out = p.forward(c)
        assert out and out.loc == c.loc and out.proc() is p


def test_rename_differential() -> None:
    p, _ = rename(axpy, "axpy2")
    assert_equivalent(axpy, p)


@pytest.mark.parametrize("bad", ["1abc", "for", "a-b", ""])
def test_rename_invalid(bad: str) -> None:
    with pytest.raises(InvalidNameError, match=r"rename: .* is not a valid proc name"):
        rename(axpy, bad)
