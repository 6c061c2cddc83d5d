"""Configuration primitives: ``bind_config``, ``write_config``, ``delete_config`` (Exo 1.0's
primitives of those names, on ``cursched.ir.config`` fields).

A configuration field's value is unspecified when a run starts and is not an output
(``docs/semantics.md``), so a write to it matters only through the reads that see it. Each
primitive's check says which reads those are: ``bind_config`` and ``write_config`` add a
write that no other read of the proc may see, ``delete_config`` removes one that no read
sees. Moving a write afterwards (``reorder_stmts``, ``fission``, ``remove_loop``, ...) is the
business of those primitives, whose checks see a field as a scalar buffer.

Registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from cursched.cursors import AssignCursor, Editor, ExprCursor, GapCursor, NodeLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import stmt_list
from cursched.errors import (
    BadArgumentError,
    DependenceError,
    SchedulingError,
    ShapeMismatchError,
    TypeMismatchError,
)
from cursched.ir.config import ConfigDef, ConfigField
from cursched.ir.nodes import (
    EXPR_TYPES,
    Assign,
    Call,
    Const,
    Expr,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Stmt,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.traversal import free_syms_expr, walk_exprs, walk_stmts
from cursched.ir.types import DataType, TensorType
from cursched.primitives.exprs.expr_common import decl_type, dest_type, in_body, stmt_path_of
from cursched.primitives.loops.loop_common import index_expr
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc


class ConfigFieldError(BadArgumentError):
    """bind_config / write_config, precondition 1: not a configuration and one of its field
    names."""


class BindConfigPlaceError(ShapeMismatchError):
    """bind_config, precondition 2: the expression is not a data value on the right of an
    ``=`` or ``+=``."""


class BindConfigPrecisionError(TypeMismatchError):
    """bind_config, precondition 3: the field's type is not the precision the expression is
    computed in."""


class ConfigObservedError(DependenceError):
    """bind_config / write_config, precondition 4 (3): another read of the field could see
    the new write."""


class WriteConfigValueError(BadArgumentError):
    """write_config, precondition 2: the value is not a data expression visible at the gap."""


class DeleteConfigNotWriteError(ShapeMismatchError):
    """delete_config, precondition 1: the statement is not an ``=`` to a configuration field."""


class DeleteConfigLiveError(DependenceError):
    """delete_config, precondition 2: a read of the field may see the write."""


# ----------------------------------------------------------------------------- helpers


def _field_of(config: Any, field: Any, where: Any, prim: str) -> ConfigField:
    f = config.fields.get(field) if isinstance(config, ConfigDef) else None
    if not isinstance(f, ConfigField):
        have = ", ".join(config.fields) if isinstance(config, ConfigDef) else "?"
        msg = f"{config!r} has no field {field!r} (a @config class and a field: {have})"
        raise fail(ConfigFieldError, prim, msg, where)
    return f


def _procs(ir: ProcDef, seen: set[int] | None = None) -> Iterator[ProcDef]:
    """``ir`` and every proc it calls, transitively, each once."""
    seen = set() if seen is None else seen
    if id(ir) in seen:
        return
    seen.add(id(ir))
    yield ir
    for s in walk_stmts(ir.body):
        if isinstance(s, Call):
            yield from _procs(s.proc, seen)


def _reads_field(stmts: tuple[Stmt, ...], f: ConfigField) -> bool:
    """Whether ``stmts`` (or a proc they call) read ``f`` (a ``+=`` reads it too)."""
    if any(f in free_syms_expr(e) for e in walk_exprs(stmts)):
        return True
    for s in walk_stmts(stmts):
        if isinstance(s, Reduce) and s.sym is f:
            return True
        if isinstance(s, Call) and any(_reads_field(q.body, f) for q in _procs(s.proc)):
            return True
    return False


def _check_unobserved(ir: ProcDef, f: ConfigField, prim: str, where: Any) -> None:
    if _reads_field(ir.body, f):
        msg = (
            f"the proc reads {f.name} already, and a read could see the new write "
            "(bind or write a field the proc does not read yet)"
        )
        raise fail(ConfigObservedError, prim, msg, where)


# ------------------------------------------------------------------------------ bind_config


@prim_cursors
class BindConfigCursors(PrimCursors):
    """What ``bind_config`` returns.

    Attributes:
        write: the new write ``C.f = expr``, right before the statement.
        read: the read of ``C.f`` standing where the expression was.
    """

    write: AssignCursor
    read: ExprCursor


@primitive
def bind_config(
    proc: Proc, expr: ExprCursor, config: ConfigDef, field: str
) -> Rewrite[BindConfigCursors]:
    """Compute a data expression into a configuration field and read the field instead.

    Args:
        proc: the proc to rewrite.
        expr: the expression (a cursor or a pattern such as ``"scale"``).
        config: the configuration (a ``@config`` class).
        field: the field's name.

    Returns:
        The new proc and ``BindConfigCursors``:
        ``write``: the new ``C.f = expr``; ``read``: the read of ``C.f`` in its place.

    Preconditions:
        1. ``config`` is a configuration with a field ``field`` (``ConfigFieldError``).
        2. ``expr`` is a data value on the right of an ``=`` or ``+=``
           (``BindConfigPlaceError``).
        3. the field's type is the precision the statement computes in
           (``BindConfigPrecisionError``): the value is then the same, bit for bit.
        4. the proc (and what it calls) reads the field nowhere yet, so no other read sees
           the new write (``ConfigObservedError``).

    Forwards/Kills:
        Kills the bound expression (hint: "bound to the configuration by bind_config; use
        .read"). Statements keep their identity.

    Example:
        ``bind_config(p, "scale", ConfigLoad, "scale")``::

            for i in seq(0, n):                  ->    for i in seq(0, n):
                y[i] = x[i] * scale                        ConfigLoad.scale = scale
                                                           y[i] = x[i] * ConfigLoad.scale
    """
    prim = "bind_config"
    f = _field_of(config, field, expr, prim)
    ir = proc.ir()
    path = in_body(prim, expr)
    sp = stmt_path_of(ir, path)
    holder = get_at(ir, sp)
    e: Expr = expr.node()
    if not (isinstance(getattr(e, "type", None), DataType) and isinstance(holder, Assign | Reduce)):
        msg = f"{expr.describe()} is not a data value on the right of an = or +="
        raise fail(BindConfigPlaceError, prim, msg, expr)
    precision = dest_type(ir, holder)
    if precision != f.type:
        msg = f"{f.name} is {f.type}, the statement computes in {precision}"
        raise fail(BindConfigPrecisionError, prim, msg, expr)
    _check_unobserved(ir, f, prim, expr)
    ed = Editor(ir)
    ed.replace_node(
        NodeLoc(path), Read(f, (), f.type), hint="bound to the configuration by bind_config"
    )
    *parent, (attr, k) = sp
    ed.insert((tuple(parent), attr, k), (Assign(f, (), e),))
    write = (*parent, (attr, k))
    # the statement holding the read is one further down its block now
    read = (*parent, (attr, k + 1), *path[len(sp) :])
    return ed.done(BindConfigCursors, write=NodeLoc(write), read=NodeLoc(read))


# ----------------------------------------------------------------------------- write_config


@prim_cursors
class WriteConfigCursors(PrimCursors):
    """What ``write_config`` returns.

    Attributes:
        write: the new write ``C.f = value``.
    """

    write: AssignCursor


def _value(ir: ProcDef, path: Path, f: ConfigField, value: Any, gap: GapCursor) -> Expr:
    """``value`` (a number, the text of a number, a scalar name or an element ``x[i]``, or a
    data IR expression) as an expression of ``f``'s type at ``path``."""
    prim = "write_config"

    def bad(why: str) -> SchedulingError:
        return fail(WriteConfigValueError, prim, f"value {value!r}: {why}", gap)

    if isinstance(value, EXPR_TYPES) and isinstance(getattr(value, "type", None), DataType):
        return value  # type: ignore[return-value]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise bad("give a number, a scalar name or an element x[i]")
    node: ast.expr | None = None
    if isinstance(value, str):
        try:
            node = ast.parse(value.strip(), mode="eval").body
        except SyntaxError as e:
            raise bad("not an expression") from e
        try:
            literal = ast.literal_eval(node)
        except ValueError:
            literal = None
        if isinstance(literal, int | float) and not isinstance(literal, bool):
            value, node = literal, None
    if node is None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("not a number")
        v: int | float = float(value) if f.type.is_float() else int(value)
        if not f.type.is_float() and value != v:
            raise bad(f"not an integer, and {f.name} is {f.type}")
        return Const(v, f.type)
    target = node.value if isinstance(node, ast.Subscript) else node
    if not isinstance(target, ast.Name):
        raise bad("give a number, a scalar name or an element x[i]")
    sym = _visible_buffer(ir, path, target.id)
    t = None if sym is None else decl_type(ir, sym)
    if sym is None or t is None:
        raise bad(f"{target.id} is not a buffer visible at the gap")
    elem = t.elem if isinstance(t, TensorType) else t
    if not isinstance(elem, DataType) or elem != f.type:
        raise bad(f"{target.id} holds {elem}, {f.name} is {f.type}")
    if isinstance(node, ast.Subscript):
        sl = node.slice
        coords = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if not isinstance(t, TensorType) or len(coords) != t.rank():
            raise bad(f"not one index per dimension of {target.id}")
        idx = tuple(index_expr(ir, path, ast.unparse(c), prim, gap, "index") for c in coords)
        return Read(sym, idx, elem)
    if isinstance(t, TensorType):
        raise bad(f"{target.id} is a tensor; give one element")
    return Read(sym, (), elem)


def _visible_buffer(ir: ProcDef, path: Path, name: str) -> Any:
    from cursched.analysis.context import context_of

    ctx = context_of(ir, path)
    for sym in ctx.allocs:
        if sym.name == name:
            return sym
    for a in ir.args:
        if a.sym.name == name:
            return a.sym
    return None


@primitive
def write_config(
    proc: Proc, gap: GapCursor, config: ConfigDef, field: str, value: Any
) -> Rewrite[WriteConfigCursors]:
    """Insert a write ``C.f = value`` of a configuration field at a gap.

    Args:
        proc: the proc to rewrite.
        gap: where to insert (``c.before()``, ``c.after()``).
        config: the configuration (a ``@config`` class).
        field: the field's name.
        value: a number (or its text), a scalar's name or an element ``"x[i]"`` visible at
            the gap, of the field's type, or a data IR expression.

    Returns:
        The new proc and ``WriteConfigCursors``:
        ``write``: the new write.

    Preconditions:
        1. ``config`` is a configuration with a field ``field`` (``ConfigFieldError``).
        2. ``value`` is a data expression of the field's type visible at the gap
           (``WriteConfigValueError``).
        3. the proc (and what it calls) reads the field nowhere, so no read sees the write
           (``ConfigObservedError``): the write is for instructions whose C templates read
           the configuration's struct.

    Forwards/Kills:
        Every statement keeps its identity; ``gap`` forwards to the same gap. Nothing dies.

    Example:
        ``write_config(p, p.body()[0].before(), ConfigAct, "mode", 1)``::

            y[0] = x[0]            ->    ConfigAct.mode = 1
                                         y[0] = x[0]
    """
    prim = "write_config"
    f = _field_of(config, field, gap, prim)
    ed = Editor(proc.ir())
    # a placeholder `pass` gives the value the context (loops, allocations) of the gap
    spot = ed.insert(gap.gap(), (Pass(),))
    path = spot.stmt_paths()[0]
    e = _value(ed.ir, path, f, value, gap)
    _check_unobserved(proc.ir(), f, prim, gap)
    at = ed.replace_node(NodeLoc(path), Assign(f, (), e))
    return ed.done(WriteConfigCursors, write=at)


# ---------------------------------------------------------------------------- delete_config


@prim_cursors
class DeleteConfigCursors(PrimCursors):
    """What ``delete_config`` returns: no cursors."""


def _overwritten_next(ir: ProcDef, stmt: StmtCursor, f: ConfigField) -> bool:
    """Whether a later statement of the same block writes ``f`` with ``=`` before any read."""
    *parent, (attr, k) = stmt.path()
    rest = stmt_list(ir, tuple(parent), attr)[k + 1 :]
    for s in rest:
        if isinstance(s, Assign) and s.sym is f:
            return not _reads_field((s,), f)
        if _reads_field((s,), f):
            return False
    return False


@primitive
def delete_config(proc: Proc, stmt: StmtCursor) -> Rewrite[DeleteConfigCursors]:
    """Delete a write of a configuration field that no read sees.

    Args:
        proc: the proc to rewrite.
        stmt: the write ``C.f = e`` (a cursor or a pattern).

    Returns:
        The new proc and ``DeleteConfigCursors`` (no fields).

    Preconditions:
        1. ``stmt`` is an ``=`` to a configuration field (``DeleteConfigNotWriteError``).
        2. no read sees it: the proc reads the field nowhere, or a later statement of the
           same block writes it with ``=`` before anything reads it
           (``DeleteConfigLiveError``).

    Forwards/Kills:
        Kills the write (hint: "deleted by delete_config"); every other statement keeps its
        identity.

    Example:
        ``delete_config(p, "ConfigLoad.scale = _ #0")``::

            ConfigLoad.scale = 1.0       ->    ConfigLoad.scale = s
            ConfigLoad.scale = s               y[0] = x[0] * ConfigLoad.scale
            y[0] = x[0] * ConfigLoad.scale
    """
    prim = "delete_config"
    s = stmt.node()
    if not (isinstance(s, Assign) and isinstance(s.sym, ConfigField)):
        msg = f"{stmt.describe()} is not a write of a configuration field"
        raise fail(DeleteConfigNotWriteError, prim, msg, stmt)
    f = s.sym
    ir = proc.ir()
    if _reads_field(ir.body, f) and not _overwritten_next(ir, stmt, f):
        msg = f"a read of {f.name} may see this write"
        raise fail(DeleteConfigLiveError, prim, msg, stmt)
    ed = Editor(ir)
    block = stmt.as_block().block()
    hint = "deleted by delete_config"
    # (the only statement of a body leaves a pass: campaign seed 2026, schedule 61265)
    ed.delete(block, hint=hint)
    return ed.done(DeleteConfigCursors)


__all__ = [
    "BindConfigCursors",
    "BindConfigPlaceError",
    "BindConfigPrecisionError",
    "ConfigFieldError",
    "ConfigObservedError",
    "DeleteConfigCursors",
    "DeleteConfigLiveError",
    "DeleteConfigNotWriteError",
    "WriteConfigCursors",
    "WriteConfigValueError",
    "bind_config",
    "delete_config",
    "write_config",
]
