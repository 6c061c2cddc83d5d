"""The legality analysis of ``scan_fuse`` (``cursched.primitives.scans.scan``), one error class per
precondition.

``analyse`` finds the running value and its updates in the first loop, the accumulations of
the second loop whose terms read it (with their rate, ``cursched.analysis.rescale``), and
checks everything the rewrite relies on; ``map_running`` reads the guarded running value in
those terms.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from cursched.analysis.rescale import Rate, Refusal, rescale_rate
from cursched.cursors import ForCursor
from cursched.cursors.tree import stmt_list, update_at, walk
from cursched.errors import (
    DependenceError,
    IndirectUseError,
    NotProvenError,
    SchedulingError,
    ShapeMismatchError,
)
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Call,
    Const,
    Expr,
    Extern,
    For,
    If,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import (
    free_syms_expr,
    map_expr_children,
    stmt_exprs,
    walk_expr,
    walk_stmts,
)
from cursched.ir.types import INT, DataType, TensorType
from cursched.primitives.loops.loop_common import rename_expr, same_pairs
from cursched.primitives.registry import fail

# ------------------------------------------------------------------------- error classes


class ScanLoopOrderError(ShapeMismatchError):
    """scan_fuse, precondition 1: the loops are not in one block, the first before."""


class ScanBoundsError(NotProvenError):
    """scan_fuse, precondition 2: the loops' bounds differ."""


class ScanBetweenError(DependenceError):
    """scan_fuse, precondition 3: a statement between the loops depends on the first loop."""


class ScanFirstLoopError(DependenceError):
    """scan_fuse, precondition 4: the first loop does more than update one running value, or
    reads what the second loop writes."""


class NotRescalableError(ShapeMismatchError):
    """scan_fuse, precondition 5: the second loop reads the running value other than in
    rescalable accumulation terms of one rate."""


class AccumulatorWritesError(ShapeMismatchError):
    """scan_fuse, precondition 6: an accumulator is written other than by its own ``+=``."""


class AccumulatorInitError(NotProvenError):
    """scan_fuse, precondition 7: an accumulator is not proven to start from zero."""


class AccumulatorReadError(DependenceError):
    """scan_fuse, precondition 8: an accumulator is read inside the loops."""


class AccumulatorAliasError(IndirectUseError):
    """scan_fuse, precondition 9: an accumulator is a window or has a window."""


class AccumulatorIndexError(ShapeMismatchError):
    """scan_fuse, precondition 10: an accumulator's index cannot be rescaled once per
    element (not distinct loop variables or expressions free of the second loop's)."""


# ------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class Update:
    """One accumulation of the second loop whose term reads the running value.

    Attributes:
        stmt: ``acc[idx] = <placeholder>``: the accumulator and index to rescale.
        loops: the loops (inside the second loop's body) whose variables index it.
        rel: its path relative to the second loop (``(("body", k), ...)``).
        dtype: the accumulator's precision (the rescaling computes in it).
    """

    stmt: Assign
    loops: tuple[For, ...]
    rel: Path
    dtype: DataType


@dataclass(frozen=True)
class ScanAnalysis:
    """What ``scan_fuse`` needs to know about the two loops.

    Attributes:
        running: the running value's symbol; ``idx`` its index.
        dtype: its precision.
        rate: the rate of every rescaled term.
        direction: +1 when the running value only grows (``fmax``), -1 when it only shrinks
            (``fmin``), 0 otherwise.
        first_updates: paths (relative to the first loop) of the running value's updates.
        updates: the accumulations to rescale, in program order.
    """

    running: Sym
    idx: tuple[Expr, ...]
    dtype: DataType
    rate: Rate
    direction: int
    first_updates: tuple[Path, ...]
    updates: tuple[Update, ...]

    def running_read(self) -> Read:
        """A new read of the running value."""
        return Read(self.running, self.idx, self.dtype)

    def is_running(self, r: Read) -> bool:
        """Whether ``r`` reads the running value."""
        return r.sym is self.running and r.idx == self.idx


# ------------------------------------------------------------------------------ helpers


def _nested(
    body: tuple[Stmt, ...], prefix: Path = (), loops: tuple[For, ...] = (), attr: str = "body"
) -> Iterator[tuple[Path, Stmt, tuple[For, ...]]]:
    """Every statement below ``body`` with its relative path and its enclosing loops."""
    for k, s in enumerate(body):
        path = (*prefix, (attr, k))
        yield path, s, loops
        match s:
            case For():
                yield from _nested(s.body, path, (*loops, s))
            case If():
                yield from _nested(s.body, path, loops)
                yield from _nested(s.orelse, path, loops, "orelse")
            case Scope():
                yield from _nested(s.body, path, loops)
            case _:
                pass


def _bound_inside(body: tuple[Stmt, ...]) -> set[Sym]:
    out: set[Sym] = set()
    for s in walk_stmts(body):
        if isinstance(s, For):
            out.add(s.iter)
        elif isinstance(s, Alloc | WindowStmt):
            out.add(s.sym)
    return out


def _locals(body: tuple[Stmt, ...]) -> set[Sym]:
    return {s.sym for s in walk_stmts(body) if isinstance(s, Alloc)}


def _syms_read(body: tuple[Stmt, ...]) -> set[Sym]:
    out: set[Sym] = set()
    for s in walk_stmts(body):
        for e in stmt_exprs(s):
            for x in walk_expr(e):
                if isinstance(x, Read | WindowExpr | StrideExpr):
                    out.add(x.sym)
    return out


def _written(body: tuple[Stmt, ...]) -> list[Sym]:
    out: list[Sym] = []
    for s in walk_stmts(body):
        if isinstance(s, Assign | Reduce):
            out.append(s.sym)
        elif isinstance(s, Call):
            # a call may write any tensor or window it is passed
            out += [x.sym for e in s.args for x in walk_expr(e) if isinstance(x, Read | WindowExpr)]
    return out


def _data_type(ir: ProcDef, sym: Sym) -> DataType | None:
    types = [a.type for a in ir.args if a.sym is sym]
    types += [s.type for s in walk_stmts(ir.body) if isinstance(s, Alloc) and s.sym is sym]
    t = types[0] if types else None
    if isinstance(t, TensorType):
        return t.elem
    return t if isinstance(t, DataType) else None


def _is_window(ir: ProcDef, sym: Sym) -> bool:
    for a in ir.args:
        if a.sym is sym and isinstance(a.type, TensorType) and a.type.window:
            return True
    return any(isinstance(s, WindowStmt) and sym in (s.sym, s.rhs.sym) for s in walk_stmts(ir.body))


def _direction(updates: list[Assign], is_m: object) -> int:
    """+1 when every update is ``m = fmax(m, _)`` (or ``fmaxf``, either order), -1 for
    ``fmin``, else 0."""
    dirs = set()
    for u in updates:
        rhs = u.rhs
        if (
            isinstance(rhs, Extern)
            and len(rhs.args) == 2
            and any(isinstance(x, Read) and x.sym is u.sym and x.idx == u.idx for x in rhs.args)
        ):
            dirs.add({"fmax": 1, "fmaxf": 1, "fmin": -1, "fminf": -1}.get(rhs.name, 0))
        else:
            dirs.add(0)
    return dirs.pop() if len(dirs) == 1 else 0


def _is_zero(e: Expr) -> bool:
    return isinstance(e, Const) and not isinstance(e.value, bool) and e.value == 0


def _zeroes(init: Stmt, u: Update) -> bool:
    """Whether ``init`` sets every element the accumulation touches to zero."""
    loops: list[For] = []
    s = init
    while isinstance(s, For) and len(s.body) == 1:
        loops.append(s)
        s = s.body[0]
    if not (isinstance(s, Assign) and s.sym is u.stmt.sym and _is_zero(s.rhs)):
        return False
    env: dict[Sym, Sym] = {}
    by_iter = {lp.iter: lp for lp in loops}
    for e, e0 in zip(u.stmt.idx, s.idx, strict=True):
        target = next((lp for lp in u.loops if isinstance(e, Read) and e.sym is lp.iter), None)
        if target is None:
            if rename_expr(e0, env) != e:
                return False
            continue
        if not (isinstance(e0, Read) and e0.sym in by_iter and e0.sym not in env):
            return False
        lp0 = by_iter[e0.sym]
        if rename_expr(lp0.lo, env) != target.lo or rename_expr(lp0.hi, env) != target.hi:
            return False
        env[e0.sym] = target.iter
    return len(env) == len(loops)


# ------------------------------------------------------------------------------ analyse


def analyse(ir: ProcDef, c1: ForCursor, c2: ForCursor, name: str) -> ScanAnalysis:
    """Check preconditions 4 to 10 of ``scan_fuse`` and describe the two loops."""
    l1, l2 = c1.node(), c2.node()
    assert isinstance(l1, For) and isinstance(l2, For)
    first = _check_first_loop(ir, l1, l2, c1, name)
    found, rate = _check_rescalable(l2, first, c2, name)
    updates = _check_accumulators(ir, l1, l2, found, first, c1, c2, name)
    direction = _direction(list(first.ups), first.is_m)
    start = direction or _start(ir, c1, first.m, first.m_idx)
    _check_correction_bounded(first.m, start, rate, c2, name)
    return ScanAnalysis(
        first.m, first.m_idx, first.dtype, rate, direction, first.rels, tuple(updates)
    )


@dataclass(frozen=True)
class _RunningValue:
    """What precondition 4 found: the first loop's updates of the running value ``m``."""

    ups: tuple[Assign, ...]
    rels: tuple[Path, ...]
    m: Sym
    m_idx: tuple[Expr, ...]
    dtype: DataType

    def is_m(self, r: Read) -> bool:
        return r.sym is self.m and r.idx == self.m_idx


def _check_first_loop(ir: ProcDef, l1: For, l2: For, c1: ForCursor, name: str) -> _RunningValue:
    """Precondition 4: the first loop updates one running value and nothing else, and reads
    nothing the second loop writes."""

    def first_fail(msg: str) -> SchedulingError:
        return fail(ScanFirstLoopError, name, msg, c1)

    if l1.mode != "seq":
        raise first_fail("the first loop is a `par` loop; a running value needs `seq`")
    locals1, bound1 = _locals(l1.body), _bound_inside(l1.body) | {l1.iter}
    ups: list[Assign] = []
    rels: list[Path] = []
    for rel, s, _ in _nested(l1.body):
        if isinstance(s, Call):
            raise first_fail("the first loop calls a proc; it may only update the running value")
        if not isinstance(s, Assign | Reduce) or s.sym in locals1:
            continue
        if isinstance(s, Reduce):
            raise first_fail(f"the first loop accumulates into `{s.sym}`; it must assign")
        if ups and (s.sym is not ups[0].sym or s.idx != ups[0].idx):
            raise first_fail(f"the first loop writes `{ups[0].sym}` and `{s.sym}`; only one")
        if any(free_syms_expr(e) & bound1 for e in s.idx):
            raise first_fail(f"the running value `{s.sym}` is indexed by the first loop")
        ups.append(s)
        rels.append(rel)
    if not ups:
        raise first_fail("the first loop updates no running value")
    m, m_idx = ups[0].sym, ups[0].idx
    dtype = _data_type(ir, m)
    if dtype is None:
        raise first_fail(f"the running value `{m}` is not data")
    if _is_window(ir, m):
        raise first_fail(f"the running value `{m}` is a window or has one (it may alias)")
    written2 = set(_written(l2.body)) - _locals(l2.body)
    clash = _syms_read(l1.body) & written2
    if clash:
        names = ", ".join(sorted(x.name for x in clash))
        raise first_fail(f"the first loop reads {names}, written by the second loop")
    return _RunningValue(tuple(ups), tuple(rels), m, m_idx, dtype)


_Found = list[tuple[Path, Reduce, tuple[For, ...], Rate]]


def _check_rescalable(
    l2: For, first: _RunningValue, c2: ForCursor, name: str
) -> tuple[_Found, Rate]:
    """Precondition 5: the second loop reads the running value only inside rescalable
    accumulation terms, all of one rate. Returns those terms and the rate."""
    m = first.m

    def resc_fail(msg: str) -> SchedulingError:
        return fail(NotRescalableError, name, msg, c2)

    locals2 = _locals(l2.body)
    found: _Found = []
    for rel, s, loops in _nested(l2.body):
        if isinstance(s, Assign | Reduce) and s.sym is m:
            raise resc_fail(f"the second loop writes the running value `{m}`")
        uses = [x for e in stmt_exprs(s) for x in walk_expr(e) if getattr(x, "sym", None) is m]
        if any(not isinstance(x, Read) for x in uses):
            raise resc_fail(f"the second loop uses `{m}` as a window or a stride")
        reads_m = [x for x in uses if isinstance(x, Read)]
        if not reads_m:
            continue
        if any(not first.is_m(x) for x in reads_m):
            raise resc_fail(f"the second loop reads `{m}` at another index than the first writes")
        if not isinstance(s, Reduce) or s.sym in locals2:
            raise resc_fail(f"the second loop reads `{m}` outside an accumulation term")
        rate = rescale_rate(s.rhs, first.is_m)
        if isinstance(rate, Refusal):
            msg = f"the term `{print_expr(s.rhs)}` is {rate.reason}"
            if rate.counterexample is not None:
                vals = ", ".join(f"{k} = {v:g}" for k, v in rate.counterexample.items())
                msg += f"; counterexample: {vals or 'values of the exponentials'}"
            err = fail(NotRescalableError, name, msg, c2)
            err.counterexample = rate.counterexample  # type: ignore[attr-defined]
            raise err
        if rate.base is not None:
            found.append((rel, s, loops, rate))
    if not found:
        raise resc_fail(f"no accumulation of the second loop depends on `{m}`; use fuse")
    rate = found[0][3]
    if any((r.base, r.c) != (rate.base, rate.c) for *_, r in found):
        raise resc_fail("the accumulations rescale at different rates")
    return found, rate


def _check_accumulators(
    ir: ProcDef,
    l1: For,
    l2: For,
    found: _Found,
    first: _RunningValue,
    c1: ForCursor,
    c2: ForCursor,
    name: str,
) -> list[Update]:
    """Preconditions 6 to 10, per accumulator: written only by its ``+=``, not read, not a
    window, rescalable once per element, starting from zero."""
    writes_all = _written(l1.body) + _written(l2.body)
    reads_all = _syms_read(l1.body) | _syms_read(l2.body)
    updates: list[Update] = []
    for rel, s, loops, _ in found:
        acc = s.sym
        if _is_window(ir, acc):
            raise fail(AccumulatorAliasError, name, f"the accumulator `{acc}` aliases a window", c2)
        if writes_all.count(acc) > 1:
            msg = f"the accumulator `{acc}` is written other than by its own `+=`"
            raise fail(AccumulatorWritesError, name, msg, c2)
        if acc in reads_all:
            msg = f"the accumulator `{acc}` is read inside the loops"
            raise fail(AccumulatorReadError, name, msg, c2)
        used = _check_accumulator_index(l2, s, loops, c2, name)
        u = Update(Assign(acc, s.idx, s.rhs), used, rel, _data_type(ir, acc) or first.dtype)
        _check_init(ir, c1, c2, u, name)
        updates.append(u)
    return updates


def _check_accumulator_index(
    l2: For, s: Reduce, loops: tuple[For, ...], c2: ForCursor, name: str
) -> tuple[For, ...]:
    """Precondition 10: the accumulator is indexed by distinct loop variables (or by
    expressions free of the second loop's variables) of loops whose bounds do not depend on
    the second loop. Returns those loops, outermost first."""
    bound2 = _bound_inside(l2.body) | {l2.iter}
    used: list[For] = []
    for e in s.idx:
        lp = next((x for x in loops if isinstance(e, Read) and e.sym is x.iter), None)
        if lp is not None and lp not in used:
            used.append(lp)
        elif lp is not None or free_syms_expr(e) & bound2:
            msg = f"the accumulator `{s.sym}` is indexed by `{print_expr(e)}`"
            raise fail(AccumulatorIndexError, name, msg, c2)
    used.sort(key=loops.index)
    for k, lp in enumerate(used):
        allowed = {x.iter for x in used[:k]}
        if (free_syms_expr(lp.lo) | free_syms_expr(lp.hi)) & (bound2 - allowed):
            msg = f"the loop over `{lp.iter}` has bounds that depend on the second loop"
            raise fail(AccumulatorIndexError, name, msg, c2)
    return tuple(used)


def _check_correction_bounded(m: Sym, start: int, rate: Rate, c2: ForCursor, name: str) -> None:
    """Precondition 5, last part: the correction factor stays finite (a running maximum
    starting from ``-inf`` with a positive rate, or a minimum from ``inf`` with a negative
    one)."""
    if start * rate.c < 0:
        where = {1: "grows from -inf", -1: "shrinks from inf"}[start]
        msg = f"the running value `{m}` {where}, so the correction for terms of rate "
        msg += f"{rate.c} would grow without bound (an infinite first correction times 0)"
        raise fail(NotRescalableError, name, msg, c2)


def _start(ir: ProcDef, c1: ForCursor, m: Sym, idx: tuple[Expr, ...]) -> int:
    """+1 when the running value is last set to ``-inf`` before the first loop, -1 for
    ``inf``, else 0."""
    p1 = c1.path()
    block = stmt_list(ir, p1[:-1], p1[-1][0])
    for s in reversed(block[: p1[-1][1]]):
        if m not in _written((s,)):
            continue
        if isinstance(s, Assign) and s.idx == idx and isinstance(s.rhs, Const):
            v = s.rhs.value
            if isinstance(v, float) and v in (float("inf"), float("-inf")):
                return 1 if v < 0 else -1
        return 0
    return 0


def _check_init(ir: ProcDef, c1: ForCursor, c2: ForCursor, u: Update, name: str) -> None:
    p1, p2 = c1.path(), c2.path()
    parent, attr = p1[:-1], p1[-1][0]
    block = stmt_list(ir, parent, attr)
    order = [*range(p2[-1][1] - 1, p1[-1][1], -1), *range(p1[-1][1] - 1, -1, -1)]
    acc = u.stmt.sym
    for k in order:
        s = block[k]
        if acc not in _written((s,)):
            continue
        if _zeroes(s, u):
            return
        msg = f"the accumulator `{acc}` is last set before the loops by a statement that is "
        msg += "not a zeroing of every element the loop accumulates"
        raise fail(AccumulatorInitError, name, msg, c2)
    msg = f"no statement of the loops' block sets the accumulator `{acc}` to zero before them"
    raise fail(AccumulatorInitError, name, msg, c2)


# ------------------------------------------------------------------------ the rewrite's


def map_running(
    body: tuple[Stmt, ...], a: ScanAnalysis, safe: Expr
) -> tuple[tuple[Stmt, ...], list[tuple[Stmt, Stmt]]]:
    """``body`` with the running value in the rescaled terms read as ``safe``, and the
    (old, new) pairs of the statements rebuilt."""

    def sub(e: Expr) -> Expr:
        if isinstance(e, Read) and a.is_running(e):
            return safe
        return map_expr_children(e, sub)

    holder = For(Sym("_"), Const(0, INT), Const(1, INT), body)
    for u in a.updates:
        holder = update_at(holder, u.rel, lambda s: s.replace(rhs=sub(s.rhs)))
    return holder.body, same_pairs(body, holder.body)


def expr_paths(ir: ProcDef, path: Path, target: Expr) -> list[Path]:
    """Relative paths of the occurrences of the node ``target`` (by identity) at ``path``."""
    return [rel for rel, x in walk(get_at(ir, path)) if x is target]
