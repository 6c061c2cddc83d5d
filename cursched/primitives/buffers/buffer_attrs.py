"""Buffer annotations: ``set_memory``, ``set_precision``, ``set_window``.

Each changes one annotation of an allocation or a parameter in place; the buffer's cursor
forwards to the rewritten node. Registered with ``@primitive``.
"""

from __future__ import annotations

import dataclasses

from cursched.cursors import AllocCursor, ArgCursor, ArgLoc, BlockLoc, Editor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.locs import format_path
from cursched.cursors.tree import with_field
from cursched.errors import (
    BadArgumentError,
    IndirectUseError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.memory import Memory, passes_for
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    FnArg,
    Node,
    Read,
    Reduce,
    Stmt,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children, map_stmt_children, walk_stmts
from cursched.ir.types import DATA_TYPES, DataType, TensorType
from cursched.primitives.buffers.buffer_common import (
    UseNode,
    buffer_scope,
    rebuild,
    scope_stmts,
    uses_of,
)
from cursched.primitives.registry import (
    Buffer,
    PrimCursors,
    checks_passed,
    fail,
    prim_cursors,
    primitive,
)
from cursched.proc import Proc


@prim_cursors
class BufferCursors(PrimCursors):
    """What ``set_memory``, ``set_precision`` and ``set_window`` return.

    Attributes:
        buffer: the rewritten allocation or parameter.
    """

    buffer: AllocCursor | ArgCursor


def _loc(buf: AllocCursor | ArgCursor) -> NodeLoc | ArgLoc:
    loc = buf.loc
    assert isinstance(loc, NodeLoc | ArgLoc)
    return loc


def _node(buf: AllocCursor | ArgCursor) -> Alloc | FnArg:
    return buf.alloc() if isinstance(buf, AllocCursor) else buf.node()


def _done(ed: Editor, loc: NodeLoc | ArgLoc) -> Rewrite[BufferCursors]:
    return ed.done(BufferCursors, buffer=loc)


# ------------------------------------------------------------------------------ set_memory


class SetMemoryError(BadArgumentError):
    """set_memory, precondition 1: ``mem`` is not a ``Memory`` class."""


class SetMemoryNotDataError(ShapeMismatchError):
    """set_memory, precondition 2: the parameter is a control value (it has no memory)."""


class SetMemoryWindowedError(IndirectUseError):
    """set_memory, precondition 3: the new memory is not windowable, but the buffer is
    windowed or passed to a call."""


class SetMemoryCallError(TypeMismatchError):
    """set_memory, precondition 4: the buffer (or a window of it) is passed to a call whose
    parameter lives in another memory."""


def _aliases(stmts: tuple[Stmt, ...], sym: Sym) -> set[Sym]:
    """``sym`` and the window statements that view it, directly or through other windows."""
    out = {sym}
    for s in walk_stmts(stmts):  # pre-order: a window is defined before windows of it
        if isinstance(s, WindowStmt) and s.rhs.sym in out:
            out.add(s.sym)
    return out


def _call_mismatch(stmts: tuple[Stmt, ...], sym: Sym, mem: type[Memory]) -> Call | None:
    names = _aliases(stmts, sym)
    for c in walk_stmts(stmts):
        if not isinstance(c, Call):
            continue
        for param, arg in zip(c.proc.args, c.args, strict=True):
            passed = isinstance(arg, Read | WindowExpr) and arg.sym in names
            if passed and param.mem is not None and not passes_for(mem, param.mem):
                return c
    return None


@primitive
def set_memory(proc: Proc, buf: Buffer, mem: type[Memory]) -> Rewrite[BufferCursors]:
    """Set the memory of an allocation or a data parameter.

    Args:
        proc: the proc to rewrite.
        buf: the allocation or parameter (a cursor or a name such as ``"x"`` / ``"x #1"``).
        mem: the new memory, a ``Memory`` subclass.

    Returns:
        The new proc and ``BufferCursors``: ``buffer``: the rewritten allocation or parameter.

    Preconditions:
        1. ``mem`` is a ``Memory`` class (``SetMemoryError``).
        2. ``buf`` holds data, not a control value (``SetMemoryNotDataError``).
        3. if ``mem`` is not windowable, ``buf`` is never windowed nor passed to a call
           (``SetMemoryWindowedError``). Whether code can address the memory at all is the
           code generator's question (it raises a ``CodegenError``).
        4. every call ``buf`` (or a window of it) is passed to takes it in ``mem``, or in the
           memory ``mem`` passes as (``passes_for``: ``DRAM_KEPT`` for ``DRAM``)
           (``SetMemoryCallError``).

    Forwards/Kills:
        ``buf`` forwards to ``buffer``; nothing dies.

    Example:
        ``set_memory(p, "t", DRAM_STACK)``::

            t: f32[8] @ DRAM     ->    t: f32[8] @ DRAM_STACK
    """
    name = "set_memory"
    if not (isinstance(mem, type) and issubclass(mem, Memory)):
        raise fail(SetMemoryError, name, f"mem must be a Memory class, got {mem!r}", buf)
    node = _node(buf)
    if isinstance(node, FnArg) and node.mem is None:
        raise fail(SetMemoryNotDataError, name, f"{node.sym.name} is a control parameter", buf)
    if not mem.windowable:
        ir = proc.ir()
        stmts, paths = scope_stmts(ir, buffer_scope(ir, buf))
        for u in uses_of(stmts, paths, node.sym):
            if isinstance(u.node, WindowExpr) or (
                isinstance(u.node, Read) and isinstance(u.node.type, TensorType)
            ):
                raise fail(
                    SetMemoryWindowedError,
                    name,
                    f"{mem.name()} is not windowable, but {node.sym.name} is windowed or "
                    "passed whole to a call",
                    buf,
                )
    ir = proc.ir()
    stmts, _ = scope_stmts(ir, buffer_scope(ir, buf))
    bad = _call_mismatch(stmts, node.sym, mem)
    if bad is not None:
        raise fail(
            SetMemoryCallError,
            name,
            f"{node.sym.name} is passed to {bad.proc.name}, which takes it in another memory",
            buf,
        )
    checks_passed()
    ed = Editor(ir)
    ed.retag(_loc(buf), with_field(node, "mem", mem))  # the same buffer, another memory
    return _done(ed, _loc(buf))


# --------------------------------------------------------------------------- set_precision


class SetPrecisionError(BadArgumentError):
    """set_precision, precondition 1: ``type`` is not a data type (or its name)."""


class SetPrecisionNotDataError(ShapeMismatchError):
    """set_precision, precondition 2: the buffer is not data (a control parameter)."""


class SetPrecisionSharedError(IndirectUseError):
    """set_precision, precondition 3: the buffer is windowed or passed to a call, whose
    parameter types would no longer match."""


@primitive
def set_precision(proc: Proc, buf: Buffer, type: DataType | str) -> Rewrite[BufferCursors]:
    """Set the element type of an allocation or a data parameter.

    Changing a precision changes the rounding of every statement that writes the buffer
    (docs/semantics.md: arithmetic happens in the destination's type); it is the one buffer
    primitive that changes results by design, as in Exo.

    Args:
        proc: the proc to rewrite.
        buf: the allocation or parameter (a cursor or a name).
        type: the new element type, a ``DataType`` or its name (``"f64"``).

    Returns:
        The new proc and ``BufferCursors``: ``buffer``: the rewritten allocation or parameter.

    Preconditions:
        1. ``type`` is a data type or the name of one (``SetPrecisionError``).
        2. ``buf`` holds data (``SetPrecisionNotDataError``).
        3. ``buf`` is neither windowed nor passed to a call (``SetPrecisionSharedError``).

    Forwards/Kills:
        ``buf`` forwards to ``buffer``; statements keep their identity; rewritten reads of the
        buffer die.

    Example:
        ``set_precision(p, "acc", "f64")``::

            acc: f32              ->    acc: f64
            acc = x[0]                  acc = x[0]
    """
    name = "set_precision"
    t = DATA_TYPES.get(type) if isinstance(type, str) else type
    if not isinstance(t, DataType):
        raise fail(SetPrecisionError, name, f"{type!r} is not a data type", buf)
    node = _node(buf)
    if not isinstance(node.type, DataType | TensorType):
        raise fail(SetPrecisionNotDataError, name, f"{node.sym.name} is not a data buffer", buf)
    ir = proc.ir()
    scope = buffer_scope(ir, buf)
    stmts, paths = scope_stmts(ir, scope)
    for u in uses_of(stmts, paths, node.sym):
        if isinstance(u.node, WindowExpr) or (
            isinstance(u.node, Read) and isinstance(u.node.type, TensorType)
        ):
            raise fail(
                SetPrecisionSharedError,
                name,
                f"{node.sym.name} is windowed or passed to a call at {format_path(u.path)}",
                buf,
            )
    for c in walk_stmts(stmts):
        if isinstance(c, Call) and any(
            isinstance(e, Read | WindowExpr) and e.sym is node.sym for e in c.args
        ):
            raise fail(SetPrecisionSharedError, name, f"{node.sym.name} is passed to a call", buf)

    def fix(old: UseNode, new: UseNode) -> Node:
        if isinstance(new, Read) and isinstance(new.type, DataType):
            return new.replace(type=t)
        return new

    ntype = dataclasses.replace(node.type, elem=t) if isinstance(node.type, TensorType) else t
    new_node = node.replace(type=ntype)
    checks_passed()
    ed = Editor(ir)
    if isinstance(buf, ArgCursor):
        ed.replace_node(_loc(buf), new_node, same=[(node, new_node)])
        body = retype_writes(rebuild(ir.body, node.sym, fix), node.sym, t)
        if ir.body:
            ed.replace(scope, body, same=_pairs(ir.body, body), hint="retyped by set_precision")
        return _done(ed, _loc(buf))
    assert isinstance(new_node, Alloc)
    rest = retype_writes(rebuild(stmts[1:], node.sym, fix), node.sym, t)
    new_stmts = (new_node, *rest)
    ed.replace(
        scope,
        new_stmts,
        same=[(node, new_node), *_pairs(stmts[1:], rest)],
        hint="retyped by set_precision",
    )
    return _done(ed, _loc(buf))


def retype_writes(stmts: tuple[Stmt, ...], sym: Sym, t: DataType) -> tuple[Stmt, ...]:
    """Give the literals and operations of every statement writing ``sym`` the type ``t``.

    docs/semantics.md: a statement computes in its destination's precision, and the frontend
    types a right-hand side's literals, operations and externs accordingly; reads keep the
    type of the buffer they read. Leaving the old type would make the IR compute in one
    precision while its printout, parsed back, computes in another (bugs.md F3).
    """

    def expr(e: Expr) -> Expr:
        match e:
            case Read() | WindowExpr():
                return e
            case Const() | BinOp() | USub() | Extern() if isinstance(e.type, DataType):
                out = map_expr_children(e, expr)
                assert isinstance(out, Const | BinOp | USub | Extern)
                return out.replace(type=t)
            case _:
                return e

    def stmt(s: Stmt) -> Stmt:
        match s:
            case Assign() | Reduce() if s.sym is sym:
                return s.replace(rhs=expr(s.rhs))
            case _:
                return map_stmt_children(s, stmt, lambda e: e)

    return tuple(stmt(s) for s in stmts)


def _pairs(old: tuple[object, ...], new: tuple[object, ...]) -> list[tuple[object, object]]:
    from cursched.primitives.loops.loop_common import same_pairs

    return list(same_pairs(old, new))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ set_window


class SetWindowNotArgError(ShapeMismatchError):
    """set_window, precondition 1: the buffer is not a tensor parameter."""


class SetWindowFlagError(BadArgumentError):
    """set_window, precondition 2: the flag is not a bool."""


class SetWindowCallError(IndirectUseError):
    """set_window, precondition 3: the parameter is passed whole to a call whose parameter
    is a contiguous tensor, which cannot take a window."""


def _whole_to_tensor_param(stmts: tuple[Stmt, ...], sym: Sym) -> Call | None:
    """The first call passing ``sym`` whole to a non-window tensor parameter."""
    for c in walk_stmts(stmts):
        if not isinstance(c, Call):
            continue
        for a, param in zip(c.args, c.proc.args, strict=True):
            t = param.type
            whole = isinstance(a, Read) and a.sym is sym and not a.idx
            if whole and isinstance(t, TensorType) and not t.window:
                return c
    return None


@primitive
def set_window(proc: Proc, arg: Buffer, is_window: bool = True) -> Rewrite[BufferCursors]:
    """Make a tensor parameter a window parameter (``[f32][n]``) or a plain one (``f32[n]``).

    Args:
        proc: the proc to rewrite.
        arg: the tensor parameter (a cursor or its name).
        is_window: the new annotation.

    Returns:
        The new proc and ``BufferCursors``: ``buffer``: the rewritten parameter.

    Preconditions:
        1. ``arg`` is a tensor parameter (``SetWindowNotArgError``).
        2. ``is_window`` is a bool (``SetWindowFlagError``).
        3. when making a window, no call takes the parameter whole as a contiguous tensor
           (``SetWindowCallError``; found by the soundness fuzzer, bugs.md F6).

    Forwards/Kills:
        ``arg`` forwards to ``buffer``; nothing dies.

    Example:
        ``set_window(p, "x", True)``::

            def f(n: size, x: f32[n] @ DRAM):    ->    def f(n: size, x: [f32][n] @ DRAM):
    """
    name = "set_window"
    if not isinstance(arg, ArgCursor) or not isinstance(arg.node().type, TensorType):
        raise fail(SetWindowNotArgError, name, f"{arg.describe()} is not a tensor parameter", arg)
    if not isinstance(is_window, bool):
        raise fail(SetWindowFlagError, name, f"the flag must be a bool, got {is_window!r}", arg)
    node = arg.node()
    assert isinstance(node.type, TensorType)
    bad = _whole_to_tensor_param(proc.ir().body, node.sym) if is_window else None
    if bad is not None:
        msg = f"{node.sym.name} is passed whole to {bad.proc.name}, which takes a contiguous tensor"
        raise fail(SetWindowCallError, name, msg, arg)
    ntype = dataclasses.replace(node.type, window=is_window)
    new = node.replace(type=ntype)
    ir = proc.ir()
    checks_passed()
    ed = Editor(ir)
    ed.replace_node(_loc(arg), new, same=[(node, new)])

    # a whole-tensor read (a call argument) carries the parameter's type
    def fix(old: UseNode, cur: UseNode) -> Node:
        if isinstance(cur, Read) and isinstance(cur.type, TensorType):
            return cur.replace(type=ntype)
        return cur

    body = rebuild(ir.body, node.sym, fix)
    if any(a is not b for a, b in zip(body, ir.body, strict=True)):
        scope = BlockLoc((), "body", 0, len(ir.body))
        ed.replace(scope, body, same=_pairs(ir.body, body), hint="retyped by set_window")
    return _done(ed, _loc(arg))


__all__ = [
    "BufferCursors",
    "SetMemoryCallError",
    "SetMemoryError",
    "SetMemoryNotDataError",
    "SetMemoryWindowedError",
    "SetPrecisionError",
    "SetPrecisionNotDataError",
    "SetPrecisionSharedError",
    "SetWindowCallError",
    "SetWindowFlagError",
    "SetWindowNotArgError",
    "set_memory",
    "set_precision",
    "set_window",
]
