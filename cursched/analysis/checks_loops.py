"""Checks for the loop primitives of part B: idempotence, and conditions decided in a context.

- ``check_idempotent``: running a block twice in a row leaves the same state as running it
  once (``remove_loop``, ``add_loop``);
- ``decide_in``: is a control condition always true / always false under a ``PathContext``
  (``simplify`` walks the proc with its own contexts rather than asking by path).
"""

from __future__ import annotations

from collections.abc import Sequence

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.checks import SafetyError
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.effects import block_effects
from cursched.ir.nodes import Expr, ProcDef, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_stmt


class NotIdempotentError(SafetyError):
    """A block may leave a different state when it runs twice than when it runs once."""


def _line(s: Stmt) -> str:
    return print_stmt(s).splitlines()[0].strip()


def check_idempotent(p: ProcDef, paths: Sequence[Path], *, primitive: str | None = None) -> None:
    """Check that the consecutive statements at ``paths`` are idempotent (``s; s == s``).

    The sufficient condition used: the block reduces into no buffer that outlives it, and
    reads no buffer that it writes (buffers allocated inside the block are private to each
    run). Then the second run reads exactly what the first one read, so it computes the
    same values and writes them to the same elements; control values never change.

    Raises:
        NotIdempotentError: naming the statement that reduces, or that reads a buffer the
            block writes.
    """
    stmts = tuple(get_at(p, path) for path in paths)
    assert stmts, "a block is never empty"
    ctx = context_of(p, paths[0])
    head = f"{primitive}: " if primitive else ""
    effs = [a for a in block_effects(stmts, ctx.windows) if not a.local]
    for a in effs:
        if a.kind == "reduce":
            msg = (
                f"{head}`{_line(a.stmt)}` accumulates into {a.buf.name}, so a second run adds again"
            )
            raise NotIdempotentError(msg, proc=p, path=paths[0])
    written = {a.buf for a in effs if a.kind == "write"}
    for a in effs:
        if a.kind == "read" and a.buf in written:
            msg = (
                f"{head}the block reads {a.buf.name} (in `{_line(a.stmt)}`) and also writes "
                "it, so a second run may read other values"
            )
            raise NotIdempotentError(msg, proc=p, path=paths[0])


def decide_in(ctx: PathContext, cond: Expr) -> bool | None:
    """True when the control condition ``cond`` always holds under ``ctx``, False when it
    never does, None when it depends or is not an affine condition.
    """
    prop = af.to_prop(cond)
    if prop is None:
        return None
    facts = ctx.props()
    if smt.valid(prop, facts).ok:
        return True
    if smt.valid(af.Not(prop), facts).ok:
        return False
    return None
