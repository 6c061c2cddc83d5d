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
from cursched.analysis.deps import Instance
from cursched.analysis.effects import Access, block_effects
from cursched.errors import NotProvenError
from cursched.ir.nodes import Expr, ProcDef, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr, subst_expr


class NotIdempotentError(SafetyError, NotProvenError):
    """A block may leave a different state when it runs twice than when it runs once."""


def _line(s: Stmt) -> str:
    return print_stmt(s).splitlines()[0].strip()


def _covers(w: Access, a: Access, facts: list[af.Prop]) -> bool:
    """Whether every element that an instance of ``a`` touches is written by some instance of
    the unconditional write ``w`` (proven; ``False`` when the shape is beyond this check).

    Handled: each index of ``w`` is either a loop variable of ``w`` (each at most once) or
    free of them; the loops of ``w`` whose variable is not an index must not bound others.
    """
    if w.kind != "write" or w.conds or len(w.idx) != len(a.idx):
        return False
    loop_syms = {lp.iter for lp in w.loops}
    env: dict[Sym, Expr] = {}
    goals: list[af.Prop] = []
    for wi, ai in zip(w.idx, a.idx, strict=True):
        wa, aa = af.to_aff(wi), af.to_aff(ai)
        if wa is None or aa is None:
            return False
        used = wa.syms() & loop_syms
        if not used:
            goals.append(af.Eq(wa - aa))
        elif len(wa.terms) == 1 and wa.const == 0 and wa.terms[0][1] == 1:
            atom = wa.terms[0][0]
            if not isinstance(atom, af.Var) or atom.sym in env:
                return False
            env[atom.sym] = ai
        else:
            return False
    for k, lp in enumerate(w.loops):
        lo, hi = af.to_aff(subst_expr(lp.lo, env)), af.to_aff(subst_expr(lp.hi, env))
        if lo is None or hi is None or (lo.syms() | hi.syms()) & loop_syms - set(env):
            return False
        if lp.iter in env:
            v = af.to_aff(env[lp.iter])
            assert v is not None
            goals += [af.le(lo, v), af.lt(v, hi)]
        else:
            later = w.loops[k + 1 :]
            if any(lp.iter in free_syms_expr(x.lo) | free_syms_expr(x.hi) for x in later):
                return False
            goals.append(af.lt(lo, hi))
    return smt.valid(af.And(tuple(goals)), [*facts, *Instance(a, {}).props()]).ok


def check_idempotent(p: ProcDef, paths: Sequence[Path], *, primitive: str | None = None) -> None:
    """Check that the consecutive statements at ``paths`` are idempotent (``s; s == s``).

    The sufficient condition used: every element that the block reads (or reduces into) of a
    buffer that the block writes and that outlives it has been written, unconditionally, by
    an earlier statement of the same block (proven by SMT; buffers allocated inside the block
    are private to each run). Then, by induction over the run, the second run reads exactly
    the values the first one read (untouched buffers are unchanged, written elements hold
    this run's values), so it writes the same values to the same elements; control values
    never change.

    Raises:
        NotIdempotentError: naming a statement that reads (or accumulates into) a buffer
            the block writes, at an element not provably written before it in the block.
    """
    stmts = tuple(get_at(p, path) for path in paths)
    assert stmts, "a block is never empty"
    ctx = context_of(p, paths[0])
    head = f"{primitive}: " if primitive else ""
    effs = [a for a in block_effects(stmts, ctx.windows) if not a.local]
    written = {a.buf for a in effs if a.kind != "read"}
    position = {id(s): k for k, s in enumerate(stmts)}
    facts = ctx.props()
    for a in effs:
        if a.kind == "write" or a.buf not in written:
            continue
        k = position[id(a.stmt)]
        earlier = [w for w in effs if w.buf is a.buf and position[id(w.stmt)] < k]
        if any(_covers(w, a, facts) for w in earlier):
            continue
        what = "accumulates into" if a.kind == "reduce" else "reads"
        msg = (
            f"{head}`{_line(a.stmt)}` {what} {a.buf.name}, which the block writes, at elements "
            "not provably written earlier in the block, so a second run may differ"
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
