"""Edit operations: the only way a primitive changes the IR.

An ``Editor`` starts from one ``ProcDef`` and applies ``replace``, ``wrap``, ``move``,
``delete`` and ``insert`` (plus ``replace_node`` for one expression or parameter and
``set_proc`` for the proc's own name). Each operation records a forwarding map
(``cursched.cursors.forwarding``); the step's map is their composition.

Identity is by node. Inside a replaced region the editor itself finds the survivors: an old
node object that occurs exactly once in the new statements is the same node (moved or
wrapped), a loop rebuilt around the same iteration variable is the same loop, and pairs the
primitive names in ``same`` (old node -> new node, both objects) are the same node. Every other
old node dies, with the ``hint`` the primitive gives. A primitive therefore preserves identity
simply by reusing the old node objects, which frozen IR makes natural.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cursched.cursors.forwarding import (
    IDENTITY,
    Dead,
    MoveMap,
    NodeMap,
    PathMap,
    RelPath,
    SpliceMap,
    Survivors,
    compose,
    forward_loc,
)
from cursched.cursors.locs import ArgLoc, BlockLoc, GapLoc, Loc, NodeLoc
from cursched.cursors.tree import children, stmt_list, update_at, walk
from cursched.ir.nodes import For, Node, ProcDef, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.symbols import Sym


def find_survivors(
    old: Sequence[Any], new: Sequence[Any], same: Mapping[int, Any] | None = None
) -> Survivors:
    """Which nodes of the region ``old`` live on in ``new`` (both lists of nodes).

    Args:
        old: the nodes taken out (statements of a block, or one node).
        new: the nodes put in.
        same: ``id(old node) -> new node`` for nodes the primitive rebuilt but that keep
            their identity.
    """
    where: dict[int, list[RelPath]] = {}
    loops: dict[Sym, list[RelPath]] = {}
    for k, n in enumerate(new):
        for rest, x in walk(n):
            where.setdefault(id(x), []).append((k, rest))
            if isinstance(x, For):
                loops.setdefault(x.iter, []).append((k, rest))
    old_count: Counter[int] = Counter()
    for n in old:
        for _, x in walk(n):
            old_count[id(x)] += 1
    subtrees: dict[RelPath, RelPath] = {}
    nodes: dict[RelPath, RelPath] = {}

    def unique(hits: list[RelPath] | None) -> RelPath | None:
        return hits[0] if hits is not None and len(hits) == 1 else None

    def visit(x: Any, rel: RelPath) -> None:
        if old_count[id(x)] == 1:
            hit = unique(where.get(id(x)))
            if hit is not None:
                subtrees[rel] = hit
                return
        target: RelPath | None = None
        if same is not None and id(x) in same:
            target = unique(where.get(id(same[id(x)])))
        elif isinstance(x, For):
            target = unique(loops.get(x.iter))
        if target is not None:
            nodes[rel] = target
        for step, c in children(x):
            visit(c, (rel[0], (*rel[1], step)))

    for k, n in enumerate(old):
        visit(n, (k, ()))
    return Survivors(subtrees, nodes)


def _same_ids(same: Iterable[tuple[Any, Any]]) -> dict[int, Any] | None:
    out = {id(a): b for a, b in same}
    return out or None


C = TypeVar("C")


@dataclass(frozen=True)
class Rewrite(Generic[C]):
    """What a primitive's rewrite hands to the framework (``Editor.done``): the new IR, the
    step's forwarding map, the class of the cursors to return and each field's location in
    the new IR (a ``Loc``, a tuple of them, or a plain value).
    """

    ir: ProcDef
    fmap: PathMap
    cursors: type[C]
    fields: dict[str, Any]


class Editor:
    """Applies edit operations to a ``ProcDef`` and records their forwarding maps.

    Locations passed to an operation address the *current* IR of the editor
    (``ed.forward(loc)`` brings a location of the starting IR there).
    """

    def __init__(self, ir: ProcDef) -> None:
        self.start = ir
        self.ir = ir
        self._maps: list[PathMap] = []

    # -- maps -------------------------------------------------------------------------------
    @property
    def map(self) -> PathMap:
        """The composition of every edit so far (starting IR -> current IR)."""
        return compose(self._maps)

    def forward(self, loc: Loc) -> Loc | Dead:
        """Where ``loc`` (a location of the starting IR) is now."""
        return forward_loc(self.map, loc)

    # -- operations -------------------------------------------------------------------------
    def replace(
        self,
        block: BlockLoc,
        new: Sequence[Stmt],
        *,
        same: Iterable[tuple[Any, Any]] = (),
        hint: str = "",
    ) -> BlockLoc:
        """Replace the statements of ``block`` by ``new``; returns the block of ``new``
        (empty, ``lo == hi``, when ``new`` is empty).
        """
        old = stmt_list(self.ir, block.parent, block.attr)
        assert 0 <= block.lo <= block.hi <= len(old), "block out of range"
        region = old[block.lo : block.hi]
        new = tuple(new)
        survivors = find_survivors(region, new, _same_ids(same))
        lst = (*old[: block.lo], *new, *old[block.hi :])
        self.ir = update_at(self.ir, block.parent, lambda n: n.replace(**{block.attr: lst}))
        self._maps.append(
            SpliceMap(block.parent, block.attr, block.lo, block.hi, len(new), survivors, hint)
        )
        return BlockLoc(block.parent, block.attr, block.lo, block.lo + len(new))

    def replace_node(
        self,
        loc: NodeLoc | ArgLoc,
        new: Node,
        *,
        same: Iterable[tuple[Any, Any]] = (),
        hint: str = "",
    ) -> NodeLoc:
        """Replace one node (an expression, a parameter, a statement in place)."""
        path = (("args", loc.index),) if isinstance(loc, ArgLoc) else loc.path
        old = get_at(self.ir, path)
        survivors = find_survivors((old,), (new,), _same_ids(same))
        self.ir = update_at(self.ir, path, lambda _: new)
        self._maps.append(NodeMap(path, survivors, hint))
        return NodeLoc(path)

    def insert(self, gap: GapLoc | tuple[Path, str, int], stmts: Sequence[Stmt]) -> BlockLoc:
        """Insert ``stmts`` at ``gap`` (a gap cursor's location or ``(parent, attr, index)``)."""
        parent, attr, pos = gap.position() if isinstance(gap, GapLoc) else gap
        return self.replace(BlockLoc(parent, attr, pos, pos), stmts)

    def delete(self, block: BlockLoc, *, hint: str = "") -> tuple[Path, str, int]:
        """Delete the statements of ``block``; returns the position where they were."""
        self.replace(block, (), hint=hint)
        return block.parent, block.attr, block.lo

    def wrap(
        self, block: BlockLoc, make: Callable[[tuple[Stmt, ...]], Stmt], *, hint: str = ""
    ) -> NodeLoc:
        """Replace ``block`` by the one statement ``make(stmts)`` that holds them."""
        stmts = stmt_list(self.ir, block.parent, block.attr)[block.lo : block.hi]
        out = self.replace(block, (make(stmts),), hint=hint)
        return NodeLoc((*out.parent, (out.attr, out.lo)))

    def move(self, block: BlockLoc, gap: GapLoc | tuple[Path, str, int]) -> BlockLoc:
        """Move the statements of ``block`` unchanged to ``gap``; they keep their identity."""
        gparent, gattr, gpos = gap.position() if isinstance(gap, GapLoc) else gap
        n = block.hi - block.lo
        if gparent == block.parent and gattr == block.attr:
            assert not block.lo < gpos < block.hi, "cannot move a block into itself"
            dest = (gparent, gattr, gpos - n if gpos >= block.hi else gpos)
        else:
            inner = block.stmt_paths()
            assert not any(gparent[: len(p)] == p for p in inner), "cannot move into itself"
            shifted = SpliceMap(block.parent, block.attr, block.lo, block.hi, 0)(gparent)
            assert not isinstance(shifted, Dead)
            dest = (shifted, gattr, gpos)
        old = stmt_list(self.ir, block.parent, block.attr)
        moved = old[block.lo : block.hi]
        rest = (*old[: block.lo], *old[block.hi :])
        ir = update_at(self.ir, block.parent, lambda x: x.replace(**{block.attr: rest}))
        dparent, dattr, dpos = dest
        target = stmt_list(ir, dparent, dattr)
        lst = (*target[:dpos], *moved, *target[dpos:])
        self.ir = update_at(ir, dparent, lambda x: x.replace(**{dattr: lst}))
        self._maps.append(MoveMap(block.parent, block.attr, block.lo, block.hi, dest))
        return BlockLoc(dparent, dattr, dpos, dpos + n)

    def done(self, cursors: type[C], **fields: Any) -> Rewrite[C]:
        """Finish: the rewrite with the cursors to return, by field, as locations of the
        current IR (``NoLoc("why")`` for a field that does not apply).
        """
        return Rewrite(self.ir, self.map, cursors, fields)

    def set_proc(self, **changes: Any) -> None:
        """Change fields of the ``ProcDef`` itself that hold no nodes (``name``, ``instr``)."""
        assert not {"args", "preds", "body"} & set(changes), "use the node operations"
        self.ir = self.ir.replace(**changes)
        self._maps.append(IDENTITY)
