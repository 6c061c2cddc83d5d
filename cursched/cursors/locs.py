"""Locations: where a cursor points inside one version of a proc, independent of the proc.

A cursor is a (proc, location) pair. Locations extend the node paths of
``cursched.ir.paths`` with the two things that are not nodes:

- a **block**: ``BlockLoc(parent, attr, lo, hi)`` is ``get_at(ir, parent).<attr>[lo:hi]``;
- a **gap**: ``GapLoc(anchor, side)`` is the space just before or after the statement at
  ``anchor``. A gap is anchored to a statement (as in Exo) rather than stored as a position,
  so that it forwards with that statement: the gap after ``x = 1`` stays after it whatever is
  inserted elsewhere. ``GapLoc(stmt, "start", attr)`` is the start of the list ``attr`` of
  the statement ``stmt`` (the only gap of an empty ``orelse``), anchored to that statement.

``ArgLoc(i)`` names the i-th parameter; ``NoLoc`` is the location of an invalid cursor.
Paths print as ``body[0].body[2].rhs.lhs`` (``format_path``/``parse_path``), the form
``Proc.at`` accepts and ``Proc.history`` writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from cursched.ir.paths import Path

GapSide: TypeAlias = Literal["before", "after", "start"]


@dataclass(frozen=True, slots=True)
class NodeLoc:
    """A statement or an expression, by its path from the ``ProcDef``."""

    path: Path


@dataclass(frozen=True, slots=True)
class BlockLoc:
    """The statements ``parent.<attr>[lo:hi]`` (``hi > lo``)."""

    parent: Path
    attr: str
    lo: int
    hi: int

    def stmt_paths(self) -> tuple[Path, ...]:
        """The path of each statement of the block, in order."""
        return tuple((*self.parent, (self.attr, i)) for i in range(self.lo, self.hi))


@dataclass(frozen=True, slots=True)
class GapLoc:
    """The gap on ``side`` of the statement at ``anchor`` (for ``"start"``: at the start of
    its list ``attr``).
    """

    anchor: Path
    side: GapSide
    attr: str = "body"

    def position(self) -> tuple[Path, str, int]:
        """(parent path, attribute, index in that list) of the gap."""
        if self.side == "start":
            return self.anchor, self.attr, 0
        *parent, (attr, index) = self.anchor
        return tuple(parent), attr, index + (1 if self.side == "after" else 0)


@dataclass(frozen=True, slots=True)
class ArgLoc:
    """The ``index``-th parameter of the proc."""

    index: int


@dataclass(frozen=True, slots=True)
class NoLoc:
    """The location of an invalid cursor (``next()`` past the end, a field that does not apply)."""

    why: str = ""


Loc: TypeAlias = NodeLoc | BlockLoc | GapLoc | ArgLoc | NoLoc


def format_path(path: Path) -> str:
    """``body[0].rhs`` for ``(("body", 0), ("rhs", -1))``."""
    return ".".join(attr if index == -1 else f"{attr}[{index}]" for attr, index in path)


_STEP = re.compile(r"([A-Za-z_]\w*)(?:\[(\d+)\])?$")


def parse_path(text: str) -> Path:
    """The inverse of ``format_path``.

    Raises:
        ValueError: when ``text`` is not a path.
    """
    steps: list[tuple[str, int]] = []
    for part in text.split(".") if text else []:
        m = _STEP.match(part.strip())
        if m is None:
            raise ValueError(f"not a path step: {part!r}")
        steps.append((m.group(1), int(m.group(2)) if m.group(2) is not None else -1))
    return tuple(steps)
