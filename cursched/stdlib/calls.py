"""``replace_all``: replace every block that matches an instruction by a call of it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cursched.cursors import BlockCursor, CallCursor, StmtCursor
from cursched.errors import SchedulingError
from cursched.primitives.calls.replace import replace
from cursched.primitives.registry import PrimCursors
from cursched.proc import Proc
from cursched.stdlib._walk import blocks

__all__ = ["ReplaceAllCursors", "replace_all"]


@dataclass(frozen=True, repr=False, eq=False)
class ReplaceAllCursors(PrimCursors):
    """What ``replace_all`` returns.

    Attributes:
        calls: every new call, in the order made (instructions in the order given, each in
            program order).
    """

    calls: tuple[CallCursor, ...]


def replace_all(
    p: Proc, instrs: Proc | Sequence[Proc], within: StmtCursor | None = None
) -> tuple[Proc, ReplaceAllCursors]:
    """Replace every block that matches one of ``instrs`` by a call of it (Exo's
    ``replace_all``).

    For each instruction in turn, every run of statements as long as its body is tried, in
    program order, with ``replace``; runs that do not match, or whose call ``replace`` cannot
    prove valid (a stride, a bound), are left as they were. A block inside an earlier
    replaced one is gone and not tried.

    Args:
        p: the proc.
        instrs: an instruction (any proc) or a sequence of them, tried in order.
        within: only blocks inside this statement (itself included); default everywhere.

    Returns:
        The new proc and ``ReplaceAllCursors`` (``calls``).

    Preconditions:
        None of its own: each replacement is ``replace``'s, with all its checks; a block
        where one fails is skipped.

    Forwards/Kills:
        As each ``replace``: the replaced statements die ("replaced by a call of ...").

    Example:
        ``replace_all(p, [mm256_loadu_ps, mm256_storeu_ps])``::

            for i in seq(0, 8):          ->    mm256_loadu_ps(t[0:8], x[0:8])
                t[i] = x[i]                    mm256_storeu_ps(y[0:8], t[0:8])
            for i in seq(0, 8):
                y[i] = t[i]
    """
    todo = [instrs] if isinstance(instrs, Proc) else list(instrs)
    calls: list[CallCursor] = []
    for ins in todo:
        body = ins.ir().body
        scope = None if within is None else p.forward(within)
        if scope is not None and not isinstance(scope, StmtCursor):
            break  # the region itself was replaced
        for cand in blocks(p, len(body), scope):
            block = p.forward(cand)
            if not isinstance(block, BlockCursor) or len(block) != len(body):
                continue  # inside an earlier replaced block
            # cheap filter: the first statement's kind must be the body's
            if type(block[0].node()) is not type(body[0]):
                continue
            try:
                p, made = replace(p, block, ins)
            except SchedulingError:
                continue
            calls.append(made.call)
    final = [p.forward(c) for c in calls]
    return p, ReplaceAllCursors(tuple(c for c in final if isinstance(c, CallCursor)))
