"""``split_scan``: a sequential scan loop into per-chunk local scans, a carry across the
chunks' totals and a fix-up of each element with its chunk's incoming carry (issue 18).

The local and fix-up loops have independent iterations (``parallelize_loop`` accepts them);
only the carry loop, one step per chunk, stays sequential. The shape of a splittable loop
and the rule table deciding how its update combines are in
``cursched.primitives.scans.split_scan_checks``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from cursched.analysis import affine as af
from cursched.analysis.checks import NotBoundedError, NotDivisibleError, check_divides, check_le
from cursched.cursors import AllocCursor, Editor, ForCursor, NodeLoc, NoLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import BadNameError
from cursched.ir.memory import DRAM
from cursched.ir.nodes import Alloc, Assign, BinOp, Const, Expr, Extern, For, If, Read, Stmt
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL, INDEX, DataType, TensorType
from cursched.primitives.arguments import NewName
from cursched.primitives.loops.loop_common import (
    expr_of,
    int_const,
    rename_stmt,
    safety,
    subst_simplify,
)
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.primitives.scans.split_scan_checks import (
    PRIMITIVE,
    Combine,
    ScanShape,
    SplitScanBodyError,
    SplitScanChunkError,
    SplitScanFixupError,
    SplitScanLoopError,
    SplitScanNotAssociativeError,
    SplitScanOutputError,
    SplitScanPrecisionError,
    SplitScanRunningReadError,
    SplitScanTripCountError,
    SplitScanUpdateError,
    analyse,
)
from cursched.proc import Proc

__all__ = [
    "SplitScanBodyError",
    "SplitScanChunkError",
    "SplitScanCursors",
    "SplitScanFixupError",
    "SplitScanLoopError",
    "SplitScanNameError",
    "SplitScanNotAssociativeError",
    "SplitScanOutputError",
    "SplitScanPrecisionError",
    "SplitScanRunningReadError",
    "SplitScanTripCountError",
    "SplitScanUpdateError",
    "split_scan",
]


class SplitScanNameError(BadNameError):
    """split_scan, precondition 8: a new loop name is not an identifier."""


@prim_cursors
class SplitScanCursors(PrimCursors):
    """What ``split_scan`` returns.

    Attributes:
        local: the loop over chunks computing each chunk's scan from the identity (its body
            holds the copies of the original body's statements).
        carry: the sequential loop over chunks combining the totals into the running value
            (after it, the running value is the scan's final value).
        fixup: the loop over chunks combining each written element with its chunk's incoming
            carry; invalid when the loop writes no exclusive or inclusive value.
        totals: the allocation of the chunks' local totals.
        products: the allocation of the chunks' products of ``a`` (linear recurrences only).
        carries: the allocation of each chunk's incoming running value (when there is a
            fix-up).
        element_products: the allocation ``[chunks, chunk]`` of each element's running
            product of ``a`` within its chunk (``fixup="products"`` only).
    """

    local: ForCursor
    carry: ForCursor
    fixup: ForCursor
    totals: AllocCursor
    products: AllocCursor
    carries: AllocCursor
    element_products: AllocCursor


Fixup = Literal["combine", "products", "rescan"]
_FIXUPS: tuple[Fixup, ...] = ("combine", "products", "rescan")

_IDENTITY = {"+": 0.0, "*": 1.0, "max": float("-inf"), "min": float("inf"), "linear": 0.0}


def _const(v: float, t: DataType) -> Const:
    return Const(int(v) if not t.is_float() else v, t)


def _rd(s: Sym, t: DataType | TensorType, *idx: Expr) -> Read:
    return Read(s, tuple(idx), t.elem if isinstance(t, TensorType) else t)


def _combine(c: Combine, acc: Expr, x: Expr, t: DataType) -> Expr:
    """``acc (+) x`` for the scan's operator (associative ones only)."""
    match c.op:
        case "+" | "*":
            return BinOp(c.op, acc, x, t)
        case "max" | "min":
            assert c.extern is not None
            return Extern(c.extern, (acc, x), t)
        case "linear":
            raise AssertionError("linear recurrences combine pairs, see _rewrite")


class _Builder:
    """The new statements, for one scan of ``chunk`` iterations per chunk."""

    def __init__(
        self, s: ScanShape, chunk: int, names: tuple[str, str], exact: bool, form: Fixup
    ) -> None:
        self.s, self.c, self.t = s, chunk, s.type
        self.form = form
        L = s.loop
        self.k, self.j = Sym(names[0]), Sym(names[1])
        lo, hi = af.to_aff(L.lo), af.to_aff(L.hi)
        assert lo is not None and hi is not None, "loop bounds are quasi-affine"
        self.lo_hi = (lo, hi)
        # exact: chunk divides the trip count, so no chunk is partial and no guard is needed
        self.exact = exact
        self.count = expr_of(af.div(hi - lo + (0 if exact else chunk - 1), chunk))
        shape = TensorType(self.t, (self.count,))
        h = s.running.name
        self.tot = Sym(f"{h}_chunk")
        self.prod = Sym(f"{h}_chunk_prod")
        self.cin = Sym(f"{h}_carry")
        self.elem = Sym(f"{h}_elem_prod")
        self.shape = shape
        self.elem_shape = TensorType(self.t, (self.count, int_const(chunk)))

    def elem_at(self) -> Read:
        """This element's kept product (indices in the builder's chunk variables)."""
        return _rd(self.elem, self.elem_shape, Read(self.k, (), INDEX), Read(self.j, (), INDEX))

    @property
    def linear(self) -> bool:
        return self.s.combine.op == "linear"

    @property
    def writes(self) -> bool:
        return bool(self.s.before or self.s.after)

    def element(self) -> Expr:
        lo, _ = self.lo_hi
        return expr_of(lo + af.Aff.var(self.k).scale(self.c) + af.Aff.var(self.j))

    def chunk_loop(self, body: tuple[Stmt, ...], sym: Sym | None = None) -> For:
        return For(sym or self.k.copy(), int_const(0), self.count, body)

    def inner(self, body: tuple[Stmt, ...], k: Sym) -> For:
        _, hi = self.lo_hi
        env = {self.k: Read(k, (), INDEX)}
        if not self.exact:
            cond = BinOp("<", self.element(), expr_of(hi), BOOL)
            body = (If(cond, body, ()),)
        j = self.j.copy()
        stmt = For(j, int_const(0), int_const(self.c), body)
        ranges = {j: (0, self.c - 1)}
        out = subst_simplify(stmt, {**env, self.j: Read(j, (), INDEX)}, ranges)
        assert isinstance(out, For)
        return out

    def at_element(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        i = self.s.loop.iter
        ranges = {self.j: (0, self.c - 1)}
        return tuple(subst_simplify(st, {i: self.element()}, ranges) for st in stmts)


def _placed(loop: For) -> tuple[Stmt, ...]:
    """The statements of a chunk's inner loop (inside its guard when there is one)."""
    first = loop.body[0]
    return first.body if isinstance(first, If) else loop.body


def _local(b: _Builder) -> tuple[For, list[tuple[Stmt, Stmt]]]:
    s, t = b.s, b.t
    k = b.k
    run = Sym(f"{s.running.name}_local")
    q = Sym(f"{s.running.name}_prod")
    # rescan: the local scan only reduces its chunk; the fix-up loop writes every value
    before, after = ((), ()) if b.form == "rescan" else (s.before, s.after)
    body = b.at_element((*before, s.update, *after))
    copies = tuple(rename_stmt(st, {s.running: run}) for st in body)
    inner: tuple[Stmt, ...] = copies
    head: list[Stmt] = [Alloc(run, t, DRAM), Assign(run, (), _const(_IDENTITY[s.combine.op], t))]
    tail: list[Stmt] = [Assign(b.tot, (Read(k, (), INDEX),), Read(run, (), t))]
    made = 0  # statements of the inner loop that copy no original statement
    if b.linear:
        coeff = s.combine.coeff
        assert coeff is not None
        step = b.at_element((Assign(q, (), BinOp("*", coeff, Read(q, (), t), t)),))
        if b.form == "products":
            step = (*step, Assign(b.elem, b.elem_at().idx, Read(q, (), t)))
        made = len(step)
        inner = (*copies[: len(before) + 1], *step, *copies[len(before) + 1 :])
        head += [Alloc(q, t, DRAM), Assign(q, (), _const(1.0, t))]
        tail.append(Assign(b.prod, (Read(k, (), INDEX),), Read(q, (), t)))
    inner_loop = b.inner(inner, k)
    loop = For(k, int_const(0), b.count, (*head, inner_loop, *tail))
    placed = _placed(inner_loop)
    placed = (*placed[: len(before) + 1], *placed[len(before) + 1 + made :])
    same = list(zip((*before, s.update, *after), placed, strict=True))
    return loop, same


def _carry(b: _Builder) -> For:
    s, t = b.s, b.t
    k = b.k.copy()
    at = (Read(k, (), INDEX),)
    h = Read(s.running, (), t)
    tot = Read(b.tot, at, t)
    if b.linear:
        new: Expr = BinOp("+", BinOp("*", Read(b.prod, at, t), h, t), tot, t)
    else:
        new = _combine(s.combine, h, tot, t)
    body: list[Stmt] = [Assign(s.running, (), new)]
    if b.writes:
        body.insert(0, Assign(b.cin, at, h))
    return For(k, int_const(0), b.count, tuple(body))


def _fixup(b: _Builder) -> tuple[For, list[tuple[Stmt, Stmt]]]:
    s, t = b.s, b.t
    k = b.k.copy()
    carry = Read(b.cin, (Read(k, (), INDEX),), t)
    if b.form == "rescan":
        return _rescan(b, k, carry)
    q = Sym(f"{s.running.name}_prod")

    def fixed(w: Assign) -> Assign:
        mine = Read(w.sym, w.idx, t)
        if b.linear:
            prod: Expr = b.elem_at() if b.form == "products" else Read(q, (), t)
            return w.replace(rhs=BinOp("+", mine, BinOp("*", prod, carry, t), t))
        return w.replace(rhs=_combine(s.combine, carry, mine, t))

    body: list[Stmt] = [fixed(w) for w in s.before]
    head: list[Stmt] = []
    if b.linear and b.form == "combine":
        coeff = s.combine.coeff
        assert coeff is not None
        body.append(Assign(q, (), BinOp("*", coeff, Read(q, (), t), t)))
        head = [Alloc(q, t, DRAM), Assign(q, (), _const(1.0, t))]
    body += [fixed(w) for w in s.after]
    return For(k, int_const(0), b.count, (*head, b.inner(b.at_element(tuple(body)), k))), []


def _rescan(b: _Builder, k: Sym, carry: Read) -> tuple[For, list[tuple[Stmt, Stmt]]]:
    """The chunk's scan again, from its incoming carry: the original body, writes and all."""
    s, t = b.s, b.t
    run = Sym(f"{s.running.name}_local")
    writes: tuple[Stmt, ...] = (*s.before, *s.after)
    body = b.at_element((*s.before, s.update, *s.after))
    copies = tuple(rename_stmt(st, {s.running: run}) for st in body)
    inner_loop = b.inner(copies, k)
    head: list[Stmt] = [Alloc(run, t, DRAM), Assign(run, (), carry)]
    placed = _placed(inner_loop)
    n_before = len(s.before)
    same = list(zip(writes, (*placed[:n_before], *placed[n_before + 1 :]), strict=True))
    return For(k, int_const(0), b.count, (*head, inner_loop)), same


def _check_fixup(s: ScanShape, form: object, loop: ForCursor) -> None:
    if form not in _FIXUPS:
        msg = f"fixup {form!r} is none of {', '.join(_FIXUPS)}"
        raise fail(SplitScanFixupError, PRIMITIVE, msg, loop)
    if form == "products" and (s.combine.op != "linear" or s.before or not s.after):
        msg = "fixup 'products' needs a linear recurrence writing only inclusive values"
        raise fail(SplitScanFixupError, PRIMITIVE, msg, loop)


def _check_trip_count(proc: Proc, loop: ForCursor, count: Expr) -> None:
    """Precondition 11: the trip count is provably nonnegative and not a constant 0 or less."""
    L = loop.loop()
    # decided without the context: the chunk count is the new buffers' shape, which must be
    # a valid type wherever the allocations stand (the printout's shapes are checked so)
    if isinstance(count, Const) and count.value <= 0:
        msg = f"the loop never runs (its trip count is constant, {count.value} chunks)"
        raise fail(SplitScanTripCountError, PRIMITIVE, msg, loop)
    try:
        check_le(proc.ir(), loop.path(), L.lo, L.hi, primitive=PRIMITIVE)
    except NotBoundedError as e:
        raise safety(SplitScanTripCountError, PRIMITIVE, e, loop) from e


@primitive
def split_scan(
    proc: Proc,
    loop: ForCursor,
    chunk: int,
    names: Annotated[
        tuple[str, str] | None, NewName(SplitScanNameError, at="loop", count=2)
    ] = None,
    fixup: Fixup = "combine",
) -> Rewrite[SplitScanCursors]:
    """Split a scan loop into chunks scanned independently, a carry and a fix-up.

    The update ``h = h (+) x[i]`` (``+``, ``*``, ``fmax``, ``fmin``) or ``h = a[i] * h + b[i]``
    is regrouped: each chunk of ``chunk`` iterations is scanned from the identity (the linear
    form also keeps the chunk's product of ``a``), a sequential loop over the chunks carries
    the running value from chunk to chunk (``h = h (+) total``, ``h = product * h + total``),
    and a fix-up combines every written exclusive or inclusive value with its chunk's
    incoming carry. The last chunk may be partial (a guard ``if i < hi``, left out when
    ``chunk`` divides the trip count).

    ``fixup`` chooses the fix-up pass (the local scan and the carry are the same):

    - ``"combine"``: each written value is combined with the chunk's carry; a linear
      recurrence recomputes its running product of ``a`` along the chunk for that (a chain:
      twice the plain loop's dependent multiplies);
    - ``"products"`` (a linear recurrence writing inclusive values only): the local scan
      also stores each element's running product of ``a`` (``h_elem_prod[chunk, j]``) and
      the fix-up is ``y = y + h_elem_prod[...] * carry``: no chain, its iterations
      independent (it vectorises), for one more buffer of the scan's length;
    - ``"rescan"``: the local scan only reduces its chunk (writes nothing) and the fix-up
      runs the chunk's original body again from its incoming carry. Each element is read
      twice and written once (the least memory traffic of the three; no buffer of the
      scan's length), and the written values are the sequential loop's from the carry on.

    Floating-point sums and products are regrouped, so results may differ from the
    sequential loop's by rounding (as any parallel reduction): compare with a tolerance.

    Args:
        proc: the proc to rewrite.
        loop: the scan loop (a cursor or a loop name).
        chunk: iterations per chunk (a positive constant).
        names: the chunk and in-chunk loop variables (default ``(i + "o", i + "i")``).
        fixup: ``"combine"`` (default), ``"products"`` or ``"rescan"`` (above).

    Returns:
        The new proc and ``SplitScanCursors``: ``local``, ``carry``, ``fixup`` (invalid without
        written values), ``totals``, ``products`` (linear only), ``carries`` (with a fix-up),
        ``element_products`` (``fixup="products"`` only).

    Preconditions:
        1. ``chunk`` is a positive integer (``SplitScanChunkError``).
        2. the loop is sequential (``SplitScanLoopError``).
        3. its body updates exactly one scalar running value (``SplitScanUpdateError``).
        4. every other statement writes the running value to an element
           (``SplitScanBodyError``).
        5. no operand reads the running value (``SplitScanRunningReadError``).
        6. each write's index is affine in the loop variable with a nonzero coefficient,
           its buffer written once and read by no operand (``SplitScanOutputError``).
        7. the update is associative or a linear recurrence (rule table, then SMT;
           ``SplitScanNotAssociativeError``).
        8. new names are identifiers (``SplitScanNameError``).
        9. ``fixup`` is one of the three, ``"products"`` only for a linear recurrence that
           writes inclusive values and no exclusive ones (``SplitScanFixupError``).
        10. the loop's data (running value, operands, outputs) has one precision
           (``SplitScanPrecisionError``).
        11. the loop's trip count is provably nonnegative and not a constant 0 or less (the
            chunk count is the chunk buffers' shape; ``SplitScanTripCountError``).

    Forwards/Kills:
        The loop forwards to ``local``; its body statements forward to their copies in
        ``local`` (with the running value renamed to the chunk's own), the writes to theirs
        in the fix-up with ``"rescan"``.

    Example:
        ``split_scan(p, "i", 4)`` on a prefix sum with ``n % 4 == 0``::

            for i in seq(0, n):       ->  s_chunk: f32[n / 4]
                s += x[i]                 s_carry ... (no writes: no carries, no fix-up)
                                          for io in seq(0, n / 4):
                                              s_local: f32
                                              s_local = 0.0
                                              for ii in seq(0, 4):
                                                  s_local += x[4 * io + ii]
                                              s_chunk[io] = s_local
                                          for io in seq(0, n / 4):
                                              s = s + s_chunk[io]
    """
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise fail(SplitScanChunkError, PRIMITIVE, f"chunk {chunk!r} is not a positive int", loop)
    L = loop.loop()
    if names is None:  # the default names get the check given ones got in the registry
        default = (f"{L.iter.name}o", f"{L.iter.name}i")
        names = NewName(SplitScanNameError, at="loop", count=2).resolve(
            proc.ir(), default, loop, PRIMITIVE
        )
    shape = analyse(loop)
    _check_fixup(shape, fixup, loop)
    try:
        check_divides(proc.ir(), loop.path(), chunk, BinOp("-", L.hi, L.lo, INDEX))
        exact = True
    except NotDivisibleError:
        exact = False
    b = _Builder(shape, chunk, names, exact, fixup)
    _check_trip_count(proc, loop, b.count)
    local, same = _local(b)
    allocs: list[Stmt] = [Alloc(b.tot, b.shape, DRAM)]
    if b.linear:
        allocs.append(Alloc(b.prod, b.shape, DRAM))
    if b.form == "products":
        allocs.append(Alloc(b.elem, b.elem_shape, DRAM))
    if b.writes:
        allocs.append(Alloc(b.cin, b.shape, DRAM))
    fix, fix_same = _fixup(b) if b.writes else (None, [])
    new = (*allocs, local, _carry(b), *((fix,) if fix is not None else ()))
    ed = Editor(proc.ir())
    out = ed.replace(
        loop.as_block().block(),
        new,
        same=[(L, local), *same, *fix_same],
        hint="split by split_scan; use .local",
    )
    paths = out.stmt_paths()
    n = len(allocs)
    none = NoLoc("the loop writes no scan values")
    fields = {
        "local": NodeLoc(paths[n]),
        "carry": NodeLoc(paths[n + 1]),
        "fixup": NodeLoc(paths[n + 2]) if b.writes else none,
        "totals": NodeLoc(paths[0]),
        "products": NodeLoc(paths[1]) if b.linear else NoLoc("not a linear recurrence"),
        "carries": NodeLoc(paths[n - 1]) if b.writes else none,
        "element_products": NodeLoc(paths[2])
        if b.form == "products"
        else NoLoc("fixup is not 'products'"),
    }
    return ed.done(SplitScanCursors, **fields)
