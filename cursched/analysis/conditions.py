"""Facts about conditions and calls at a position, for the primitives that need them.

- ``decide_condition``: is a control condition always true, always false, or neither, where
  a position is reached (``eliminate_dead_code``, ``specialize``)?
- ``check_always``: prove a condition at a position, or give values where it fails.
- ``check_call_preconditions``: the call at a position passes arguments of the callee's
  shapes and satisfies the callee's asserts (``replace``, ``call_eqv``, ``extract_subproc``).
"""

from __future__ import annotations

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.bounds import check_stmt_bounds
from cursched.analysis.checks import SafetyError
from cursched.analysis.context import context_of
from cursched.errors import BoundsError, NotProvenError
from cursched.ir.nodes import Call, Expr, ProcDef
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_expr


class ConditionError(SafetyError, NotProvenError):
    """A condition does not provably hold where it must."""


class CallPreconditionError(SafetyError, NotProvenError):
    """A call's arguments do not provably fit the callee (shapes or asserts)."""


def decide_condition(p: ProcDef, path: Path, cond: Expr) -> bool | None:
    """True when ``cond`` holds whenever ``path`` is reached, False when it never does,
    None when it depends (or is not an affine condition).

    A position that is never reached (contradictory context) answers True.
    """
    prop = af.to_prop(cond)
    if prop is None:
        return None
    facts = context_of(p, path).props()
    if smt.valid(prop, facts).ok:
        return True
    if smt.valid(af.Not(prop), facts).ok:
        return False
    return None


def check_always(p: ProcDef, path: Path, cond: Expr, *, primitive: str | None = None) -> None:
    """Check that the control condition ``cond`` holds whenever ``path`` is reached.

    Raises:
        ConditionError: with values (of sizes and enclosing loop variables) where it fails.
    """
    prop = af.to_prop(cond)
    head = f"{primitive}: " if primitive else ""
    if prop is None:
        msg = f"{head}{print_expr(cond)} is not an affine condition"
        raise ConditionError(msg, proc=p, path=path)
    res = smt.valid(prop, context_of(p, path).props())
    if not res.ok:
        msg = f"{head}{print_expr(cond)} does not always hold here"
        raise ConditionError(msg, res.counterexample, proc=p, path=path)


def check_call_preconditions(p: ProcDef, path: Path, *, primitive: str | None = None) -> None:
    """Check the call at ``path``: argument shapes equal to the callee's parameter shapes,
    windows and accesses in bounds, the callee's asserts implied by what holds there.

    Raises:
        CallPreconditionError: naming the failed obligation, with a counterexample.
    """
    call = get_at(p, path)
    head = f"{primitive}: " if primitive else ""
    if not isinstance(call, Call):
        raise CallPreconditionError(f"{head}not a call", proc=p, path=path)
    try:
        check_stmt_bounds(p, path)
    except BoundsError as e:
        model: smt.Model | None = getattr(e, "counterexample", None)
        first = e.message.split("\n  counterexample:")[0]
        err = CallPreconditionError(f"{head}{first}", model, proc=p, path=path)
        raise err from e
