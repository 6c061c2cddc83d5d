"""Control expressions as Python source, for the wrapper's shape and assert checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import assert_never

from cursched.errors import CodegenError
from cursched.ir.nodes import BinOp, Const, Expr, Extern, Read, StrideExpr, USub, WindowExpr
from cursched.ir.symbols import Sym


def py_ctrl(e: Expr, env: Mapping[Sym, str], stride: Callable[[Sym, int], str]) -> str:
    """Python text computing control expression ``e`` (floor ``//`` and ``%`` like the IR).

    Args:
        e: the expression (sizes, indices, constants, strides).
        env: the Python name of each argument symbol.
        stride: Python text of ``stride(sym, dim)``.
    """
    match e:
        case Const():
            return repr(e.value)
        case Read():
            if e.idx or e.sym not in env:
                raise CodegenError(f"'{e.sym}' cannot be evaluated before the call")
            return env[e.sym]
        case BinOp():
            op = "//" if e.op == "/" else e.op
            return f"({py_ctrl(e.lhs, env, stride)} {op} {py_ctrl(e.rhs, env, stride)})"
        case USub():
            return f"(-{py_ctrl(e.arg, env, stride)})"
        case StrideExpr():
            return stride(e.sym, e.dim)
        case Extern() | WindowExpr():
            raise CodegenError(f"{type(e).__name__} in a shape or assert")
        case _:
            assert_never(e)
