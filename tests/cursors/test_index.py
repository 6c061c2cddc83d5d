"""The per-node indexes (issue 16): ``find_loop`` and ``find_alloc_or_arg`` by name through
the cached counts give the cursors the pattern walk gives, on random procs and after steps
that share most of the tree; ``bound_names`` is the set a walk collects."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from cursched import Proc, fission, split
from cursched.cursors import patterns
from cursched.cursors.index import bound_names, nth_alloc, nth_loop
from cursched.cursors.tree import walk, walk_stmts
from cursched.frontend import parse_source
from cursched.ir.nodes import Alloc, For, WindowStmt
from tests.primitives.fuzzgen import ENV, proc_text


def _walked(p: Proc, kind: type, name: str) -> list[Any]:
    return [path for path, s in walk_stmts(p.ir().body, ()) if _named(s, kind, name)]


def _named(s: Any, kind: type, name: str) -> bool:
    if kind is For:
        return isinstance(s, For) and s.iter.name == name
    return isinstance(s, Alloc) and s.sym.name == name


def _check(p: Proc) -> None:
    body = p.ir().body
    loops = {s.iter.name for _, s in walk_stmts(body, ()) if isinstance(s, For)}
    allocs = {s.sym.name for _, s in walk_stmts(body, ()) if isinstance(s, Alloc)}
    for name in loops:
        want = _walked(p, For, name)
        assert [nth_loop(body, name, k) for k in range(len(want) + 1)] == [*want, None]
        by_pattern = patterns.find(p, f"for {name} in _: _", many=True)
        assert p.find_loop(name, many=True) == by_pattern
        assert p.find_loop(f"{name} #{len(want) - 1}").loc == by_pattern[-1].loc
    for name in allocs:
        want = _walked(p, Alloc, name)
        assert [nth_alloc(body, name, k) for k in range(len(want) + 1)] == [*want, None]
        assert p.find_alloc_or_arg(f"{name} #{len(want) - 1}").path() == want[-1]
    bound = {
        x.iter.name if isinstance(x, For) else x.sym.name
        for _, x in walk(p.ir())
        if isinstance(x, For | Alloc | WindowStmt)
    }
    assert bound_names(p.ir()) == bound


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=proc_text())
def test_indexed_find_agrees_with_the_pattern_walk(text: str) -> None:
    _check(Proc(parse_source(text, ENV)))


SRC = """
def f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        t: f32 @ DRAM
        t = x[i]
        y[i] = t
        x[i] = 1.0
    for i in seq(0, n):
        for j in seq(0, 4):
            x[i] = y[i]
"""


def test_the_index_follows_the_steps_that_share_the_tree() -> None:
    p = Proc(parse_source(SRC, ENV))
    _check(p)
    p, _ = split(p, "i #1", 2, ("io", "ii"), tail="cut")
    _check(p)
    p, _ = fission(p, p.find("y[_] = _").after())
    _check(p)
    assert p.find_loop("i #1").path() == (("body", 1),)
    assert [c.path() for c in p.find_loop("ii", many=True)] == [
        (("body", 2), ("body", 0)),
        (("body", 3),),
    ]
