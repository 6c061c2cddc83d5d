"""Paths: the address of a node inside a proc, shared by cursors and the analysis.

A path is a tuple of steps from the ``ProcDef``. Each step is ``(attribute, index)``: the
attribute of the current node to follow and, when that attribute holds a tuple, the position
in it; ``index`` is ``-1`` for an attribute holding a single node. Examples::

    (("body", 0),)                            first statement of the proc
    (("body", 0), ("body", 2))                third statement inside it (a loop's body)
    (("body", 1), ("orelse", 0))              first statement of an else branch
    (("body", 0), ("rhs", -1), ("lhs", -1))   left operand of an assignment's rhs
    (("body", 0), ("idx", 1))                 second index expression of an access
"""

from __future__ import annotations

from typing import Any, TypeAlias

Step: TypeAlias = tuple[str, int]
Path: TypeAlias = tuple[Step, ...]


def get_at(root: Any, path: Path) -> Any:
    """The node (or tensor type) that ``path`` addresses from ``root``.

    Raises:
        LookupError: when the path does not address anything in ``root``.
    """
    node = root
    for attr, index in path:
        try:
            child = getattr(node, attr)
        except AttributeError:
            raise LookupError(f"no attribute {attr!r} on {type(node).__name__}") from None
        if isinstance(child, tuple):
            if not 0 <= index < len(child):
                raise LookupError(f"index {index} out of range for {attr!r}")
            node = child[index]
        else:
            if index != -1:
                raise LookupError(f"attribute {attr!r} holds one node, not a tuple")
            node = child
    return node


def parent_path(path: Path) -> Path:
    """The path of the node that holds the last step."""
    return path[:-1]


def is_prefix(prefix: Path, path: Path) -> bool:
    """Whether ``prefix`` addresses an ancestor of (or the same node as) ``path``."""
    return path[: len(prefix)] == prefix
