"""``stage_mem``: copy a window of a buffer into a new buffer around a block.

Registered with ``@primitive`` (``cursched.primitives.registry``). The coverage question that
decides whether the load stage may be left out lives in ``cursched.analysis.checks_buffers``.
"""

from __future__ import annotations

import ast
from typing import Any

from cursched.analysis import affine as af
from cursched.analysis.checks import (
    NotBoundedError,
    OutsideWindowError,
    ParallelError,
    check_in_window,
    check_le,
    check_parallel,
)
from cursched.analysis.checks_buffers import NotCoveredError, Region, covered, uncovered_point
from cursched.analysis.context import context_of
from cursched.analysis.effects import block_effects, windows_view
from cursched.cursors import AllocCursor, BlockCursor, BlockLoc, Editor, NodeLoc, NoLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.cursors.kinds import Cursor
from cursched.cursors.tree import stmt_list
from cursched.errors import (
    AliasError,
    BadArgumentError,
    BadNameError,
    NotProvenError,
    OutOfBoundsError,
    RaceError,
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
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    WAccess,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_exprs
from cursched.ir.types import BOOL, INDEX, DataType, TensorType
from cursched.primitives.buffers.buffer_common import (
    UseNode,
    fresh_name,
    minus,
    rebuild,
    simplified,
    used_names,
)
from cursched.primitives.loops.loop_common import (
    BadIndexExpressionError,
    index_expr,
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


class StageAliasError(AliasError):
    """stage_mem, precondition 4: the block reaches the buffer other than by direct indexing
    (a window of it made before the block, the whole buffer passed to a call, ``stride``)."""


class StageNoAccessError(ShapeMismatchError):
    """stage_mem, precondition 5: the block does not access the buffer at all."""


class StageOutsideWindowError(OutOfBoundsError):
    """stage_mem, precondition 7: an access of the block leaves the window."""


class StageWindowBoundsError(NotProvenError):
    """stage_mem, precondition 6: a window range ``lo:hi`` may have ``hi < lo``."""


class StageAccumError(ShapeMismatchError):
    """stage_mem, precondition 8: ``accum=True`` but the block reads or overwrites the buffer
    (it must only reduce into it)."""


class StagePartialWriteError(NotProvenError):
    """stage_mem, precondition 9: the block writes the window without reading it, but does not
    provably write all of it: copying the window back would clobber the elements it did not
    write (Exo issue 527)."""


class StageParallelError(RaceError):
    """stage_mem, precondition 10: inside a ``par`` loop, the stages would make iterations
    touch the same elements (each loads and stores its whole window)."""


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


def _parse_window(text: str) -> tuple[str, list[ast.expr | ast.Slice]] | None:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.Subscript) or not isinstance(tree.value, ast.Name):
        return None
    sl = tree.slice
    coords = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    return tree.value.id, coords


def _buffer(proc: Proc, path: Any, name: str) -> tuple[Sym, TensorType, type[Memory]] | None:
    ctx = context_of(proc.ir(), path)
    for sym, a in ctx.allocs.items():
        if sym.name == name and isinstance(a.type, TensorType):
            found: tuple[Sym, TensorType, type[Memory]] | None = (sym, a.type, a.mem)
            return found
    for arg in proc.ir().args:
        if arg.sym.name == name and isinstance(arg.type, TensorType):
            return arg.sym, arg.type, arg.mem or DRAM
    return None


@primitive
def stage_mem(
    proc: Proc,
    block: BlockCursor,
    window: str,
    name: str,
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
        unsafe_skip_checks: skip the proofs of preconditions 6, 7, 9 and 10.

    Returns:
        The new proc and ``StageMemCursors``:
        ``alloc``: the new allocation; ``load``: the load (or zero) nest, or invalid;
        ``block``: the staged block; ``store``: the store (or add-back) nest, or invalid.

    Preconditions:
        1. ``window`` names a tensor visible at the block, with one affine coordinate per
           dimension (``StageWindowError``).
        2. ``name`` is an identifier no symbol of the proc has (``StageNameError``).
        3. ``memory`` is a ``Memory`` class (``StageMemoryError``).
        4. the block uses the buffer only by indexing it or taking windows of it
           (``StageAliasError``: no earlier window aliasing it, no whole-buffer call argument,
           no ``stride``).
        5. the block accesses the buffer (``StageNoAccessError``).
        6. every range ``lo:hi`` of the window has ``lo <= hi`` (``StageWindowBoundsError``,
           with a counterexample). A window that may leave the buffer's bounds is fine, as in
           Exo: the load and store get guards keeping their accesses in bounds (the block's
           own accesses are in bounds already).
        7. every access of the block to the buffer lies inside the window, proven
           (``StageOutsideWindowError``, with a counterexample).
        8. with ``accum=True``, the block only reduces into the buffer (``StageAccumError``).
        9. a block that writes the buffer without reading it provably writes the whole window
           (the part inside the buffer), since the store copies all of it back
           (``StagePartialWriteError``, with an index no write touches when every write is a
           box).
        10. every enclosing ``par`` loop stays parallel with the stages added, proven by
            ``check_parallel`` (``StageParallelError``, with a counterexample).

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

    # 1. the window
    parsed = _parse_window(window) if isinstance(window, str) else None
    found = None if parsed is None else _buffer(proc, first, parsed[0])
    if parsed is None or found is None or len(parsed[1]) != found[1].rank():
        msg = f"window {window!r} is not `name[coord, ...]` over a tensor visible at the block"
        if found is not None and parsed is not None:
            msg += f" with {found[1].rank()} coordinates"
        raise fail(StageWindowError, NAME, msg, block)
    buf, btype, _ = found
    coords: list[WAccess] = []
    for d, c in enumerate(parsed[1]):
        try:
            if isinstance(c, ast.Slice):
                lo = (
                    index_expr(ir, first, ast.unparse(c.lower), NAME, block, "window start")
                    if c.lower
                    else int_const(0)
                )
                hi = (
                    index_expr(ir, first, ast.unparse(c.upper), NAME, block, "window end")
                    if c.upper
                    else btype.shape[d]
                )
                coords.append(Interval(lo, hi))
            else:
                coords.append(
                    Point(index_expr(ir, first, ast.unparse(c), NAME, block, "window index"))
                )
        except BadIndexExpressionError as e:
            raise fail(
                StageWindowError, NAME, str(e).splitlines()[0].removeprefix(f"{NAME}: "), block
            ) from e
    ctx = context_of(ir, first)
    ranges = ctx.ranges()
    extents = tuple(
        simplified(af.to_aff(w.hi) - af.to_aff(w.lo), ranges)  # type: ignore[operator]
        for w in coords
        if isinstance(w, Interval)
    )
    wtype = TensorType(btype.elem, extents)
    wexpr = WindowExpr(buf, tuple(coords), wtype)

    # 2, 3. name and memory
    taken = used_names(ir)
    if not (isinstance(name, str) and name.isidentifier()) or name in taken:
        raise fail(StageNameError, NAME, f"{name!r} is not a fresh identifier", block)
    mem = DRAM if memory is None else memory
    if not (isinstance(mem, type) and issubclass(mem, Memory)):
        raise fail(StageMemoryError, NAME, f"memory must be a Memory class, got {memory!r}", block)

    # 4. direct uses only
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
                    for c, w in zip(x.idx, coords, strict=True)
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

    # 5. what the block does to the buffer
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

    if not unsafe_skip_checks:
        # 6. window extents
        try:
            for w in coords:
                if isinstance(w, Interval):
                    check_le(ir, first, w.lo, w.hi, primitive=NAME)
        except NotBoundedError as e:
            raise safety(StageWindowBoundsError, NAME, e, block) from e
        # 7. inside the window
        try:
            check_in_window(ir, loc.stmt_paths(), buf, wexpr, primitive=NAME)
        except OutsideWindowError as e:
            raise safety(StageOutsideWindowError, NAME, e, block) from e
        # 9. a write-only block must fill the window
        if store and not load and not accum:
            region: Region = tuple(
                (af.to_aff(w.lo), af.to_aff(w.hi))  # type: ignore[misc]
                if isinstance(w, Interval)
                else (af.to_aff(w.pt), None)
                for w in coords
            )
            writes = [a for a in effects if a.kind == "write"]
            # only the part of the window inside the buffer is stored back (guards)
            limits = tuple(af.to_aff(n) for n in btype.shape)
            if not covered(writes, region, ctx.props(), limits):
                model = uncovered_point(writes, region, ctx.props(), buf.name, limits)
                why = NotCoveredError(
                    f"the block writes {buf.name} without reading it but does not provably "
                    f"write all of {_text(wexpr)}; the store would overwrite the rest with "
                    "garbage (stage a smaller window, or one the block writes entirely)",
                    model,
                )
                raise safety(StagePartialWriteError, NAME, why, block)

    # the rewrite
    tile = Sym(name)
    keep = [k for k, w in enumerate(coords) if isinstance(w, Interval)]

    def local_idx(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(minus(idx[k], coords[k].lo) for k in keep)  # type: ignore[union-attr]

    def fix(old: UseNode, new: UseNode) -> Node:
        match new:
            case Read() | Assign() | Reduce():
                return new.replace(sym=tile, idx=local_idx(new.idx))
            case WindowExpr():
                out: list[WAccess] = []
                for k in keep:
                    c = new.idx[k]
                    off = coords[k].lo  # type: ignore[union-attr]
                    if isinstance(c, Point):
                        out.append(Point(minus(c.pt, off)))
                    else:
                        out.append(Interval(minus(c.lo, off), minus(c.hi, off)))
                return new.replace(sym=tile, idx=tuple(out))
            case _:
                return new

    staged = rebuild(stmts, buf, fix)
    names = used_names(ir) | {name}
    iters = [Sym(fresh_name(names, "i")) for _ in keep]
    elem: DataType = btype.elem
    alloc = Alloc(tile, TensorType(elem, extents) if keep else elem, mem)

    def nest(make: Any) -> Stmt:
        big = list(coords)
        small: list[Expr] = []
        for k, it in zip(keep, iters, strict=True):
            w = coords[k]
            assert isinstance(w, Interval)
            v = Read(it, (), INDEX)
            big[k] = Point(simplified(af.Aff.var(it) + af.to_aff(w.lo)))  # type: ignore[operator]
            small.append(v)
        bidx = tuple(c.pt for c in big if isinstance(c, Point))
        body: Stmt = make(bidx, tuple(small))
        if guard:
            body = If(_in_bounds(bidx, btype.shape, guard), (body,), ())
        for k, it in reversed(list(zip(keep, iters, strict=True))):
            body = For(it, int_const(0), extents[keep.index(k)], (body,))
        return body

    # which sides of which dimensions the load and store must guard (not proven in bounds)
    guard: dict[int, tuple[bool, bool]] = {}
    for d, (w, n) in enumerate(zip(coords, btype.shape, strict=True)):
        start = w.lo if isinstance(w, Interval) else w.pt
        low = not _proven(ir, first, int_const(0), start, False)
        if isinstance(w, Interval):
            high = not _proven(ir, first, w.hi, n, False)
        else:
            high = not _proven(ir, first, start, n, True)
        if low or high:
            guard[d] = (low, high)
    zero = Const(0.0 if elem.is_float() else 0, elem)
    new: list[Stmt] = [alloc]
    if load:
        new.append(nest(lambda b, s: Assign(tile, s, Read(buf, b, elem))))
    elif accum:
        new.append(nest(lambda b, s: Assign(tile, s, zero)))
    new.extend(staged)
    if store:
        if accum:
            new.append(nest(lambda b, s: Reduce(buf, b, Read(tile, s, elem))))
        else:
            new.append(nest(lambda b, s: Assign(buf, b, Read(tile, s, elem))))
    ed = Editor(ir)
    out = ed.replace(loc, new, same=same_pairs(stmts, staged), hint="restaged by stage_mem")
    paths = out.stmt_paths()
    if not unsafe_skip_checks:
        # 10. the windows of parallel iterations must not overlap where they are stored
        node: Any = ir
        for k in range(len(first) - 1):
            attr, i = first[k]
            node = getattr(node, attr)[i]
            if isinstance(node, For) and node.mode == "par":
                try:
                    check_parallel(ed.ir, first[: k + 1], primitive=NAME)
                except ParallelError as e:
                    raise safety(StageParallelError, NAME, e, block) from e
    k0 = 2 if (load or accum) else 1
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
    "StageMemCursors",
    "StageMemoryError",
    "StageNameError",
    "StageNoAccessError",
    "StageOutsideWindowError",
    "StageParallelError",
    "StagePartialWriteError",
    "StageWindowBoundsError",
    "StageWindowError",
    "stage_mem",
]
