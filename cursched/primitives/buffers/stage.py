"""``stage_mem``: copy a window of a buffer into a new buffer around a block.

Registered with ``@primitive`` (``cursched.primitives.registry``). The coverage question that
decides whether the load stage may be left out lives in ``cursched.analysis.checks_buffers``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, cast

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.checks import (
    NotBoundedError,
    OutsideWindowError,
    ParallelError,
    check_in_window,
    check_le,
    check_parallel,
)
from cursched.analysis.checks_buffers import NotCoveredError, Region, covered, uncovered_point
from cursched.analysis.context import PathContext, context_of
from cursched.analysis.effects import Access, block_effects, windows_view
from cursched.cursors import AllocCursor, BlockCursor, BlockLoc, Editor, NodeLoc, NoLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.cursors.kinds import Cursor
from cursched.cursors.tree import stmt_list
from cursched.errors import (
    BadArgumentError,
    BadNameError,
    IndirectUseError,
    NotProvenError,
    OutOfBoundsError,
    RaceError,
    ScopeError,
    ShapeMismatchError,
)
from cursched.ir.memory import DRAM, Memory
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Const,
    Expr,
    For,
    If,
    Interval,
    Node,
    Point,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_exprs, walk_stmts
from cursched.ir.types import BOOL, INDEX, DataType, TensorType
from cursched.primitives.arguments import NewName, ParsedWindow, Window
from cursched.primitives.buffers.buffer_common import (
    UseNode,
    fresh_names,
    minus,
    rebuild,
    simplified,
)
from cursched.primitives.loops.loop_common import (
    int_const,
    safety,
    same_pairs,
)
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc

NAME = "stage_mem"


class StageWindowError(BadArgumentError):
    """stage_mem, precondition 1: the window is not ``name[coord, ...]`` over a tensor visible
    at the block, one coordinate (``lo:hi`` or an index) per dimension."""


class StageNameError(BadNameError):
    """stage_mem, precondition 2: the new buffer's name is not a fresh identifier."""


class StageMemoryError(BadArgumentError):
    """stage_mem, precondition 3: ``memory`` is not a ``Memory`` class."""


class StageAliasError(IndirectUseError):
    """stage_mem, precondition 4: the block reaches the buffer other than by direct indexing
    (a window of it made before the block, the whole buffer passed to a call, ``stride``)."""


class StageNoAccessError(ShapeMismatchError):
    """stage_mem, precondition 5: the block does not access the buffer at all."""


class StageNeverRunsError(NotProvenError):
    """stage_mem, precondition 6: the block never runs (the loops and ifs around it are empty
    for every size the asserts allow), so the window proofs would hold vacuously."""


class StageOutsideWindowError(OutOfBoundsError):
    """stage_mem, precondition 8: an access of the block leaves the window."""


class StageWindowBoundsError(NotProvenError):
    """stage_mem, precondition 7: a window range ``lo:hi`` may have ``hi < lo``, or has a
    constant extent that is not positive (the new buffer's shape)."""


class StageAccumError(ShapeMismatchError):
    """stage_mem, precondition 9: ``accum=True`` but the block reads or overwrites the buffer
    (it must only reduce into it)."""


class StagePartialWriteError(NotProvenError):
    """stage_mem, precondition 10: the block writes the window without reading it, but does not
    provably write all of it: copying the window back would clobber the elements it did not
    write (Exo issue 527)."""


class StageParallelError(RaceError):
    """stage_mem, precondition 11: inside a ``par`` loop, the stages would make iterations
    touch the same elements (each loads and stores its whole window)."""


class StageEscapingWindowError(ScopeError):
    """stage_mem, precondition 12: a window statement of the block (at its top level) names a
    window of the buffer that statements after the block use: staged, it would name the new
    buffer there, after the store, and those accesses would miss the buffer."""


@prim_cursors
class StageMemCursors(PrimCursors):
    """What ``stage_mem`` returns.

    Attributes:
        alloc: the new buffer's allocation.
        load: the load loop nest (or statement), or an invalid cursor when the block does not
            read the buffer; with ``accum=True`` the zero-initialising nest.
        block: the staged block (the input block's cursors forward here).
        store: the store loop nest (or statement), or an invalid cursor when the block does not
            write the buffer; with ``accum=True`` the nest adding the buffer back.
    """

    alloc: AllocCursor
    load: StmtCursor | Cursor
    block: BlockCursor
    store: StmtCursor | Cursor


@primitive
def stage_mem(
    proc: Proc,
    block: BlockCursor,
    window: Annotated[str, Window(StageWindowError, at="block")],
    name: Annotated[str, NewName(StageNameError, at="block", scope="proc")],
    accum: bool = False,
    memory: type[Memory] | None = None,
    unsafe_skip_checks: bool = False,
) -> Rewrite[StageMemCursors]:
    """Stage a window of a buffer in a new buffer around a block.

    Args:
        proc: the proc to rewrite.
        block: the statements to stage around (a cursor or pattern).
        window: ``"A[lo:hi, pt, ...]"``: the buffer (a parameter or an allocation visible at
            the block) and one coordinate per dimension, in the sizes and enclosing loop
            variables (``lo:`` and ``:hi`` default to the dimension's ends).
        name: the new buffer's name.
        accum: stage a reduction: zero-initialise the new buffer, reduce into it, then add it
            back (``A[...] += name[...]``); like Exo, this reassociates the sums.
        memory: the new buffer's memory (default ``DRAM``).
        unsafe_skip_checks: skip the proofs of preconditions 6, 7, 8, 10 and 11.

    Returns:
        The new proc and ``StageMemCursors``:
        ``alloc``: the new allocation; ``load``: the load (or zero) nest, or invalid;
        ``block``: the staged block; ``store``: the store (or add-back) nest, or invalid.

    Preconditions:
        1. ``window`` names a tensor visible at the block, with one affine coordinate per
           dimension (``StageWindowError``).
        2. ``name`` is a usable new name (``registry.check_new_name``) that no symbol of the
           proc has (``StageNameError``).
        3. ``memory`` is a ``Memory`` class (``StageMemoryError``).
        4. the block uses the buffer only by indexing it or taking windows of it
           (``StageAliasError``: no earlier window aliasing it, no whole-buffer call argument,
           no ``stride``).
        5. the block accesses the buffer (``StageNoAccessError``).
        6. the block can run: its context (the asserts, the enclosing loops' ranges and
           ``if`` conditions) is satisfiable for some sizes (``StageNeverRunsError``). In code
           that never runs every proof below holds vacuously and would accept any window.
        7. every range ``lo:hi`` of the window has ``lo <= hi`` (``StageWindowBoundsError``,
           with a counterexample), and an extent that is a constant is positive, decided
           without the context (it is the new buffer's shape). A window that may leave the
           buffer's bounds is fine, as in Exo: the load and store get guards keeping their
           accesses in bounds (the block's own accesses are in bounds already).
        8. every access of the block to the buffer lies inside the window, proven
           (``StageOutsideWindowError``, with a counterexample).
        9. with ``accum=True``, the block only reduces into the buffer (``StageAccumError``).
        10. a block that writes the buffer without reading it provably writes the whole window
            (the part inside the buffer), since the store copies all of it back
            (``StagePartialWriteError``, with an index no write touches when every write is
            a box).
        11. every enclosing ``par`` loop stays parallel with the stages added, proven by
            ``check_parallel`` (``StageParallelError``, with a counterexample).
        12. no window of the buffer that a statement at the block's top level binds
            (``w = A[...]``) is used after the block (``StageEscapingWindowError``): the
            rewrite points it at the new buffer, so the uses after the store would read and
            write the new buffer instead of ``A``.

    Forwards/Kills:
        ``block`` forwards to ``block``; its statements keep their identity. Rewritten accesses
        of the buffer die (hint: "restaged by stage_mem").

    Example:
        ``stage_mem(p, "for ii in _: _", "A[4 * io:4 * io + 4]", "tile")``::

            for io in seq(0, n / 4):           ->    for io in seq(0, n / 4):
                for ii in seq(0, 4):                     tile: i8[4] @ DRAM
                    A[4 * io + ii] += 2                  for i0 in seq(0, 4):
                                                             tile[i0] = A[4 * io + i0]
                                                         for ii in seq(0, 4):
                                                             tile[ii] += 2
                                                         for i0 in seq(0, 4):
                                                             A[4 * io + i0] = tile[i0]
    """
    ir = proc.ir()
    loc = block.block()
    first = loc.stmt_paths()[0]
    stmts = stmt_list(ir, loc.parent, loc.attr)[loc.lo : loc.hi]
    ctx = context_of(ir, first)
    # preconditions 1 and 2 hold: the registry resolved the window and checked the name
    win = _Staged.of(cast(ParsedWindow, window), ctx)
    mem = _check_memory(memory, block)
    _check_direct_uses(stmts, ctx, win, block)
    _check_no_escape(stmts, stmt_list(ir, loc.parent, loc.attr)[loc.hi :], win.buf, block)
    load, store, effects = _check_accesses(stmts, ctx, win.buf, accum, block)
    if not unsafe_skip_checks:
        _check_runs(ctx, block)
        _check_extents(ir, first, win, block)
        _check_in_window(ir, loc.stmt_paths(), win, block)
        if store and not load and not accum:
            _check_fills(effects, ctx, win, block)
    ed, out, staged = _rewrite(ir, loc, stmts, win, name, mem, load, store, accum)
    if not unsafe_skip_checks:
        _check_parallel(ir, ed.ir, first, block)
    k0 = 2 if (load or accum) else 1
    paths = out.stmt_paths()
    return ed.done(
        StageMemCursors,
        alloc=NodeLoc(paths[0]),
        load=NodeLoc(paths[1])
        if (load or accum)
        else NoLoc("no load: the block does not read the buffer"),
        block=BlockLoc(out.parent, out.attr, out.lo + k0, out.lo + k0 + len(staged)),
        store=NodeLoc(paths[-1])
        if store
        else NoLoc("no store: the block does not write the buffer"),
    )


# ------------------------------------------------------------------------- preconditions


@dataclass(frozen=True)
class _Staged:
    """The window being staged: the parsed argument, its IR window and the new buffer's
    extents (one per ``lo:hi`` coordinate, simplified in the block's context)."""

    buf: Sym
    btype: TensorType
    coords: tuple[WAccess, ...]
    extents: tuple[Expr, ...]
    wexpr: WindowExpr

    @staticmethod
    def of(w: ParsedWindow, ctx: PathContext) -> _Staged:
        ranges = ctx.ranges()
        extents = tuple(
            simplified(af.to_aff(c.hi) - af.to_aff(c.lo), ranges)  # type: ignore[operator]
            for c in w.coords
            if isinstance(c, Interval)
        )
        wexpr = WindowExpr(w.buf, w.coords, TensorType(w.btype.elem, extents))
        return _Staged(w.buf, w.btype, w.coords, extents, wexpr)

    def kept(self) -> list[int]:
        """The dimensions the new buffer keeps (the ``lo:hi`` ones)."""
        return [k for k, c in enumerate(self.coords) if isinstance(c, Interval)]


def _check_memory(memory: Any, block: BlockCursor) -> type[Memory]:
    """Precondition 3: the memory is a ``Memory`` class (default ``DRAM``)."""
    mem = DRAM if memory is None else memory
    if not (isinstance(mem, type) and issubclass(mem, Memory)):
        raise fail(StageMemoryError, NAME, f"memory must be a Memory class, got {memory!r}", block)
    return mem


def _check_direct_uses(
    stmts: tuple[Stmt, ...], ctx: PathContext, win: _Staged, block: BlockCursor
) -> None:
    """Precondition 4: the block reaches the buffer only by indexing it or windowing it."""
    buf = win.buf
    aliases = {s for s, v in windows_view(ctx.windows).items() if v.base is buf}
    for x in walk_exprs(stmts):
        bad = (
            (isinstance(x, Read | WindowExpr) and x.sym in aliases)
            or (isinstance(x, StrideExpr) and x.sym is buf)
            or (isinstance(x, Read) and x.sym is buf and isinstance(x.type, TensorType))
            # a window ranging over a dimension the stage fixes would lose that dimension
            or (
                isinstance(x, WindowExpr)
                and x.sym is buf
                and any(
                    isinstance(c, Interval) and isinstance(w, Point)
                    for c, w in zip(x.idx, win.coords, strict=True)
                )
            )
        )
        if bad:
            raise fail(
                StageAliasError,
                NAME,
                f"the block reaches {buf.name} through `{_text(x)}`, which staging cannot rewrite",
                block,
            )


def _check_no_escape(
    stmts: tuple[Stmt, ...], after: tuple[Stmt, ...], buf: Sym, block: BlockCursor
) -> None:
    """Precondition 12: no window of the buffer bound at the block's top level (directly or
    as a window of such a window) is used by the statements after the block, where it would
    outlive the stage (a window bound deeper is scoped inside the block)."""
    bound: set[Sym] = set()
    for s in stmts:
        if isinstance(s, WindowStmt) and (s.rhs.sym is buf or s.rhs.sym in bound):
            bound.add(s.sym)
    if not bound:
        return
    writes = (s for s in walk_stmts(after) if isinstance(s, Assign | Reduce))
    reads = (x for x in walk_exprs(after) if isinstance(x, Read | WindowExpr | StrideExpr))
    for node in (*writes, *reads):
        if node.sym in bound:
            msg = (
                f"the block binds the window {node.sym.name} of {buf.name}, which is used "
                "after the block: staged, it would name the new buffer after the store; "
                "stage a block that includes its uses"
            )
            raise fail(StageEscapingWindowError, NAME, msg, block)


def _check_accesses(
    stmts: tuple[Stmt, ...], ctx: PathContext, buf: Sym, accum: bool, block: BlockCursor
) -> tuple[bool, bool, list[Access]]:
    """Preconditions 5 and 9: the block accesses the buffer, and with ``accum`` only reduces
    into it. Returns whether a load and a store are needed, and the block's accesses."""
    effects = [a for a in block_effects(stmts, ctx.windows) if a.buf is buf]
    if not effects:
        raise fail(StageNoAccessError, NAME, f"the block does not access {buf.name}", block)
    kinds = {a.kind for a in effects}
    if accum and kinds != {"reduce"}:
        raise fail(
            StageAccumError,
            NAME,
            f"accum=True needs a block that only reduces into {buf.name}; it also "
            + " and ".join(sorted(k + "s" for k in kinds - {"reduce"})),
            block,
        )
    load = not accum and bool(kinds & {"read", "reduce"})
    store = bool(kinds & {"write", "reduce"})
    return load, store, effects


def _check_runs(ctx: PathContext, block: BlockCursor) -> None:
    """Precondition 6: some sizes allowed by the asserts make the block run (bugs.md F5)."""
    if smt.satisfiable(ctx.props()) is None:
        msg = (
            "the block never runs (the loops and ifs around it are empty for every size the "
            "asserts allow): every window would pass the proofs vacuously; delete the dead "
            "code first (eliminate_dead_code)"
        )
        raise fail(StageNeverRunsError, NAME, msg, block)


def _check_extents(ir: ProcDef, first: Path, win: _Staged, block: BlockCursor) -> None:
    """Precondition 7: every ``lo:hi`` has ``lo <= hi``; a constant extent is positive."""
    for c, n in zip((c for c in win.coords if isinstance(c, Interval)), win.extents, strict=True):
        # decided without the context: it is the new buffer's shape, which must be valid
        # wherever the allocation stands (the printout's shapes are checked without it)
        if isinstance(n, Const) and n.value <= 0:
            msg = f"the window range {_text(c.lo)}:{_text(c.hi)} has extent {n.value}"
            raise fail(StageWindowBoundsError, NAME, msg, block)
        try:
            check_le(ir, first, c.lo, c.hi, primitive=NAME)
        except NotBoundedError as e:
            raise safety(StageWindowBoundsError, NAME, e, block) from e


def _check_in_window(
    ir: ProcDef, paths: tuple[Path, ...], win: _Staged, block: BlockCursor
) -> None:
    """Precondition 8: every access of the block to the buffer lies inside the window."""
    try:
        check_in_window(ir, paths, win.buf, win.wexpr, primitive=NAME)
    except OutsideWindowError as e:
        raise safety(StageOutsideWindowError, NAME, e, block) from e


def _check_fills(effects: list[Access], ctx: PathContext, win: _Staged, block: BlockCursor) -> None:
    """Precondition 10: a block that writes the buffer without reading it writes all of the
    window (the part inside the buffer: the store is guarded)."""
    region: Region = tuple(
        (af.to_aff(w.lo), af.to_aff(w.hi))  # type: ignore[misc]
        if isinstance(w, Interval)
        else (af.to_aff(w.pt), None)
        for w in win.coords
    )
    writes = [a for a in effects if a.kind == "write"]
    limits = tuple(af.to_aff(n) for n in win.btype.shape)
    if covered(writes, region, ctx.props(), limits):
        return
    model = uncovered_point(writes, region, ctx.props(), win.buf.name, limits)
    why = NotCoveredError(
        f"the block writes {win.buf.name} without reading it but does not provably "
        f"write all of {_text(win.wexpr)}; the store would overwrite the rest with "
        "garbage (stage a smaller window, or one the block writes entirely)",
        model,
    )
    raise safety(StagePartialWriteError, NAME, why, block)


def _check_parallel(ir: ProcDef, new_ir: ProcDef, first: Path, block: BlockCursor) -> None:
    """Precondition 11: every enclosing ``par`` loop is still parallel in the staged proc
    (whose statements before the block keep their paths)."""
    node: Any = ir
    for k in range(len(first) - 1):
        attr, i = first[k]
        node = getattr(node, attr)[i]
        if isinstance(node, For) and node.mode == "par":
            try:
                check_parallel(new_ir, first[: k + 1], primitive=NAME)
            except ParallelError as e:
                raise safety(StageParallelError, NAME, e, block) from e


# ------------------------------------------------------------------------------- rewrite


def _rewrite(
    ir: ProcDef,
    loc: BlockLoc,
    stmts: tuple[Stmt, ...],
    win: _Staged,
    name: str,
    mem: type[Memory],
    load: bool,
    store: bool,
    accum: bool,
) -> tuple[Editor, BlockLoc, tuple[Stmt, ...]]:
    """The allocation, the load (or zeroing) nest, the block on the new buffer and the store
    (or add-back) nest in place of the block. Returns the editor, where the new statements
    are, and the staged block."""
    tile = Sym(name)
    keep = win.kept()
    elem: DataType = win.btype.elem
    staged = rebuild(stmts, win.buf, lambda old, new: _onto_tile(new, tile, win.coords, keep))
    first = loc.stmt_paths()[0]
    make = _Nests(win, [Sym(n) for n in fresh_names(ir, "i", len(keep), {name})])
    make.guard = _guards(ir, first, win)
    buf = win.buf
    new: list[Stmt] = [Alloc(tile, TensorType(elem, win.extents) if keep else elem, mem)]
    if load:
        new.append(make(lambda b, s: Assign(tile, s, Read(buf, b, elem))))
    elif accum:
        zero = Const(0.0 if elem.is_float() else 0, elem)
        new.append(make(lambda b, s: Assign(tile, s, zero)))
    new.extend(staged)
    if store and accum:
        new.append(make(lambda b, s: Reduce(buf, b, Read(tile, s, elem))))
    elif store:
        new.append(make(lambda b, s: Assign(buf, b, Read(tile, s, elem))))
    ed = Editor(ir)
    out = ed.replace(loc, new, same=same_pairs(stmts, staged), hint="restaged by stage_mem")
    return ed, out, staged


def _onto_tile(new: UseNode, tile: Sym, coords: tuple[WAccess, ...], keep: list[int]) -> Node:
    """An access of the buffer rewritten to the new buffer, relative to the window."""

    def local(k: int, e: Expr) -> Expr:
        return minus(e, coords[k].lo)  # type: ignore[union-attr]

    match new:
        case Read() | Assign() | Reduce():
            return new.replace(sym=tile, idx=tuple(local(k, new.idx[k]) for k in keep))
        case WindowExpr():
            out: list[WAccess] = []
            for k in keep:
                c = new.idx[k]
                if isinstance(c, Point):
                    out.append(Point(local(k, c.pt)))
                else:
                    out.append(Interval(local(k, c.lo), local(k, c.hi)))
            return new.replace(sym=tile, idx=tuple(out))
        case _:
            return new


class _Nests:
    """Makes the load and store loop nests over the window (one loop per kept dimension),
    guarded where the window may leave the buffer."""

    def __init__(self, win: _Staged, iters: list[Sym]) -> None:
        self.win = win
        self.iters = iters
        self.guard: dict[int, tuple[bool, bool]] = {}

    def __call__(self, body_of: Any) -> Stmt:
        win, keep = self.win, self.win.kept()
        big = list(win.coords)
        small: list[Expr] = []
        for k, it in zip(keep, self.iters, strict=True):
            w = win.coords[k]
            assert isinstance(w, Interval)
            big[k] = Point(simplified(af.Aff.var(it) + af.to_aff(w.lo)))  # type: ignore[operator]
            small.append(Read(it, (), INDEX))
        bidx = tuple(c.pt for c in big if isinstance(c, Point))
        body: Stmt = body_of(bidx, tuple(small))
        if self.guard:
            body = If(_in_bounds(bidx, win.btype.shape, self.guard), (body,), ())
        for k, it in reversed(list(zip(keep, self.iters, strict=True))):
            body = For(it, int_const(0), win.extents[keep.index(k)], (body,))
        return body


def _guards(ir: ProcDef, first: Path, win: _Staged) -> dict[int, tuple[bool, bool]]:
    """Which sides of which dimensions the load and store must guard (not proven in
    bounds)."""
    guard: dict[int, tuple[bool, bool]] = {}
    for d, (w, n) in enumerate(zip(win.coords, win.btype.shape, strict=True)):
        start = w.lo if isinstance(w, Interval) else w.pt
        low = not _proven(ir, first, int_const(0), start, False)
        if isinstance(w, Interval):
            high = not _proven(ir, first, w.hi, n, False)
        else:
            high = not _proven(ir, first, start, n, True)
        if low or high:
            guard[d] = (low, high)
    return guard


def _proven(ir: Any, path: Any, lo: Expr, hi: Expr, strict: bool) -> bool:
    try:
        check_le(ir, path, lo, hi, strict=strict, primitive=NAME)
    except NotBoundedError:
        return False
    return True


def _in_bounds(
    idx: tuple[Expr, ...], shape: tuple[Expr, ...], guard: dict[int, tuple[bool, bool]]
) -> Expr:
    """``0 <= idx[d] and idx[d] < shape[d]`` for the guarded sides, joined by ``and``."""
    conds: list[Expr] = []
    for d, (low, high) in sorted(guard.items()):
        if low:
            conds.append(BinOp("<=", int_const(0), idx[d], BOOL))
        if high:
            conds.append(BinOp("<", idx[d], shape[d], BOOL))
    out = conds[0]
    for c in conds[1:]:
        out = BinOp("and", out, c, BOOL)
    return out


def _text(e: Expr) -> str:
    from cursched.ir.printer import print_expr

    return print_expr(e)


__all__ = [
    "StageAccumError",
    "StageAliasError",
    "StageEscapingWindowError",
    "StageMemCursors",
    "StageMemoryError",
    "StageNameError",
    "StageNeverRunsError",
    "StageNoAccessError",
    "StageOutsideWindowError",
    "StageParallelError",
    "StagePartialWriteError",
    "StageWindowBoundsError",
    "StageWindowError",
    "stage_mem",
]
