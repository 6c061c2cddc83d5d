"""Conditions at a position and call preconditions."""

from __future__ import annotations

import pytest

from cursched import DRAM, proc
from cursched.analysis import conditions as cd
from cursched.ir.nodes import BinOp, Call, Const, Read
from cursched.ir.types import BOOL, INDEX, INT


@proc
def loops(n: size, A: f32[n] @ DRAM):
    assert n >= 4
    for i in seq(0, n):
        if i < 2:
            A[i] = 0.0


def _cmp(op: str, sym, v: int) -> BinOp:  # type: ignore[no-untyped-def]
    return BinOp(op, Read(sym, (), INDEX), Const(v, INT), BOOL)  # type: ignore[arg-type]


def test_decide_condition() -> None:
    p = loops.ir()
    i = p.body[0].iter  # type: ignore[union-attr]
    n = p.args[0].sym
    inside = (("body", 0), ("body", 0))
    assert cd.decide_condition(p, inside, _cmp("<", i, 0)) is False
    assert cd.decide_condition(p, inside, _cmp(">=", i, 0)) is True
    assert cd.decide_condition(p, inside, _cmp("<", i, 2)) is None
    assert cd.decide_condition(p, (("body", 0),), _cmp(">", n, 3)) is True
    # inside the if: i < 2 holds
    assert cd.decide_condition(p, (*inside, ("body", 0)), _cmp("<", i, 2)) is True


def test_check_always() -> None:
    p = loops.ir()
    i = p.body[0].iter  # type: ignore[union-attr]
    cd.check_always(p, (("body", 0), ("body", 0), ("body", 0)), _cmp("<=", i, 1))
    with pytest.raises(cd.ConditionError, match="i < 3 does not always hold") as info:
        cd.check_always(p, (("body", 0), ("body", 0)), _cmp("<", i, 3), primitive="specialize")
    assert info.value.counterexample is not None
    assert info.value.counterexample[i] >= 3
    assert str(info.value).startswith("specialize: ")


@proc
def fill(n: size, dst: [f32][n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n):
        dst[i] = 0.0


@proc
def caller(n: size, A: f32[n] @ DRAM):
    assert n % 4 == 0
    fill(n, A[0:n])


def test_call_preconditions() -> None:
    p = caller.ir()
    cd.check_call_preconditions(p, (("body", 0),))
    # the same call without the caller's assert: the callee's assert is not implied
    bare = p.replace(preds=())
    with pytest.raises(cd.CallPreconditionError, match="assert n % 4 == 0 of fill") as info:
        cd.check_call_preconditions(bare, (("body", 0),), primitive="replace")
    assert info.value.counterexample is not None
    assert info.value.counterexample[p.args[0].sym] % 4 != 0
    # a call whose window is shorter than the size it passes
    call = p.body[0]
    assert isinstance(call, Call)
    n_read = Read(p.args[0].sym, (), INDEX)
    longer = call.replace(args=(BinOp("+", n_read, Const(4, INT), INDEX), call.args[1]))
    with pytest.raises(cd.CallPreconditionError, match="shape of argument dst"):
        cd.check_call_preconditions(p.replace(body=(longer,)), (("body", 0),))
    # a size that may be zero
    shorter = call.replace(args=(BinOp("-", n_read, Const(4, INT), INDEX), call.args[1]))
    with pytest.raises(cd.CallPreconditionError, match="must be positive") as info:
        cd.check_call_preconditions(p.replace(body=(shorter,)), (("body", 0),))
    assert info.value.counterexample == {p.args[0].sym: 4}
    with pytest.raises(cd.CallPreconditionError, match="not a call"):
        cd.check_call_preconditions(loops.ir(), (("body", 0),))
