"""Scheduling primitives, one module per family, all built on ``registry.primitive``.

``cursched.split`` is ``cursched.primitives.split``: every primitive is re-exported from the
package root.
"""

from cursched.primitives.procs import rename
from cursched.primitives.registry import PrimCursors, primitive, settings
from cursched.primitives.statements import delete_pass, insert_pass, reorder_stmts

__all__ = [
    "PrimCursors",
    "delete_pass",
    "insert_pass",
    "primitive",
    "rename",
    "reorder_stmts",
    "settings",
]
