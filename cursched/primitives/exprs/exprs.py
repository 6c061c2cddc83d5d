"""Expression primitives: ``rewrite_expr``, ``commute_expr``, ``left_reassociate_expr``.

Each replaces expressions in place through ``Editor.replace_node`` with a tree built of new
node objects (``expr_common.fresh``): the old expression *and every node inside it* die, and
their cursors become tombstones whose hint names the returned ``.expr``. No cursor is ever
re-targeted by position: in Exo 1.0 a cursor to ``a`` in ``a + b`` points at ``b`` after
``commute_expr``, silently; here it is a tombstone.
"""

from __future__ import annotations

from typing import Any

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.checks import SafetyError, check_expr_equal
from cursched.analysis.context import context_of
from cursched.cursors import Editor, ExprCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import BadArgumentError, NotProvenError, ShapeMismatchError
from cursched.ir.nodes import CMP_OPS, BinOp, Expr
from cursched.ir.paths import Path
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr
from cursched.ir.types import BOOL
from cursched.primitives.arguments import control_expr, control_names
from cursched.primitives.exprs.expr_common import (
    ASSOCIATIVE,
    NotInBodyError,
    OverlappingExprsError,
    check_disjoint,
    fresh,
    in_body,
    is_data,
    same_expr,
    stmt_path_of,
)
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------------- errors


class BadNewExpressionError(BadArgumentError):
    """rewrite_expr, precondition 2: the new expression is not a valid expression here."""


class ExprNotEqualError(NotProvenError):
    """rewrite_expr, precondition 3: the new expression is not provably equal to the old."""


class NotCommutativeError(ShapeMismatchError):
    """commute_expr, precondition 2: an expression is not a ``+`` or ``*``."""


class NotAssociativeError(ShapeMismatchError):
    """left_reassociate_expr, precondition 2: the expression is not a ``+`` or ``*``."""


class RhsNotSameOpError(ShapeMismatchError):
    """left_reassociate_expr, precondition 3: the right operand is not the same operation."""


# ------------------------------------------------------------------------------ rewrite_expr


@prim_cursors
class ExprCursors(PrimCursors):
    """What ``rewrite_expr`` and ``left_reassociate_expr`` return.

    Attributes:
        expr: the new expression.
    """

    expr: ExprCursor


def _well_formed(e: Expr, visible: set[Sym]) -> bool:
    """Whether a control expression is one the language allows here: quasi-affine integer
    arithmetic, comparisons of those, ``and``/``or`` of bools, over visible names only."""
    if not free_syms_expr(e) <= visible:
        return False
    match e:
        case BinOp(op="and" | "or"):
            return (
                e.lhs.type == BOOL
                and e.rhs.type == BOOL
                and all(_well_formed(x, visible) for x in (e.lhs, e.rhs))
            )
        case BinOp(op=op) if op in CMP_OPS:
            return af.to_aff(e.lhs) is not None and af.to_aff(e.rhs) is not None
        case _:
            return e.type == BOOL or af.to_aff(e) is not None


@primitive
def rewrite_expr(proc: Proc, expr: ExprCursor, new: Any) -> Rewrite[ExprCursors]:
    """Replace an expression by another that is provably equal where it stands.

    Args:
        proc: the proc to rewrite.
        expr: the expression (a cursor, or a pattern such as ``"n"`` or ``"x[_] * 2.0"``).
        new: the replacement: for a control expression (an index, bound or condition) its text
            (``"4 * (n / 4)"``, over the sizes, index parameters and enclosing loop variables)
            or an int; for any expression an IR expression or an expression cursor.

    Returns:
        The new proc and ``ExprCursors``:
        ``expr``: the new expression.

    Preconditions:
        1. ``expr`` is inside the body (``NotInBodyError``).
        2. ``new`` is an expression of the same kind (control / data) over names visible there
           (``BadNewExpressionError``).
        3. ``new`` equals ``expr`` wherever it is evaluated (``ExprNotEqualError``): a control
           expression is proven equal by SMT under the asserts, the enclosing loop ranges and
           ``if`` conditions (with a counterexample when it is not); a data expression must be
           the same tree with the same reads, operators and constants, its indices proven
           equal the same way (data values are never assumed equal: floating point would
           make an algebraic identity a behaviour change).

    Forwards/Kills:
        Kills the old expression and every node inside it (hint: "rewritten by rewrite_expr;
        use .expr"); statements keep their identity.

    Example:
        ``rewrite_expr(p, "n / 4 * 4", "n")`` under ``assert n % 4 == 0``::

            for i in seq(0, n / 4 * 4):   ->    for i in seq(0, n):
    """
    prim = "rewrite_expr"
    ir = proc.ir()
    path = in_body(prim, expr)
    stmt = stmt_path_of(ir, path)
    old: Expr = expr.node()
    e = control_expr(ir, stmt, old, new)
    ok = e is not None and is_data(e) == is_data(old)
    if ok and e is not None and not is_data(e):
        visible = {r.sym for r in control_names(ir, stmt).values()}
        ok = (e.type == BOOL) == (old.type == BOOL) and _well_formed(e, visible)
    if not ok or e is None:
        msg = f"{new!r} is not a {'data' if is_data(old) else 'control'} expression valid here"
        raise fail(BadNewExpressionError, prim, msg, expr)
    if is_data(old):
        if not same_expr(old, e, context_of(ir, stmt)):
            msg = (
                f"{print_expr(e)} is not provably equal to {print_expr(old)} (data "
                "expressions must match up to provably equal indices)"
            )
            raise fail(ExprNotEqualError, prim, msg, expr)
    else:
        try:
            check_expr_equal(ir, stmt, old, e, primitive=prim)
        except SafetyError as err:
            msg = f"{print_expr(e)} is not provably equal to {print_expr(old)} here"
            if err.counterexample is not None:
                msg += f"\n  counterexample: {smt.format_model(err.counterexample)}"
            raised = fail(ExprNotEqualError, prim, msg, expr)
            raised.counterexample = err.counterexample  # type: ignore[attr-defined]
            raise raised from err
    checks_passed()
    ed = Editor(ir)
    loc = ed.replace_node(NodeLoc(path), fresh(e), hint="rewritten by rewrite_expr; use .expr")
    return ed.done(ExprCursors, expr=loc)


# ------------------------------------------------------------------------------ commute_expr


@prim_cursors
class CommuteExprCursors(PrimCursors):
    """What ``commute_expr`` returns.

    Attributes:
        expr: the new expressions, one per expression given, in the order given.
    """

    expr: tuple[ExprCursor, ...]


@primitive
def commute_expr(proc: Proc, exprs: tuple[ExprCursor, ...]) -> Rewrite[CommuteExprCursors]:
    """Swap the operands of ``+`` and ``*`` operations: ``a * b`` -> ``b * a``.

    Commuting is exact, on floats too (IEEE 754 ``+`` and ``*`` are commutative).

    Args:
        proc: the proc to rewrite.
        exprs: the operations: a cursor, a pattern, or a list of them. A pattern names its
            first match (Exo 1.0 commutes every match of a lone pattern string; pass
            ``p.find_all(pattern)`` for that).

    Returns:
        The new proc and ``CommuteExprCursors``:
        ``expr``: the new operations, one per input, in the order given.

    Preconditions:
        1. every expression is inside the body (``NotInBodyError``).
        2. every expression is a ``+`` or a ``*`` (``NotCommutativeError``).
        3. no expression is inside another, or given twice (``OverlappingExprsError``).

    Forwards/Kills:
        Kills each old operation and every node inside it, its operands included (hint:
        "commuted by commute_expr; use .expr"): a cursor to ``a`` in ``a + b`` becomes a
        tombstone, never a cursor to ``b`` (Exo 1.0 re-targets it by position).

    Example:
        ``commute_expr(p, ["x[_] * 2.0"])``::

            y[i] = x[i] * 2.0    ->    y[i] = 2.0 * x[i]
    """
    prim = "commute_expr"
    paths: list[Path] = []
    for e in exprs:
        paths.append(in_body(prim, e))
        node = e.node()
        if not (isinstance(node, BinOp) and node.op in ASSOCIATIVE):
            raise fail(NotCommutativeError, prim, f"{e.describe()} is not a + or a *", e)
    check_disjoint(prim, exprs, paths)
    checks_passed()
    ed = Editor(proc.ir())
    out: list[NodeLoc] = []
    for e, path in zip(exprs, paths, strict=True):
        node = e.node()
        new = BinOp(node.op, fresh(node.rhs), fresh(node.lhs), node.type)
        hint = "commuted by commute_expr; use .expr"
        # every node of ``new`` is new: the operation and its operands die (see Forwards)
        out.append(ed.replace_node(NodeLoc(path), new, hint=hint, kill_all=True))
    return ed.done(CommuteExprCursors, expr=tuple(out))


# --------------------------------------------------------------------- left_reassociate_expr


@primitive
def left_reassociate_expr(proc: Proc, expr: ExprCursor) -> Rewrite[ExprCursors]:
    """Reassociate ``a + (b + c)`` to ``(a + b) + c`` (and ``*`` likewise).

    On integers (control or data, wrapping) this is exact. On floating-point data it is NOT:
    ``(a + b) + c`` and ``a + (b + c)`` round differently, so results may change in the last
    bits (as every compiler's ``-ffast-math`` reassociation does); the rewrite is accepted as
    in Exo, and the tests compare with a tolerance.

    Args:
        proc: the proc to rewrite.
        expr: the outer operation (a cursor or a pattern).

    Returns:
        The new proc and ``ExprCursors``:
        ``expr``: the new outer operation ``(a + b) + c``.

    Preconditions:
        1. ``expr`` is inside the body (``NotInBodyError``).
        2. it is a ``+`` or a ``*`` (``NotAssociativeError``).
        3. its right operand is the same operation (``RhsNotSameOpError``).

    Forwards/Kills:
        Kills the old expression and every node inside it (hint: "reassociated by
        left_reassociate_expr; use .expr").

    Example:
        ``left_reassociate_expr(p, "a[_] + (b[_] + c[_])")``::

            y[i] = a[i] + (b[i] + c[i])    ->    y[i] = a[i] + b[i] + c[i]
    """
    prim = "left_reassociate_expr"
    path = in_body(prim, expr)
    node = expr.node()
    if not (isinstance(node, BinOp) and node.op in ASSOCIATIVE):
        raise fail(NotAssociativeError, prim, f"{expr.describe()} is not a + or a *", expr)
    rhs = node.rhs
    if not (isinstance(rhs, BinOp) and rhs.op == node.op):
        msg = f"the right operand {print_expr(rhs)} is not a {node.op} like {print_expr(node)}"
        raise fail(RhsNotSameOpError, prim, msg, expr)
    inner = BinOp(node.op, fresh(node.lhs), fresh(rhs.lhs), node.type)
    new = BinOp(node.op, inner, fresh(rhs.rhs), node.type)
    checks_passed()
    ed = Editor(proc.ir())
    loc = ed.replace_node(
        NodeLoc(path), new, hint="reassociated by left_reassociate_expr; use .expr"
    )
    return ed.done(ExprCursors, expr=loc)


__all__ = [
    "BadNewExpressionError",
    "CommuteExprCursors",
    "ExprCursors",
    "ExprNotEqualError",
    "NotAssociativeError",
    "NotCommutativeError",
    "NotInBodyError",
    "OverlappingExprsError",
    "RhsNotSameOpError",
    "commute_expr",
    "left_reassociate_expr",
    "rewrite_expr",
]
