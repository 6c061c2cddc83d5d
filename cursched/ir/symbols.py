"""Symbols: variables of the IR, compared by identity."""

from __future__ import annotations

import itertools

_counter = itertools.count(1)


class Sym:
    """A variable. Two symbols are the same variable only if they are the same object.

    ``name`` is the user-facing name (printers make it unique when needed); ``id`` is a
    process-wide counter used only for stable debugging output and ordering.
    """

    __slots__ = ("id", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.id = next(_counter)

    def copy(self) -> Sym:
        """A fresh symbol with the same name (a different variable)."""
        return Sym(self.name)

    def __repr__(self) -> str:
        return f"{self.name}_{self.id}"

    def __str__(self) -> str:
        return self.name

    # Identity semantics, spelled out: the default object __eq__/__hash__ are what we want.
    __eq__ = object.__eq__
    __hash__ = object.__hash__
