"""Named regions: ``scope`` wraps a block in ``with scope(name):``, ``unscope`` unwraps one.

A scope is a unit later steps and the code generators address without outlining it into
another proc (IREE's proposed ``util.scope``): a ``target="cuda"`` scope is one kernel.
"""

from __future__ import annotations

from cursched.analysis.kernels import scope_of
from cursched.cursors import BlockCursor, BlockLoc, Editor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.stmts import ScopeCursor, StmtCursor
from cursched.errors import BadArgumentError, BadNameError, ScopeError, ShapeMismatchError
from cursched.ir.nodes import For, ProcDef, Scope
from cursched.ir.traversal import walk_stmts
from cursched.primitives.loops.loop_wrap import escaping_names
from cursched.primitives.registry import (
    PrimCursors,
    checks_passed,
    fail,
    prim_cursors,
    primitive,
)
from cursched.proc import Proc

TARGETS = ("cuda",)

# ------------------------------------------------------------------------------------ scope


class ScopeNameError(BadNameError):
    """scope, precondition 1: the name is not a non-empty string."""


class ScopeNameTakenError(BadNameError):
    """scope, precondition 2: another scope of the proc has that name."""


class ScopeTargetError(BadArgumentError):
    """scope, precondition 3: the target is neither None nor ``"cuda"``."""


class ScopeNestedKernelError(ShapeMismatchError):
    """scope, precondition 4: a cuda scope would enclose or sit inside another cuda scope."""


class ScopeEscapeError(ScopeError):
    """scope, precondition 5: the block declares names that statements after it use."""


@prim_cursors
class ScopeCursors(PrimCursors):
    """What ``scope`` returns.

    Attributes:
        scope: the new ``with scope(...)`` statement.
        body: its body (the wrapped statements).
    """

    scope: ScopeCursor
    body: BlockCursor


def _scope_names(ir: ProcDef) -> set[str]:
    return {s.name for s in walk_stmts(ir.body) if isinstance(s, Scope)}


def _check_name(name: object, ir: ProcDef, block: BlockCursor) -> str:
    if not isinstance(name, str) or not name:
        raise fail(ScopeNameError, "scope", f"a scope name is a non-empty string, not {name!r}")
    if name in _scope_names(ir):
        raise fail(ScopeNameTakenError, "scope", f"the proc has a scope named {name!r}", block)
    return name


def _check_target(target: object) -> str | None:
    if target is not None and target not in TARGETS:
        raise fail(ScopeTargetError, "scope", f"target is None or 'cuda', not {target!r}")
    return target


def _check_kernel_nesting(ir: ProcDef, block: BlockCursor, target: str | None) -> None:
    if target != "cuda":
        return
    first = block.paths()[0]
    if scope_of(ir, first) is not None or any(
        isinstance(s, Scope) and s.target == "cuda" for s in walk_stmts(block.stmts())
    ):
        raise fail(ScopeNestedKernelError, "scope", "cuda scopes (kernels) do not nest", block)


def _check_escape(ir: ProcDef, block: BlockCursor) -> None:
    hidden = escaping_names(ir, block.block())
    if hidden:
        names = ", ".join(sorted(s.name for s in hidden))
        raise fail(ScopeEscapeError, "scope", f"the block declares {names}, used after it", block)


@primitive
def scope(
    proc: Proc, block: BlockCursor, name: str, target: str | None = None
) -> Rewrite[ScopeCursors]:
    """Wrap a block in a named region ``with scope(name):`` (a kernel with ``target="cuda"``).

    Args:
        proc: the proc to rewrite.
        block: the statements to wrap (a block, a statement or a pattern).
        name: the scope's name (``p.find_scope(name)`` finds it again).
        target: None (a plain named region) or ``"cuda"`` (the region is one CUDA kernel).

    Returns:
        The new proc and ``ScopeCursors``:
        ``scope``: the new scope statement; ``body``: its body.

    Preconditions:
        1. ``name`` is a non-empty string (``ScopeNameError``).
        2. no other scope of the proc has that name (``ScopeNameTakenError``).
        3. ``target`` is None or ``"cuda"`` (``ScopeTargetError``).
        4. a cuda scope is not inside another cuda scope and holds none
           (``ScopeNestedKernelError``).
        5. the block declares no allocation or window used after it (``ScopeEscapeError``).

    Forwards/Kills:
        ``block`` forwards to the scope's body; its statements keep their identity. Nothing
        dies. The rewrite changes no behaviour (a scope runs its body).

    Example:
        ``scope(p, "for i in _: _", "k", target="cuda")``::

            for i in seq(0, n):       ->    with scope("k", target="cuda"):
                y[i] = x[i]                     for i in seq(0, n):
                                                    y[i] = x[i]
    """
    ir = proc.ir()
    nm = _check_name(name, ir, block)
    tg = _check_target(target)
    _check_kernel_nesting(ir, block, tg)
    _check_escape(ir, block)
    checks_passed()
    ed = Editor(ir)
    at = ed.wrap(block.block(), lambda stmts: Scope(nm, stmts, tg))
    body = BlockLoc(at.path, "body", 0, len(block))
    return ed.done(ScopeCursors, scope=at, body=body)


# ---------------------------------------------------------------------------------- unscope


class NotAScopeError(ShapeMismatchError):
    """unscope, precondition 1: the statement is not a scope."""


class UnscopeBoundLoopsError(ScopeError):
    """unscope, precondition 2: a cuda scope holds loops bound to CUDA axes."""


@prim_cursors
class UnscopeCursors(PrimCursors):
    """What ``unscope`` returns.

    Attributes:
        block: the former body, in the scope's place.
    """

    block: BlockCursor


@primitive
def unscope(proc: Proc, scope: StmtCursor) -> Rewrite[UnscopeCursors]:
    """Remove a named region, leaving its body in its place.

    Args:
        proc: the proc to rewrite.
        scope: the scope (a cursor, ``p.find_scope(name)``, or a pattern).

    Returns:
        The new proc and ``UnscopeCursors``:
        ``block``: the statements of the former body.

    Preconditions:
        1. ``scope`` is a scope statement (``NotAScopeError``).
        2. a cuda scope holds no loop bound to a CUDA axis, which would be left outside any
           kernel (``UnscopeBoundLoopsError``).

    Forwards/Kills:
        Kills the scope (hint: "removed by unscope; use .block"); the body statements keep
        their identity.

    Example:
        ``unscope(p, p.find_scope("k"))``::

            with scope("k"):          ->    for i in seq(0, n):
                for i in seq(0, n):             y[i] = x[i]
                    y[i] = x[i]
    """
    node = scope.node()
    if not isinstance(node, Scope):
        raise fail(NotAScopeError, "unscope", f"{scope.describe()} is not a scope", scope)
    bound = [s for s in walk_stmts(node.body) if isinstance(s, For) and s.axis is not None]
    if bound:
        msg = f"loop {bound[0].iter.name} is bound to {bound[0].axis}; it needs its cuda scope"
        raise fail(UnscopeBoundLoopsError, "unscope", msg, scope)
    checks_passed()
    ed = Editor(proc.ir())
    out = ed.replace(scope.as_block().block(), node.body, hint="removed by unscope; use .block")
    return ed.done(UnscopeCursors, block=out)


def find_scope(proc: Proc, name: str) -> ScopeCursor:
    """The scope named ``name`` (``Proc.find_scope``).

    Raises:
        PatternError: no scope has that name.
    """
    from cursched.cursors.stmts import make_cursor
    from cursched.cursors.tree import walk_stmts as walk_paths
    from cursched.errors import PatternError

    for path, s in walk_paths(proc.ir().body, ()):
        if isinstance(s, Scope) and s.name == name:
            c = make_cursor(proc, NodeLoc(path))
            assert isinstance(c, ScopeCursor)
            return c
    names = sorted(_scope_names(proc.ir()))
    raise PatternError(f"no scope named {name!r} (scopes: {', '.join(names) or 'none'})")
