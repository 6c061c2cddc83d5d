"""The rebuilding under the edit operations (issue 16): ``tree.with_field`` and
``tree.copy_node`` make the node its constructor would (every other field, the source
location included, the very object), ``update_at`` shares what an edit leaves alone, and
``Editor.retag`` changes a node's plain fields in place with every location forwarding to
itself."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from cursched import parallelize_loop, set_memory
from cursched.cursors import Editor, NodeLoc
from cursched.cursors.lineage import StepRecord
from cursched.cursors.tree import copy_node, copy_tree, update_at, walk, with_field
from cursched.errors import SrcInfo
from cursched.ir.memory import DRAM_STACK
from cursched.ir.nodes import Node, Pass, slot_init
from tests.cursors.procs import nest, two_loops


def _nodes() -> list[Node]:
    seen: dict[type, Node] = {}
    for p in (two_loops, nest):
        for _, n in walk(p.ir()):
            seen.setdefault(type(n), n)
    return list(seen.values())


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: type(n).__name__)
def test_with_field_is_the_constructors_node(node: Node) -> None:
    node = dataclasses.replace(node, srcinfo=SrcInfo("f.py", 3, 4))
    for f in dataclasses.fields(node):
        if not f.init:
            continue
        value = object()
        new = with_field(node, f.name, value)
        assert type(new) is type(node) and new is not node
        for g in dataclasses.fields(node):
            want = value if g.name == f.name else getattr(node, g.name)
            assert getattr(new, g.name) is want, (f.name, g.name)
        assert with_field(node, f.name, getattr(node, f.name)) is node
    copy = copy_node(node)
    assert copy is not node and copy == node and copy.srcinfo is node.srcinfo


def test_update_at_shares_an_unchanged_tree() -> None:
    ir = nest.ir()
    path = (("body", 1), ("body", 0))
    assert update_at(ir, path, lambda n: n) is ir
    new = update_at(ir, path, lambda _: Pass())
    assert new.body[1] is not ir.body[1] and new.body[1].body[1] is ir.body[1].body[1]
    assert new.body[0] is ir.body[0] and new.args is ir.args and new.preds is ir.preds


def test_retag_forwards_every_location_to_itself() -> None:
    p = two_loops
    loop = p.find_loop("i")
    inner = p.find("x[_] = _")
    q, c = parallelize_loop(p, loop)
    assert c.loop.loop().mode == "par" and q.forward(loop) == c.loop
    assert q.forward(inner).loc == inner.loc and q.forward(inner).node() is inner.node()
    t = p.find_alloc_or_arg("x")
    r, b = set_memory(p, t, DRAM_STACK)
    assert r.forward(t) == b.buffer and b.buffer.node().mem is DRAM_STACK


def test_retag_refuses_a_node_with_other_children() -> None:
    ir = two_loops.ir()
    loop = ir.body[0]
    ed = Editor(ir)
    with pytest.raises(AssertionError, match="keeps the node's children"):
        ed.retag(NodeLoc((("body", 0),)), loop.replace(body=(Pass(),)))


def test_copy_tree_keeps_no_node() -> None:
    for p in (two_loops, nest):
        ir = p.ir()
        copy = tuple(map(copy_tree, ir.body))
        old_ids = {id(n) for _, n in walk(ir)}
        assert copy == ir.body
        for s in copy:
            for _, n in walk(s):
                assert id(n) not in old_ids


@dataclasses.dataclass(frozen=True, slots=True)
class _Doubling:
    a: int
    b: int

    def __init__(self, a: int, b: int) -> None:  # more than assigning: called, not bypassed
        object.__setattr__(self, "a", 2 * a)
        object.__setattr__(self, "b", b)


def test_a_hand_written_init_is_called() -> None:
    x = _Doubling(1, 2)
    assert (x.a, x.b) == (2, 2)
    y = with_field(x, "b", 5)
    assert (y.a, y.b) == (4, 5)


def test_slot_init_makes_the_object_the_generated_init_would() -> None:
    """``slot_init`` (``Rewrite``, ``StepRecord``): the dataclass's parameters and defaults,
    every field set, still frozen, equal to the object the generated ``__init__`` makes; a
    field it cannot fill so (a default factory) is refused when the class is made."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Plain:
        a: int
        b: tuple[int, ...] = ()

    Fast = slot_init(dataclasses.make_dataclass(
        "Fast", [("a", int), ("b", tuple[int, ...], dataclasses.field(default=()))],
        frozen=True, slots=True,
    ))  # fmt: skip
    assert str(inspect.signature(Fast.__init__)) == "(self, a, b=())"
    x, y = Fast(1), Fast(1, (2,))
    assert (x.a, x.b, y.b) == (1, (), (2,)) and x == Fast(a=1) and repr(x) == "Fast(a=1, b=())"
    assert dataclasses.astuple(y) == dataclasses.astuple(Plain(1, (2,)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Fast()  # a missing argument, as the generated __init__ says
    factory = dataclasses.make_dataclass(
        "F", [("c", list, dataclasses.field(default_factory=list))], frozen=True, slots=True
    )
    with pytest.raises(TypeError, match="needs the generated __init__"):
        slot_init(factory)
    rec = StepRecord("split", (), (), (), (), None)
    assert rec.results == () and rec.primitive == "split"
