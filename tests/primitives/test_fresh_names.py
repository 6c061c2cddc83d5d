"""``buffer_common.fresh_names`` (the first free ``base<k>`` searched from a cached start)
gives the names the plain search over ``used_names(ir) | also`` gives, and
``arguments.NameUnion`` (a clash check without building the union) answers as the union."""

from __future__ import annotations

import pytest

from cursched.frontend import parse_source
from cursched.ir.memory import DRAM
from cursched.ir.nodes import ProcDef
from cursched.primitives.arguments import NameUnion
from cursched.primitives.buffers import buffer_common as bc


def _proc(loops: list[str], params: str = "") -> ProcDef:
    lines = [f"def p(n: size, x: f32[n] @ DRAM{params}):"]
    for v in loops:
        lines += [f"    for {v} in seq(0, n):", f"        x[{v}] = 0.0"]
    return parse_source("\n".join(lines) + "\n", {"DRAM": DRAM})


def _plain(ir: ProcDef, base: str, count: int, also: set[str]) -> list[str]:
    taken = bc.used_names(ir) | also
    return [bc.fresh_name(taken, base) for _ in range(count)]


@pytest.mark.parametrize(
    ("loops", "params", "also", "count"),
    [
        (["j0"], "", set(), 3),
        (["i0", "i1", "i2"], "", set(), 2),
        (["i0", "i2", "i5"], "", set(), 4),  # holes: i1, i3, i4, i6
        (["i0", "i1"], ", i2: size", {"i3"}, 2),  # a parameter and `also` take names too
        (["j0", "i1"], "", {"i0"}, 2),
        ([f"i{k}" for k in range(50)], "", {"i51"}, 3),
    ],
)
def test_fresh_names_are_the_plain_search(
    loops: list[str], params: str, also: set[str], count: int
) -> None:
    ir = _proc(loops, params)
    want = _plain(ir, "i", count, set(also))
    assert bc.fresh_names(ir, "i", count, set(also)) == want
    # a second ask of the same version starts from the cached first free index: the same
    assert bc.fresh_names(ir, "i", count, set(also)) == want


def test_first_free_is_cached_per_version() -> None:
    a = _proc(["i0", "i1"])
    b = _proc(["i0"])
    assert bc.fresh_names(a, "i", 1, set()) == ["i2"]
    # another version (another frozenset of bound names) is not answered from a's entry
    assert bc.fresh_names(b, "i", 1, set()) == ["i1"]


def test_name_union_answers_as_the_union() -> None:
    u = NameUnion({"a", "b"}, frozenset({"b", "c"}))
    assert "a" in u and "c" in u and "d" not in u
    assert sorted(u) == ["a", "b", "c"] and len(u) == 3
    assert set(u) == {"a", "b"} | {"b", "c"}
