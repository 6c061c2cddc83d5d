"""GPU primitives: named regions (``scope``, ``unscope``), ``bind_loop`` and barriers
(``insert_barrier``, ``insert_barriers``)."""

from cursched.primitives.gpu.barriers import insert_barrier, insert_barriers
from cursched.primitives.gpu.bind import bind_loop
from cursched.primitives.gpu.scopes import find_scope, scope, unscope

__all__ = [
    "bind_loop",
    "find_scope",
    "insert_barrier",
    "insert_barriers",
    "scope",
    "unscope",
]
