"""Type annotations of parameters and allocations, read from the AST (never evaluated).

Forms: ``size``, ``index``, ``int``, ``bool`` (control); ``f32`` (a data scalar);
``f32[n, 16]`` (a tensor); ``[f32][n, 16]`` (a window, parameters only); each data form
optionally followed by ``@ MEM``, DRAM when absent. Shapes are integer control expressions
over ``size`` variables and constants (constants must be positive, at most ``MAX_EXTENT``,
and the constant extents of one tensor may take at most ``MAX_BYTES``).
"""

from __future__ import annotations

import ast

from cursched.frontend.exprs import ExprParser
from cursched.frontend.scope import Ctx
from cursched.frontend.typecheck import const_eval, control_reads
from cursched.ir.memory import DRAM, Memory
from cursched.ir.nodes import Expr, Read
from cursched.ir.types import CONTROL_TYPES, DATA_TYPES, SIZE, DataType, TensorType, Type

#: The largest constant extent of a shape (size arguments are bounded the same way).
MAX_EXTENT = 2**62
#: The most bytes the constant extents of one tensor may take (int64 offsets stay exact).
MAX_BYTES = 2**62


def control_type_name(node: ast.expr | None) -> str | None:
    """The control type an annotation names (``size``, ``index``, ...), or None."""
    if isinstance(node, ast.Name) and node.id in CONTROL_TYPES:
        return node.id
    return None


def parse_type(
    ctx: Ctx, exprs: ExprParser, node: ast.expr, *, param: bool
) -> tuple[Type, type[Memory] | None]:
    """The type and memory an annotation denotes.

    Args:
        ctx: the proc's names (shapes read size variables).
        exprs: the expression parser for shapes.
        node: the annotation.
        param: True for a parameter (control types and windows are allowed), False for an
            allocation.

    Returns:
        The type and the memory (None for control types).
    """
    mem_node: ast.expr | None = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        mem_node = node.right
        node = node.left
    control = control_type_name(node)
    if control is not None:
        if not param:
            ctx.type_error(node, f"cannot allocate a {control}: only data is allocated")
        if mem_node is not None:
            ctx.type_error(mem_node, f"a {control} has no memory")
        return CONTROL_TYPES[control], None
    mem = DRAM if mem_node is None else ctx.memory(mem_node)
    match node:
        case ast.Name():
            return _data_type(ctx, node), mem
        case ast.Subscript(value=ast.List(elts=[elem])):
            if not param:
                ctx.type_error(node, "an allocation cannot be a window")
            dtype = _data_type(ctx, elem)
            t = TensorType(dtype, _shape(ctx, exprs, node), window=True)
            return _check_size(ctx, node, t), mem
        case ast.Subscript(value=ast.Name() as elem):
            dtype = _data_type(ctx, elem)
            t = TensorType(dtype, _shape(ctx, exprs, node), window=False)
            return _check_size(ctx, node, t), mem
        case ast.Constant(value=str()):
            ctx.parse_error(node, "write the type itself, not a string (f32[n], not 'f32[n]')")
    ctx.parse_error(node, "not a type: expected size, index, bool, f32, f32[n] or [f32][n]")


def _data_type(ctx: Ctx, node: ast.expr) -> DataType:
    if not isinstance(node, ast.Name):
        ctx.parse_error(node, "expected a data type name such as f32")
    if node.id not in DATA_TYPES:
        known = ", ".join(DATA_TYPES)
        ctx.type_error(node, f"unknown type '{node.id}' (data types: {known})")
    return DATA_TYPES[node.id]


def _shape(ctx: Ctx, exprs: ExprParser, node: ast.Subscript) -> tuple[Expr, ...]:
    dims = exprs.indices(node)
    out: list[Expr] = []
    for d in dims:
        if isinstance(d, ast.Slice):
            ctx.parse_error(d, "a shape is a list of sizes, not slices")
        e = exprs.integer(d, "a shape")
        for r in control_reads(e):
            if not (isinstance(r, Read) and r.type == SIZE):
                ctx.type_error(d, "a shape may only use size variables and constants")
        v = const_eval(e)
        if v is not None and v <= 0:
            ctx.type_error(d, f"a shape must be positive, not {v}")
        if v is not None and v > MAX_EXTENT:
            ctx.type_error(d, f"extent {v} is too large (at most 2**62, like a size argument)")
        out.append(e)
    return tuple(out)


def _check_size(ctx: Ctx, node: ast.expr, t: TensorType) -> TensorType:
    """``t``, once the bytes its constant extents take are known to fit ``MAX_BYTES``.

    Extents that are sizes are bounded when the proc runs (the wrapper bounds size
    arguments, generated C computes allocation sizes without overflow); the constant part
    is bounded here, so that no byte count or index computed from it overflows int64.
    """
    nbytes = t.elem.np_dtype.itemsize
    for d in t.shape:
        v = const_eval(d)
        if v is not None:
            nbytes *= v
    if nbytes > MAX_BYTES:
        ctx.type_error(
            node,
            f"{t.elem}[{', '.join(str(const_eval(d) or '_') for d in t.shape)}] takes at least"
            f" {nbytes} bytes, more than 2**62: its byte count or indices would overflow int64",
        )
    return t
