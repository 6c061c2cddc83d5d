"""Calls of other procs: each argument checked against the callee's parameter.

Rules (Exo's, made explicit):

- a ``size``/``index``/``int`` parameter takes an integer control expression (a constant
  ``size`` argument must be positive), a ``bool`` parameter a condition;
- a data scalar parameter ``x: f32`` takes a scalar buffer ``y`` or one element ``A[i, j]``,
  by reference, of the same data type;
- a tensor parameter ``A: f32[n]`` takes a whole tensor (not a window: a window may be
  strided, a tensor parameter is contiguous); a window parameter ``[f32][n]`` takes a whole
  tensor, a window variable or a window expression ``A[i, 0:8]``;
- data types and ranks must be equal, memories identical, and every dimension whose size is
  constant on both sides (after putting the arguments for the callee's sizes) equal. Symbolic
  shape equality is left to the analysis, which checks it at definition time.
"""

from __future__ import annotations

import ast
from typing import assert_never

from cursched.frontend.exprs import ExprParser
from cursched.frontend.scope import Ctx, Var, is_missing
from cursched.frontend.typecheck import const_eval, fresh_type
from cursched.frontend.windows import is_window, window
from cursched.ir.memory import Memory
from cursched.ir.nodes import Expr, FnArg, ProcDef, Read
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL, SIZE, ControlType, DataType, TensorType


def check_call(ctx: Ctx, exprs: ExprParser, node: ast.Call, callee: ProcDef) -> tuple[Expr, ...]:
    """The typed arguments of ``node``, a call of ``callee`` with the right arity."""
    args: list[Expr] = []
    for a, param in zip(node.args, callee.args, strict=True):
        args.append(_arg(ctx, exprs, a, param, callee))
    bound: dict[Sym, Expr] = {
        p.sym: e for p, e in zip(callee.args, args, strict=True) if isinstance(p.type, ControlType)
    }
    for a, param, e in zip(node.args, callee.args, args, strict=True):
        if isinstance(param.type, TensorType):
            assert isinstance(e.type, TensorType)  # _arg checked it
            for d, (want, have) in enumerate(zip(param.type.shape, e.type.shape, strict=True)):
                w, h = const_eval(want, bound), const_eval(have)
                if w is not None and h is not None and w != h:
                    ctx.type_error(
                        a,
                        f"argument '{param.sym}' of {callee.name}: dimension {d} has size {h}, "
                        f"expected {w}",
                    )
    return tuple(args)


def _arg(ctx: Ctx, exprs: ExprParser, a: ast.expr, param: FnArg, callee: ProcDef) -> Expr:
    where = f"argument '{param.sym}' of {callee.name}"
    if isinstance(a, ast.Name) and ctx.lookup(a.id) is None and is_missing(ctx.env_get(a.id)):
        ctx.type_error(a, f"'{a.id}' is not defined")
    match param.type:
        case ControlType():
            if param.type == BOOL:
                return exprs.condition(a, where)
            e = exprs.integer(a, where)
            v = const_eval(e)
            if param.type == SIZE and v is not None and v <= 0:
                ctx.type_error(a, f"{where} is a size and must be positive, not {v}")
            return e
        case DataType():
            return _scalar_arg(ctx, exprs, a, param, where)
        case TensorType():
            return _tensor_arg(ctx, exprs, a, param, param.type, where)
        case _:
            assert_never(param.type)


def _scalar_arg(ctx: Ctx, exprs: ExprParser, a: ast.expr, param: FnArg, where: str) -> Expr:
    if isinstance(a, ast.Subscript) and not is_window(a):
        e: Read = exprs.read(a)
        var = exprs.var(a.value)
    elif isinstance(a, ast.Name) and ctx.lookup(a.id) is not None:
        var = exprs.var(a)
        if not isinstance(var.type, DataType):
            ctx.type_error(a, f"{where} is a data scalar; '{a.id}' is a {_kind(var)}")
        e = Read(var.sym, (), var.type, srcinfo=ctx.loc(a))
    else:
        ctx.type_error(a, f"{where} is a data scalar: pass a scalar buffer x or an element A[i]")
    if e.type != param.type:
        ctx.type_error(a, f"{where} has type {param.type}, not {e.type}")
    _check_mem(ctx, a, var.mem, param.mem, where)
    return e


def _tensor_arg(
    ctx: Ctx, exprs: ExprParser, a: ast.expr, param: FnArg, ptype: TensorType, where: str
) -> Expr:
    if isinstance(a, ast.Name) and ctx.lookup(a.id) is not None:
        var = exprs.var(a)
        if not isinstance(var.type, TensorType):
            ctx.type_error(a, f"{where} is a tensor; '{a.id}' is a {_kind(var)}")
        if var.type.window and not ptype.window:
            ctx.type_error(
                a,
                f"{where} is a contiguous tensor; a window can only go to a [type][...] parameter",
            )
        e: Expr = Read(var.sym, (), fresh_type(var.type), srcinfo=ctx.loc(a))
    elif isinstance(a, ast.Subscript) and is_window(a):
        if not ptype.window:
            ctx.type_error(
                a,
                f"{where} is a contiguous tensor; a window can only go to a [type][...] parameter",
            )
        e = window(exprs, a)
        var = exprs.var(a.value)
    else:
        ctx.type_error(a, f"{where} is a tensor: pass a tensor name or a window A[i, 0:8]")
    assert isinstance(e.type, TensorType)  # both branches made a tensor-typed expression
    if e.type.elem != ptype.elem:
        ctx.type_error(a, f"{where} has element type {ptype.elem}, not {e.type.elem}")
    if e.type.rank() != ptype.rank():
        ctx.type_error(a, f"{where} has rank {ptype.rank()}, not {e.type.rank()}")
    _check_mem(ctx, a, var.mem, param.mem, where)
    return e


def _check_mem(
    ctx: Ctx, a: ast.expr, have: type[Memory] | None, want: type[Memory] | None, where: str
) -> None:
    if have is not None and want is not None and have is not want:
        ctx.type_error(a, f"{where} lives in {want.name()}, not {have.name()}")


def _kind(var: Var) -> str:
    t = var.type
    if isinstance(t, TensorType):
        return f"{'window' if t.window else 'tensor'} of rank {t.rank()}"
    return str(t)
