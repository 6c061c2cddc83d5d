"""Safety checks for moving a data expression between statements (``bind_expr``,
``inline_assign``): does anything the expression reads change in between?

The expression is evaluated once at one point and its value used later, in the same iteration
of every loop enclosing that point. It keeps its value when no write of the statements in
between touches an element it reads. Writes through windows and calls are resolved to the
buffers they reach (``effects``); the element question goes to the dependence test
(``deps.dependence``), so ``x[i]`` survives a write of ``x[i + 1]``, with a counterexample when
it does not.
"""

from __future__ import annotations

from collections.abc import Sequence

from cursched.analysis.checks import SafetyError
from cursched.analysis.context import context_of
from cursched.analysis.deps import dependence, instance
from cursched.analysis.effects import block_effects
from cursched.errors import DependenceError
from cursched.ir.nodes import Assign, Expr, ProcDef, Stmt
from cursched.ir.paths import Path
from cursched.ir.printer import print_expr, print_stmt
from cursched.ir.symbols import Sym


class ValueChangedError(SafetyError, DependenceError):
    """A statement between the evaluation of an expression and a use may write an element
    the expression reads."""


_SCRATCH = Sym("value")


def check_unchanged(
    p: ProcDef, at: Path, expr: Expr, between: Sequence[Stmt], *, primitive: str | None = None
) -> None:
    """Check that running ``between`` (consecutive statements starting at ``at``) leaves the
    value of ``expr``, evaluated just before them, unchanged.

    Args:
        p: the proc.
        at: the path of the first statement of ``between`` (its context: loops, windows).
        expr: the data expression.
        between: the statements run after the evaluation and before the use.
        primitive: the primitive asking (shown in the message).

    Raises:
        ValueChangedError: a write of ``between`` may touch an element ``expr`` reads; the
            counterexample gives sizes and loop variables (``@2``: the write's own loops).
    """
    if not between:
        return
    ctx = context_of(p, at)
    scratch = block_effects((Assign(_SCRATCH, (), expr),), ctx.windows)
    reads = [a for a in scratch if a.kind == "read"]
    writes = [a for a in block_effects(tuple(between), ctx.windows) if a.kind != "read"]
    base = ctx.props()
    for r in reads:
        for w in writes:
            if w.local or w.buf is not r.buf:
                continue
            model = dependence(instance(r, "1"), instance(w, "2"), base)
            if model is not None:
                site = w.site if w.site is not None else w.stmt
                head = f"{primitive}: " if primitive else ""
                msg = (
                    f"{head}{print_expr(expr)} reads {r.buf.name}, which "
                    f"`{print_stmt(site).splitlines()[0].strip()}` may write before a use"
                )
                raise ValueChangedError(msg, model, proc=p, path=at)


__all__ = ["ValueChangedError", "check_unchanged"]
