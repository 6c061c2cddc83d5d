"""Safety checks of scheduling rewrites: one function per property.

Each check returns None when the rewrite is safe and raises a precise ``SafetyError`` subclass
otherwise, naming the statements involved and giving a counterexample (values of sizes and of
the loop variables of both instances, ``i@1`` and ``i@2``). Cheap syntactic tests (different
buffers, two reads, two reductions, constant index distances) run first; the SMT layer only
sees what they cannot decide.

Statement groups are given as paths (``cursched.ir.paths``); the statements of one group are
consecutive siblings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from operator import is_

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.deps import Instance, conflicting, dependence, instance, lex_lt
from cursched.analysis.effects import Access, block_effects
from cursched.errors import (
    DependenceError,
    NotProvenError,
    OutOfBoundsError,
    RaceError,
    SchedulingError,
)
from cursched.ir.config import ConfigField
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Expr,
    For,
    If,
    Point,
    ProcDef,
    Reduce,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_expr, print_proc, print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import defined_syms, free_syms_expr, walk_exprs, walk_stmts

# ---------------------------------------------------------------------------- errors


class SafetyError(SchedulingError):
    """A rewrite would change behaviour; ``counterexample`` holds the witnessing values.

    The message shows the proc with the offending statement marked; it is printed only when
    the error is shown, since checks are often asked speculatively on large procs.
    """

    def __init__(
        self,
        message: str,
        counterexample: smt.Model | None = None,
        *,
        proc: ProcDef | None = None,
        path: Path | None = None,
    ) -> None:
        if counterexample is not None:
            message += f"\n  counterexample: {smt.format_model(counterexample)}"
        self.message = message
        self.counterexample = counterexample
        self.proc = proc
        self.path = path
        self._text: str | None = None
        super().__init__(message)

    def __str__(self) -> str:
        if self._text is None:
            self._text = self.message
            if self.proc is not None:
                try:
                    marks = {self.path: "stmt"} if self.path else None
                    shown = print_proc(self.proc, marks)  # type: ignore[arg-type]
                except LookupError:
                    shown = print_proc(self.proc)
                self._text += "\n" + shown
        return self._text


class CommuteError(SafetyError, DependenceError):
    """Two statement groups do not commute."""


class ReorderLoopsError(SafetyError, DependenceError):
    """Two nested loops cannot be interchanged."""


class FissionError(SafetyError, DependenceError):
    """A loop cannot be split in two at a gap."""


class FusionError(SafetyError, DependenceError):
    """Two loops (or ifs) cannot be fused."""


class NotEqualError(SafetyError, NotProvenError):
    """Two expressions are not provably equal in context."""


class NotDivisibleError(SafetyError, NotProvenError):
    """A value is not provably divisible by another."""


class NotBoundedError(SafetyError, NotProvenError):
    """A value is not provably bounded by another."""


class BufferNotDeadError(SafetyError, DependenceError):
    """A buffer is read after the point where it should be dead."""


class OutsideWindowError(SafetyError, OutOfBoundsError):
    """An access of a block leaves the window it must stay inside."""


class ParallelError(SafetyError, RaceError):
    """A loop carries a dependence and cannot run in parallel."""


# --------------------------------------------------------------------------- helpers


def _stmt_text(s: Stmt) -> str:
    return print_stmt(s).splitlines()[0].strip()


def _fail(
    cls: type[SafetyError],
    p: ProcDef,
    path: Path,
    message: str,
    model: smt.Model | None,
    primitive: str | None,
) -> SafetyError:
    head = f"{primitive}: " if primitive else ""
    return cls(f"{head}{message}", model, proc=p, path=path)


def _group(p: ProcDef, paths: Sequence[Path]) -> tuple[Stmt, ...]:
    stmts = tuple(get_at(p, path) for path in paths)
    assert stmts, "a statement group is never empty"
    return stmts


def _guarded(a: Access, conds: tuple[tuple[Expr, bool], ...]) -> Access:
    """``a`` under the extra enclosing conditions ``conds``."""
    return dataclasses.replace(a, conds=(*conds, *a.conds)) if conds else a


def _used_syms(stmts: Sequence[Stmt]) -> set[Sym]:
    """Symbols read or written anywhere in ``stmts`` (written buffers included)."""
    used = {sym for e in walk_exprs(tuple(stmts)) for sym in free_syms_expr(e)}
    for s in walk_stmts(tuple(stmts)):
        if isinstance(s, Assign | Reduce):
            used.add(s.sym)
    return used


def _where(a: Access) -> str:
    """The statement of an access, and the top-level statement holding it if different."""
    site = a.site if a.site is not None else a.stmt
    text = f"`{_stmt_text(site)}` ({a.kind} of {a.buf.name})"
    return text if site is a.stmt else f"{text} in `{_stmt_text(a.stmt)}`"


def _between(a: Access, b: Access, kind: str) -> str:
    return f"{kind} between {_where(a)} and {_where(b)}"


# ----------------------------------------------------------------------- statements


def check_commute(
    p: ProcDef, first: Sequence[Path], second: Sequence[Path], *, primitive: str | None = None
) -> None:
    """Check that running ``second`` before ``first`` gives the same result.

    Args:
        p: the proc.
        first: paths of consecutive sibling statements.
        second: paths of the consecutive sibling statements right after ``first``.
        primitive: the primitive asking (shown in the message).

    Raises:
        CommuteError: ``second`` uses a name ``first`` defines, or an access of one group
            conflicts with an access of the other on some element (a write against a read
            or a write; two reductions commute).
    """
    s1, s2 = _group(p, first), _group(p, second)
    ctx = context_of(p, first[0])
    defined: set[Sym] = set()
    for s in s1:
        defined |= defined_syms(s)
    used = _used_syms(s2)
    if defined & used:
        names = ", ".join(sorted(x.name for x in defined & used))
        raise _fail(
            CommuteError,
            p,
            first[0],
            f"the second group uses {names}, defined by the first",
            None,
            primitive,
        )
    eff1 = block_effects(s1, ctx.windows)
    ctx2 = ctx
    for s in s1:
        ctx2 = ctx2.declare(s)
    eff2 = block_effects(s2, ctx2.windows)
    base = ctx.props()
    for a in eff1:
        for b in eff2:
            if a.local or b.local or not conflicting(a, b):
                continue
            model = dependence(instance(a, "1"), instance(b, "2"), base)
            if model is not None:
                msg = _between(a, b, "statements do not commute: dependence")
                raise _fail(CommuteError, p, first[0], msg, model, primitive)


# -------------------------------------------------------------------------------- loops


def _loop_at(p: ProcDef, path: Path, cls: type[SafetyError], primitive: str | None) -> For:
    node = get_at(p, path)
    if not isinstance(node, For):
        raise _fail(cls, p, path, "not a loop", None, primitive)
    return node


def _pairs(effs: list[Access], *, reductions_commute: bool) -> list[tuple[Access, Access]]:
    return [
        (a, b)
        for a in effs
        for b in effs
        if not a.local and not b.local and conflicting(a, b, reductions_commute=reductions_commute)
    ]


def check_reorder_loops(p: ProcDef, outer_path: Path, *, primitive: str | None = None) -> None:
    """Check that the loop at ``outer_path`` and the single loop in its body can be swapped.

    Raises:
        ReorderLoopsError: the nest is not perfect, the inner bounds use the outer variable,
            or two instances ``(i1, j1)`` and ``(i2, j2)`` with ``i1 < i2`` and ``j1 > j2``
            touch one element with conflicting accesses.
    """
    outer = _loop_at(p, outer_path, ReorderLoopsError, primitive)
    if len(outer.body) != 1 or not isinstance(outer.body[0], For):
        msg = f"loop {outer.iter.name} does not hold exactly one loop"
        raise _fail(ReorderLoopsError, p, outer_path, msg, None, primitive)
    inner = outer.body[0]
    if outer.iter in free_syms_expr(inner.lo) | free_syms_expr(inner.hi):
        msg = f"the bounds of loop {inner.iter.name} depend on {outer.iter.name}"
        raise _fail(ReorderLoopsError, p, outer_path, msg, None, primitive)
    ctx = context_of(p, outer_path)
    base = ctx.props()
    nest = (outer, inner)
    for a, b in _pairs(block_effects(inner.body, ctx.windows), reductions_commute=True):
        x, y = instance(a, "1", nest), instance(b, "2", nest)
        order = [
            af.lt(x.var(outer.iter), y.var(outer.iter)),
            af.lt(y.var(inner.iter), x.var(inner.iter)),
        ]
        model = dependence(x, y, base, order)
        if model is not None:
            msg = _between(a, b, "loops cannot be reordered: dependence")
            raise _fail(ReorderLoopsError, p, outer_path, msg, model, primitive)


def check_parallel(p: ProcDef, loop_path: Path, *, primitive: str | None = None) -> None:
    """Check that the iterations of the loop at ``loop_path`` are independent.

    Buffers allocated inside the body are private to an iteration. Reductions into the same
    element from two iterations are a race, so they are dependences here.

    Raises:
        ParallelError: two different iterations touch one element with conflicting accesses.
    """
    loop = _loop_at(p, loop_path, ParallelError, primitive)
    ctx = context_of(p, loop_path)
    key = _parallel_key(p, loop, ctx)
    hit = _PARALLEL_OK.get(id(loop))
    if hit is not None and len(hit) == len(key) and all(map(is_, hit, key)):
        return
    base = ctx.props()
    for a, b in _pairs(block_effects(loop.body, ctx.windows), reductions_commute=False):
        x, y = instance(a, "1", (loop,)), instance(b, "2", (loop,))
        order = [af.lt(x.var(loop.iter), y.var(loop.iter))]
        model = dependence(x, y, base, order)
        if model is not None:
            msg = _between(a, b, f"loop {loop.iter.name} carries a dependence")
            raise _fail(ParallelError, p, loop_path, msg, model, primitive)
    if len(_PARALLEL_OK) >= _PARALLEL_LIMIT:
        _PARALLEL_OK.clear()
    _PARALLEL_OK[id(loop)] = key


# Loops proven free of races, by the loop node's id, each with everything the proof read
# (``_parallel_key``): the IR shares untouched subtrees between versions, so a loop checked
# once (by ``can``, by an autotuner's earlier variant of the same base) is not proven again.
# Only passing verdicts are kept; cleared when full.
_PARALLEL_OK: dict[int, tuple[object, ...]] = {}
_PARALLEL_LIMIT = 1 << 12


def _parallel_key(p: ProcDef, loop: For, ctx: PathContext) -> tuple[object, ...]:
    """What ``check_parallel``'s verdict on ``loop`` depends on, as objects compared by
    identity: the loop itself (its body and bounds; the entry keeps it alive, so its id is
    not reused), the parameters and asserts (``proc_props``), each enclosing loop's variable
    and bounds (``loop_props``), each enclosing condition and branch, and the windows visible
    there (``block_effects`` composes accesses through them)."""
    out: list[object] = [loop, p.args, p.preds]
    for lp in ctx.loops:
        out += (lp.iter, lp.lo, lp.hi)
    for cond, taken in ctx.conds:
        out += (cond, taken)
    for sym, w in ctx.windows.items():
        out += (sym, w)
    return tuple(out)


def check_fission(p: ProcDef, gap: Path, n_lifts: int = 1, *, primitive: str | None = None) -> None:
    """Check that the ``n_lifts`` loops (or ifs) around ``gap`` can be split in two at it.

    ``gap`` ends in ``(block, k)``: the gap before statement ``k`` of a loop body. After the
    rewrite every instance of what precedes the gap runs before every instance of what
    follows it. An ``if`` level (without ``else``) is split into two ifs with the same
    condition; its condition guards the accesses inside it.

    Raises:
        FissionError: a lifted level is not a loop, the second part uses a name the first
            defines, or an instance after the gap precedes (in the original order) a
            conflicting instance before the gap on one element.
    """
    levels: list[tuple[Path, For | If, int]] = []  # (path, loop or if, gap index in body)
    cur = gap
    for _ in range(n_lifts):
        up, (attr, k) = cur[:-1], cur[-1]
        node = get_at(p, up) if up else p
        if (
            not isinstance(node, For | If)
            or attr != "body"
            or (isinstance(node, If) and node.orelse)
        ):
            msg = "the gap is not inside a loop (or an if without else)"
            raise _fail(FissionError, p, up, msg, None, primitive)
        levels.append((up, node, k))
        cur = up
    levels.reverse()  # outermost first
    top_path = levels[0][0]
    base = context_of(p, top_path).props()
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
        head = node.body[:k]
        start = k if last else k + 1
        tail = node.body[start:]
        for s in head:
            # only what a statement of this body declares is visible after it: the loop
            # variables and allocations of nested blocks are scoped to them (stage_mem's
            # load and store nests share their loop variables)
            if isinstance(s, Alloc | WindowStmt):
                defined.add(s.sym)
        late.extend(tail)
        # windows declared earlier in this body are visible to both parts
        head_ctx = context_of(p, (*path, ("body", 0)))
        tail_ctx = context_of(p, (*path, ("body", start)))
        before += [(_guarded(a, conds), loops) for a in block_effects(head, head_ctx.windows)]
        after += [(_guarded(a, conds), loops) for a in block_effects(tail, tail_ctx.windows)]
    used = _used_syms(late)
    if defined & used:
        names = ", ".join(sorted(x.name for x in defined & used))
        msg = f"statements after the gap use {names}, defined before it"
        raise _fail(FissionError, p, top_path, msg, None, primitive)
    same_value = _invariant_config_writes(levels, before, after)
    # only reads of the innermost body follow a write of the same iteration in both orders
    inner_tail = {id(x) for x in levels[-1][1].body[levels[-1][2] :]}
    for b, nb in after:
        for a, na in before:
            if a.local or b.local or not conflicting(a, b):
                continue
            if (
                b.kind == "read"
                and a.site in (None, a.stmt)
                and a.stmt in same_value
                and id(b.stmt) in inner_tail
            ):
                continue
            x, y = instance(b, "1", nb), instance(a, "2", na)
            order = [lex_lt([x.var(lp.iter) for lp in nb], [y.var(lp.iter) for lp in na])]
            model = dependence(x, y, base, order)
            if model is not None:
                msg = _between(a, b, "cannot split the loop: dependence across the gap")
                raise _fail(FissionError, p, top_path, msg, model, primitive)


def _invariant_config_writes(
    levels: Sequence[tuple[Path, For | If, int]],
    before: Sequence[tuple[Access, tuple[For, ...]]],
    after: Sequence[tuple[Access, tuple[For, ...]]],
) -> set[Stmt]:
    """The writes before the gap of a configuration field (``cursched.ir.config``) that
    write one and the same value in every iteration of the split loops: an unconditional
    top-level ``C.f = e`` of the innermost body, the only write of ``C.f`` in the nest, whose
    ``e`` uses no split loop's variable and reads nothing the nest writes. A read after the
    gap in the same innermost body sees that value whichever instance wrote it last, so
    fission may reorder them (the usual Exo move: hoist a configuration write out of a loop).
    """
    head = levels[-1][1].body[: levels[-1][2]]
    loop_vars = {node.iter for _, node, _ in levels if isinstance(node, For)}
    written = {a.buf for a, _ in (*before, *after) if a.kind != "read"}
    writes_of: dict[Sym, int] = {}
    for a, _ in (*before, *after):
        if a.kind != "read":
            writes_of[a.buf] = writes_of.get(a.buf, 0) + 1
    out: set[Stmt] = set()
    for s in head:
        if not (isinstance(s, Assign) and isinstance(s.sym, ConfigField)):
            continue
        reads = free_syms_expr(s.rhs)
        if writes_of.get(s.sym) == 1 and not reads & (loop_vars | written):
            out.add(s)
    return out


def check_fuse(p: ProcDef, first: Path, second: Path, *, primitive: str | None = None) -> None:
    """Check that two consecutive loops (same bounds) or ifs (same condition) can be fused.

    Raises:
        FusionError: the bounds or conditions differ, or (for loops) an instance of the
            second body at ``i@2`` touches an element that a conflicting instance of the first
            body touches at a later ``i@1 > i@2``.
    """
    n1, n2 = get_at(p, first), get_at(p, second)
    ctx = context_of(p, first)
    if isinstance(n1, If) and isinstance(n2, If):
        c1, c2 = af.to_prop(n1.cond), af.to_prop(n2.cond)
        same = c1 is not None and c2 is not None and _equiv(c1, c2, ctx)
        if not same:
            msg = f"conditions differ: {print_expr(n1.cond)} and {print_expr(n2.cond)}"
            raise _fail(FusionError, p, first, msg, None, primitive)
        return
    if not isinstance(n1, For) or not isinstance(n2, For):
        raise _fail(FusionError, p, first, "expected two loops or two ifs", None, primitive)
    for what, e1, e2 in (("lower", n1.lo, n2.lo), ("upper", n1.hi, n2.hi)):
        res = _expr_equal(e1, e2, ctx)
        if not res.ok:
            msg = f"{what} bounds differ: {print_expr(e1)} and {print_expr(e2)}"
            raise _fail(FusionError, p, first, msg, res.counterexample, primitive)
    base = ctx.props()
    eff1 = block_effects(n1.body, ctx.windows)
    eff2 = block_effects(n2.body, ctx.windows)
    for a in eff1:
        for b in eff2:
            if a.local or b.local or not conflicting(a, b):
                continue
            x, y = instance(a, "1", (n1,)), instance(b, "2", (n2,))
            order = [af.lt(y.var(n2.iter), x.var(n1.iter))]
            model = dependence(x, y, base, order)
            if model is not None:
                msg = _between(a, b, "cannot fuse: dependence")
                raise _fail(FusionError, p, first, msg, model, primitive)


# ------------------------------------------------------------------------------ values


def _equiv(a: af.Prop, b: af.Prop, ctx: PathContext) -> bool:
    if a == b:
        return True
    both = af.And((af.Or((af.Not(a), b)), af.Or((af.Not(b), a))))
    return smt.valid(both, ctx.props()).ok


def _expr_equal(e1: Expr, e2: Expr, ctx: PathContext) -> smt.SmtResult:
    if e1 == e2:
        return smt.SmtResult(True)
    a1, a2 = af.to_aff(e1), af.to_aff(e2)
    if a1 is not None and a2 is not None:
        if a1 == a2:
            return smt.SmtResult(True)
        return smt.valid(af.Eq(a1 - a2), ctx.props())
    p1, p2 = af.to_prop(e1), af.to_prop(e2)
    if p1 is not None and p2 is not None:
        return smt.SmtResult(_equiv(p1, p2, ctx))
    return smt.SmtResult(False)


def check_expr_equal(
    p: ProcDef, path: Path, e1: Expr, e2: Expr, *, primitive: str | None = None
) -> None:
    """Check that ``e1 == e2`` wherever the position ``path`` is reached.

    Raises:
        NotEqualError: with values (satisfying the asserts, loop ranges and conditions of
            ``path``) where they differ, or when they are not affine and not identical.
    """
    res = _expr_equal(e1, e2, context_of(p, path))
    if not res.ok:
        msg = f"{print_expr(e1)} and {print_expr(e2)} are not provably equal here"
        raise _fail(NotEqualError, p, path, msg, res.counterexample, primitive)


def _affine(e: Expr | int) -> af.Aff | None:
    return af.Aff.num(e) if isinstance(e, int) else af.to_aff(e)


def _text(e: Expr | int) -> str:
    return str(e) if isinstance(e, int) else print_expr(e)


def check_divides(
    p: ProcDef, path: Path, divisor: int, e: Expr | int, *, primitive: str | None = None
) -> None:
    """Check that ``divisor`` (a positive constant) divides ``e`` at ``path``.

    Raises:
        NotDivisibleError: with values where ``e % divisor != 0``.
    """
    a = _affine(e)
    if a is not None:
        m = af.mod(a, divisor)
        if m.is_const() and m.const == 0:
            return
        res = smt.valid(af.Eq(m), context_of(p, path).props())
        if res.ok:
            return
        model = res.counterexample
    else:
        model = None
    msg = f"{divisor} does not provably divide {_text(e)}"
    raise _fail(NotDivisibleError, p, path, msg, model, primitive)


def check_le(
    p: ProcDef,
    path: Path,
    lo: Expr | int,
    hi: Expr | int,
    *,
    strict: bool = False,
    primitive: str | None = None,
) -> None:
    """Check that ``lo <= hi`` (``lo < hi`` with ``strict``) at ``path``.

    Raises:
        NotBoundedError: with values where the bound fails.
    """
    a, b = _affine(lo), _affine(hi)
    model = None
    if a is not None and b is not None:
        goal = b - a - (1 if strict else 0)
        ctx = context_of(p, path)
        if af.prove_nonneg(goal, ctx.loop_bounds(), ctx.ranges()):
            return
        res = smt.valid(af.Ge(goal), ctx.props())
        if res.ok:
            return
        model = res.counterexample
    op = "<" if strict else "<="
    msg = f"{_text(lo)} {op} {_text(hi)} does not provably hold"
    raise _fail(NotBoundedError, p, path, msg, model, primitive)


# ----------------------------------------------------------------------------- buffers


def _reads_buf(stmts: Sequence[Stmt], buf: Sym, ctx: PathContext) -> Access | None:
    for a in block_effects(tuple(stmts), ctx.windows):
        if a.buf is buf and a.kind != "write":
            return a  # a reduction reads too
    return None


def _overwritten_first(body: Sequence[Stmt], buf: Sym, ctx: PathContext) -> Sequence[Stmt]:
    """The prefix of ``body`` before a whole-scalar overwrite of ``buf`` (reads after it are
    of the new value, so they do not keep the old one alive)."""
    for k, s in enumerate(body):
        whole = isinstance(s, Assign) and s.sym is buf and not s.idx
        if whole and _reads_buf((s,), buf, ctx) is None:
            return body[:k]
    return body


def check_dead_after(p: ProcDef, gap: Path, buf: Sym, *, primitive: str | None = None) -> None:
    """Check that the allocated buffer ``buf`` is never read after ``gap``.

    ``gap`` ends in ``(block, k)``: the point before statement ``k`` of that block. Inside a
    loop, the statements before the gap run again in later iterations, so they count too,
    up to a whole overwrite of a scalar ``buf``.

    Raises:
        BufferNotDeadError: ``buf`` is a parameter (the caller sees it) or is read later.
    """
    if any(a.sym is buf for a in p.args):
        msg = f"{buf.name} is a parameter: the caller reads it after the proc returns"
        raise _fail(BufferNotDeadError, p, gap, msg, None, primitive)
    cur = gap
    while cur:
        parent_path, (attr, k) = cur[:-1], cur[-1]
        parent = get_at(p, parent_path) if parent_path else p
        block: tuple[Stmt, ...] = getattr(parent, attr)
        ctx = context_of(p, cur)
        hit = _reads_buf(block[k:], buf, ctx)
        if hit is None and isinstance(parent, For):
            ctx0 = context_of(p, (*parent_path, (attr, 0)))
            hit = _reads_buf(_overwritten_first(block[:k], buf, ctx0), buf, ctx0)
        if hit is not None:
            msg = f"{buf.name} is read later by `{_stmt_text(hit.stmt)}`"
            raise _fail(BufferNotDeadError, p, gap, msg, None, primitive)
        if any(isinstance(s, Alloc) and s.sym is buf for s in block[:k]):
            return
        if not parent_path:
            return
        up_attr, up_k = parent_path[-1]
        cur = (*parent_path[:-1], (up_attr, up_k + 1))


def check_in_window(
    p: ProcDef,
    block: Sequence[Path],
    buf: Sym,
    window: WindowExpr,
    *,
    primitive: str | None = None,
) -> None:
    """Check that every access of ``buf`` in ``block`` lies inside ``window`` (of ``buf``).

    A point coordinate of the window must equal the access's index; an interval ``lo:hi``
    must contain it.

    Raises:
        OutsideWindowError: with values where an access leaves the window.
    """
    stmts = _group(p, block)
    ctx = context_of(p, block[0])
    base = ctx.props()
    for a in block_effects(stmts, ctx.windows):
        if a.buf is not buf:
            continue
        x = Instance(a, {})
        goals: list[af.Prop] = []
        for i, w in zip(a.idx, window.idx, strict=True):
            ai = af.to_aff(i)
            lo, hi = (w.pt, None) if isinstance(w, Point) else (w.lo, w.hi)
            la = af.to_aff(lo)
            ha = None if hi is None else af.to_aff(hi)
            if ai is None or la is None or (hi is not None and ha is None):
                goals.append(af.BConst(False))
            elif ha is None:
                goals.append(af.Eq(ai - la))
            else:
                goals.append(af.And((af.le(la, ai), af.lt(ai, ha))))
        res = smt.valid(af.And(tuple(goals)), [*base, *x.props()])
        if not res.ok:
            msg = (
                f"`{_stmt_text(a.stmt)}` ({a.kind} of {buf.name}) leaves the window "
                f"{print_expr(window)}"
            )
            raise _fail(OutsideWindowError, p, block[0], msg, res.counterexample, primitive)
