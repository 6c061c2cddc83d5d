"""Fission through loops and ifs: the check behind ``fission`` (``cursched.primitives.loop_nests``).

``check_fission_levels`` generalises ``check_fission`` to gaps whose enclosing levels mix
loops and ``if`` statements (Exo's ``fission`` lifts through both): an ``if`` level adds its
condition to the accesses below it and no iteration order; the condition is a control
expression, so evaluating it again in the second copy gives the same value.
"""

from __future__ import annotations

import dataclasses

from cursched.analysis.checks import FissionError, _between, _fail
from cursched.analysis.context import context_of
from cursched.analysis.deps import conflicting, dependence, instance, lex_lt
from cursched.analysis.effects import Access, block_effects
from cursched.ir.nodes import Assign, Expr, For, If, ProcDef, Reduce, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.symbols import Sym
from cursched.ir.traversal import defined_syms, free_syms_expr, walk_exprs, walk_stmts

Level = tuple[Path, For | If, int]
"""(path of the loop or if, the node, index of the split in its ``body``)."""


def fission_levels(p: ProcDef, gap: Path, n_lifts: int) -> list[Level] | None:
    """The ``n_lifts`` levels around ``gap`` (a path ending in ``("body", k)``), innermost
    first; None when one of them is not a loop or the ``body`` of an ``if``.

    At an outer level the index is the position just after the level below it.
    """
    out: list[Level] = []
    cur = gap
    for _ in range(n_lifts):
        parent, (attr, k) = cur[:-1], cur[-1]
        node = get_at(p, parent) if parent else None
        if not isinstance(node, For | If) or attr != "body":
            return None
        out.append((parent, node, k))
        *up, (up_attr, up_k) = parent
        cur = (*up, (up_attr, up_k + 1))
    return out


def _guarded(a: Access, conds: tuple[tuple[Expr, bool], ...]) -> Access:
    return dataclasses.replace(a, conds=(*conds, *a.conds)) if conds else a


def check_fission_levels(
    p: ProcDef, gap: Path, n_lifts: int = 1, *, primitive: str | None = None
) -> None:
    """Check that the ``n_lifts`` loops and ifs around ``gap`` can be split in two at it.

    After the rewrite every instance of what precedes the gap (at every level) runs before
    every instance of what follows it.

    Raises:
        FissionError: a level is neither a loop nor an ``if`` body, the second part uses a
            name the first defines, or an instance after the gap precedes (in the original
            order) a conflicting instance before the gap on one element (counterexample).
    """
    found = fission_levels(p, gap, n_lifts)
    if found is None:
        msg = "the gap is not inside loops or if bodies at every lifted level"
        raise _fail(FissionError, p, gap[:-1], msg, None, primitive)
    levels = list(reversed(found))  # outermost first
    top_path = levels[0][0]
    ctx = context_of(p, top_path)
    base = ctx.props()
    before: list[tuple[Access, tuple[For, ...]]] = []
    after: list[tuple[Access, tuple[For, ...]]] = []
    defined: set[Sym] = set()
    late: list[Stmt] = []
    loops: tuple[For, ...] = ()
    conds: tuple[tuple[Expr, bool], ...] = ()
    for depth, (path, node, k) in enumerate(levels):
        if isinstance(node, For):
            loops = (*loops, node)
        else:
            conds = (*conds, (node.cond, True))
        last = depth == len(levels) - 1
        head = node.body[:k] if last else node.body[: k - 1]
        tail = node.body[k:]
        for s in head:
            defined |= defined_syms(s)
        late.extend(tail)
        # windows declared earlier in this body are visible to both parts
        w_head = context_of(p, (*path, ("body", 0))).windows
        w_tail = context_of(p, (*path, ("body", k))).windows
        before += [(_guarded(a, conds), loops) for a in block_effects(head, w_head)]
        after += [(_guarded(a, conds), loops) for a in block_effects(tail, w_tail)]
    used = {sym for e in walk_exprs(tuple(late)) for sym in free_syms_expr(e)}
    # written names count too: ``w[1] += ...`` uses a window ``w`` bound before the gap
    used |= {s.sym for s in walk_stmts(tuple(late)) if isinstance(s, Assign | Reduce)}
    if defined & used:
        names = ", ".join(sorted(x.name for x in defined & used))
        msg = f"statements after the gap use {names}, defined before it"
        raise _fail(FissionError, p, top_path, msg, None, primitive)
    for b, nb in after:
        for a, na in before:
            if a.local or b.local or not conflicting(a, b):
                continue
            x, y = instance(b, "1", nb), instance(a, "2", na)
            shared = min(len(na), len(nb))
            order = [
                lex_lt(
                    [x.var(lp.iter) for lp in nb[:shared]], [y.var(lp.iter) for lp in na[:shared]]
                )
            ]
            model = dependence(x, y, base, order)
            if model is not None:
                msg = _between(a, b, "cannot split: dependence across the gap")
                raise _fail(FissionError, p, top_path, msg, model, primitive)
