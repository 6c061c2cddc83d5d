"""``bind_loop``: run a loop's iterations on CUDA blocks or threads.

A loop bound to ``blockIdx.x`` becomes the grid's x dimension (one block per iteration); a
loop bound to ``threadIdx.x`` the block's x dimension (one thread per iteration). Binding is a
``par`` loop with an axis, ``for t in par(0, 64, axis="threadIdx.x")``: the interpreter runs
it as a loop, so a bound proc stays checkable against its input on random data.
"""

from __future__ import annotations

from cursched.analysis.checks import ParallelError, check_parallel
from cursched.analysis.kernels import (
    MAX_THREADS,
    ancestors,
    const_trip,
    is_block_loop,
    kernel_layout,
    scope_of,
)
from cursched.cursors import Editor, ForCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import update_at
from cursched.errors import BadArgumentError, RaceError, ScopeError, ShapeMismatchError
from cursched.ir.nodes import CUDA_AXES, For, ProcDef, Scope
from cursched.ir.paths import Path, get_at
from cursched.ir.traversal import free_syms_expr, walk_stmts
from cursched.primitives.loops.loop_common import safety
from cursched.primitives.registry import (
    PrimCursors,
    checks_passed,
    fail,
    prim_cursors,
    primitive,
)
from cursched.proc import Proc

_NAME = "bind_loop"


class BindAxisError(BadArgumentError):
    """bind_loop, precondition 1: the axis is not one of ``blockIdx.x|y|z``,
    ``threadIdx.x|y|z``."""


class BindOutsideKernelError(ShapeMismatchError):
    """bind_loop, precondition 2: the loop is not inside a ``target="cuda"`` scope."""


class BindAxisTwiceError(ShapeMismatchError):
    """bind_loop, precondition 3: a loop around or inside it is bound to the same axis."""


class BindBlockNestingError(ShapeMismatchError):
    """bind_loop, precondition 4: a block loop sits inside something other than block loops
    (block loops enclose thread loops, never the other way round)."""


class BindGridBoundsError(ScopeError):
    """bind_loop, precondition 5: a block loop's bounds use more than the proc's arguments."""


class BindTripCountError(ShapeMismatchError):
    """bind_loop, precondition 6: a thread loop's trip count is not a constant."""


class BindThreadLimitError(BadArgumentError):
    """bind_loop, precondition 7: the block would have more than 1024 threads."""


class BindRaceError(RaceError):
    """bind_loop, precondition 8: the loop's iterations are not independent."""


@prim_cursors
class BindLoopCursors(PrimCursors):
    """What ``bind_loop`` returns.

    Attributes:
        loop: the bound loop.
    """

    loop: ForCursor


def _check_axis(axis: object, loop: ForCursor) -> str:
    if axis not in CUDA_AXES:
        msg = f"axis {axis!r} is not one of {', '.join(CUDA_AXES)}"
        raise fail(BindAxisError, _NAME, msg, loop)
    return str(axis)


def _check_in_kernel(ir: ProcDef, path: Path, loop: ForCursor) -> tuple[Path, Scope]:
    found = scope_of(ir, path)
    if found is None:
        msg = f"loop {loop.loop().iter.name} is not inside a scope with target='cuda'"
        raise fail(BindOutsideKernelError, _NAME, msg, loop)
    return found


def _check_axis_once(ir: ProcDef, path: Path, axis: str, loop: ForCursor) -> None:
    around = [s for _, s in ancestors(ir, path) if isinstance(s, For)]
    inside = [s for s in walk_stmts(loop.loop().body) if isinstance(s, For)]
    for s in (*around, *inside):
        if s.axis == axis:
            msg = f"loop {s.iter.name} is already bound to {axis} on this path"
            raise fail(BindAxisTwiceError, _NAME, msg, loop)


def _check_block_nesting(ir: ProcDef, path: Path, scope_path: Path, loop: ForCursor) -> None:
    for apath, s in ancestors(ir, path):
        if len(apath) > len(scope_path) and not is_block_loop(s):
            msg = (
                f"block loop {loop.loop().iter.name} is inside {type(s).__name__.lower()}"
                " that is not a block loop: block loops must enclose everything else"
            )
            raise fail(BindBlockNestingError, _NAME, msg, loop)


def _check_grid_bounds(ir: ProcDef, loop: ForCursor) -> None:
    L = loop.loop()
    params = {a.sym for a in ir.args}
    used = free_syms_expr(L.lo) | free_syms_expr(L.hi)
    if not used <= params:
        names = ", ".join(sorted(s.name for s in used - params))
        msg = f"the grid is computed before the launch: the bounds of {L.iter.name} use {names}"
        raise fail(BindGridBoundsError, _NAME, msg, loop)


def _check_trip(loop: ForCursor) -> int:
    n = const_trip(loop.loop())
    if n is None:
        msg = f"thread loop {loop.loop().iter.name} needs constant bounds (the block size)"
        raise fail(BindTripCountError, _NAME, msg, loop)
    return n


def _check_thread_limit(
    ir: ProcDef, path: Path, scope_path: Path, axis: str, loop: ForCursor
) -> None:
    bound = update_at(ir, path, lambda s: s.replace(mode="par", axis=axis))
    node = get_at(bound, scope_path)
    assert isinstance(node, Scope)
    lay = kernel_layout(node)
    if lay.threads() > MAX_THREADS:
        dims = " x ".join(f"{a}={n}" for a, n in sorted(lay.block_dims.items()))
        msg = f"the block would have {lay.threads()} threads ({dims}); at most {MAX_THREADS}"
        raise fail(BindThreadLimitError, _NAME, msg, loop)


@primitive
def bind_loop(
    proc: Proc, loop: ForCursor, axis: str, unsafe_skip_checks: bool = False
) -> Rewrite[BindLoopCursors]:
    """Bind a loop inside a cuda scope to a CUDA block or thread index.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor or a loop name).
        axis: ``"blockIdx.x"``, ``"blockIdx.y"``, ``"blockIdx.z"``, ``"threadIdx.x"``,
            ``"threadIdx.y"`` or ``"threadIdx.z"``.
        unsafe_skip_checks: skip precondition 8 (you promise the iterations are independent).

    Returns:
        The new proc and ``BindLoopCursors``:
        ``loop``: the bound loop (now ``par(lo, hi, axis=...)``).

    Preconditions:
        1. ``axis`` is one of the six axes (``BindAxisError``).
        2. the loop is inside a ``target="cuda"`` scope (``BindOutsideKernelError``).
        3. no loop around it or inside it is bound to ``axis`` (``BindAxisTwiceError``).
        4. a block loop is inside block loops only, up to its scope (``BindBlockNestingError``).
        5. a block loop's bounds read only the proc's arguments: the grid is computed on the
           host before the launch (``BindGridBoundsError``).
        6. a thread loop has constant bounds (``BindTripCountError``).
        7. the block, as wide on each axis as its widest thread loop, has at most 1024 threads
           (``BindThreadLimitError``).
        8. the loop's iterations are independent (``BindRaceError``, proven by
           ``cursched.analysis.checks.check_parallel``, with a counterexample).

    Forwards/Kills:
        The loop keeps its identity (``loop`` forwards to the bound loop). Nothing dies.

    Example:
        ``bind_loop(p, "t", "threadIdx.x")``::

            with scope("k", target="cuda"):  ->  with scope("k", target="cuda"):
                for t in seq(0, 64):                 for t in par(0, 64, axis="threadIdx.x"):
                    y[t] = x[t]                          y[t] = x[t]
    """
    ir, path = proc.ir(), loop.path()
    ax = _check_axis(axis, loop)
    scope_path, _ = _check_in_kernel(ir, path, loop)
    _check_axis_once(ir, path, ax, loop)
    if ax.startswith("blockIdx"):
        _check_block_nesting(ir, path, scope_path, loop)
        _check_grid_bounds(ir, loop)
    else:
        _check_trip(loop)
        _check_thread_limit(ir, path, scope_path, ax, loop)
    if not unsafe_skip_checks:
        try:
            check_parallel(ir, path, primitive=_NAME)
        except ParallelError as e:
            raise safety(BindRaceError, _NAME, e, loop) from e
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(loop.as_block().block(), (loop.loop().replace(mode="par", axis=ax),))
    return ed.done(BindLoopCursors, loop=NodeLoc(out.stmt_paths()[0]))
