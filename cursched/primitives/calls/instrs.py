"""``make_instr``: turn a proc into a hardware instruction (Exo 1.0's primitive of that name).

The proc's body stays its meaning (what the interpreter runs, what ``replace`` unifies
against); the C backend expands its calls through the template instead of calling a
function. The template uses cursched's placeholders (``cursched.codegen.c.statements``):
``{x}`` for a control value, a data scalar's lvalue or a tensor's element pointer,
``{x_data}`` for an address, ``{x_stride_k}`` for a stride.
``cursched.compat.exo.make_instr`` accepts Exo's convention instead.

Registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

import re
from typing import Any

from cursched.cursors import Editor
from cursched.cursors.edits import Rewrite
from cursched.errors import BadArgumentError
from cursched.ir.nodes import InstrInfo, ProcDef
from cursched.ir.types import ControlType, DataType, TensorType
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class InstrTemplateError(BadArgumentError):
    """make_instr, precondition 1: the template or the global text is not a string, or the
    template is empty."""


class InstrPlaceholderError(BadArgumentError):
    """make_instr, precondition 2: the template names a placeholder that no parameter has."""


@prim_cursors
class MakeInstrCursors(PrimCursors):
    """What ``make_instr`` returns: no cursors (every cursor of the proc forwards)."""


def placeholders(ir: ProcDef) -> set[str]:
    """The placeholder names a C template of ``ir`` may use (those the C backend fills)."""
    out: set[str] = set()
    for a in ir.args:
        n = a.sym.name
        match a.type:
            case ControlType():
                out.add(n)
            case DataType():
                out |= {n, f"{n}_data"}
            case TensorType() as t:
                out |= {n, f"{n}_data", *(f"{n}_stride_{k}" for k in range(t.rank()))}
    return out


def _check_texts(proc: Proc, c_instr: Any, c_global: Any) -> None:
    if not isinstance(c_instr, str) or not c_instr.strip() or not isinstance(c_global, str):
        msg = f"wants a non-empty template and a global text, got {c_instr!r}, {c_global!r}"
        raise fail(InstrTemplateError, "make_instr", msg)


def _check_placeholders(ir: ProcDef, c_instr: str) -> None:
    known = placeholders(ir)
    unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(c_instr)} - known)
    if unknown:
        msg = (
            f"the template names {', '.join('{' + u + '}' for u in unknown)}; "
            f"{ir.name}'s parameters give {', '.join(sorted(known)) or 'none'}"
        )
        raise fail(InstrPlaceholderError, "make_instr", msg)


@primitive
def make_instr(proc: Proc, c_instr: str, c_global: str = "") -> Rewrite[MakeInstrCursors]:
    """Make ``proc`` an instruction whose calls compile to the C template ``c_instr``.

    Args:
        proc: the proc (its body is the instruction's meaning).
        c_instr: the C template, in cursched's placeholders (``"{dst_data}[0] = ..."``).
        c_global: C text the instruction needs at file level (``#include <immintrin.h>``).

    Returns:
        The new proc and ``MakeInstrCursors`` (no fields).

    Preconditions:
        1. ``c_instr`` is a non-empty string and ``c_global`` a string
           (``InstrTemplateError``).
        2. every ``{name}`` of the template is a placeholder of a parameter: ``{x}``, and
           ``{x_data}`` / ``{x_stride_k}`` for data and tensor parameters
           (``InstrPlaceholderError``; the C backend would refuse it at compile time).

    Forwards/Kills:
        The body is unchanged: every cursor forwards to the same place. Nothing dies. A proc
        that was an instruction already gets the new template.

    Example:
        ``make_instr(p, "{dst_data}[0] = {src_data}[0];")``::

            def copy1(dst: [f32][1], src: [f32][1]):   ->  @instr("{dst_data}[0] = ...")
                dst[0] = src[0]                            def copy1(...): (same body)
    """
    _check_texts(proc, c_instr, c_global)
    _check_placeholders(proc.ir(), c_instr)
    ed = Editor(proc.ir())
    ed.set_proc(instr=InstrInfo(c_instr, c_global))
    return ed.done(MakeInstrCursors)


__all__ = [
    "InstrPlaceholderError",
    "InstrTemplateError",
    "MakeInstrCursors",
    "make_instr",
    "placeholders",
]
