"""Widening a proc's floats to f64, to tell reassociation from a wrong result.

A reassociating rewrite (``tree_scan``, ``split_scan``, ``left_reassociate_expr``, a staged
accumulation, ...) is exact over the reals and not bit for bit in f32: a proc that amplifies
rounding errors (values that grow, then cancel) can turn the regrouping of a few f32 additions
into outputs that differ far beyond ``assert_equivalent``'s f32 tolerance, although both procs
are right. ``widened_to_f64(p)`` is ``p`` with every floating-point type (``f16``, ``f32``,
``R``) replaced by ``f64``, everywhere: parameters, allocations, the types of expressions and
windows, callees and configuration fields. Run in the interpreter, it computes the same
algorithm with rounding errors some 10^9 times smaller, so two widened procs that agree show
that the f32 difference was rounding, and two that still differ show a wrong rewrite.

Example (a proc whose f32 sums a reassociation changes)::

    assert_equivalent(widened_to_f64(before), widened_to_f64(after))
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cursched.interp import procdef_of
from cursched.ir.nodes import ProcDef
from cursched.ir.types import F16, F32, F64, DataType, R

__all__ = ["widened_to_f64"]

_NARROW: frozenset[DataType] = frozenset({F16, F32, R})


def widened_to_f64(p: Any) -> ProcDef:
    """``p`` (a ``Proc`` or ``ProcDef``) with every float type widened to ``f64``.

    The rewrite is generic over the IR's frozen dataclasses (every field, nested tuples
    included), so no node kind can keep a narrow type by being forgotten; a node shared by
    several places (a callee, a configuration) is widened once and stays shared.
    """
    out = _Widen().node(procdef_of(p))
    assert isinstance(out, ProcDef)
    return out


class _Widen:
    def __init__(self) -> None:
        # by identity: the IR shares nodes (callees, configurations, unrolled expressions)
        self.done: dict[int, Any] = {}
        self.keep: list[Any] = []  # the originals, alive while their ids are keys

    def node(self, x: Any) -> Any:
        if isinstance(x, DataType):
            return F64 if x in _NARROW else x
        if isinstance(x, tuple):
            items = tuple(self.node(v) for v in x)
            return x if all(a is b for a, b in zip(items, x, strict=True)) else items
        if not dataclasses.is_dataclass(x) or isinstance(x, type):
            return x
        key = id(x)
        if key in self.done:
            return self.done[key]
        fields = {f.name: getattr(x, f.name) for f in dataclasses.fields(x) if f.init}
        new = {name: self.node(v) for name, v in fields.items()}
        same = all(new[n] is fields[n] for n in fields)
        out = x if same else dataclasses.replace(x, **new)
        self.done[key] = out
        self.keep.append(x)
        return out
