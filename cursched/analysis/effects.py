"""Effects: the buffer regions a statement or block reads, writes and reduces into.

An ``Access`` is one textual access seen from the block being analysed: a buffer, its index
expressions, the loops inside the block that enclose it (the region is the set of indices as
those loop variables range) and the ``if`` conditions that guard it. Accesses through windows
are expressed on the underlying buffer (window offsets composed); accesses inside a called proc
are mapped through the call's arguments (control parameters substituted, tensor parameters
replaced by the argument buffer or window). Buffers allocated inside the block (or inside a
callee) are private to it and reported with ``local=True``.

``x = x + e`` (same location, ``e`` not reading ``x``) is reported as a reduction: it commutes
with other reductions exactly like ``x += e``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias, assert_never

from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    For,
    If,
    Interval,
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import subst_expr, walk_expr
from cursched.ir.types import INT, ControlType, DataType, TensorType

Kind: TypeAlias = Literal["read", "write", "reduce"]


@dataclass(frozen=True, slots=True)
class Access:
    """One access of a buffer, quantified over the loops of the block that enclose it.

    Attributes:
        buf: the buffer (an argument or an allocation; never a window).
        idx: one index expression per dimension of ``buf`` (empty for a scalar).
        kind: ``read``, ``write`` (``=``) or ``reduce`` (``+=``).
        loops: loops inside the analysed block enclosing the access, outermost first.
        conds: ``if`` conditions inside the block guarding the access, with the branch.
        stmt: the top-level statement of the analysed block the access belongs to.
        local: the buffer is allocated inside the analysed block (private to it).
        site: the statement holding the access (inside ``stmt``; the call for an access
            made by a callee).
    """

    buf: Sym
    idx: tuple[Expr, ...]
    kind: Kind
    loops: tuple[For, ...]
    conds: tuple[tuple[Expr, bool], ...]
    stmt: Stmt
    local: bool = False
    site: Stmt | None = None


@dataclass(frozen=True, slots=True)
class _View:
    """How a name maps to a buffer: ``base[..., off_d + i_d, ...]`` with points fixed."""

    base: Sym
    coords: tuple[WAccess, ...]  # over base's dimensions; Interval.lo is the offset


Views: TypeAlias = Mapping[Sym, _View]


def _compose(views: Views, sym: Sym, idx: tuple[Expr, ...]) -> tuple[Sym, tuple[Expr, ...]]:
    """The buffer and indices that ``sym[idx]`` touches once windows are looked through."""
    view = views.get(sym)
    if view is None:
        return sym, idx
    out: list[Expr] = []
    it = iter(idx)
    for w in view.coords:
        if isinstance(w, Point):
            out.append(w.pt)
        else:
            i = next(it, None)
            out.append(w.lo if i is None else _plus(w.lo, i))
    return view.base, tuple(out)


def _plus(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and a.value == 0:
        return b
    return BinOp("+", a, b, b.type if isinstance(b.type, ControlType) else INT)


def _view_of(views: Views, w: WindowExpr) -> _View:
    """The view a window expression denotes, composed with the view of its buffer."""
    inner = views.get(w.sym)
    if inner is None:
        return _View(w.sym, w.idx)
    out: list[WAccess] = []
    it = iter(w.idx)
    for c in inner.coords:
        if isinstance(c, Point):
            out.append(c)
            continue
        mine = next(it)
        if isinstance(mine, Point):
            out.append(Point(_plus(c.lo, mine.pt)))
        else:
            out.append(Interval(_plus(c.lo, mine.lo), _plus(c.lo, mine.hi)))
    return _View(inner.base, tuple(out))


def _is_data(e: Read) -> bool:
    return isinstance(e.type, DataType | TensorType)


def _reads(e: Expr) -> Iterator[Read]:
    """Data reads of ``e`` (index expressions are control and read no buffer)."""
    for x in walk_expr(e):
        if isinstance(x, Read) and _is_data(x):
            yield x


def _as_reduction(s: Assign) -> Expr | None:
    """For ``x[i] = x[i] + e`` (``e`` not reading ``x``), the increment ``e``."""
    rhs = s.rhs
    if not isinstance(rhs, BinOp) or rhs.op != "+":
        return None
    for acc, inc in ((rhs.lhs, rhs.rhs), (rhs.rhs, rhs.lhs)):
        if (
            isinstance(acc, Read)
            and acc.sym is s.sym
            and acc.idx == s.idx
            and all(r.sym is not s.sym for r in _reads(inc))
        ):
            return inc
    return None


class _Collector:
    """Walks a block, collecting accesses relative to it."""

    def __init__(self, views: Views, top_locals: frozenset[Sym] = frozenset()) -> None:
        self.out: list[Access] = []
        self.views: dict[Sym, _View] = dict(views)
        self.locals: set[Sym] = set(top_locals)

    def add(self, sym: Sym, idx: tuple[Expr, ...], kind: Kind, env: _Env, site: Stmt) -> None:
        buf, full = _compose(self.views, sym, idx)
        local = buf in self.locals
        self.out.append(Access(buf, full, kind, env.loops, env.conds, env.top, local, site))

    def expr(self, e: Expr, env: _Env, site: Stmt) -> None:
        for r in _reads(e):
            if r.idx or not isinstance(r.type, TensorType):
                self.add(r.sym, r.idx, "read", env, site)

    def block(self, body: tuple[Stmt, ...], env: _Env, top: bool = False) -> None:
        for s in body:
            self.stmt(s, _Env(env.loops, env.conds, s) if top else env)

    def stmt(self, s: Stmt, env: _Env) -> None:
        match s:
            case Assign():
                inc = _as_reduction(s)
                self.expr(s.rhs if inc is None else inc, env, s)
                self.add(s.sym, s.idx, "write" if inc is None else "reduce", env, s)
            case Reduce():
                self.expr(s.rhs, env, s)
                self.add(s.sym, s.idx, "reduce", env, s)
            case Pass():
                pass
            case If():
                self.block(s.body, env.cond(s.cond, True))
                self.block(s.orelse, env.cond(s.cond, False))
            case For():
                self.block(s.body, env.loop(s))
            case Alloc():
                self.locals.add(s.sym)
            case WindowStmt():
                self.views[s.sym] = _view_of(self.views, s.rhs)
            case Scope():
                self.block(s.body, env)
            case Call():
                self.call(s, env)
            case _:
                assert_never(s)

    def call(self, s: Call, env: _Env) -> None:
        callee = s.proc
        ctrl: dict[Sym, Expr | Sym] = {}
        callee_views: dict[Sym, _View] = {}
        for param, arg in zip(callee.args, s.args, strict=True):
            match arg:
                case WindowExpr():
                    callee_views[param.sym] = _view_of(self.views, arg)
                case Read() if isinstance(param.type, TensorType | DataType):
                    base, idx = _compose(self.views, arg.sym, arg.idx)
                    coords: tuple[WAccess, ...] = tuple(Point(i) for i in idx)
                    if isinstance(param.type, TensorType) and not arg.idx:
                        view = self.views.get(arg.sym)
                        coords = view.coords if view is not None else _full(param.type)
                    callee_views[param.sym] = _View(base, coords)
                case _:
                    ctrl[param.sym] = arg
        inner = _Collector(callee_views)
        inner.block(callee.body, _Env((), (), s))
        for a in inner.out:
            if a.local:
                continue  # the callee's own buffers are private to each call
            self.out.append(
                Access(
                    a.buf,
                    tuple(subst_expr(i, ctrl) for i in a.idx),
                    a.kind,
                    (*env.loops, *(_subst_loop(lp, ctrl) for lp in a.loops)),
                    (*env.conds, *((subst_expr(c, ctrl), t) for c, t in a.conds)),
                    env.top,
                    local=a.buf in self.locals,
                    site=s,  # the call: the callee's own statement is not in this proc
                )
            )


def _full(t: TensorType) -> tuple[WAccess, ...]:
    return tuple(Interval(Const(0, INT), d) for d in t.shape)


def _subst_loop(loop: For, env: Mapping[Sym, Expr | Sym]) -> For:
    return loop.replace(lo=subst_expr(loop.lo, env), hi=subst_expr(loop.hi, env))


@dataclass(frozen=True, slots=True)
class _Env:
    loops: tuple[For, ...]
    conds: tuple[tuple[Expr, bool], ...]
    top: Stmt

    def loop(self, s: For) -> _Env:
        return _Env((*self.loops, s), self.conds, self.top)

    def cond(self, c: Expr, taken: bool) -> _Env:
        return _Env(self.loops, (*self.conds, (c, taken)), self.top)


def windows_view(windows: Mapping[Sym, WindowStmt]) -> dict[Sym, _View]:
    """Views of the window statements visible at a position (in definition order)."""
    views: dict[Sym, _View] = {}
    for sym, w in windows.items():
        views[sym] = _view_of(views, w.rhs)
    return views


def block_effects(
    body: tuple[Stmt, ...], windows: Mapping[Sym, WindowStmt] | None = None
) -> list[Access]:
    """Every access of ``body``, each tagged with the top-level statement it belongs to.

    Args:
        body: consecutive statements.
        windows: windows visible before ``body`` (from its ``PathContext``).
    """
    c = _Collector(windows_view(windows or {}))
    c.block(body, _Env((), (), body[0] if body else Pass()), top=True)
    return c.out


def stmt_effects(s: Stmt, windows: Mapping[Sym, WindowStmt] | None = None) -> list[Access]:
    """Every access of one statement (see ``block_effects``)."""
    return block_effects((s,), windows)


def proc_effects(p: ProcDef) -> list[Access]:
    """The accesses of a whole proc's body."""
    return block_effects(p.body)


def writes(accesses: list[Access]) -> set[Sym]:
    """Buffers written or reduced into."""
    return {a.buf for a in accesses if a.kind != "read"}


def reads(accesses: list[Access]) -> set[Sym]:
    """Buffers read."""
    return {a.buf for a in accesses if a.kind == "read"}
