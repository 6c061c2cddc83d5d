"""``split_online``: an online max-and-rescaled-sum loop (``scan_fuse``'s output) into one
independent online pass per strided class of iterations and a combine of the classes'
partial results (issue 14: a block of threads per softmax row, one class per thread).

The online loop runs the recurrence of the pair ``(m, s)``: ``m`` the running max of the
values ``E(j)``, ``s`` the sum of the terms ``T(j, m)`` rescaled by ``exp(m_old - m)`` each time
``m`` grows. The pair combines associatively: ``(m1, s1) . (m2, s2) = (M, s1 * exp(m1 - M) +
s2 * exp(m2 - M))`` with ``M = max(m1, m2)``, because a term of rate 1 satisfies
``T(j, M) = T(j, m) * exp(m - M)``. So each class ``t`` of the iterations
``j = lo + threads * jo + t`` may run the same recurrence from ``(-inf, 0)`` on its own, and
the classes' results fold into the incoming pair in class order: in real arithmetic the
result is the same (floating point regroups the sum, as any parallel reduction).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated

from cursched.analysis import affine as af
from cursched.analysis.rescale import EXP_FAMILY, Rate, rescale_rate
from cursched.cursors import AllocCursor, Editor, ForCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import (
    BadArgumentError,
    BadNameError,
    DependenceError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.memory import DRAM
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Const,
    Expr,
    Extern,
    For,
    If,
    Read,
    Reduce,
    Stmt,
)
from cursched.ir.printer import print_expr, print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children, walk_expr
from cursched.ir.types import BOOL, INDEX, DataType, TensorType
from cursched.primitives.arguments import NewName
from cursched.primitives.loops.loop_common import expr_of, int_const, rename_stmt, subst_simplify
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.primitives.scans.precision import mixed_precision
from cursched.proc import Proc

NAME = "split_online"

__all__ = [
    "SplitOnlineCursors",
    "SplitOnlineLoopError",
    "SplitOnlineNameError",
    "SplitOnlinePrecisionError",
    "SplitOnlineRateError",
    "SplitOnlineReadError",
    "SplitOnlineShapeError",
    "SplitOnlineThreadsError",
    "split_online",
]


class SplitOnlineThreadsError(BadArgumentError):
    """split_online, precondition 1: the number of classes is not a positive integer."""


class SplitOnlineLoopError(ShapeMismatchError):
    """split_online, precondition 2: the loop is not sequential."""


class SplitOnlineShapeError(ShapeMismatchError):
    """split_online, precondition 3: the body is not an online max-and-sum step (save,
    ``fmax`` update, correction, one rescale and one accumulation per scalar sum)."""


class SplitOnlineReadError(DependenceError):
    """split_online, precondition 4: an operand reads a value the loop updates (other than
    the guarded running max inside a term)."""


class SplitOnlineRateError(ShapeMismatchError):
    """split_online, precondition 5: a term does not scale as ``exp(-m)`` with the running
    max (rate 1, base e), so the classes' sums cannot be rescaled to the common max."""


class SplitOnlineNameError(BadNameError):
    """split_online, precondition 6: a new loop name is not an identifier."""


class SplitOnlinePrecisionError(TypeMismatchError):
    """split_online, precondition 7: the loop mixes data precisions (the classes' copies of
    the running values are typed by them)."""


@prim_cursors
class SplitOnlineCursors(PrimCursors):
    """What ``split_online`` returns.

    Attributes:
        local: the loop over classes, each running the online pass from ``(-inf, 0)`` on its
            own iterations (independent iterations: bind it to threads).
        inner: the loop over a class's iterations (inside ``local``).
        levels: with ``tree``, the tree's levels, widest first (``threads / 2`` classes
            folding in the pairs of as many others, down to 1); empty otherwise.
        combine: the sequential loop folding the classes' pairs (class 0's alone after a
            tree) into the running pair.
        parts: the allocations of the classes' partial results: the running max's, then one
            per sum, in the order of the sums' accumulations.
    """

    local: ForCursor
    inner: ForCursor
    levels: tuple[ForCursor, ...]
    combine: ForCursor
    parts: tuple[AllocCursor, ...]


@dataclass(frozen=True, slots=True)
class _Online:
    """The parts of an online loop's body."""

    m: Sym  # the running max
    prev: Sym  # its saved previous value
    alpha: Sym  # the correction
    sums: tuple[Sym, ...]  # the accumulators, in the order of their accumulations
    type: DataType
    stmts: tuple[Stmt, ...]  # the body as it is
    fmax: str  # the update's spelling (fmax or fmaxf)
    exp: str  # the correction's exponential (exp or expf)


def _is(e: Expr, sym: Sym) -> bool:
    return isinstance(e, Read) and e.sym is sym and not e.idx


def _const_is(e: Expr, v: float) -> bool:
    return isinstance(e, Const) and float(e.value) == v


def _shape_error(loop: ForCursor, why: str) -> Exception:
    return fail(SplitOnlineShapeError, NAME, f"the loop body is not an online step: {why}", loop)


def _scalar_assigns(body: tuple[Stmt, ...]) -> list[Stmt]:
    """The body without the allocations of the saved value and the correction."""
    return [s for s in body if not (isinstance(s, Alloc) and not isinstance(s.type, TensorType))]


def _rescaled(r: Stmt, alpha: Sym) -> Sym | None:
    """The sum ``r`` rescales (``s = alpha * s``), or None."""
    if not (isinstance(r, Assign) and not r.idx and isinstance(r.rhs, BinOp)):
        return None
    rhs = r.rhs
    return r.sym if rhs.op == "*" and _is(rhs.lhs, alpha) and _is(rhs.rhs, r.sym) else None


def _match(loop: ForCursor) -> _Online:
    """Precondition 3: save, update, correction, rescales, accumulations, in this order."""
    body = loop.loop().body
    st = _scalar_assigns(body)
    n = (len(st) - 3) // 2
    if len(st) < 5 or len(st) != 3 + 2 * n:
        raise _shape_error(loop, "expected 3 + 2k statements besides the scalar allocations")
    save, update, corr = st[0], st[1], st[2]
    if not (isinstance(save, Assign) and not save.idx and isinstance(save.rhs, Read)):
        raise _shape_error(loop, f"`{print_stmt(save).strip()}` does not save the running max")
    m, prev = save.rhs.sym, save.sym
    up = update.rhs if isinstance(update, Assign) and update.sym is m else None
    if not (
        isinstance(up, Extern)
        and up.name in ("fmax", "fmaxf")
        and any(_is(a, m) for a in up.args)
        and isinstance(up.type, DataType)
    ):
        raise _shape_error(loop, f"`{print_stmt(update).strip()}` is not `{m.name} = fmax(...)`")
    if not (isinstance(corr, Assign) and not corr.idx and _is_correction(corr.rhs, prev, m)):
        what = f"select({prev.name}, {m.name}, exp({prev.name} - {m.name}), 1.0)"
        raise _shape_error(loop, f"`{print_stmt(corr).strip()}` is not the correction {what}")
    sums: list[Sym] = []
    for r in st[3 : 3 + n]:
        s = _rescaled(r, corr.sym)
        if s is None:
            raise _shape_error(loop, f"`{print_stmt(r).strip()}` is not a rescale `s = alpha * s`")
        sums.append(s)
    for s, a in zip(sums, st[3 + n :], strict=True):
        if not (isinstance(a, Reduce) and a.sym is s and not a.idx):
            raise _shape_error(loop, f"`{print_stmt(a).strip()}` is not the accumulation of {s}")
    if len(set(sums)) != n or {m, prev, corr.sym} & set(sums):
        raise _shape_error(loop, "the sums must be distinct scalars other than the max")
    assert isinstance(corr.rhs, Extern)  # _is_correction checked its shape
    exp = corr.rhs.args[2]
    assert isinstance(exp, Extern)
    return _Online(m, prev, corr.sym, tuple(sums), up.type, body, up.name, exp.name)


def _is_correction(e: Expr, prev: Sym, m: Sym) -> bool:
    """``select(prev, m, exp(prev - m), 1.0)``: 1 when the max did not grow."""
    if not (isinstance(e, Extern) and e.name == "select" and len(e.args) == 4):
        return False
    a, b, x, one = e.args
    if not (_is(a, prev) and _is(b, m) and _const_is(one, 1.0)):
        return False
    if not (isinstance(x, Extern) and EXP_FAMILY.get(x.name) == "e" and len(x.args) == 1):
        return False
    d = x.args[0]
    return isinstance(d, BinOp) and d.op == "-" and _is(d.lhs, prev) and _is(d.rhs, m)


def _is_guard(e: Expr, m: Sym) -> bool:
    """``select(-inf, m, m, 0.0)``: the running max, 0 while it is ``-inf``."""
    if not (isinstance(e, Extern) and e.name == "select" and len(e.args) == 4):
        return False
    lo, a, b, z = e.args
    return _const_is(lo, float("-inf")) and _is(a, m) and _is(b, m) and _const_is(z, 0.0)


def _unguarded(e: Expr, m: Sym, g: Sym) -> Expr:
    """``e`` with every guarded running max replaced by a read of ``g``."""
    if _is_guard(e, m):
        return Read(g, (), e.type)
    return map_expr_children(e, lambda x: _unguarded(x, m, g))


def _check_one_precision(loop: ForCursor) -> None:
    mixed = mixed_precision(loop.proc().ir(), loop.loop().body)
    if mixed is not None:
        msg = f"the loop mixes precisions ({mixed}); the online step needs one"
        raise fail(SplitOnlinePrecisionError, NAME, msg, loop)


def _check_reads(o: _Online, loop: ForCursor) -> None:
    """Precondition 4: the update's operand and the terms read nothing the loop updates
    (a term reads the running max only through its guard)."""
    updated = {o.m, o.prev, o.alpha, *o.sums}
    st = _scalar_assigns(o.stmts)
    update = st[1]
    assert isinstance(update, Assign) and isinstance(update.rhs, Extern)
    operands = [a for a in update.rhs.args if not _is(a, o.m)]
    g = Sym("guarded")
    terms = [_unguarded(s.rhs, o.m, g) for s in st[3 + len(o.sums) :] if isinstance(s, Reduce)]
    for e in (*operands, *terms):
        read = sorted(
            {x.sym.name for x in walk_expr(e) if isinstance(x, Read) and x.sym in updated}
        )
        if read:
            msg = f"`{print_expr(e)}` reads {', '.join(read)}, which the loop updates"
            raise fail(SplitOnlineReadError, NAME, msg, loop)


def _check_rates(o: _Online, loop: ForCursor) -> None:
    """Precondition 5: each term scales as ``exp(-m)``."""
    g = Sym("guarded")
    for s in _scalar_assigns(o.stmts)[3 + len(o.sums) :]:
        assert isinstance(s, Reduce)
        rate = rescale_rate(_unguarded(s.rhs, o.m, g), lambda r: r.sym is g)
        if not (isinstance(rate, Rate) and rate.base == "e" and rate.c == Fraction(1)):
            why = rate.reason if not isinstance(rate, Rate) else f"its rate is {rate.c}"
            msg = f"the term `{print_expr(s.rhs)}` does not scale as exp(-{o.m.name}): {why}"
            raise fail(SplitOnlineRateError, NAME, msg, loop)


class _Builder:
    """The new statements for ``threads`` classes."""

    def __init__(self, o: _Online, L: For, threads: int, names: tuple[str, str]) -> None:
        self.o, self.L, self.T = o, L, threads
        self.t, self.jo = Sym(names[0]), Sym(names[1])
        lo, hi = af.to_aff(L.lo), af.to_aff(L.hi)
        assert lo is not None and hi is not None, "loop bounds are quasi-affine"
        self.lo, self.hi = lo, hi
        self.count = expr_of(af.div(hi - lo + (threads - 1), threads))
        self.parts = tuple(Sym(f"{x.name}_part") for x in (o.m, *o.sums))
        self.locals = tuple(Sym(f"{x.name}_local") for x in (o.m, *o.sums))

    def _f(self, v: float) -> Const:
        return Const(v, self.o.type)

    def _rd(self, s: Sym, *idx: Expr) -> Read:
        return Read(s, idx, self.o.type)

    def local(self) -> tuple[For, list[tuple[Stmt, Stmt]]]:
        o, t = self.o, self.t
        j = af.Aff.var(self.jo).scale(self.T) + af.Aff.var(t) + self.lo
        env = {o.m: self.locals[0], **dict(zip(o.sums, self.locals[1:], strict=True))}
        ranges: dict[Sym, af.Bound] = {self.jo: (0, None), t: (0, self.T - 1)}
        at_j: dict[Sym, Expr] = {self.L.iter: expr_of(j)}
        copies = tuple(subst_simplify(rename_stmt(s, env), at_j, ranges) for s in o.stmts)
        guard = If(BinOp("<", expr_of(j), expr_of(self.hi), BOOL), copies, ())
        inner = For(self.jo, int_const(0), self.count, (guard,))
        head: list[Stmt] = []
        for x, init in zip(self.locals, (float("-inf"), *(0.0 for _ in o.sums)), strict=True):
            head += [Alloc(x, o.type, DRAM), Assign(x, (), self._f(init))]
        at = Read(t, (), INDEX)
        tail = [Assign(p, (at,), self._rd(x)) for p, x in zip(self.parts, self.locals, strict=True)]
        loop = For(t, int_const(0), int_const(self.T), (*head, inner, *tail))
        return loop, list(zip(o.stmts, copies, strict=True))

    def level(self, h: int) -> For:
        """One level of the tree: class ``t < h`` folds class ``t + h``'s pair into its own
        (no class reads an element another writes in the same level)."""
        o, t = self.o, self.t.copy()
        at, up = Read(t, (), INDEX), BinOp("+", Read(t, (), INDEX), int_const(h), INDEX)
        new = Sym(f"{o.m.name}_new")
        mn = self._rd(new)
        guard = Extern("select", (self._f(float("-inf")), mn, mn, self._f(0.0)), o.type)

        def scaled(p: Sym, k: Expr) -> Expr:
            diff = BinOp("-", self._rd(self.parts[0], k), guard, o.type)
            return BinOp("*", self._rd(p, k), Extern(o.exp, (diff,), o.type), o.type)

        pair = (self._rd(self.parts[0], at), self._rd(self.parts[0], up))
        body: list[Stmt] = [Alloc(new, o.type, DRAM), Assign(new, (), Extern(o.fmax, pair, o.type))]
        for p in self.parts[1:]:
            body.append(Assign(p, (at,), BinOp("+", scaled(p, at), scaled(p, up), o.type)))
        body.append(Assign(self.parts[0], (at,), mn))
        return For(t, int_const(0), int_const(h), tuple(body))

    def combine(self, count: int) -> For:
        o, t = self.o, self.t.copy()
        at = Read(t, (), INDEX)
        m, prev, alpha = self._rd(o.m), o.prev.copy(), o.alpha.copy()
        mp = self._rd(self.parts[0], at)
        guard = Extern("select", (self._f(float("-inf")), m, m, self._f(0.0)), o.type)
        diff = BinOp("-", self._rd(prev), m, o.type)
        ex = Extern(o.exp, (diff,), o.type)
        corr = Extern("select", (self._rd(prev), m, ex, self._f(1.0)), o.type)
        body: list[Stmt] = [
            Alloc(prev, o.type, DRAM),
            Assign(prev, (), m),
            Assign(o.m, (), Extern(o.fmax, (m, mp), o.type)),
            Alloc(alpha, o.type, DRAM),
            Assign(alpha, (), corr),
        ]
        body += [Assign(s, (), BinOp("*", self._rd(alpha), self._rd(s), o.type)) for s in o.sums]
        scale = Extern(o.exp, (BinOp("-", mp, guard, o.type),), o.type)
        for s, p in zip(o.sums, self.parts[1:], strict=True):
            body.append(Reduce(s, (), BinOp("*", self._rd(p, at), scale, o.type)))
        return For(t, int_const(0), int_const(count), tuple(body))


@primitive
def split_online(
    proc: Proc,
    loop: ForCursor,
    threads: int,
    names: Annotated[
        tuple[str, str] | None, NewName(SplitOnlineNameError, at="loop", count=2)
    ] = None,
    tree: bool = False,
) -> Rewrite[SplitOnlineCursors]:
    """Split an online max-and-sum loop into ``threads`` independent strided passes and a
    combine of their partial results.

    The loop must be the online step ``scan_fuse`` makes of a max loop and sum loops: save
    the max, ``m = fmax(m, E)``, the correction ``alpha``, ``s = alpha * s`` per sum, then
    ``s += T`` per sum, each term scaling as ``exp(-m)`` (it reads ``m`` only through the
    guard ``select(-inf, m, m, 0.0)``). Class ``t`` runs the same step from ``(-inf, 0)`` over
    ``j = lo + threads * jo + t`` (the last round guarded), into ``m_part[t]`` and
    ``s_part[t]``; a sequential loop then folds the classes into ``(m, s)`` in class order:
    ``m = fmax(m, m_part[t])``, ``s = alpha * s``, ``s += s_part[t] * exp(m_part[t] - G(m))``.
    With ``tree=True`` (``threads`` a power of two) the classes' pairs are first folded in
    place in ``log2(threads)`` levels (level ``h``: class ``t < h`` takes in class ``t + h``;
    bind each level to threads for a shared-memory tree reduction), and the fold loop takes
    in class 0 only. Floating-point sums are regrouped (compare with a tolerance).

    Args:
        proc: the proc to rewrite.
        loop: the online loop (a cursor or a loop name).
        threads: the number of classes (a positive constant: the threads of a row).
        names: the class and in-class loop variables (default ``(j + "t", j + "o")``).
        tree: fold the classes' pairs in a tree of levels first.

    Returns:
        The new proc and ``SplitOnlineCursors``: ``local``, ``inner``, ``levels``,
        ``combine``, ``parts``.

    Preconditions:
        1. ``threads`` is a positive integer, a power of two with ``tree``
           (``SplitOnlineThreadsError``).
        2. the loop is sequential (``SplitOnlineLoopError``).
        3. its body is the online step above (``SplitOnlineShapeError``).
        4. the update's operand and the terms read nothing the loop updates, the terms the
           max only through its guard (``SplitOnlineReadError``).
        5. each term has rate 1 in base e (``SplitOnlineRateError``).
        6. new names are identifiers (``SplitOnlineNameError``).
        7. the loop's data has one precision (``SplitOnlinePrecisionError``).

    Forwards/Kills:
        The loop forwards to ``local``; its body statements forward to their copies in
        ``local`` (the running values renamed to the class's own).

    Example:
        ``split_online(p, "j", 2)`` on a row's online max and sum::

            for j in seq(0, n):             ->  m_part: f32[2]; s_part: f32[2]
                m_prev: f32                     for jt in seq(0, 2):
                m_prev = m                          m_local: f32
                m = fmax(m, x[j])                   m_local = -inf
                alpha: f32                          s_local: f32
                alpha = select(m_prev, m,           s_local = 0.0
                    exp(m_prev - m), 1.0)           for jo in seq(0, (n + 1) / 2):
                s = alpha * s                           if 2 * jo + jt < n:
                s += exp(x[j] - select(                     (the step, on m_local, s_local)
                    -inf, m, m, 0.0))               m_part[jt] = m_local
                                                    s_part[jt] = s_local
                                                for jt in seq(0, 2):
                                                    (the step on m_part[jt], s_part[jt])
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise fail(
            SplitOnlineThreadsError, NAME, f"threads {threads!r} is not a positive int", loop
        )
    if tree and threads & (threads - 1):
        msg = f"a tree needs a power of two of classes, not {threads}"
        raise fail(SplitOnlineThreadsError, NAME, msg, loop)
    L = loop.loop()
    if L.mode != "seq" or L.axis is not None:
        raise fail(SplitOnlineLoopError, NAME, f"loop {L.iter.name} is not sequential", loop)
    _check_one_precision(loop)
    o = _match(loop)
    _check_reads(o, loop)
    _check_rates(o, loop)
    if names is None:  # the default names get the check given ones got in the registry
        default = (f"{L.iter.name}t", f"{L.iter.name}o")
        names = NewName(SplitOnlineNameError, at="loop", count=2).resolve(
            proc.ir(), default, loop, NAME
        )
    b = _Builder(o, L, threads, names)
    local, same = b.local()
    shape = TensorType(o.type, (int_const(threads),))
    allocs = tuple(Alloc(p, shape, DRAM) for p in b.parts)
    levels: list[Stmt] = []
    h = threads // 2
    while tree and h >= 1:
        levels.append(b.level(h))
        h //= 2
    fold = b.combine(1 if tree else threads)
    ed = Editor(proc.ir())
    out = ed.replace(
        loop.as_block().block(),
        (*allocs, local, *levels, fold),
        same=[(L, local), *same],
        hint="split by split_online; use .local",
    )
    paths = out.stmt_paths()
    n = len(allocs)
    head = 2 * n  # the locals' allocations and initialisations before the inner loop
    return ed.done(
        SplitOnlineCursors,
        local=NodeLoc(paths[n]),
        inner=NodeLoc((*paths[n], ("body", head))),
        levels=tuple(NodeLoc(paths[n + 1 + k]) for k in range(len(levels))),
        combine=NodeLoc(paths[n + 1 + len(levels)]),
        parts=tuple(NodeLoc(paths[k]) for k in range(n)),
    )
