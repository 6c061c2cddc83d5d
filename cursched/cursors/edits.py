"""Edit operations: the only way a primitive changes the IR.

``replace``, ``wrap``, ``move``, ``delete`` and ``insert`` (plus ``replace_node`` for one
expression, parameter or statement in place, and ``retag`` for a node whose plain fields
change under the same children) each take a ``ProcDef`` and return the new one
with the operation's forwarding map (``cursched.cursors.forwarding``). An ``Editor`` applies
them in turn (and ``set_proc`` for the proc's own name) and composes the maps into the step's.

Identity is by node. Inside a replaced region the editor itself finds the survivors: an old
node object that occurs exactly once in the new statements is the same node (moved or
wrapped), a loop rebuilt around the same iteration variable is the same loop, and pairs the
primitive names in ``same`` (old node -> new node, both objects) are the same node. Every other
old node dies, with the ``hint`` the primitive gives. A primitive therefore preserves identity
simply by reusing the old node objects, which frozen IR makes natural.

A primitive may tell ``replace`` which of its new statements are ``fresh`` (built anew
throughout, as ``fresh_copy`` builds them): the search does not look into those. The claim is
checked when ``edit_settings.check_fresh`` is on, as it is in the test suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeAlias, TypeVar

from cursched.cursors.forwarding import (
    IDENTITY,
    IN_PLACE,
    NO_SURVIVORS,
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
from cursched.cursors.tree import _CHILDREN, iter_nodes, stmt_list, update_at, with_field
from cursched.ir.nodes import For, Node, Pass, ProcDef, Stmt, slot_init
from cursched.ir.paths import Path, Step, get_at
from cursched.ir.symbols import Sym

# A path under construction, as a chain of links ``(parent link, step)`` ending in the
# region offset: building a full tuple for every node of both regions dominated the cost of
# every edit, while only the paths of the survivors are ever needed.
_Link: TypeAlias = "tuple[_Link, Step] | int"
_MANY: Final = object()  # a node or loop found more than once in the new region


def _rel(link: _Link) -> RelPath:
    steps: list[Step] = []
    while not isinstance(link, int):
        link, step = link
        steps.append(step)
    steps.reverse()
    return link, tuple(steps)


def _index_new(
    new: Sequence[Any], fresh: frozenset[int] = frozenset()
) -> tuple[dict[int, Any], dict[Sym, Any]]:
    """Every addressable node of ``new`` by id, and every loop by its iteration variable,
    each with its link, or ``_MANY`` when it occurs more than once; the statements whose id
    is in ``fresh`` are left out (no old node nor old loop can be found in them)."""
    where: dict[int, Any] = {}
    loops: dict[Sym, Any] = {}

    def go(x: Any, link: _Link) -> None:
        i = id(x)
        where[i] = _MANY if i in where else link
        if isinstance(x, For):
            loops[x.iter] = _MANY if x.iter in loops else link
        for attr, many in _CHILDREN.get(type(x), ()):
            v = getattr(x, attr)
            if many:
                for j, c in enumerate(v):
                    go(c, (link, (attr, j)))
            else:
                go(v, (link, (attr, -1)))

    for k, n in enumerate(new):
        if id(n) not in fresh:
            go(n, k)
    return where, loops


def _count_old(old: Sequence[Any]) -> dict[int, int]:
    count: dict[int, int] = {}

    def go(x: Any) -> None:
        i = id(x)
        count[i] = count.get(i, 0) + 1
        for attr, many in _CHILDREN.get(type(x), ()):
            v = getattr(x, attr)
            if many:
                for c in v:
                    go(c)
            else:
                go(v)

    for n in old:
        go(n)
    return count


def find_survivors(
    old: Sequence[Any],
    new: Sequence[Any],
    same: Mapping[int, Any] | None = None,
    fresh: frozenset[int] = frozenset(),
) -> Survivors:
    """Which nodes of the region ``old`` live on in ``new`` (both lists of nodes).

    Args:
        old: the nodes taken out (statements of a block, or one node).
        new: the nodes put in.
        same: ``id(old node) -> new node`` for nodes the primitive rebuilt but that keep
            their identity.
        fresh: ids of nodes of ``new`` that hold no node of ``old``, no loop over an
            iteration variable of one of its loops and no node named in ``same``: they
            cannot change the answer, so they are not indexed.
    """
    if not old or not new:
        return NO_SURVIVORS  # an insertion kills nothing; a deletion keeps nothing
    where, loops = _index_new(new, fresh)
    old_count = _count_old(old)
    subtrees: dict[RelPath, RelPath] = {}
    nodes: dict[RelPath, RelPath] = {}

    def unique(hit: Any) -> RelPath | None:
        return None if hit is None or hit is _MANY else _rel(hit)

    def visit(x: Any, link: _Link) -> None:
        i = id(x)
        if old_count[i] == 1:
            hit = unique(where.get(i))
            if hit is not None:
                subtrees[_rel(link)] = hit
                return
        target: RelPath | None = None
        if same is not None and i in same:
            target = unique(where.get(id(same[i])))
        elif isinstance(x, For):
            target = unique(loops.get(x.iter))
        if target is not None:
            nodes[_rel(link)] = target
        for attr, many in _CHILDREN.get(type(x), ()):
            v = getattr(x, attr)
            if many:
                for j, c in enumerate(v):
                    visit(c, (link, (attr, j)))
            else:
                visit(v, (link, (attr, -1)))

    for k, n in enumerate(old):
        visit(n, k)
    return Survivors(subtrees, nodes)


def _same_ids(same: Iterable[tuple[Any, Any]]) -> dict[int, Any] | None:
    out = {id(a): b for a, b in same}
    return out or None


@dataclass
class EditSettings:
    """Process-wide switches of the edit operations.

    Attributes:
        check_fresh: check every claim of ``replace(..., fresh=...)`` (a walk of the old
            region and of the fresh statements, the very cost the claim saves): off by
            default, on in the test suite (``tests/conftest.py``), so that a primitive
            claiming freshness for a statement holding an old node fails its tests.
    """

    check_fresh: bool = False


edit_settings = EditSettings()


def _fresh_ids(
    old: Sequence[Any], new: Sequence[Any], fresh: Sequence[Any], same: Mapping[int, Any] | None
) -> frozenset[int]:
    """The ids of the ``fresh`` statements, the claim checked first when
    ``edit_settings.check_fresh`` is on."""
    ids = frozenset(map(id, fresh))
    if ids and edit_settings.check_fresh:
        _check_fresh(old, new, fresh, same)
    return ids


def _check_fresh(
    old: Sequence[Any], new: Sequence[Any], fresh: Sequence[Any], same: Mapping[int, Any] | None
) -> None:
    """Raise ``AssertionError`` unless each of ``fresh`` is a statement of ``new`` holding
    no node of ``old``, no loop over an iteration variable of one of ``old``'s loops and no
    node named in ``same`` (what ``find_survivors`` may skip without changing its answer)."""
    if not all(any(f is n for n in new) for f in fresh):
        raise AssertionError("a fresh statement is not one of the new statements")
    taken = {id(x) for x in iter_nodes(old)}
    taken.update(id(x) for x in (same or {}).values())
    iters = {x.iter for x in iter_nodes(old) if isinstance(x, For)}
    for f in fresh:
        for x in iter_nodes((f,)):
            if id(x) in taken or (isinstance(x, For) and x.iter in iters):
                what = type(x).__name__
                raise AssertionError(f"a statement claimed fresh holds an old node or loop: {what}")


C = TypeVar("C")


@slot_init  # every primitive call makes one: see ``slot_init``
@dataclass(frozen=True, slots=True)
class Rewrite(Generic[C]):
    """What a primitive's rewrite hands to the framework (``Editor.done``): the new IR, the
    step's forwarding map, the class of the cursors to return and each field's location in
    the new IR (a ``Loc``, a tuple of them, or a plain value).
    """

    ir: ProcDef
    fmap: PathMap
    cursors: type[C]
    fields: dict[str, Any]


GapPos = GapLoc | tuple[Path, str, int]
"""A gap: a gap cursor's location, or ``(parent path, list attribute, index)``."""


def _pos(gap: GapPos) -> tuple[Path, str, int]:
    return gap.position() if isinstance(gap, GapLoc) else gap


# ------------------------------------------------------------- the operations, pure


def replace(
    ir: ProcDef,
    block: BlockLoc,
    new: Sequence[Stmt],
    *,
    same: Iterable[tuple[Any, Any]] = (),
    hint: str = "",
    kill_all: bool = False,
    fresh: Sequence[Stmt] = (),
) -> tuple[ProcDef, SpliceMap]:
    """Replace the statements of ``block`` by ``new`` (old nodes found again in ``new`` live
    on, see the module docstring; the others die with ``hint``).

    ``kill_all``: the caller knows that no old node lives on (each is in ``new`` twice or
    more, or not at all, and no loop of ``new`` has an old iteration variable, as in
    ``unroll_loop``'s copies): the search for survivors, a walk of both regions, is skipped.

    ``fresh``: statements of ``new`` (the objects) that the caller built anew throughout
    (``fresh_copy``, new symbols for every loop): no node of the block, no loop over an
    iteration variable of one of its loops, no node named in ``same``. The search for
    survivors does not walk them, with the same answer; a claim that does not hold fails
    when ``edit_settings.check_fresh`` is on.
    """
    old = stmt_list(ir, block.parent, block.attr)
    assert 0 <= block.lo <= block.hi <= len(old), "block out of range"
    new = tuple(new)
    if kill_all:
        survivors = NO_SURVIVORS
    else:
        region, same_ids = old[block.lo : block.hi], _same_ids(same)
        ids = _fresh_ids(region, new, fresh, same_ids)
        survivors = find_survivors(region, new, same_ids, ids)
    lst = (*old[: block.lo], *new, *old[block.hi :])
    out = update_at(ir, block.parent, lambda n: with_field(n, block.attr, lst))
    return out, SpliceMap(block.parent, block.attr, block.lo, block.hi, len(new), survivors, hint)


def replace_node(
    ir: ProcDef,
    loc: NodeLoc | ArgLoc,
    new: Node,
    *,
    same: Iterable[tuple[Any, Any]] = (),
    hint: str = "",
    kill_all: bool = False,
) -> tuple[ProcDef, NodeMap]:
    """Replace one node (an expression, a parameter, a statement in place).

    ``kill_all``: as for ``replace``, the caller knows that no old node lives on (``new`` is
    built of new objects throughout): the search for survivors is skipped.
    """
    path = (("args", loc.index),) if isinstance(loc, ArgLoc) else loc.path
    survivors = (
        NO_SURVIVORS if kill_all else find_survivors((get_at(ir, path),), (new,), _same_ids(same))
    )
    return update_at(ir, path, lambda _: new), NodeMap(path, survivors, hint)


def retag(ir: ProcDef, loc: NodeLoc | ArgLoc, new: Node) -> tuple[ProcDef, NodeMap]:
    """Replace one node by ``new``, the same node with other plain fields (a loop's mode, an
    allocation's memory): it holds the very children of the old one, so every location
    forwards to itself (``IN_PLACE``) and no search for survivors is needed."""
    path = (("args", loc.index),) if isinstance(loc, ArgLoc) else loc.path
    old = get_at(ir, path)
    assert type(old) is type(new) and all(
        getattr(old, attr) is getattr(new, attr) for attr, _ in _CHILDREN.get(type(old), ())
    ), "retag keeps the node's children"
    return update_at(ir, path, lambda _: new), NodeMap(path, IN_PLACE)


def insert(ir: ProcDef, gap: GapPos, stmts: Sequence[Stmt]) -> tuple[ProcDef, SpliceMap]:
    """Insert ``stmts`` at ``gap``; nothing dies."""
    parent, attr, pos = _pos(gap)
    return replace(ir, BlockLoc(parent, attr, pos, pos), stmts)


def delete(ir: ProcDef, block: BlockLoc, *, hint: str = "") -> tuple[ProcDef, SpliceMap]:
    """Delete the statements of ``block``; they die with ``hint``.

    A body never becomes empty: deleting every statement of one leaves a ``pass`` (an empty
    body prints as ``pass``, which parses back to a ``Pass``, and primitives assume a body
    holds a statement). An ``else`` branch may become empty: that is no ``else``.
    """
    whole = block.lo == 0 and block.hi == len(stmt_list(ir, block.parent, block.attr))
    keep = (Pass(),) if whole and block.attr != "orelse" else ()
    return replace(ir, block, keep, hint=hint)


def wrap(
    ir: ProcDef, block: BlockLoc, make: Callable[[tuple[Stmt, ...]], Stmt], *, hint: str = ""
) -> tuple[ProcDef, SpliceMap]:
    """Replace ``block`` by the one statement ``make(stmts)`` that holds them (they live on)."""
    stmts = stmt_list(ir, block.parent, block.attr)[block.lo : block.hi]
    return replace(ir, block, (make(stmts),), hint=hint)


def move(ir: ProcDef, block: BlockLoc, gap: GapPos) -> tuple[ProcDef, MoveMap]:
    """Move the statements of ``block`` unchanged to ``gap``; they keep their identity.
    ``map.dest`` is where they are now.
    """
    gparent, gattr, gpos = _pos(gap)
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
    old = stmt_list(ir, block.parent, block.attr)
    moved = old[block.lo : block.hi]
    rest = (*old[: block.lo], *old[block.hi :])
    mid = update_at(ir, block.parent, lambda x: with_field(x, block.attr, rest))
    dparent, dattr, dpos = dest
    target = stmt_list(mid, dparent, dattr)
    lst = (*target[:dpos], *moved, *target[dpos:])
    out = update_at(mid, dparent, lambda x: with_field(x, dattr, lst))
    return out, MoveMap(block.parent, block.attr, block.lo, block.hi, dest)


# ------------------------------------------------------------------------- the editor


class Editor:
    """Applies the edit operations in turn to a ``ProcDef`` and composes their maps.

    Locations passed to an operation address the *current* IR of the editor
    (``ed.forward(loc)`` brings a location of the starting IR there); each operation returns
    the location of what it put in.
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

    def _apply(self, result: tuple[ProcDef, PathMap]) -> None:
        self.ir, m = result
        self._maps.append(m)

    # -- operations -------------------------------------------------------------------------
    def replace(
        self,
        block: BlockLoc,
        new: Sequence[Stmt],
        *,
        same: Iterable[tuple[Any, Any]] = (),
        hint: str = "",
        kill_all: bool = False,
        fresh: Sequence[Stmt] = (),
    ) -> BlockLoc:
        """``replace``; returns the block of ``new`` (empty, ``lo == hi``, when it is)."""
        new = tuple(new)
        self._apply(
            replace(self.ir, block, new, same=same, hint=hint, kill_all=kill_all, fresh=fresh)
        )
        return BlockLoc(block.parent, block.attr, block.lo, block.lo + len(new))

    def replace_node(
        self,
        loc: NodeLoc | ArgLoc,
        new: Node,
        *,
        same: Iterable[tuple[Any, Any]] = (),
        hint: str = "",
        kill_all: bool = False,
    ) -> NodeLoc:
        """``replace_node``; returns the node's location."""
        ir, m = replace_node(self.ir, loc, new, same=same, hint=hint, kill_all=kill_all)
        self._apply((ir, m))
        return NodeLoc(m.path)

    def retag(self, loc: NodeLoc | ArgLoc, new: Node) -> None:
        """``retag``: the node at ``loc`` (same place, same identity) becomes ``new``."""
        self._apply(retag(self.ir, loc, new))

    def insert(self, gap: GapPos, stmts: Sequence[Stmt]) -> BlockLoc:
        """``insert``; returns the block of the new statements."""
        parent, attr, pos = _pos(gap)
        return self.replace(BlockLoc(parent, attr, pos, pos), stmts)

    def delete(self, block: BlockLoc, *, hint: str = "") -> tuple[Path, str, int]:
        """``delete``; returns the position where the statements were."""
        self._apply(delete(self.ir, block, hint=hint))
        return block.parent, block.attr, block.lo

    def wrap(
        self, block: BlockLoc, make: Callable[[tuple[Stmt, ...]], Stmt], *, hint: str = ""
    ) -> NodeLoc:
        """``wrap``; returns the location of the wrapping statement."""
        self._apply(wrap(self.ir, block, make, hint=hint))
        return NodeLoc((*block.parent, (block.attr, block.lo)))

    def move(self, block: BlockLoc, gap: GapPos) -> BlockLoc:
        """``move``; returns the block where the statements are now."""
        ir, m = move(self.ir, block, gap)
        self._apply((ir, m))
        dparent, dattr, dpos = m.dest
        return BlockLoc(dparent, dattr, dpos, dpos + block.hi - block.lo)

    def done(self, cursors: type[C], **fields: Any) -> Rewrite[C]:
        """Finish: the rewrite with the cursors to return, by field, as locations of the
        current IR (``NoLoc("why")`` for a field that does not apply).
        """
        return Rewrite(self.ir, self.map, cursors, fields)

    def set_proc(self, **changes: Any) -> None:
        """Change fields of the ``ProcDef`` itself that hold no nodes (``name``, ``instr``)."""
        assert "args" not in changes and "preds" not in changes and "body" not in changes, (
            "use the node operations"
        )
        for attr, value in changes.items():
            self.ir = with_field(self.ir, attr, value)
        self._maps.append(IDENTITY)
