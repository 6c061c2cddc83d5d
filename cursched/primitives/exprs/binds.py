"""Binding and inlining primitives: ``bind_expr``, ``inline_assign`` (``inline_window`` is in
``windows_inline``).

``bind_expr`` names a data expression in a new scalar; ``inline_assign`` is its inverse for a
scalar (or a tensor element) assigned once and read only at that element.

Moving a data expression between statements is exact only between statements of one
precision (docs/semantics.md: an expression is computed in its destination's precision), and
only while nothing it reads is written in between; both are preconditions, the second proven
element by element (``cursched.analysis.checks_exprs``, through windows and calls).
"""

from __future__ import annotations

from typing import Annotated

from cursched.analysis.checks_exprs import ValueChangedError, check_unchanged
from cursched.analysis.context import context_of
from cursched.cursors import (
    AssignCursor,
    BlockLoc,
    Editor,
    ExprCursor,
    NodeLoc,
    StmtCursor,
)
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import stmt_list, walk
from cursched.errors import (
    BadNameError,
    DependenceError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.config import ConfigField
from cursched.ir.memory import DRAM
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Expr,
    ProcDef,
    Read,
    Reduce,
    StrideExpr,
    WindowExpr,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.symbols import Sym
from cursched.ir.types import DataType, TensorType
from cursched.primitives.arguments import NewName
from cursched.primitives.exprs.expr_common import (
    check_disjoint,
    decl_type,
    dest_type,
    fresh,
    in_body,
    index_equal,
    is_data,
    same_expr,
    stmt_path_of,
)
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------------- errors


class NotBindableError(ShapeMismatchError):
    """bind_expr, precondition 2: an expression is not a data value computed by an
    assignment or reduction (a control value, a window, a call argument)."""


class ExprsDifferError(ShapeMismatchError):
    """bind_expr, precondition 5: the expressions are not all the same."""


class BadBindNameError(BadNameError):
    """bind_expr, precondition 6: the new name is not a valid identifier."""


class ExprsNotAfterFirstError(ShapeMismatchError):
    """bind_expr, precondition 3: an expression is neither in the statement of the first one
    nor in a statement after it in the same block."""


class PrecisionMismatchError(TypeMismatchError):
    """bind_expr / inline_assign: statements of different precisions would share a value."""


class ReadsChangedError(DependenceError):
    """bind_expr / inline_assign: a buffer the expression reads is written between the point
    where it is computed and a use."""


class NotAnAssignError(ShapeMismatchError):
    """inline_assign, precondition 1: the statement is not an assignment ``x = e``."""


class NotALocalBufferError(ShapeMismatchError):
    """inline_assign, precondition 2: the assignment does not write a buffer allocated in the
    proc (a parameter's final value is seen by the caller)."""


class WrittenElsewhereError(DependenceError):
    """inline_assign, precondition 3: the scalar is written by another statement too."""


class ReadElsewhereError(DependenceError):
    """inline_assign, precondition 4: the scalar is read somewhere other than after the
    assignment in its block, or as a call argument."""


# ---------------------------------------------------------------------------- shared checks


def _check_unchanged(
    prim: str,
    ir: ProcDef,
    block: BlockLoc,
    last: int,
    expr: Expr,
    where: StmtCursor | ExprCursor,
    what: str,
) -> None:
    """Refuse when a statement of ``block`` from ``block.lo`` up to the last use (statement
    ``last``) may write an element ``expr`` reads (``analysis.checks_exprs``). The last
    statement counts only when it is compound: an assignment evaluates its right-hand side
    before it writes.
    """
    stmts = stmt_list(ir, block.parent, block.attr)
    upto = last if isinstance(stmts[last], Assign | Reduce) else last + 1
    at = (*block.parent, (block.attr, block.lo))
    try:
        check_unchanged(ir, at, expr, stmts[block.lo : upto], primitive=prim)
    except ValueChangedError as e:
        msg = f"{what} " + e.message.removeprefix(f"{prim}: ")
        err = fail(ReadsChangedError, prim, msg, where)
        err.counterexample = e.counterexample  # type: ignore[attr-defined]
        raise err from e


def _sibling_index(block: BlockLoc, path: Path) -> int | None:
    """The index in ``block``'s list of the statement holding ``path`` (None: elsewhere)."""
    n = len(block.parent)
    if len(path) <= n or path[:n] != block.parent or path[n][0] != block.attr:
        return None
    return path[n][1]


# -------------------------------------------------------------------------------- bind_expr


@prim_cursors
class BindExprCursors(PrimCursors):
    """What ``bind_expr`` returns.

    Attributes:
        alloc: the new scalar's allocation.
        assign: the assignment computing the expression into it.
        reads: the reads of the new scalar that replaced the expressions, in the order given.
    """

    alloc: StmtCursor
    assign: AssignCursor
    reads: tuple[ExprCursor, ...]


@primitive
def bind_expr(
    proc: Proc,
    exprs: tuple[ExprCursor, ...],
    name: Annotated[str, NewName(BadBindNameError, at="exprs", scope="rest")],
) -> Rewrite[BindExprCursors]:
    """Compute a data expression once into a new scalar and read that instead.

    The scalar is allocated (``DRAM``) and assigned right before the statement holding the
    first of the expressions (in program order); its precision is that statement's
    destination precision, in which the expression was computed.

    Args:
        proc: the proc to rewrite.
        exprs: the occurrences of the expression (cursors or patterns; one or several).
        name: the new scalar's name.

    Returns:
        The new proc and ``BindExprCursors``:
        ``alloc``: the new allocation;
        ``assign``: the new assignment ``name = expr``;
        ``reads``: the reads of ``name`` standing where the expressions were.

    Preconditions:
        1. every expression is inside the body (``NotInBodyError``), none inside another or
           given twice (``OverlappingExprsError``).
        2. each is a data value on the right of an ``=`` or ``+=`` (``NotBindableError``).
        3. each is in the statement holding the first, or in a later statement of the same
           block (``ExprsNotAfterFirstError``).
        4. the statements holding them compute in one precision (``PrecisionMismatchError``).
        5. they are the same expression: same tree, reads, operators and constants, indices
           proven equal (``ExprsDifferError``).
        6. ``name`` is a valid identifier (``BadBindNameError``).
        7. no buffer the expression reads is written from the first statement up to the last
           use (``ReadsChangedError``).

    Forwards/Kills:
        Kills the bound expressions and every node inside them (hint: "bound to ``name`` by
        bind_expr; use .reads"). Statements keep their identity.

    Example:
        ``bind_expr(p, ["32.0 * x[_]"], "b")``::

            a = 32.0 * x[i] + 4.0    ->    b: f32 @ DRAM
                                           b = 32.0 * x[i]
                                           a = b + 4.0
    """
    prim = "bind_expr"
    ir = proc.ir()
    paths = [in_body(prim, e) for e in exprs]
    check_disjoint(prim, exprs, paths)
    stmts: list[Path] = []
    for e, path in zip(exprs, paths, strict=True):
        sp = stmt_path_of(ir, path)
        holder = get_at(ir, sp)
        if not (is_data(e.node()) and isinstance(holder, Assign | Reduce)):
            msg = f"{e.describe()} is not a data value on the right of an = or +="
            raise fail(NotBindableError, prim, msg, e)
        stmts.append(sp)
    order = sorted(range(len(exprs)), key=lambda k: stmts[k])
    first = order[0]
    s0 = stmts[first]
    ctx = context_of(ir, s0)
    e0: Expr = exprs[first].node()
    *parent, (attr, lo) = s0
    block = BlockLoc(tuple(parent), attr, lo, lo + 1)
    last = lo
    for k in order:
        at = _sibling_index(block, stmts[k])
        if at is None or at < lo:
            msg = f"{exprs[k].describe()} is not in or after the statement of the first"
            raise fail(ExprsNotAfterFirstError, prim, msg, exprs[k])
        last = max(last, at)
    precision = dest_type(ir, get_at(ir, s0))
    for k in order:
        if dest_type(ir, get_at(ir, stmts[k])) != precision:
            msg = (
                f"{exprs[k].describe()} is computed in another precision than "
                f"{exprs[first].describe()}"
            )
            raise fail(PrecisionMismatchError, prim, msg, exprs[k])
    for k in order[1:]:
        if not same_expr(e0, exprs[k].node(), ctx):
            msg = f"{exprs[k].describe()} differs from {exprs[first].describe()}"
            raise fail(ExprsDifferError, prim, msg, exprs[k])
    _check_unchanged(prim, ir, block, last, e0, exprs[first], "the expression")
    assert isinstance(precision, DataType), "a write's destination is data"
    sym = Sym(name)
    checks_passed()
    ed = Editor(ir)
    new = ed.insert(
        (block.parent, attr, lo), (Alloc(sym, precision, DRAM), Assign(sym, (), fresh(e0)))
    )
    alloc_loc, assign_loc = (NodeLoc(p) for p in new.stmt_paths())
    reads: list[NodeLoc] = []
    for path in paths:
        loc = ed.forward(NodeLoc(path))
        assert isinstance(loc, NodeLoc)
        hint = f"bound to `{name}` by bind_expr; use .reads"
        reads.append(ed.replace_node(loc, Read(sym, (), precision), hint=hint))
    return ed.done(BindExprCursors, alloc=alloc_loc, assign=assign_loc, reads=tuple(reads))


# ---------------------------------------------------------------------------- inline_assign


@prim_cursors
class InlineCursors(PrimCursors):
    """What ``inline_assign`` and ``inline_window`` return.

    Attributes:
        reads: the rewritten uses, in program order (for ``inline_assign`` the copies of the
            assigned expression; for ``inline_window`` the accesses of the viewed buffer,
            writes included, that replaced the window's uses).
    """

    reads: tuple[ExprCursor | StmtCursor, ...]


@primitive
def inline_assign(proc: Proc, assign: StmtCursor) -> Rewrite[InlineCursors]:
    """Replace the reads of a value by the expression assigned to it, and delete the
    assignment.

    Args:
        proc: the proc to rewrite.
        assign: the assignment ``x = e`` or ``x[idx] = e`` (a cursor or a pattern such as
            ``"x = _"``).

    Returns:
        The new proc and ``InlineCursors``:
        ``reads``: the copies of ``e`` standing where ``x`` was read.

    Preconditions:
        1. ``assign`` is an assignment (``NotAnAssignError``).
        2. ``x`` is a buffer allocated in the proc, not a parameter or a configuration
           field (global state, seen by callees and callers) (``NotALocalBufferError``).
        3. no other statement writes ``x`` (``WrittenElsewhereError``).
        4. every use of ``x`` is a read of the assigned element (indices proven equal) in a
           statement after the assignment in its block, as a data operand (not a call
           argument, a window or a stride) (``ReadElsewhereError``).
        5. the statements reading ``x`` compute in ``x``'s precision
           (``PrecisionMismatchError``).
        6. no element ``e`` reads is written between the assignment and the last read
           (``ReadsChangedError``, with a counterexample).

    Forwards/Kills:
        Kills the assignment (hint: "inlined by inline_assign; use .reads") and the reads of
        ``x``. Other statements keep their identity; the allocation of ``x`` stays (delete it
        with ``delete_buffer``).

    Example:
        ``inline_assign(p, "t = _")``::

            t = x[i] * 2.0      ->    y[i] = x[i] * 2.0 + 1.0
            y[i] = t + 1.0
    """
    prim = "inline_assign"
    ir = proc.ir()
    node = assign.node()
    if not isinstance(node, Assign):
        raise fail(NotAnAssignError, prim, f"{assign.describe()} is not an assignment", assign)
    x = node.sym
    decl = decl_type(ir, x)
    t = decl.elem if isinstance(decl, TensorType) and not decl.window else decl
    # a configuration field is global state, not a local buffer: its write is seen by the
    # procs called after it and by the caller after the proc returns (campaign seed 2026,
    # schedules 16498 and 65020: the read had moved into an extracted subproc)
    local = (
        not any(a.sym is x for a in ir.args)
        and not isinstance(x, ConfigField)
        and isinstance(t, DataType)
    )
    if not local:
        msg = f"{x.name} is not a buffer allocated in the proc"
        raise fail(NotALocalBufferError, prim, msg, assign)
    here = assign.path()
    *parent, (attr, k) = here
    block = BlockLoc(tuple(parent), attr, k, k + 1)
    reads: list[Path] = []
    last = k
    for path, n in walk(ir):
        if isinstance(n, Assign | Reduce) and n.sym is x and path != here:
            msg = f"{x.name} is also written by another statement"
            raise fail(WrittenElsewhereError, prim, msg, assign)
        if isinstance(n, WindowExpr | StrideExpr) and n.sym is x:
            msg = f"{x.name} is used by a window or a stride"
            raise fail(ReadElsewhereError, prim, msg, assign)
        if isinstance(n, Read) and n.sym is x:
            at = _sibling_index(block, path)
            sp = stmt_path_of(ir, path)
            holder = get_at(ir, sp)
            if at is None or at <= k or not isinstance(holder, Assign | Reduce):
                msg = f"{x.name} is read elsewhere than after the assignment (a use at {path})"
                raise fail(ReadElsewhereError, prim, msg, assign)
            ctx = context_of(ir, sp)
            if len(n.idx) != len(node.idx) or not all(
                index_equal(a, b, ctx) for a, b in zip(n.idx, node.idx, strict=True)
            ):
                msg = f"a read of {x.name} may be of another element than the assigned one"
                raise fail(ReadElsewhereError, prim, msg, assign)
            if dest_type(ir, holder) != t:
                msg = f"a statement reading {x.name} computes in another precision than {t}"
                raise fail(PrecisionMismatchError, prim, msg, assign)
            reads.append(path)
            last = max(last, at)
    after = BlockLoc(tuple(parent), attr, k + 1, k + 2)
    if reads:
        _check_unchanged(prim, ir, after, last, node.rhs, assign, "the assigned value")
    checks_passed()
    ed = Editor(ir)
    hint = "inlined by inline_assign; use .reads"
    ed.delete(block, hint=hint)  # (the only statement of a body leaves a pass: bugs.md F2)
    out: list[NodeLoc] = []
    for path in reads:
        loc = ed.forward(NodeLoc(path))
        assert isinstance(loc, NodeLoc)
        hint = "replaced by the inlined value; use .reads"
        out.append(ed.replace_node(loc, fresh(node.rhs), hint=hint))
    return ed.done(InlineCursors, reads=tuple(out))


__all__ = [
    "BadBindNameError",
    "BindExprCursors",
    "ExprsDifferError",
    "ExprsNotAfterFirstError",
    "InlineCursors",
    "NotALocalBufferError",
    "NotAnAssignError",
    "NotBindableError",
    "PrecisionMismatchError",
    "ReadElsewhereError",
    "ReadsChangedError",
    "WrittenElsewhereError",
    "bind_expr",
    "inline_assign",
]
