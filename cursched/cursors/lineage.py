"""A proc's lineage: the step record each version keeps, and forwarding along history.

Every version made by a primitive keeps a ``StepRecord``: the primitive, its arguments and
the step's forwarding map. ``forward_cursor(target, c)`` walks from ``c``'s version up to
``target`` composing the maps; a cursor whose node died on the way becomes a ``Tombstone``
naming the killer, and a cursor from a version that is not an ancestor of ``target`` raises
``ForeignCursorError``. Results are cached per target version, so forwarding the same cursor
again (the common case in a schedule) costs a dictionary lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cursched.cursors.forwarding import Dead, PathMap, forward_loc
from cursched.cursors.kinds import Cursor, Tombstone
from cursched.cursors.locs import Loc
from cursched.cursors.stmts import make_cursor
from cursched.errors import ForeignCursorError
from cursched.ir.nodes import slot_init

if TYPE_CHECKING:
    from cursched.proc import Proc


@slot_init  # every primitive call makes one: see ``slot_init``
@dataclass(frozen=True, slots=True, eq=False)
class StepRecord:
    """How one version was made from its parent.

    Attributes:
        primitive: the primitive's name.
        args: the arguments after the proc, as the user passed them (cursors not forwarded).
        kwargs: the keyword arguments, in order.
        inputs: the same arguments with every cursor forwarded to the parent version.
        kw_inputs: the same for the keyword arguments.
        fmap: the forwarding map, parent version -> this version.
        results: field name -> the location(s) of the returned cursors in this version.
    """

    primitive: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    inputs: tuple[Any, ...]
    kw_inputs: tuple[tuple[str, Any], ...]
    fmap: PathMap
    results: tuple[tuple[str, Any], ...] = field(default=())


def describe_version(p: Proc) -> str:
    """``matmul v3 (made by split)``: how messages name a version."""
    step = p.step()
    made = f" (made by {step.primitive})" if step is not None else " (the original)"
    return f"{p.name()} v{p.version}{made}"


def _lineage_text(p: Proc) -> str:
    names: list[str] = []
    q: Proc | None = p
    while q is not None and len(names) < 6:
        step = q.step()
        names.append(f"v{q.version}:{step.primitive if step else '@proc'}")
        q = q.parent()
    return " <- ".join(names) + (" <- ..." if q is not None else "")


def forward_cursor(target: Proc, c: Cursor | Tombstone) -> Cursor | Tombstone:
    """``c`` (from ``target`` or one of its ancestors) as a cursor of ``target``.

    Raises:
        ForeignCursorError: when ``c`` belongs to a version that is not an ancestor.
    """
    if isinstance(c, Tombstone):
        return c
    src = c.proc()
    if src is target:
        return c
    cache = target._forward_cache()
    key = (src, c.loc)
    hit: Cursor | Tombstone | None = cache.get(key)
    if hit is not None:
        return hit
    chain: list[Proc] = []
    q: Proc | None = target
    while q is not None and q is not src:
        chain.append(q)
        q = q.parent()
    if q is None:
        raise ForeignCursorError(
            f"{c.describe()} belongs to {describe_version(src)}, which is not an ancestor of "
            f"{describe_version(target)}; cursors forward only along one history "
            f"(cursor's history: {_lineage_text(src)}; target's: {_lineage_text(target)})"
        )
    out = _walk(target, c, reversed(chain))
    cache[key] = out
    return out


def _walk(target: Proc, c: Cursor, steps: Any) -> Cursor | Tombstone:
    loc: Loc = c.loc
    for q in steps:
        step = q.step()
        assert step is not None
        nxt = forward_loc(step.fmap, loc)
        if isinstance(nxt, Dead):
            return Tombstone(c.describe(), step.primitive, q.version, nxt.hint, target, c)
        loc = nxt
    return make_cursor(target, loc)
