"""Exo's pattern spellings (issue 15, item 2): nested-loop shorthands ``"i j"``, the
allocation pattern ``"t : _"`` in ``find`` and in primitives' pattern arguments, and
``delete_pass(p)`` without a target."""

from __future__ import annotations

import pytest

from cursched import delete_pass, lift_alloc, mult_loops, proc, reorder_loops, set_memory
from cursched.cursors import AllocCursor, ForCursor, Tombstone
from cursched.errors import PatternError
from cursched.ir.memory import DRAM_STACK
from cursched.testing import assert_equivalent


@proc
def nest(n: size, x: f32[n, 4]):
    for i in seq(0, n):
        for j in seq(0, 4):
            t: f32
            t = x[i, j]
            x[i, j] = t * 2.0
            pass
    for i in seq(0, n):  # noqa: B007
        pass
        pass


def test_find_nested_loops() -> None:
    c = nest.find_loop("i j")
    assert isinstance(c, ForCursor) and c.name() == "i" and c.body()[0].name() == "j"
    assert nest.find("i j") == c == nest.find_loop("i")
    # the second `i` loop has no inner `j`: only one match
    assert nest.find_loop("i j", many=True) == [c]
    with pytest.raises(PatternError):
        nest.find_loop("i j #1")
    with pytest.raises(PatternError):
        nest.find_loop("j i")


def test_nested_loops_in_primitives() -> None:
    p, c = reorder_loops(nest, "i j")
    assert c.outer.name() == "j" and c.inner.name() == "i"
    assert_equivalent(nest, p, trials=2)
    q, m = mult_loops(nest, "i j", "k")
    assert m.loop.name() == "k"
    assert_equivalent(nest, q, trials=2)


def test_alloc_pattern() -> None:
    for text in ("t : _", "t: _", "t:_"):
        c = nest.find(text)
        assert isinstance(c, AllocCursor) and c.name() == "t"
        assert nest.find_alloc_or_arg(text) == c
    p, c = lift_alloc(nest, "t : _")
    assert p.forward(nest.find("t : _")) == c.alloc
    q, b = set_memory(nest, "t : _", DRAM_STACK)
    assert b.buffer.mem() is DRAM_STACK and q.forward(nest.find("t : _")) == b.buffer


def test_delete_pass_without_target(golden) -> None:  # type: ignore[no-untyped-def]
    passes = nest.find("pass", many=True)
    p, c = delete_pass(nest)
    golden.check(p)
    assert len(c) == 0
    assert str(p).count("pass") == 1  # the all-`pass` body keeps one
    assert isinstance(p.forward(passes[0]), Tombstone)
    assert p.forward(passes[1]) == p.find("pass")
    assert isinstance(p.forward(passes[2]), Tombstone)
    assert_equivalent(nest, p, trials=2)
    assert "delete_pass(" in p.history()
