"""Cursor kinds, accessors and navigation."""

from __future__ import annotations

import pytest

from cursched import CursorError
from cursched.cursors import (
    AllocCursor,
    ArgCursor,
    AssignCursor,
    BlockCursor,
    ExprCursor,
    ForCursor,
    GapCursor,
    IfCursor,
    InvalidCursor,
    PassCursor,
    ReduceCursor,
)

from .procs import nest, two_loops


def test_statement_kinds_and_accessors() -> None:
    loop = two_loops.find_loop("i")
    assert isinstance(loop, ForCursor)
    assert loop.name() == "i" and loop.mode() == "seq"
    assert str(loop.lo().node().value) == "0"
    assert loop.hi().name() == "n"
    body = loop.body()
    assert isinstance(body, BlockCursor) and len(body) == 2
    assign = body[0]
    assert isinstance(assign, AssignCursor)
    assert assign.name() == "x"
    assert [i.name() for i in assign.idx()] == ["i"]
    assert assign.rhs().value() == 1.0
    red = two_loops.find("y[_] += _")
    assert isinstance(red, ReduceCursor) and red.name() == "y"
    assert red.rhs().op() == "*"
    assert red.rhs().lhs().name() == "x" and red.rhs().rhs().value() == 2.0


def test_if_alloc_pass_and_args() -> None:
    cond = nest.find("if _: _")
    assert isinstance(cond, IfCursor)
    assert cond.cond().op() == "<"
    assert len(cond.body()) == 1 and len(cond.orelse()) == 1
    alloc = nest.find_alloc_or_arg("t")
    assert isinstance(alloc, AllocCursor)
    assert alloc.name() == "t" and alloc.mem().__name__ == "DRAM" and len(alloc.shape()) == 1
    assert isinstance(nest.find("pass"), PassCursor)
    arg = nest.find_alloc_or_arg("A")
    assert isinstance(arg, ArgCursor)
    assert arg.name() == "A" and len(arg.shape()) == 2 and arg.mem().__name__ == "DRAM"
    assert [a.name() for a in nest.args()] == ["n", "m", "A", "s"]


def test_empty_orelse_is_invalid() -> None:
    from cursched import proc

    @proc
    def f(n: size, x: f32[n] @ DRAM):
        for i in seq(0, n):
            if i < 3:
                x[i] = 0.0

    c = f.find("if _: _")
    assert not c.orelse()
    assert isinstance(c.orelse(), InvalidCursor)


def test_next_prev_parent() -> None:
    loop = two_loops.find_loop("i")
    first, second = loop.body()
    assert first.next() == second and second.prev() == first
    assert not second.next() and isinstance(second.next(), InvalidCursor)
    assert not first.prev()
    assert first.parent() == loop
    assert not loop.parent()
    assert loop.next() == two_loops.find_loop("j")
    expr = second.rhs()
    assert expr.parent() == second
    assert first.idx()[0].parent() == first


def test_invalid_cursor_raises_on_use() -> None:
    bad = two_loops.find_loop("j").next()
    assert not bad
    with pytest.raises(CursorError, match="points nowhere"):
        bad.name()


def test_gaps_and_blocks() -> None:
    loop = two_loops.find_loop("i")
    first, second = loop.body()
    gap = first.after()
    assert isinstance(gap, GapCursor)
    assert gap.prev() == first and gap.next() == second
    assert gap.side() == "after" and gap.anchor() == first
    assert gap.parent() == loop
    assert first.before().next() == first and not first.before().prev()
    block = first.expand(0, 1)
    assert len(block) == 2 and list(block) == [first, second]
    assert block[1:] == second.as_block()
    assert block[-1] == second
    assert first.as_block().expand() == loop.body()
    assert block.parent() == loop
    assert block.before() == first.before() and block.after() == second.after()
    assert not block.next() and loop.body().next() is not None
    with pytest.raises(IndexError):
        block[2]
    with pytest.raises(CursorError):
        block[1:1]


def test_is_ancestor_of() -> None:
    outer = nest.find_loop("i")
    inner = nest.find_loop("j")
    assert outer.is_ancestor_of(inner)
    assert outer.is_ancestor_of(inner.body()[0].rhs())
    assert outer.is_ancestor_of(inner.after())
    assert not inner.is_ancestor_of(outer)
    assert not outer.is_ancestor_of(outer)
    assert not outer.is_ancestor_of(nest.find_loop("i #1"))
    assert outer.body().is_ancestor_of(inner.body()[0])


def test_expression_children() -> None:
    e = two_loops.find("x[_] * _")
    assert isinstance(e, ExprCursor)
    kids = e.children()
    assert [k.kind() for k in kids] == ["Read", "Const"]
    assert kids[0].idx()[0].name() == "j"
    assert e.kind() == "BinOp" and "x[j] * 2.0" in e.describe()


def test_at_roundtrip() -> None:
    loop = nest.find_loop("j")
    assert nest.at("body[1].body[0]") == loop
    assert nest.at("body[1].body[0:2]") == loop.expand(0, 1)
    assert nest.at("args[2]") == nest.find_alloc_or_arg("A")
    with pytest.raises(CursorError):
        nest.at("body[9]")
    with pytest.raises(CursorError):
        nest.at("body[0:9]")
    with pytest.raises(CursorError):
        nest.at("body[0]..x")


def test_cursor_equality_and_hash() -> None:
    a = two_loops.find_loop("i")
    b = two_loops.find("for i in _: _")
    assert a == b and hash(a) == hash(b)
    assert a != two_loops.find_loop("j")
    assert len({a, b}) == 1


def test_stride_and_types() -> None:
    from cursched import proc

    @proc
    def g(n: size, A: f32[n, 4] @ DRAM, y: f32[n] @ DRAM):
        for i in seq(0, n):
            if stride(A, 0) == 4:
                y[i] = A[i, 0]

    s = g.find("stride(A, 0)")
    assert s.dim() == 0 and s.name() == "A"
    assert s.type().is_integer()
    with pytest.raises(CursorError, match="has no dim"):
        g.find("A[_]").dim()


def test_start_gaps_point_into_empty_lists() -> None:
    from cursched import insert_pass, proc

    @proc
    def h(n: size, x: f32[n] @ DRAM):
        for i in seq(0, n):
            if i < 3:
                x[i] = 0.0

    cond = h.find("if _: _")
    gap = cond.start("orelse")
    assert gap.side() == "start" and gap.anchor() == cond and gap.parent() == cond
    assert not gap.next() and not gap.prev()
    assert "Gap at the start of the orelse of If" in gap.describe()
    assert "[GAP]" in str(gap) and "else:" in str(gap)
    assert cond.start() == cond.body()[0].before()  # equal by position
    assert cond.start().next() == cond.body()[0]
    p, res = insert_pass(h, gap)
    assert p.forward(cond).orelse()[0] == res.stmt  # type: ignore[union-attr]
    assert p.forward(gap) == res.stmt.before()
    assert "p.at('body[0].body[0]').start('orelse')" in p.history()
    with pytest.raises(CursorError, match="has no statement list"):
        cond.body()[0].start()
