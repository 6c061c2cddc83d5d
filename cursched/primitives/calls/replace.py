"""``replace``: replace a block by a call of a proc (an ``@instr`` instruction, typically)
whose body means the same thing.

Registered with ``@primitive`` (``cursched.primitives.registry``). The matching itself is
``cursched.primitives.calls.unify``; the call-site obligations (argument shapes, windows in bounds,
sizes positive, the callee's asserts, strides included) are
``cursched.analysis.conditions.check_call_preconditions``. Unlike Exo 1.0 (its issue 758),
an instruction's asserts are proven where the call lands, never assumed.
"""

from __future__ import annotations

from cursched.analysis.aliasing import call_overlaps, refusal, sequential_or_why
from cursched.analysis.checks import SafetyError
from cursched.analysis.conditions import check_call_preconditions
from cursched.analysis.context import context_of
from cursched.cursors import BlockCursor, CallCursor, Editor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import (
    AliasError,
    BadArgumentError,
    DependenceError,
    NotProvenError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.nodes import Call, ProcDef
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_expr
from cursched.ir.types import ControlType
from cursched.primitives.calls.unify import (
    Unifier,
    UnifyError,
    UnifyMemoryError,
    UnifyUnboundError,
    fresh_expr,
)
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc

NAME = "replace"


class ReplaceNotProcError(BadArgumentError):
    """replace, precondition 1: the replacement is not a ``Proc``."""


class ReplaceMismatchError(ShapeMismatchError):
    """replace, precondition 2: the block does not match the callee's body (structure,
    operators, types, loop bounds or accessed elements)."""


class ReplaceMemoryError(TypeMismatchError):
    """replace, precondition 3: a buffer of the block lives in another memory than the
    instruction's parameter requires."""


class ReplaceUnboundError(ShapeMismatchError):
    """replace, precondition 4: a parameter of the callee is not fixed by the block."""


class ReplaceAssertError(NotProvenError):
    """replace, precondition 5: at the call site, an argument's shape, a window's bounds, a
    size's positivity or an assert of the callee (``stride`` conditions included) does not
    provably hold."""


class ReplaceAliasError(AliasError, DependenceError):
    """replace, precondition 6: two window arguments of the new call may overlap while the
    instruction writes one of them (its C template may access them in another order than
    its body)."""


@prim_cursors
class ReplaceCursors(PrimCursors):
    """What ``replace`` returns.

    Attributes:
        call: the new call statement.
    """

    call: CallCursor


@primitive
def replace(
    proc: Proc, block: BlockCursor, instr: Proc, unsafe_skip_checks: bool = False
) -> Rewrite[ReplaceCursors]:
    """Replace ``block`` by a call of ``instr`` whose body it matches.

    The block is unified with the callee's body: the callee's loop variables map to the
    block's, its control parameters bind to the block's expressions (``N`` of
    ``for i in seq(0, N)`` to the trip count), its tensor parameters to windows of the
    block's buffers and its data scalars to scalar reads. Every equality the match needs is
    proven, then the call's own obligations are proven where it lands.

    Args:
        proc: the proc to rewrite.
        block: the statements to replace (a block, a statement, or a pattern).
        instr: the proc to call (an ``@instr`` instruction or any proc).
        unsafe_skip_checks: skip precondition 5 (you promise the call's asserts hold, e.g. an
            alignment the analysis cannot see). The match itself is always checked.

    Returns:
        The new proc and ``ReplaceCursors``:
        ``call``: the new call.

    Preconditions:
        1. ``instr`` is a ``Proc`` (``ReplaceNotProcError``).
        2. the block matches the callee's body statement by statement: same kinds, operators,
           constants, externs and data types; loop bounds and conditions provably equal;
           every access provably the same element of the window found for its parameter; no
           parameter bound to two different buffers or scalars; nothing bound depends on a
           loop variable of the block (``ReplaceMismatchError``).
        3. every buffer bound to a parameter lives in the parameter's memory
           (``ReplaceMemoryError``).
        4. every parameter is fixed by the match (``ReplaceUnboundError``).
        5. the call is valid where it lands: argument shapes equal the parameters', windows
           in bounds, sizes positive, and the callee's asserts (``N == 8``,
           ``stride(src, 0) == 1``, ...) provably hold there (``ReplaceAssertError``, with a
           counterexample; the ``SafetyError`` is its ``__cause__``). This is what Exo 1.0's
           ``replace`` skips (Exo issue 758).
        6. no two pointer arguments of the call may overlap while the callee writes one,
           unless the callee is sequential (no instruction, no ``par`` loop) or they are
           one window the callee touches pointwise (``add(acc, acc, y)``): an
           instruction's template may load all, then store, which an overlap makes
           observable (``ReplaceAliasError``, naming both windows; not skipped by
           ``unsafe_skip_checks``). See docs/semantics.md, "Aliasing".

    Forwards/Kills:
        Kills the block's statements (hint: "replaced by a call of `instr`; use .call").
        Every other statement keeps its identity.

    Example:
        ``replace(p, "for ii in _: _", load4)`` with
        ``@instr("load4({dst_data}, {src_data});") def load4(dst: [f32][4], src: [f32][4])``::

            for ii in seq(0, 4):            ->    load4(t[0:4], A[4 * io:4 * io + 4])
                t[ii] = A[4 * io + ii]
    """
    if not isinstance(instr, Proc):
        raise fail(
            ReplaceNotProcError, NAME, f"wants a Proc to call, got {type(instr).__name__}", block
        )
    ir = proc.ir()
    callee = instr.ir()
    u = Unifier(ir, callee)
    try:
        u.block(callee.body, block.stmts(), block.paths())
        args = u.args()
    except UnifyMemoryError as e:
        raise fail(ReplaceMemoryError, NAME, str(e), block) from e
    except UnifyUnboundError as e:
        raise fail(ReplaceUnboundError, NAME, str(e), block) from e
    except UnifyError as e:
        raise fail(
            ReplaceMismatchError, NAME, f"the block does not match {callee.name}: {e}", block
        ) from e
    ed = Editor(ir)
    loc = block.block()
    new = ed.replace(
        loc,
        (Call(callee, tuple(fresh_expr(a) for a in args)),),
        hint=f"replaced by a call of `{callee.name}`; use .call",
    )
    path = new.stmt_paths()[0]
    try:
        if not unsafe_skip_checks:
            check_call_preconditions(ed.ir, path, primitive=NAME)
    except SafetyError as e:
        shown = e.message.removeprefix(f"{NAME}: ")
        shown = shown.replace("out of bounds: assert", "cannot prove assert", 1)
        bound = [
            f"{a.sym.name} = {print_expr(v)}"
            for a, v in zip(callee.args, args, strict=True)
            if isinstance(a.type, ControlType)
        ]
        given = f"\n  with {', '.join(bound)}" if bound else ""
        raise fail(
            ReplaceAssertError,
            NAME,
            f"the call of {callee.name} would not be valid here: {shown}{given}",
            block,
        ) from e
    _check_no_overlap(ed.ir, path, block)
    return ed.done(ReplaceCursors, call=NodeLoc(path))


def _check_no_overlap(ir: ProcDef, path: Path, block: BlockCursor) -> None:
    """Precondition 6 at the new call (the proc's own parameters count as separate: calls
    of the proc are checked where they are, and the C backend checks the whole unit)."""
    call = get_at(ir, path)
    assert isinstance(call, Call)
    why = sequential_or_why(call.proc)
    if why is None:
        return
    for o in call_overlaps(call, context_of(ir, path), lambda _s: True):
        if not o.pointwise:
            raise fail(ReplaceAliasError, NAME, refusal(o, why), block)


__all__ = [
    "ReplaceAliasError",
    "ReplaceAssertError",
    "ReplaceCursors",
    "ReplaceMemoryError",
    "ReplaceMismatchError",
    "ReplaceNotProcError",
    "ReplaceUnboundError",
    "replace",
]
