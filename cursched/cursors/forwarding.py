"""Forwarding maps: how the locations of one version of a proc move in the next.

Every edit operation (``cursched.cursors.edits``) yields one map; a primitive's step composes
the maps of its edits; ``Proc.forward`` composes the steps along the history. A map takes a
node path of the old version to the path of the same node in the new version, or to ``Dead``
when the node no longer exists. Identity is by node, never by position: the maps are built
from which node went where, so a cursor never silently re-targets a different node.

Maps work on node paths only; ``forward_loc`` lifts them to blocks, gaps and arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias, assert_never

from cursched.cursors.locs import ArgLoc, BlockLoc, GapLoc, Loc, NodeLoc, NoLoc
from cursched.ir.paths import Path

RelPath: TypeAlias = tuple[int, Path]
"""A path relative to a replaced region: (offset in the region's list, rest of the path).

For a single-node region the offset is always 0.
"""


@dataclass(frozen=True, slots=True)
class Dead:
    """The node a path addressed was removed; ``hint`` says what to use instead."""

    hint: str = ""


Fwd: TypeAlias = Path | Dead


class PathMap(Protocol):
    """A forwarding map of one edit (or of a whole step)."""

    def __call__(self, path: Path) -> Fwd: ...


class IdentityMap:
    """Nothing moved (``rename``; edits of the proc's name)."""

    __slots__ = ()

    def __call__(self, path: Path) -> Fwd:
        return path


IDENTITY = IdentityMap()


@dataclass(frozen=True, slots=True)
class Survivors:
    """Which old nodes of a replaced region live on, and where, relative to the region.

    ``subtrees``: the node and everything below it moved together (the same object).
    ``nodes``: only the node itself keeps identity (a loop rebuilt around the same iteration
    variable); its children are listed separately.
    """

    subtrees: Mapping[RelPath, RelPath] = field(default_factory=dict)
    nodes: Mapping[RelPath, RelPath] = field(default_factory=dict)

    def lookup(self, offset: int, rest: Path) -> RelPath | None:
        hit = self.nodes.get((offset, rest))
        if hit is not None:
            return hit
        if not self.subtrees:
            return None
        for k in range(len(rest), -1, -1):
            hit = self.subtrees.get((offset, rest[:k]))
            if hit is not None:
                return (hit[0], hit[1] + rest[k:])
        return None


NO_SURVIVORS = Survivors()
IN_PLACE = Survivors(subtrees={(0, ()): (0, ())})
"""The node replaced and everything below it live on where they are (``Editor.retag``)."""


@dataclass(frozen=True, slots=True)
class SpliceMap:
    """``parent.<attr>[lo:hi]`` replaced by ``n_new`` statements.

    Statements after the region shift by ``n_new - (hi - lo)``; nodes inside the region
    forward by ``survivors`` or die with ``hint``. Insertion is ``lo == hi``, deletion
    ``n_new == 0``, wrapping one new statement whose body holds the old ones.
    """

    parent: Path
    attr: str
    lo: int
    hi: int
    n_new: int
    survivors: Survivors = NO_SURVIVORS
    hint: str = ""

    def __call__(self, path: Path) -> Fwd:
        d = len(self.parent)
        if len(path) <= d or path[d][0] != self.attr or path[:d] != self.parent:
            return path
        i = path[d][1]
        if i < self.lo:
            return path
        if i >= self.hi:
            return (*self.parent, (self.attr, i + self.n_new - (self.hi - self.lo)), *path[d + 1 :])
        hit = self.survivors.lookup(i - self.lo, path[d + 1 :])
        if hit is None:
            return Dead(self.hint)
        return (*self.parent, (self.attr, self.lo + hit[0]), *hit[1])


@dataclass(frozen=True, slots=True)
class NodeMap:
    """The single node at ``path`` replaced (an expression, an argument, one statement kept
    in place); nodes below it forward by ``survivors`` (offset 0) or die with ``hint``.
    """

    path: Path
    survivors: Survivors = NO_SURVIVORS
    hint: str = ""

    def __call__(self, path: Path) -> Fwd:
        d = len(self.path)
        if path[:d] != self.path:
            return path
        hit = self.survivors.lookup(0, path[d:])
        if hit is None:
            return Dead(self.hint)
        return self.path + hit[1]


@dataclass(frozen=True, slots=True)
class MoveMap:
    """``parent.<attr>[lo:hi]`` moved, unchanged, to the gap ``dest`` (a position in a list
    of the proc *after* the block was taken out, as ``(parent, attr, index)``).
    """

    parent: Path
    attr: str
    lo: int
    hi: int
    dest: tuple[Path, str, int]

    def __call__(self, path: Path) -> Fwd:
        d = len(self.parent)
        n = self.hi - self.lo
        dparent, dattr, dpos = self.dest
        if len(path) > d and path[d][0] == self.attr and path[:d] == self.parent:
            i = path[d][1]
            if self.lo <= i < self.hi:
                return (*dparent, (dattr, dpos + i - self.lo), *path[d + 1 :])
            if i >= self.hi:
                path = (*self.parent, (self.attr, i - n), *path[d + 1 :])
        e = len(dparent)
        if len(path) > e and path[e][0] == dattr and path[:e] == dparent and path[e][1] >= dpos:
            return (*dparent, (dattr, path[e][1] + n), *path[e + 1 :])
        return path


@dataclass(frozen=True, slots=True)
class ComposedMap:
    """The maps of a step's edits, applied in order."""

    maps: tuple[PathMap, ...]

    def __call__(self, path: Path) -> Fwd:
        cur = path
        for m in self.maps:
            nxt = m(cur)
            if isinstance(nxt, Dead):
                return nxt
            cur = nxt
        return cur


def compose(maps: Sequence[PathMap]) -> PathMap:
    """One map doing ``maps`` in order (identity maps dropped)."""
    real = tuple(m for m in maps if not isinstance(m, IdentityMap))
    if not real:
        return IDENTITY
    return real[0] if len(real) == 1 else ComposedMap(real)


def forward_loc(m: PathMap, loc: Loc) -> Loc | Dead:
    """``loc`` in the next version, or ``Dead`` (with the hint of what killed it)."""
    match loc:
        case NodeLoc():
            out = m(loc.path)
            return out if isinstance(out, Dead) else NodeLoc(out)
        case ArgLoc():
            out = m((("args", loc.index),))
            return out if isinstance(out, Dead) else ArgLoc(out[0][1])
        case GapLoc():
            out = m(loc.anchor)
            return out if isinstance(out, Dead) else GapLoc(out, loc.side, loc.attr)
        case BlockLoc():
            return _forward_block(m, loc)
        case NoLoc():
            return loc
        case _:
            assert_never(loc)


def _forward_block(m: PathMap, loc: BlockLoc) -> BlockLoc | Dead:
    alive: list[Path] = []
    first_death: Dead | None = None
    for p in loc.stmt_paths():
        out = m(p)
        if isinstance(out, Dead):
            first_death = first_death or out
        else:
            alive.append(out)
    if not alive:
        assert first_death is not None
        return first_death
    lists = {(*p[:-1], (p[-1][0], 0)) for p in alive}
    if len(lists) != 1:
        return Dead("the block's statements were moved apart; forward them one by one")
    indices = [p[-1][1] for p in alive]
    *parent, (attr, _) = alive[0]
    return BlockLoc(tuple(parent), attr, min(indices), max(indices) + 1)
