"""Pattern finding: statements, expressions, sequences, ``#n``, and the errors."""

from __future__ import annotations

import pytest

from cursched import PatternError, proc
from cursched.cursors import BlockCursor, ExprCursor, ForCursor, ReduceCursor

from .procs import nest, two_loops


@proc
def calls_and_scopes(n: size, x: f32[n] @ DRAM):
    with scope("main"):
        for i in seq(0, n):
            x[i] = fmaxf(x[i], 0.0)
    for k in seq(0, n / 2):
        x[2 * k] = -x[2 * k + 1]


def test_loop_patterns() -> None:
    assert two_loops.find("for i in _: _").name() == "i"
    assert two_loops.find("for _ in _: _").name() == "i"
    assert two_loops.find("for _ in _: _ #1").name() == "j"
    assert two_loops.find("for j in seq(0, n): _").name() == "j"
    assert [c.name() for c in two_loops.find_all("for _ in _: _")] == ["i", "j"]
    assert nest.find_loop("i #1").body()[0].kind() == "Pass"
    assert nest.find_loop("for j in _: _").name() == "j"


def test_statement_patterns() -> None:
    assert two_loops.find("x[_] = _").name() == "x"
    assert two_loops.find("y[_] = 2.0").name() == "y"
    assert isinstance(two_loops.find("y[_] += _"), ReduceCursor)
    assert two_loops.find("y[j] += _").name() == "y"
    assert nest.find("t : _").name() == "t"
    assert nest.find("if i < 2: _").cond().op() == "<"
    assert nest.find("if _: _\nelse: s += _").kind() == "If"
    assert calls_and_scopes.find("with scope('main'): _").name() == "main"
    assert len(two_loops.find_all("_")) == 5  # every statement


def test_sequence_patterns_give_blocks() -> None:
    b = two_loops.find("x[_] = _; y[_] = _")
    assert isinstance(b, BlockCursor) and len(b) == 2
    assert b[0].name() == "x" and b[1].name() == "y"
    with pytest.raises(PatternError):
        two_loops.find("y[_] = _; x[_] = _")


def test_expression_patterns() -> None:
    e = two_loops.find("x[_] * _")
    assert isinstance(e, ExprCursor) and e.op() == "*"
    assert two_loops.find("x[_]").name() == "x"
    assert len(two_loops.find_all("x[_]")) == 1  # the write x[i] = ... is no expression
    assert len(calls_and_scopes.find_all("x[_]")) == 2
    assert calls_and_scopes.find("x[_] #1").parent().kind() == "USub"
    assert calls_and_scopes.find("fmaxf(_, _)").name() == "fmaxf"
    assert calls_and_scopes.find("fmaxf(_)").name() == "fmaxf"
    assert calls_and_scopes.find("-x[_]").kind() == "USub"
    assert calls_and_scopes.find("n / 2").op() == "/"
    assert calls_and_scopes.find("2 * k + 1").op() == "+"
    assert nest.find("A[i, j]").name() == "A"
    assert nest.find("i < 2").op() == "<"


def test_find_below_a_cursor() -> None:
    second = nest.find_loop("i #1")
    assert second.find("pass").kind() == "Pass"
    with pytest.raises(PatternError):
        second.find("t[_] = _")
    outer = nest.find_loop("i")
    assert isinstance(outer.find_loop("j"), ForCursor)
    assert len(outer.find_all("s += _")) == 2
    assert outer.body().find("t[_] * _").op() == "*"
    e = nest.find("t[_] * _")
    assert e.find("t[_]").name() == "t"


def test_find_alloc_or_arg() -> None:
    assert nest.find_alloc_or_arg("t").kind() == "Alloc"
    assert nest.find_alloc_or_arg("s").kind() == "Arg"
    with pytest.raises(PatternError, match="closest: t"):
        nest.find_alloc_or_arg("tt")
    with pytest.raises(PatternError):
        nest.find_alloc_or_arg("a b")


def test_no_loop_lists_the_loops() -> None:
    with pytest.raises(PatternError, match=r"the loops are: i \(line \d+\), j \(line \d+\)"):
        two_loops.find_loop("k")


def test_nth_out_of_range() -> None:
    with pytest.raises(PatternError, match=r"wants match #5 but two_loops has only 1"):
        two_loops.find_loop("i #5")


def test_no_match_lists_candidates() -> None:
    with pytest.raises(PatternError, match=r"closest candidates: 'y\[i\] = 2.0'"):
        two_loops.find("y[i] = 3.0")
    with pytest.raises(PatternError, match=r"closest candidates: .*x\[j\] \* 2.0"):
        two_loops.find("x[j] * 3.0")


@pytest.mark.parametrize("bad", ["for i in", "x[", "", "a b c", "#3"])
def test_malformed_patterns(bad: str) -> None:
    with pytest.raises(PatternError):
        two_loops.find(bad)


def test_find_loop_wants_a_name() -> None:
    with pytest.raises(PatternError, match="loop variable name"):
        two_loops.find_loop("x + 1")


def test_find_loop_many() -> None:
    loops = nest.find_loop("i", many=True)
    assert [c.path() for c in loops] == [(("body", 1),), (("body", 2),)]
    assert nest.find_loop("i").find_loop("j", many=True) == [nest.find_loop("j")]


@proc
def scale(n: size, x: [f32][n] @ DRAM):
    for i in seq(0, n):
        x[i] = x[i] * 2.0


@proc
def caller(n: size, A: f32[n, 8] @ DRAM):
    for i in seq(0, n):
        scale(8, A[i, 0:8])
        w = A[i, 0:4]
        w[0] = 1.0


def test_call_and_window_patterns() -> None:
    call = caller.find("scale(_)")
    assert call.kind() == "Call" and call.name() == "scale"
    assert call.subproc().name == "scale" and len(call.args()) == 2
    assert caller.find("scale(8, A[_])") == call
    assert caller.find("A[i, 0:8]").parent() == call
    win = caller.find("w = _")
    assert win.kind() == "WindowStmt" and win.name() == "w"
    assert win.rhs().name() == "A"
    # an element-write pattern never matches the window binding of the same name
    writes = caller.find_all("w[_] = _")
    assert [c.kind() for c in writes] == ["Assign"]
    with pytest.raises(PatternError):
        caller.find("scale(9, _)")


def test_literals_match_by_kind() -> None:
    # `for i in seq(0, 2)` has the integer 2; `* 2.0` the float
    from .test_forwarding import small

    assert small.find("2").path() == (("body", 0), ("hi", -1))
    assert small.find("2.0").path()[-1] == ("rhs", -1)
    assert calls_and_scopes.find("-x[_]").kind() == "USub"


def test_expressions_in_asserts() -> None:
    @proc
    def g(n: size, x: f32[n] @ DRAM):
        assert n % 4 == 0
        for i in seq(0, n):
            x[i] = 0.0

    e = g.find("n % 4")
    assert e.path() == (("preds", 0), ("lhs", -1)) and e.op() == "%"
    assert e.parent().op() == "=="
    assert "^^^^^" in str(e)
    with pytest.raises(PatternError):
        g.find_loop("i").find("n % 4")  # below a cursor: only its subtree
