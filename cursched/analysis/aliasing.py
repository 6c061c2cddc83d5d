"""Aliasing of call arguments: which pointer parameters of a call may overlap, and whether the
callee tolerates it (docs/semantics.md, "Aliasing").

A call passes tensors, windows and data scalars by reference, so two of its arguments may
name overlapping memory (``acc(n, t[1:n + 1], t[0:n])``). The language gives such a call the
meaning of running the callee's body in place, in its own order (the interpreter's meaning).
C code gets that meaning only if the compiler is not told the pointers are disjoint
(``restrict``) and the callee runs its accesses in the body's order. So, for each call and each
pair of its pointer arguments of which the callee writes one:

* the two are **proved disjoint** (different objects, or index ranges of one buffer that
  cannot meet under what holds at the call: asserts, loop ranges, if conditions), or
* the callee is **sequential**: no ``par`` loop and no instruction anywhere in it or in what
  it calls, so its C function does its accesses in the body's order; the pair is then
  reported as an ``Overlap`` and the C backend drops ``restrict`` on both parameters, or
* the two are **one window** (provably the same offsets) and the callee is **pointwise** in
  them (``_Facts.pointwise``: each element computed from its own old values, as in an
  in-place ``add(acc, acc, y)``), which no access order can tell apart; or
* the call is refused (``CallAliasError`` at definition, ``CodegenAliasError`` when compiling,
  ``ReplaceAliasError`` in ``replace``): an instruction's template or an OpenMP loop may do
  the accesses in another order (load all, then store), which overlap makes observable.

Distinct index tuples of a buffer are distinct elements: tensors are row-major and
contiguous, and the compiled wrapper refuses a written window argument whose strides make it
overlap itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import assert_never

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.context import PathContext
from cursched.analysis.effects import _compose, _View, _view_of, windows_view
from cursched.errors import AliasError, CodegenError, TypeCheckError
from cursched.ir.nodes import (
    Alloc,
    Assign,
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
    WindowExpr,
    WindowStmt,
)
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_expr, walk_stmts, written_args
from cursched.ir.types import INT, DataType, TensorType


class CallAliasError(AliasError, TypeCheckError):
    """A call of a non-sequential proc (an instruction, or one with a ``par`` loop) passes
    two arguments that may overlap while it writes one of them (found at definition)."""


class CodegenAliasError(AliasError, CodegenError):
    """The same refusal, found when generating C (a primitive made such a call)."""


@dataclass(frozen=True, slots=True)
class Overlap:
    """Two pointer arguments of a call that may overlap while the callee writes one.

    Attributes:
        call: the call statement.
        first: position of the first parameter in the callee.
        second: position of the second parameter (``first < second``).
        text: ``dst = t[1:n + 1] and src = t[0:n]`` (both arguments, for messages).
        model: values of sizes and loop variables under which they overlap (None: not
            decided by SMT, e.g. two parameters of the caller that may alias).
        pointwise: the two are the same window and the callee touches them pointwise (see
            ``_Facts.pointwise``): harmless whatever the callee's access order.
    """

    call: Call
    first: int
    second: int
    text: str
    model: smt.Model | None
    pointwise: bool = False


def _arg_text(call: Call, k: int) -> str:
    return f"{call.proc.args[k].sym.name} = {print_expr(call.args[k])}"


class _Facts:
    """Memoised per-proc facts: which parameters a proc writes, whether it is sequential."""

    def __init__(self) -> None:
        self._written: dict[int, frozenset[int]] = {}
        self._why: dict[int, str | None] = {}
        self._pointwise: dict[tuple[int, int, int], bool] = {}

    def pointwise(self, p: ProcDef, i: int, j: int) -> bool:
        """Whether ``p``, given one window for parameters ``i`` and ``j``, computes each of
        its elements from that element's old values only.

        The body must be a loop nest around one assignment or reduction, every access to the
        two parameters must use the same index tuple, and that tuple must be the loop
        variables (each once), so distinct iterations touch distinct elements and each
        iteration reads its element before writing it. Then any order of the iterations, and
        any vector template that reads its operands before storing its result
        (``{out} = _mm256_add_ps({x}, {y})`` for ``out[i] = x[i] + y[i]``), gives the body's
        result: an in-place ``add(acc, acc, y)`` is fine.
        """
        key = (id(p), i, j)
        if key not in self._pointwise:
            self._pointwise[key] = _pointwise(p, i, j)
        return self._pointwise[key]

    def written(self, p: ProcDef) -> frozenset[int]:
        if id(p) not in self._written:
            self._written[id(p)] = written_args(p, self.written)
        return self._written[id(p)]

    def not_sequential(self, p: ProcDef) -> str | None:
        """Why ``p`` may do its accesses out of its body's order (None: it does not)."""
        key = id(p)
        if key in self._why:
            return self._why[key]
        why: str | None = None
        if p.instr is not None:
            why = f"{p.name} is an instruction (its C template may access in any order)"
        else:
            for s in walk_stmts(p.body):
                if isinstance(s, For) and s.mode == "par":
                    why = f"{p.name} has a par loop (over {s.iter.name})"
                    break
                if isinstance(s, Call):
                    inner = self.not_sequential(s.proc)
                    if inner is not None:
                        why = f"{p.name} calls {s.proc.name}: {inner}"
                        break
        self._why[key] = why
        return why


def sequential_or_why(p: ProcDef) -> str | None:
    """Why a call of ``p`` may do its accesses out of its body's order (None: it does not)."""
    return _Facts().not_sequential(p)


def _pointwise(p: ProcDef, i: int, j: int) -> bool:
    a, b = p.args[i], p.args[j]
    if not (isinstance(a.type, TensorType) and isinstance(b.type, TensorType)):
        return False
    if a.type.shape != b.type.shape:
        return False  # one window seen through two shapes: index k is not one element
    body, loops = p.body, []
    while len(body) == 1 and isinstance(body[0], For):
        loops.append(body[0].iter)
        body = body[0].body
    if len(body) != 1 or not isinstance(body[0], Assign | Reduce):
        return False
    s = body[0]
    mine = {a.sym, b.sym}
    tuples = [s.idx] if s.sym in mine else []
    tuples += [r.idx for r in walk_expr(s.rhs) if isinstance(r, Read) and r.sym in mine]
    if s.sym not in mine:
        return False  # both only read: nothing is written through them here
    vars_: list[Sym] = []
    for e in tuples[0]:
        if not (isinstance(e, Read) and not e.idx and e.sym in loops):
            return False
        vars_.append(e.sym)
    if sorted(v.id for v in vars_) != sorted(v.id for v in loops) or len(set(vars_)) != len(vars_):
        return False
    return all(t == tuples[0] for t in tuples)


def _same_window(v1: _View, v2: _View, ctx: PathContext) -> bool:
    """Whether two views of one buffer are provably the same window (same points, same
    interval offsets; the callee's parameter shapes fix the lengths)."""
    if len(v1.coords) != len(v2.coords):
        return False
    props = ctx.props()
    for c1, c2 in zip(v1.coords, v2.coords, strict=True):
        if isinstance(c1, Point) and isinstance(c2, Point):
            e1, e2 = c1.pt, c2.pt
        elif isinstance(c1, Interval) and isinstance(c2, Interval):
            e1, e2 = c1.lo, c2.lo
        else:
            return False
        x1, x2 = af.to_aff(e1), af.to_aff(e2)
        if x1 is None or x2 is None or not smt.valid(af.Eq(x1 - x2), props).ok:
            return False
    return True


def _pointer_params(p: ProcDef) -> list[int]:
    return [k for k, a in enumerate(p.args) if isinstance(a.type, TensorType | DataType)]


def _view(arg: Expr, views: dict[Sym, _View], ctx: PathContext) -> _View | None:
    """The region of a buffer that a pointer argument denotes (None: not understood)."""
    match arg:
        case WindowExpr():
            return _view_of(views, arg)
        case Read() if not arg.idx:
            if arg.sym in views:
                return views[arg.sym]
            shape = ctx.shape(arg.sym)
            if shape is None:
                return _View(arg.sym, ())
            return _View(arg.sym, tuple(Interval(Const(0, INT), d) for d in shape))
        case Read():
            base, idx = _compose(views, arg.sym, arg.idx)
            return _View(base, tuple(Point(i) for i in idx))
        case _:
            return None


def _range(c: Interval | Point) -> tuple[af.Aff, af.Aff] | None:
    """``[lo, hi)`` of one coordinate of a view."""
    match c:
        case Point():
            pt = af.to_aff(c.pt)
            return None if pt is None else (pt, pt + 1)
        case Interval():
            lo, hi = af.to_aff(c.lo), af.to_aff(c.hi)
            return None if lo is None or hi is None else (lo, hi)
        case _:
            assert_never(c)


def _meet(v1: _View, v2: _View, ctx: PathContext) -> tuple[bool, smt.Model | None]:
    """Whether two views of one buffer may share an element here, with a witness."""
    if len(v1.coords) != len(v2.coords):
        return True, None
    props = ctx.props()
    for c1, c2 in zip(v1.coords, v2.coords, strict=True):
        r1, r2 = _range(c1), _range(c2)
        if r1 is None or r2 is None:
            continue  # a non-affine coordinate: this dimension may meet
        (lo1, hi1), (lo2, hi2) = r1, r2
        props += [af.lt(lo1, hi1), af.lt(lo2, hi2), af.lt(lo1, hi2), af.lt(lo2, hi1)]
    model = smt.satisfiable(props)
    return model is not None, model


def call_overlaps(
    call: Call,
    ctx: PathContext,
    separate: Callable[[Sym], bool],
    facts: _Facts | None = None,
) -> list[Overlap]:
    """The pairs of pointer arguments of ``call`` that may overlap while the callee writes one.

    Args:
        call: a call statement.
        ctx: what holds at the call (its windows and allocations included).
        separate: whether a parameter of the caller is known not to overlap any other
            parameter when either is written (allocations always are).
        facts: memoised proc facts to share between calls.

    Returns:
        One ``Overlap`` per pair that is not proved disjoint.
    """
    facts = facts or _Facts()
    callee = call.proc
    written = facts.written(callee)
    views = windows_view(ctx.windows)
    ptrs = _pointer_params(callee)
    regions = {k: _view(call.args[k], views, ctx) for k in ptrs}
    out: list[Overlap] = []
    for x, i in enumerate(ptrs):
        for j in ptrs[x + 1 :]:
            if i not in written and j not in written:
                continue  # two reads may overlap freely
            vi, vj = regions[i], regions[j]
            model: smt.Model | None = None
            if vi is not None and vj is not None:
                if vi.base is not vj.base:
                    apart = any(b in ctx.allocs or separate(b) for b in (vi.base, vj.base))
                    if apart:
                        continue
                else:
                    may, model = _meet(vi, vj, ctx)
                    if not may:
                        continue
                    if facts.pointwise(callee, i, j) and _same_window(vi, vj, ctx):
                        text = f"{_arg_text(call, i)} and {_arg_text(call, j)}"
                        out.append(Overlap(call, i, j, text, model, pointwise=True))
                        continue
            text = f"{_arg_text(call, i)} and {_arg_text(call, j)}"
            out.append(Overlap(call, i, j, text, model))
    return out


def walk_calls(p: ProcDef) -> Iterator[tuple[Call, PathContext]]:
    """Every call of ``p``'s body with the context that holds at it."""

    def block(body: tuple[Stmt, ...], ctx: PathContext) -> Iterator[tuple[Call, PathContext]]:
        for s in body:
            yield from stmt(s, ctx)
            ctx = ctx.declare(s)

    def stmt(s: Stmt, ctx: PathContext) -> Iterator[tuple[Call, PathContext]]:
        match s:
            case Call():
                yield s, ctx
            case For():
                yield from block(s.body, ctx.enter_loop(s))
            case If():
                yield from block(s.body, ctx.enter_if(s.cond, True))
                yield from block(s.orelse, ctx.enter_if(s.cond, False))
            case Scope():
                yield from block(s.body, ctx)
            case Assign() | Reduce() | Pass() | Alloc() | WindowStmt():
                pass
            case _:
                assert_never(s)

    if p.instr is None:
        yield from block(p.body, PathContext(p))


def refusal(o: Overlap, why: str) -> str:
    """The message of a refused overlapping call."""
    callee = o.call.proc
    shown = f" (e.g. {smt.format_model(o.model)})" if o.model else ""
    return (
        f"call of {callee.name}: arguments {o.text} may overlap{shown} while {callee.name}"
        f" writes one of them; {why}, so the overlap could change the result (pass disjoint"
        " windows, or call a sequential proc)"
    )


def refused_overlaps(
    p: ProcDef, separate: Callable[[Sym], bool], facts: _Facts | None = None
) -> Iterator[tuple[Overlap, str | None]]:
    """Every possible overlap at a call of ``p``, with why it is refused (None: tolerated)."""
    facts = facts or _Facts()
    for call, ctx in walk_calls(p):
        for o in call_overlaps(call, ctx, separate, facts):
            yield o, None if o.pointwise else facts.not_sequential(call.proc)


def check_call_aliasing(p: ProcDef) -> ProcDef:
    """Refuse, at definition, a call that passes overlapping arguments to a non-sequential
    callee while it writes one (``p``'s own parameters are taken as not overlapping: the
    compiled wrapper refuses overlapping arrays, and callers of ``p`` are checked in turn).

    Returns:
        ``p`` itself (to chain with ``check_bounds`` in the decorators).

    Raises:
        CallAliasError: at the first refused call, with its location and both arguments.
    """
    for o, why in refused_overlaps(p, lambda _s: True):
        if why is not None:
            raise CallAliasError(refusal(o, why), o.call.srcinfo)
    return p


def check_unit_aliasing(procs_top_down: list[ProcDef]) -> dict[int, set[int]]:
    """The parameters of each proc of a unit that may overlap another at some call.

    Roots' parameters are separate (the wrapper refuses overlapping arrays). A parameter of
    a callee that may overlap another at any call loses ``restrict``, and then counts as not
    separate inside that callee, which is why procs are visited callers first.

    Args:
        procs_top_down: every proc of the unit, each after all its callers (the roots,
            whose parameters are separate, come first).

    Returns:
        ``id(proc) -> positions of its parameters that may alias`` (absent: none).

    Raises:
        CodegenAliasError: a call passes overlapping arguments to a non-sequential callee.
    """
    facts = _Facts()
    aliased: dict[int, set[int]] = {}
    for p in procs_top_down:
        mine = aliased.get(id(p), set())
        syms = {a.sym: k for k, a in enumerate(p.args)}

        def separate(s: Sym, mine: set[int] = mine, syms: dict[Sym, int] = syms) -> bool:
            return s in syms and syms[s] not in mine

        for o, why in refused_overlaps(p, separate, facts):
            if why is not None:
                where = f" ({o.call.srcinfo})" if o.call.srcinfo else ""
                raise CodegenAliasError(f"{p.name}: {refusal(o, why)}{where}")
            aliased.setdefault(id(o.call.proc), set()).update((o.first, o.second))
    return aliased
