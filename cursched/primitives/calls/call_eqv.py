"""``call_eqv``: swap the callee of a call for a proc proven equivalent to it.

Registered with ``@primitive`` (``cursched.primitives.registry``). What counts as proven
equivalent is decided from the procs' histories (contract 2: a ``Proc`` remembers the steps
that made it); see ``equivalence_story``.
"""

from __future__ import annotations

import inspect

from cursched.cursors import CallCursor, Editor, NodeLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.errors import NotProvenError, ShapeMismatchError, TypeMismatchError
from cursched.ir.alpha import alpha_equal
from cursched.ir.nodes import Call, ProcDef
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

NAME = "call_eqv"

# Steps after which a proc may behave differently from its parent: a check was skipped, or
# the step changes the precision of arithmetic by design.
_NOT_EQUIVALENT = frozenset({"set_precision"})


class CallEqvNotCallError(ShapeMismatchError):
    """call_eqv, precondition 1: the statement is not a call, or the replacement is not a
    ``Proc``."""


class CallEqvSignatureError(TypeMismatchError):
    """call_eqv, precondition 2: the two procs' parameters differ (number, kinds, types,
    window-ness or memories)."""


class CallEqvNotProvenError(NotProvenError):
    """call_eqv, precondition 3: nothing shows the two procs equivalent (neither alpha-equal
    nor one derived from the other by checked scheduling steps)."""


@prim_cursors
class CallEqvCursors(PrimCursors):
    """What ``call_eqv`` returns.

    Attributes:
        call: the call, now of the other proc.
    """

    call: CallCursor


def _same_up_to_name(a: ProcDef, b: ProcDef) -> bool:
    return alpha_equal(a.replace(name=b.name), b)


def _unsafe_step(q: Proc) -> str | None:
    """Why the step that made ``q`` may not preserve behaviour (None when it does)."""
    step = q.step()
    if step is None:
        return None
    if step.primitive in _NOT_EQUIVALENT:
        return f"v{q.version} was made by {step.primitive}, which changes precision"
    kwargs = dict(step.kwargs)
    if not kwargs.get("unsafe_skip_checks", False) and step.args:
        # A positional unsafe_skip_checks: find its position from the primitive's signature.
        import cursched.primitives as prims

        fn = getattr(prims, step.primitive, None)
        if fn is not None:
            names = list(inspect.signature(fn).parameters)[1:]
            kwargs.update(zip(names, step.args, strict=False))
    if kwargs.get("unsafe_skip_checks", False):
        return f"v{q.version} was made by {step.primitive} with unsafe_skip_checks=True"
    return None


def _lineage(p: Proc) -> list[tuple[Proc, list[str]]]:
    """``p`` and its ancestors, newest first, each with the unsafe steps between it and ``p``."""
    out: list[tuple[Proc, list[str]]] = []
    unsafe: list[str] = []
    q: Proc | None = p
    while q is not None:
        out.append((q, list(unsafe)))
        why = _unsafe_step(q)
        if why is not None:
            unsafe.append(why)
        q = q.parent()
    return out


def callee_proc(proc: Proc, callee: ProcDef) -> Proc | None:
    """The ``Proc`` whose IR is ``callee``, when ``proc``'s history handed it to a step (the
    instruction of a ``replace``, the other proc of a ``call_eqv``, the new proc of an
    ``extract_subproc``); None otherwise (e.g. a call written in the source)."""
    q: Proc | None = proc
    while q is not None:
        step = q.step()
        if step is not None:
            values = [*step.args, *(v for _, v in step.kwargs), *(v for _, v in step.results)]
            for v in values:
                if isinstance(v, Proc) and v.ir() is callee:
                    return v
        q = q.parent()
    return None


def equivalence_story(callee: ProcDef, other: Proc, known: Proc | None = None) -> tuple[bool, str]:
    """Whether ``other`` is proven equivalent to ``callee``, and why (or why not).

    Accepted:
        1. ``other`` is alpha-equal to ``callee`` (the procs' own names aside);
        2. a version in ``other``'s history (``other``, its parent, ...) is alpha-equal to
           ``callee`` (names aside): ``other`` was scheduled from the callee;
        3. ``known`` (the callee's ``Proc``, see ``callee_proc``) and ``other`` have a common
           ancestor (the same version, or alpha-equal versions): both were scheduled from
           it, or the callee was scheduled from ``other``.

    In cases 2 and 3 every step on the way must keep behaviour: no step ran with
    ``unsafe_skip_checks=True`` and none is ``set_precision`` (every other primitive proves
    its rewrite, docs/architecture.md, contract 7).
    """
    if _same_up_to_name(callee, other.ir()):
        return True, "alpha-equal"
    theirs = _lineage(other)
    # Without the callee's Proc, its IR stands for it: an ancestor with no history of its own.
    mine: list[tuple[Proc | None, list[str]]] = [*_lineage(known)] if known else [(None, [])]

    def same(a: Proc | None, b: Proc, alpha: bool) -> bool:
        ir = callee if a is None else a.ir()
        if alpha:
            return _same_up_to_name(b.ir(), ir)
        return b.ir() is ir if a is None else a is b

    # Identity first (cheap, and the common case), then up to alpha-equivalence.
    for alpha in (False, True):
        for a, ua in mine:
            for b, ub in theirs:
                if not same(a, b, alpha):
                    continue
                if ua or ub:
                    return False, "; ".join([*ua, *ub])
                return True, f"both scheduled from {b.name()} v{b.version} by checked steps"
    return False, f"no version of {other.name()} is alpha-equal to a version of {callee.name}"


def _signature_diff(a: ProcDef, b: ProcDef) -> str | None:
    if len(a.args) != len(b.args):
        return f"{a.name} takes {len(a.args)} parameters, {b.name} {len(b.args)}"
    for k, (x, y) in enumerate(zip(a.args, b.args, strict=True)):
        tx, ty = x.type, y.type
        same_kind = type(tx) is type(ty)
        if same_kind and hasattr(tx, "elem"):
            same_kind = (tx.elem, tx.rank(), tx.window) == (ty.elem, ty.rank(), ty.window)  # type: ignore[union-attr]
        elif same_kind:
            same_kind = tx == ty
        if not same_kind:
            return f"parameter {k} ({x.sym.name}) is {tx} in {a.name}, {ty} in {b.name}"
        if x.mem is not y.mem:
            return f"parameter {k} ({x.sym.name}) lives in different memories"
    return None


@primitive
def call_eqv(proc: Proc, call: StmtCursor, other: Proc) -> Rewrite[CallEqvCursors]:
    """Make ``call`` call ``other`` instead of its callee, when the two are proven equivalent.

    Args:
        proc: the proc to rewrite.
        call: the call statement.
        other: the proc to call instead.

    Returns:
        The new proc and ``CallEqvCursors``:
        ``call``: the call, now of ``other``.

    Preconditions:
        1. ``call`` is a call and ``other`` a ``Proc`` (``CallEqvNotCallError``).
        2. the parameters agree one to one: same kinds, control types, element types, ranks,
           window-ness and memories (``CallEqvSignatureError``).
        3. ``other`` is proven equivalent to the callee (``CallEqvNotProvenError``): it is
           alpha-equal to it (the procs' names aside); or it was scheduled from it (a
           version in ``other``'s history is alpha-equal to the callee); or, when ``proc``'s
           history holds the callee's ``Proc`` (it came from ``replace``, ``call_eqv`` or
           ``extract_subproc``), the two share an ancestor version. Every step on the way
           must keep behaviour: none ran with ``unsafe_skip_checks=True`` and none is
           ``set_precision``; every other primitive proves its rewrite (contract 7). A call
           written in the source holds only the callee's IR: a proc scheduled from it is
           accepted, its ancestors are not.

    Forwards/Kills:
        ``call`` forwards to the new call. Nothing dies.

    Example:
        ``call_eqv(p, "scal(_)", scal_split)`` with
        ``scal_split = rename(split(scal, "i", 4)[0], "scal_split")[0]``::

            scal(n, x)        ->    scal_split(n, x)    # the call is the same statement
    """
    other_ir = other.ir() if isinstance(other, Proc) else None
    if not isinstance(call, CallCursor) or other_ir is None:
        what = call.describe() if not isinstance(call, CallCursor) else type(other).__name__
        raise fail(CallEqvNotCallError, NAME, f"wants a call and a Proc, got {what}", call)
    s = call.node()
    assert isinstance(s, Call)
    diff = _signature_diff(s.proc, other_ir)
    if diff is not None:
        raise fail(CallEqvSignatureError, NAME, diff, call)
    ok, why = equivalence_story(s.proc, other, callee_proc(proc, s.proc))
    if not ok:
        raise fail(
            CallEqvNotProvenError,
            NAME,
            f"{other_ir.name} is not proven equivalent to {s.proc.name}: {why}",
            call,
        )
    checks_passed()
    ed = Editor(proc.ir())
    new = s.replace(proc=other_ir)
    loc = ed.replace_node(NodeLoc(call.path()), new, same=[(s, new)])
    # No new obligation at the call: an accepted ``other`` has the callee's asserts and
    # parameter shapes (alpha-equal, or scheduled from it: no primitive changes either).
    return ed.done(CallEqvCursors, call=loc)


__all__ = [
    "CallEqvCursors",
    "CallEqvNotCallError",
    "CallEqvNotProvenError",
    "CallEqvSignatureError",
    "call_eqv",
    "callee_proc",
    "equivalence_story",
]
