"""``check_parallel`` keeps the verdicts it proved, by the loop node's identity (issue 16): a
verdict is reused only where everything the proof read is the very same object, so a loop
whose body, bounds or context changed is proven again."""

from __future__ import annotations

import pytest

from cursched import DRAM, proc
from cursched.analysis import checks as ck
from cursched.analysis.checks import ParallelError
from cursched.ir.nodes import Const, ProcDef
from cursched.ir.types import INT


@proc
def shifted(n: size, m: size, x: f32[2 * n + m] @ DRAM):
    assert m >= n
    for i in seq(0, n):
        x[i + m] = x[i]


@proc
def nested(n: size, x: f32[n, 8] @ DRAM):
    for k in seq(0, 4):
        for i in seq(0, n):
            x[i, k] = x[i, k + 4]


LOOP = (("body", 0),)


def _proven(p: ProcDef) -> None:
    ck.check_parallel(p, LOOP, primitive="test")
    assert ck._PARALLEL_OK[id(p.body[0])][0] is p.body[0]


def test_a_proven_loop_is_not_proven_again(monkeypatch: pytest.MonkeyPatch) -> None:
    p = shifted.ir()
    _proven(p)
    calls: list[object] = []
    real = ck.dependence
    monkeypatch.setattr(ck, "dependence", lambda *a: calls.append(a) or real(*a))
    ck.check_parallel(p, LOOP)
    ck.check_parallel(p.replace(name="other"), LOOP)  # the same loop, parameters, asserts
    assert calls == []


def test_a_changed_assert_is_proven_again() -> None:
    p = shifted.ir()
    _proven(p)
    # the very loop node, without the assert that keeps its accesses apart: a cache keyed by
    # the loop alone would pass it
    with pytest.raises(ParallelError, match="carries a dependence"):
        ck.check_parallel(p.replace(preds=()), LOOP)


def test_a_changed_body_is_proven_again() -> None:
    p = shifted.ir()
    _proven(p)
    loop = p.body[0]
    stmt = loop.body[0]
    # x[i + 1] = x[i] in the same loop (same path, same iteration variable, same bounds):
    # a cache keyed by the loop's place or variable would pass it
    racy = stmt.replace(idx=(stmt.idx[0].replace(rhs=Const(1, INT)),))
    with pytest.raises(ParallelError, match="carries a dependence"):
        ck.check_parallel(p.replace(body=(loop.replace(body=(racy,)),)), LOOP)


def test_a_changed_enclosing_loop_is_proven_again() -> None:
    p = nested.ir()
    inner = (("body", 0), ("body", 0))
    ck.check_parallel(p, inner)
    outer = p.body[0]
    # the same inner loop under k in [0, 8): x[i, k] and x[i, k + 4] of other k now meet, but
    # for the loop over i only the same k matters: still parallel; the verdict is recomputed
    # (the enclosing bounds are other objects) and holds
    wider = p.replace(body=(outer.replace(hi=Const(8, INT)),))
    hit = ck._PARALLEL_OK[id(outer.body[0])]
    assert any(x is outer.hi for x in hit)
    ck.check_parallel(wider, inner)
    again = ck._PARALLEL_OK[id(outer.body[0])]
    assert again is not hit and not any(x is outer.hi for x in again)
