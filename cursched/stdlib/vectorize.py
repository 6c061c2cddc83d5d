"""``vectorize``: a loop of lane-wise statements into vector instructions, scalar tail."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cursched.analysis.affine import Aff, Div, Mod, to_aff
from cursched.cursors import AllocCursor, CallCursor, Cursor, ForCursor, StmtCursor
from cursched.cursors.stmts import AssignCursor, ReduceCursor
from cursched.errors import SchedulingError
from cursched.ir.memory import Memory
from cursched.ir.nodes import Alloc, Assign, Read, Reduce
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr, walk_expr, walk_exprs, walk_stmts
from cursched.primitives.buffers.stage import stage_mem
from cursched.primitives.loops.loop_split import SplitNotPerfectError, split
from cursched.primitives.registry import PrimCursors, fail
from cursched.proc import Proc
from cursched.stdlib.calls import replace_all

__all__ = [
    "VectorizeAccessError",
    "VectorizeBodyError",
    "VectorizeCursors",
    "VectorizeNoInstrError",
    "VectorizeWidthError",
    "vectorize",
]

NAME = "vectorize"


class VectorizeWidthError(SchedulingError):
    """vectorize, precondition 1: ``width`` is not the memory's number of lanes."""


class VectorizeBodyError(SchedulingError):
    """vectorize, precondition 2: the loop body is not assignments and reductions."""


class VectorizeAccessError(SchedulingError):
    """vectorize, precondition 3: an access uses the loop variable other than as ``+ i`` in
    exactly one dimension, or one buffer is accessed through two windows."""


class VectorizeNoInstrError(SchedulingError):
    """vectorize, precondition 4: a staged loop matches none of the instructions."""


@dataclass(frozen=True, repr=False, eq=False)
class VectorizeCursors(PrimCursors):
    """What ``vectorize`` returns.

    Attributes:
        outer: the loop over vectors (the input loop forwards here).
        tail: the scalar loop over the last ``n % width`` iterations, or an invalid cursor
            when the width provably divides the trip count.
        calls: the instruction calls made, in program order of creation.
        allocs: the vector registers, one per distinct access.
    """

    outer: ForCursor
    tail: ForCursor | Cursor
    calls: tuple[CallCursor, ...]
    allocs: tuple[AllocCursor, ...]


def _check_width(memory: type[Memory], width: int, loop: ForCursor) -> None:
    lanes = getattr(memory, "lanes", width)
    if isinstance(width, bool) or not isinstance(width, int) or width < 2 or width != lanes:
        raise fail(
            VectorizeWidthError, NAME, f"width {width!r}, but {memory.name()} has {lanes}", loop
        )


def _check_body(loop: ForCursor) -> list[AssignCursor | ReduceCursor]:
    stmts = list(loop.body())
    if not stmts or not all(isinstance(s, AssignCursor | ReduceCursor) for s in stmts):
        raise fail(VectorizeBodyError, NAME, "the body must be `=` and `+=` statements", loop)
    return stmts  # type: ignore[return-value]


def _windows(loop: ForCursor, width: int) -> list[tuple[str, str]]:
    """``(buffer, window text)`` of every distinct access using the loop variable."""
    node = loop.loop()
    it = node.iter
    out: list[tuple[str, str]] = []
    for s in node.body:
        assert isinstance(s, Assign | Reduce)
        lhs = Read(s.sym, s.idx, s.rhs.type)
        for e in (lhs, *walk_expr(s.rhs)):
            if not isinstance(e, Read) or not e.idx:
                continue
            uses = [k for k, ix in enumerate(e.idx) if it in free_syms_expr(ix)]
            if not uses:
                continue
            coords = []
            for k, ix in enumerate(e.idx):
                text = print_expr(ix)
                if k not in uses:
                    coords.append(text)
                    continue
                lo = re.sub(rf"\b{re.escape(it.name)}\b", "0", text)
                a = to_aff(ix)
                # the lane index: the variable with coefficient 1, nowhere inside / or %
                unit = a is not None and a.coeff(it) == 1 and it not in _nested_syms(a)
                if len(uses) != 1 or not unit:
                    raise fail(
                        VectorizeAccessError,
                        NAME,
                        f"access {print_expr(e)}: the loop variable must appear as `+ {it.name}`"
                        " in one dimension",
                        loop,
                    )
                coords.append(f"{lo}:{lo} + {width}")
            w = (e.sym.name, f"{e.sym.name}[{', '.join(coords)}]")
            if any(b == w[0] and t != w[1] for b, t in out):
                raise fail(
                    VectorizeAccessError,
                    NAME,
                    f"{e.sym.name} is accessed through two windows ({w[1]} and another):"
                    " each buffer must be one register",
                    loop,
                )
            if w not in out:
                out.append(w)
    return out


def _nested_syms(a: Aff) -> set[Sym]:
    """Variables appearing inside a division or modulo of ``a``."""
    out: set[Sym] = set()
    for atom, _ in a.terms:
        if isinstance(atom, Div | Mod):
            out |= atom.num.syms()
    return out


def vectorize(
    p: Proc,
    loop: ForCursor | str,
    width: int,
    memory: type[Memory],
    instrs: Sequence[Proc],
    names: tuple[str, str] | None = None,
) -> tuple[Proc, VectorizeCursors]:
    """Vectorize a loop of lane-wise statements: split it by ``width``, stage every access
    that uses the loop variable in a ``memory`` register, replace the lane loops by
    ``instrs``; the last ``n % width`` iterations stay a scalar loop.

    Args:
        p: the proc.
        loop: the loop (cursor or name); its body is ``=``/``+=`` statements whose accesses
            use the loop variable as ``... + i`` in one dimension.
        width: the vector width (the memory's lanes).
        memory: the register memory (``AVX2``, ``AVX512``).
        instrs: the loads, stores and operations to replace the lane loops with (tried in
            order, as ``replace_all``).
        names: the outer and inner loop names (default ``io``/``ii``-style, from ``split``).

    Returns:
        The new proc and ``VectorizeCursors`` (``outer``, ``tail``, ``calls``, ``allocs``).

    Preconditions:
        1. ``width`` equals the memory's lanes (``VectorizeWidthError``).
        2. the body is assignments and reductions (``VectorizeBodyError``).
        3. each access uses the loop variable as ``+ i`` in one dimension, and each buffer
           is accessed through one window (``VectorizeAccessError``).
        4. every staged lane loop matches an instruction (``VectorizeNoInstrError``: the
           proc so far is in the message; add the missing instruction).
        And those of ``split`` and ``stage_mem``, with their error classes.

    Forwards/Kills:
        ``loop`` forwards to ``outer``; the replaced lane loops die (as ``replace``).

    Example:
        ``vectorize(p, "i", 8, AVX2, [mm256_loadu_ps, mm256_add_ps, mm256_storeu_ps])``::

            for i in seq(0, n):            ->    for io in seq(0, n / 8):
                z[i] = x[i] + y[i]                   x_v: f32[8] @ AVX2
                                                     ...
                                                     mm256_loadu_ps(x_v[0:8], x[8 * io:8 * io + 8])
                                                     mm256_loadu_ps(y_v[0:8], y[8 * io:8 * io + 8])
                                                     mm256_add_ps(z_v[0:8], x_v[0:8], y_v[0:8])
                                                     mm256_storeu_ps(z[8 * io:8 * io + 8], z_v[0:8])
                                                 for ii in seq(0, n % 8):
                                                     z[ii + n / 8 * 8] = x[...] + y[...]
    """
    lp = p.find_loop(loop) if isinstance(loop, str) else p.forward(loop)
    assert isinstance(lp, ForCursor)
    _check_width(memory, width, lp)
    _check_body(lp)
    try:
        p, sp = split(p, lp, width, names, tail="perfect")
    except SplitNotPerfectError:
        p, sp = split(p, lp, width, names, tail="cut")
    inner = sp.inner
    allocs: list[AllocCursor] = []
    # every name of the proc: stage_mem refuses one used anywhere (a second vectorize of a
    # loop over the same buffer would take the first one's register name)
    taken = {a.sym.name for a in p.ir().args}
    taken |= {s.sym.name for s in walk_stmts(p.ir().body) if isinstance(s, Alloc)}
    for buf, window in _windows(inner, width):
        name = f"{buf}_v"
        while name in taken:
            name += "_"
        taken.add(name)
        p, st = stage_mem(p, p.forward(inner), window, name, memory=memory)
        allocs.append(st.alloc)
    region = p.forward(sp.outer)
    assert isinstance(region, ForCursor)
    p, made = replace_all(p, instrs, within=region)
    region = p.forward(sp.outer)
    assert isinstance(region, ForCursor)
    left = [
        s
        for s in region.body()
        if isinstance(s, ForCursor) and _touches(s, {a.name() for a in allocs})
    ]
    if left:
        raise fail(
            VectorizeNoInstrError,
            NAME,
            f"no instruction of {[i.name() for i in instrs]} matches this lane loop",
            left[0],
        )
    outer = p.forward(sp.outer)
    tail = p.forward(sp.tail) if sp.tail else sp.tail
    fwd_allocs = tuple(a for a in (p.forward(x) for x in allocs) if isinstance(a, AllocCursor))
    assert isinstance(outer, ForCursor)
    return p, VectorizeCursors(
        outer, tail if isinstance(tail, Cursor) else sp.tail, made.calls, fwd_allocs
    )


def _touches(s: StmtCursor, names: set[str]) -> bool:
    """Whether statement ``s`` reads or writes a buffer named in ``names``."""
    body = (s.node(),)
    reads = any(isinstance(e, Read) and e.sym.name in names for e in walk_exprs(body))
    writes = any(isinstance(t, Assign | Reduce) and t.sym.name in names for t in walk_stmts(body))
    return reads or writes
