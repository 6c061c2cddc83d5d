"""Unification of a block of statements with the body of a proc (for ``replace``).

The callee's parameters are the unknowns: control parameters (``size``, ``index``, ``bool``)
bind to control expressions of the caller, tensor parameters to windows of the caller's
buffers, data scalars to scalar reads (a scalar buffer or one element). The callee's loop
variables map to the caller's loop variables one to one (shifted when the two loops start at
different values; the trip counts must agree). Matching is structural (same
statement kinds, operators, constants, extern names); every control equality (loop bounds,
``if`` conditions, each accessed element) is *proven* at the caller's statement, with the
SMT layer when it is not syntactic, so a successful unification means that the callee's body,
with its parameters replaced by the arguments found, is the block itself.

A tensor parameter's window is found at its first access: the caller's dimensions whose
index depends on the matched loops become the window's intervals (in order), the others its
points; when the parameter has more dimensions than that, trailing caller dimensions fill
in. Each later access is checked against the window found.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.context import PathContext, context_of
from cursched.errors import ShapeMismatchError
from cursched.ir.config import ConfigField
from cursched.ir.externs import same_extern
from cursched.ir.memory import Memory, passes_for
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    FnArg,
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
    StrideExpr,
    USub,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.printer import print_expr, print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr, map_expr_children, subst_expr
from cursched.ir.types import INDEX, ControlType, DataType, TensorType


class UnifyError(ShapeMismatchError):
    """The block and the callee's body do not match (the message says where and why)."""


class UnifyMemoryError(UnifyError):
    """A buffer of the block lives in another memory than the parameter it binds to."""


class UnifyUnboundError(UnifyError):
    """A parameter of the callee could not be inferred from the block."""


def _line(s: Stmt) -> str:
    return print_stmt(s).splitlines()[0].strip()


@dataclass(frozen=True)
class Window:
    """A tensor parameter's binding: a window of the caller's buffer ``sym``."""

    sym: Sym
    coords: tuple[WAccess, ...]
    elem: DataType
    decl: DataType | TensorType


@dataclass
class Unifier:
    """State of one unification of ``callee``'s body with a block of ``caller``.

    Attributes:
        caller: the caller's IR.
        callee: the proc whose body is matched.
        ctrl: control parameter -> caller expression.
        windows: tensor parameter -> window of a caller buffer.
        scalars: data scalar parameter -> caller read.
        iters: callee loop variable -> the caller's expression of it (its loop variable,
            shifted when the two loops start at different values).
        inner: caller symbols bound inside the block (loop variables).
    """

    caller: ProcDef
    callee: ProcDef
    ctrl: dict[Sym, Expr] = field(default_factory=dict)
    windows: dict[Sym, Window] = field(default_factory=dict)
    scalars: dict[Sym, Read] = field(default_factory=dict)
    iters: dict[Sym, Expr] = field(default_factory=dict)
    inner: set[Sym] = field(default_factory=set)
    _ctx: dict[Path, PathContext] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.params: dict[Sym, FnArg] = {a.sym: a for a in self.callee.args}

    # -- entry ---------------------------------------------------------------------------
    def block(self, ps: Sequence[Stmt], cs: Sequence[Stmt], paths: Sequence[Path]) -> None:
        """Unify the callee statements ``ps`` with the caller statements ``cs`` at ``paths``."""
        if len(ps) != len(cs):
            raise UnifyError(
                f"the callee's block has {len(ps)} statement(s), the caller's {len(cs)}"
                + (f" (at `{_line(cs[0])}`)" if cs else "")
            )
        for p, c, path in zip(ps, cs, paths, strict=True):
            self.stmt(p, c, path)

    def args(self) -> tuple[Expr, ...]:
        """The call's arguments, in the callee's parameter order.

        Raises:
            UnifyUnboundError: a parameter the body never fixed.
        """
        out: list[Expr] = []
        for a in self.callee.args:
            t = a.type
            if isinstance(t, ControlType):
                if a.sym not in self.ctrl:
                    raise UnifyUnboundError(f"cannot infer the value of parameter {a.sym.name}")
                out.append(self.ctrl[a.sym])
            elif isinstance(t, DataType):
                if a.sym not in self.scalars:
                    raise UnifyUnboundError(f"cannot infer which scalar {a.sym.name} is")
                out.append(self.scalars[a.sym])
            else:
                if a.sym not in self.windows:
                    raise UnifyUnboundError(f"cannot infer which buffer {a.sym.name} is")
                out.append(self._tensor_arg(a, t, self.windows[a.sym]))
        return tuple(out)

    # -- statements ----------------------------------------------------------------------
    def stmt(self, p: Stmt, c: Stmt, path: Path) -> None:
        where = f" at `{_line(c)}`"
        if type(p) is not type(c):
            raise UnifyError(
                f"`{_line(p)}` of {self.callee.name} does not match `{_line(c)}` "
                f"({type(p).__name__} vs {type(c).__name__})"
            )
        match p:
            case For():
                assert isinstance(c, For)
                self.loop(p, c, path, where)
                self.inner.add(c.iter)
                body = [(*path, ("body", k)) for k in range(len(c.body))]
                self.block(p.body, c.body, body)
            case If():
                assert isinstance(c, If)
                self.ctrl_expr(p.cond, c.cond, path, "the condition" + where)
                self.block(p.body, c.body, [(*path, ("body", k)) for k in range(len(c.body))])
                orelse = [(*path, ("orelse", k)) for k in range(len(c.orelse))]
                self.block(p.orelse, c.orelse, orelse)
            case Assign() | Reduce():
                assert isinstance(c, Assign | Reduce)
                if isinstance(p.sym, ConfigField):
                    # a configuration field is global: the caller writes that very field
                    if c.sym is not p.sym:
                        raise UnifyError(f"`{_line(p)}` writes {p.sym.name}, not {c.sym.name}")
                else:
                    self.access(p.sym, p.idx, c.sym, c.idx, path, where)
                self.data_expr(p.rhs, c.rhs, path, where)
            case Pass():
                pass
            case Alloc() | WindowStmt() | Scope() | Call():
                raise UnifyError(
                    f"`{_line(p)}`: {type(p).__name__} statements in the callee's body are not "
                    "supported by unification"
                )
            case _:
                raise UnifyError(f"cannot unify `{_line(p)}`")

    def loop(self, p: For, c: For, path: Path, where: str) -> None:
        """Match two loops: same trip count; the callee's variable runs alongside the caller's
        (``i = j - lo_c + lo_p``), so ``for j in seq(2, 6)`` matches ``for i in seq(0, 4)``."""
        lo = self._known(p.lo)
        if not self._unbound(lo) and self.equal(lo, c.lo, path):
            self.ctrl_expr(p.hi, c.hi, path, "the loop's upper bound" + where)
            self.iters[p.iter] = Read(c.iter, (), INDEX)
            return
        trip = BinOp("-", p.hi, p.lo, INDEX)
        lo_a, hi_a = af.to_aff(c.lo), af.to_aff(c.hi)
        if self._unbound(lo) or lo_a is None or hi_a is None:
            raise UnifyError(f"the loop's lower bound {print_expr(p.lo)} cannot be matched{where}")
        have = af.simplify_expr(af.from_aff(hi_a - lo_a), self.ctx(path))
        self.ctrl_expr(trip, have, path, "the loop's trip count" + where)
        shift = af.Aff.var(c.iter) - lo_a + _aff(self._known(p.lo))
        self.iters[p.iter] = af.simplify_expr(af.from_aff(shift))

    # -- control expressions -----------------------------------------------------------------
    def ctx(self, path: Path) -> PathContext:
        if path not in self._ctx:
            self._ctx[path] = context_of(self.caller, path)
        return self._ctx[path]

    def _known(self, e: Expr) -> Expr:
        env: dict[Sym, Expr | Sym] = {**self.ctrl, **self.iters}
        return subst_expr(e, env)

    def _unbound(self, e: Expr) -> list[Sym]:
        return [
            s
            for s in free_syms_expr(e)
            if s in self.params and isinstance(self.params[s].type, ControlType)
            if s not in self.ctrl
        ]

    def _outer_only(self, e: Expr, what: str) -> None:
        inside = free_syms_expr(e) & self.inner
        if inside:
            names = ", ".join(sorted(s.name for s in inside))
            raise UnifyError(f"{what} depends on {names}, a loop variable inside the block")

    def ctrl_expr(self, p: Expr, c: Expr, path: Path, what: str) -> None:
        """Unify two control expressions: bind the one unknown parameter of ``p`` or prove
        ``p == c`` at ``path``."""
        pk = self._known(p)
        unknown = self._unbound(pk)
        pa, ca = af.to_aff(pk), af.to_aff(c)
        if unknown and isinstance(pk, Read) and not pk.idx:
            # the parameter itself (``N``, ``flag``): it stands for the caller's expression
            self._outer_only(c, f"parameter {pk.sym.name} = {print_expr(c)}")
            self.ctrl[pk.sym] = c
            return
        if unknown:
            x = unknown[0]
            k = pa.coeff(x) if pa is not None else 0
            rest = None if pa is None else pa - af.Aff.var(x, self.params[x].type).scale(k)
            if len(unknown) > 1 or ca is None or rest is None or abs(k) != 1 or rest.syms() & {x}:
                raise UnifyError(
                    f"{what}: cannot solve {print_expr(p)} = {print_expr(c)} for "
                    + ", ".join(s.name for s in unknown)
                )
            value = af.simplify_expr(af.from_aff((ca - rest).scale(k)), self.ctx(path))
            self._outer_only(value, f"parameter {x.name} = {print_expr(value)}")
            self.ctrl[x] = value
            return
        if not self.equal(pk, c, path):
            raise UnifyError(
                f"{what}: {print_expr(p)} (= {print_expr(af.simplify_expr(pk))}) is not "
                f"provably equal to {print_expr(c)}"
            )

    def equal(self, a: Expr, b: Expr, path: Path) -> bool:
        """``a == b`` wherever ``path`` is reached (control expressions)."""
        if a == b:
            return True
        ia, ib = af.to_aff(a), af.to_aff(b)
        ctx = self.ctx(path)
        if ia is not None and ib is not None:
            d = ia - ib
            if d.is_const():
                return d.const == 0
            return smt.valid(af.Eq(d), ctx.props()).ok
        pa, pb = af.to_prop(a), af.to_prop(b)
        if pa is not None and pb is not None:
            both = af.And((af.Or((af.Not(pa), pb)), af.Or((af.Not(pb), pa))))
            return smt.valid(both, ctx.props()).ok
        return False

    # -- data expressions ------------------------------------------------------------------
    def data_expr(self, p: Expr, c: Expr, path: Path, where: str) -> None:
        def no() -> UnifyError:
            return UnifyError(f"{print_expr(p)} does not match {print_expr(c)}{where}")

        if isinstance(p.type, ControlType):
            if not isinstance(c.type, ControlType):
                raise no()
            self.ctrl_expr(p, c, path, f"{print_expr(p)}{where}")
            return
        match p:
            case Const():
                if not (isinstance(c, Const) and c.value == p.value and c.type == p.type):
                    raise no()
            case Read() if p.sym in self.params and isinstance(self.params[p.sym].type, TensorType):
                if not isinstance(c, Read) or not c.idx:
                    raise no()
                self.access(p.sym, p.idx, c.sym, c.idx, path, where)
            case Read() if p.sym in self.params:
                if not isinstance(c, Read) or c.type != p.type:
                    raise no()
                self.scalar(p.sym, c, path, where)
            case Read() if isinstance(p.sym, ConfigField):
                if not (isinstance(c, Read) and c.sym is p.sym):
                    raise no()
            case Read():
                raise UnifyError(f"{print_expr(p)}: the callee reads a buffer of its own{where}")
            case BinOp():
                if not (isinstance(c, BinOp) and c.op == p.op and c.type == p.type):
                    raise no()
                self.data_expr(p.lhs, c.lhs, path, where)
                self.data_expr(p.rhs, c.rhs, path, where)
            case USub():
                if not (isinstance(c, USub) and c.type == p.type):
                    raise no()
                self.data_expr(p.arg, c.arg, path, where)
            case Extern():
                ok = (
                    isinstance(c, Extern)
                    and same_extern(c.name, p.name)
                    and len(c.args) == len(p.args)
                )
                if not ok or c.type != p.type:
                    raise no()
                assert isinstance(c, Extern)
                for x, y in zip(p.args, c.args, strict=True):
                    self.data_expr(x, y, path, where)
            case WindowExpr() | StrideExpr():
                raise no()

    def scalar(self, param: Sym, c: Read, path: Path, where: str) -> None:
        if c.idx:
            for i in c.idx:
                self._outer_only(i, f"{print_expr(c)}{where}")
        old = self.scalars.get(param)
        if old is None:
            self._check_memory(param, c.sym, path, where)
            self.scalars[param] = c
            return
        same = old.sym is c.sym and all(
            self.equal(x, y, path) for x, y in zip(old.idx, c.idx, strict=True)
        )
        if not same:
            raise UnifyError(
                f"{param.name} stands for {print_expr(old)} and for {print_expr(c)}{where}"
            )

    # -- buffers -----------------------------------------------------------------------------
    def decl(self, sym: Sym, path: Path) -> DataType | TensorType:
        """The declared type of the caller's buffer, window or scalar ``sym`` at ``path``."""
        ctx = self.ctx(path)
        if sym in ctx.windows:
            return ctx.windows[sym].rhs.type
        if sym in ctx.allocs:
            return ctx.allocs[sym].type
        for arg in self.caller.args:
            if arg.sym is sym and isinstance(arg.type, DataType | TensorType):
                return arg.type
        raise UnifyError(f"{sym.name} is not a buffer visible at the block")

    def memory(self, sym: Sym, path: Path) -> type[Memory] | None:
        """The memory of the caller's buffer ``sym`` (a window's is its buffer's)."""
        return self.ctx(path).memory_of(sym)

    def _check_memory(self, param: Sym, sym: Sym, path: Path, where: str) -> None:
        want = self.params[param].mem
        have = self.memory(sym, path)
        if not passes_for(have, want):
            hn = have.name() if have is not None else "?"
            wn = want.name() if want is not None else "?"
            raise UnifyMemoryError(
                f"{sym.name} lives in {hn}, but parameter {param.name} of {self.callee.name} "
                f"requires {wn}{where}"
            )

    def access(
        self,
        param: Sym,
        pidx: tuple[Expr, ...],
        sym: Sym,
        cidx: tuple[Expr, ...],
        path: Path,
        where: str,
    ) -> None:
        """Unify the callee's access ``param[pidx]`` with the caller's ``sym[cidx]``."""
        if param not in self.params:
            raise UnifyError(f"the callee writes {param.name}, a buffer of its own{where}")
        pt = self.params[param].type
        if isinstance(pt, DataType):
            if pidx:
                raise UnifyError(f"{param.name} is a scalar{where}")
            have = self.decl(sym, path)
            if (have.elem if isinstance(have, TensorType) else have) != pt:
                raise UnifyError(f"{sym.name} does not hold {pt}{where}")
            self.scalar(param, Read(sym, cidx, pt), path, where)
            return
        if not isinstance(pt, TensorType):
            raise UnifyError(f"{param.name} is not a buffer{where}")
        decl = self.decl(sym, path)
        elem = decl.elem if isinstance(decl, TensorType) else decl
        if elem != pt.elem:
            raise UnifyError(
                f"{sym.name} holds {elem}, parameter {param.name} of {self.callee.name} "
                f"holds {pt.elem}{where}"
            )
        e = [self._known(i) for i in pidx]
        for i in e:
            if self._unbound(i):
                raise UnifyError(f"cannot infer the index {print_expr(i)} of {param.name}{where}")
        win = self.windows.get(param)
        if win is None:
            self._check_memory(param, sym, path, where)
            win = self._find_window(param, pt, e, sym, cidx, path, where)
            self.windows[param] = win
        if win.sym is not sym:
            raise UnifyError(
                f"{param.name} stands for a window of {win.sym.name} and of {sym.name}{where}"
            )
        got = _compose(win.coords, e)
        for k, (g, f) in enumerate(zip(got, cidx, strict=True)):
            if not self.equal(g, f, path):
                raise UnifyError(
                    f"{param.name}[{', '.join(print_expr(i) for i in pidx)}] is "
                    f"{sym.name}[...{print_expr(g)}...] in dimension {k}, not "
                    f"{print_expr(f)}{where}"
                )

    def _loopy(self, e: Expr) -> bool:
        return bool(free_syms_expr(e) & self.inner)

    def _find_window(
        self,
        param: Sym,
        pt: TensorType,
        e: Sequence[Expr],
        sym: Sym,
        cidx: tuple[Expr, ...],
        path: Path,
        where: str,
    ) -> Window:
        r, k = len(e), len(cidx)
        loopy_c = [self._loopy(f) for f in cidx]
        loopy_p = [self._loopy(i) for i in e]
        # Prefer the rightmost choice: trailing dimensions are the contiguous ones.
        for dims in reversed(list(itertools.combinations(range(k), r))):
            if any(loopy_c[d] and d not in dims for d in range(k)):
                continue
            if any(loopy_p[j] != loopy_c[d] and loopy_p[j] for j, d in enumerate(dims)):
                continue
            coords: list[WAccess] = []
            ok = True
            for d in range(k):
                if d not in dims:
                    coords.append(Point(cidx[d]))
                    continue
                j = dims.index(d)
                lo_a, e_a = af.to_aff(cidx[d]), af.to_aff(e[j])
                if lo_a is None or e_a is None:
                    ok = False
                    break
                lo = af.simplify_expr(af.from_aff(lo_a - e_a), self.ctx(path))
                if self._loopy(lo):
                    ok = False
                    break
                size = self._known(pt.shape[j])
                if self._unbound(size):
                    raise UnifyUnboundError(
                        f"the size {print_expr(pt.shape[j])} of {param.name} is not known when "
                        f"{param.name} is first accessed{where}"
                    )
                sa = af.to_aff(size)
                if sa is None:
                    raise UnifyError(f"the size {print_expr(size)} of {param.name} is not affine")
                hi = af.simplify_expr(af.from_aff(lo_a - e_a + sa))
                coords.append(Interval(lo, hi))
            if ok:
                for c in coords:
                    if isinstance(c, Point):
                        self._outer_only(c.pt, f"the window of {param.name}{where}")
                return Window(sym, tuple(coords), pt.elem, self.decl(sym, path))
        raise UnifyError(
            f"cannot find a window of {sym.name} for {param.name} "
            f"({param.name} has {r} dimension(s), {sym.name} {k}){where}"
        )

    def _tensor_arg(self, a: FnArg, t: TensorType, w: Window) -> Expr:
        shape = tuple(
            af.simplify_expr(af.from_aff(_aff(c.hi) - _aff(c.lo)))
            for c in w.coords
            if isinstance(c, Interval)
        )
        if t.window:
            return WindowExpr(w.sym, w.coords, TensorType(w.elem, shape, window=True))
        # A contiguous parameter takes only a whole contiguous buffer.
        d = w.decl
        whole = (
            isinstance(d, TensorType)
            and not d.window
            and all(
                isinstance(c, Interval) and _aff(c.lo) == af.Aff() and self.equal(c.hi, n, ())
                for c, n in zip(w.coords, d.shape, strict=True)
            )
        )
        if not whole:
            raise UnifyError(
                f"parameter {a.sym.name} of {self.callee.name} is a contiguous tensor; "
                f"it can only stand for a whole buffer, not a window of {w.sym.name}"
            )
        return Read(w.sym, (), d)


def _aff(e: Expr) -> af.Aff:
    a = af.to_aff(e)
    return a if a is not None else af.Aff()


def _compose(coords: Sequence[WAccess], idx: Sequence[Expr]) -> list[Expr]:
    """The caller's index of element ``idx`` of the window ``coords``."""
    out: list[Expr] = []
    k = 0
    for c in coords:
        if isinstance(c, Point):
            out.append(c.pt)
        else:
            a, b = af.to_aff(c.lo), af.to_aff(idx[k])
            out.append(
                af.simplify_expr(af.from_aff(a + b))
                if a is not None and b is not None
                else BinOp("+", c.lo, idx[k], idx[k].type)
            )
            k += 1
    return out


def fresh_expr(e: Expr) -> Expr:
    """A copy of ``e`` sharing no node with it (so that forwarding sees no survivor)."""
    return dataclasses.replace(map_expr_children(e, fresh_expr))


__all__ = [
    "Unifier",
    "UnifyError",
    "UnifyMemoryError",
    "UnifyUnboundError",
    "Window",
    "fresh_expr",
]
