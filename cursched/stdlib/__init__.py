"""User-level schedules built from primitives (Exo 2's scheduling libraries): plain Python
functions ``f(p, ...) -> (new_proc, cursors)``, each returning its own frozen cursors
dataclass like a primitive, each step recorded in ``p.history()`` as the primitives it ran.

* ``tile(p, loops, sizes)``: split a perfect nest and move the outer loops above the inner.
* ``vectorize(p, loop, width, memory, instrs)``: split by the vector width, stage operands
  in vector registers, replace the lane loops by instructions; scalar tail.
* ``pack(p, block, window, name, divide, order, lift)``: ``stage_mem`` in a packed layout,
  allocated once.
* ``unroll_all(p, loops)``: unroll loops and all loops inside them.
* ``replace_all(p, instrs)``: replace every matching block by an instruction call.
"""

from __future__ import annotations

from cursched.stdlib.calls import ReplaceAllCursors, replace_all
from cursched.stdlib.pack import PackCursors, pack
from cursched.stdlib.tile import TileCursors, TileNestError, TileSizesError, tile
from cursched.stdlib.unroll import UnrollAllCursors, unroll_all
from cursched.stdlib.vectorize import (
    VectorizeAccessError,
    VectorizeBodyError,
    VectorizeCursors,
    VectorizeNoInstrError,
    VectorizeWidthError,
    vectorize,
)

__all__ = [
    "PackCursors",
    "ReplaceAllCursors",
    "TileCursors",
    "TileNestError",
    "TileSizesError",
    "UnrollAllCursors",
    "VectorizeAccessError",
    "VectorizeBodyError",
    "VectorizeCursors",
    "VectorizeNoInstrError",
    "VectorizeWidthError",
    "pack",
    "replace_all",
    "tile",
    "unroll_all",
    "vectorize",
]
