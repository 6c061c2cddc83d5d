"""Expressions: Python AST -> typed IR expressions, checking the type rules as it goes.

Control positions (indices, loop bounds, conditions, asserts, shapes, control call arguments)
and data positions (right-hand sides of ``=`` and ``+=``) are parsed by different methods,
because the same Python syntax means different things in each (see ``typecheck`` for the
typing rules).

Decisions (documented here because Exo is not uniform about them):

- **Control values are not data.** Reading a size, index or bool variable (or ``stride``) on
  the right of ``=``/``+=`` is a ``TypeCheckError``; integer and float *literals* (and Python
  int/float constants of the defining scope) are allowed and take the destination's type.
  Exo rejects it too ("cannot assign/reduce a 'index' type value"); converting an index to
  data would need a precision rule for large indices that docs/semantics.md does not have.
- **Data values are not control.** Reading a buffer inside an index, a bound, a condition or
  an assert is a ``TypeCheckError``; data comparisons are written with ``select``.
- **``not`` is not in the language** (``ParseError``): write the negated comparison. Exo has no
  ``not`` either, and a desugaring would make the printout differ from the source.
- ``-`` applied directly to a numeric literal is folded into a negative literal (``-1``,
  ``-inf``), so that a printed negative constant parses back to the same IR.
- A comparison chain ``0 <= i < n`` is the ``and`` of its comparisons.
- Data ``%`` is allowed only when the destination is an integer type (C's remainder).
- A literal in a data position must be a value of the destination type: an integer
  destination takes only integer literals within its range (``2.0`` and ``inf`` are floats).
"""

from __future__ import annotations

import ast
import math
from typing import NoReturn

import numpy as np

from cursched.frontend.externs import ExternFunction
from cursched.frontend.scope import Ctx, Var, is_missing
from cursched.frontend.typecheck import arith_type, const_eval, fresh, has_vars
from cursched.ir.config import ConfigField
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import (
    BinOp,
    BinOpName,
    Const,
    Expr,
    Extern,
    Read,
    StrideExpr,
    USub,
)
from cursched.ir.types import BOOL, INDEX, INT, ControlType, DataType, TensorType

_ARITH: dict[type[ast.operator], BinOpName] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Mod: "%",
}
_CMP: dict[type[ast.cmpop], BinOpName] = {
    ast.Lt: "<",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
_OP_TEXT: dict[type[ast.AST], str] = {
    ast.Pow: "**",
    ast.FloorDiv: "//",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.Invert: "~",
    ast.UAdd: "unary +",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_HINTS: dict[type[ast.AST], str] = {
    ast.IfExp: "; compare data with select(a, b, c, d)",
    ast.Slice: "; slices only appear in windows (w = A[0:8]) and call arguments",
}
_EXPR_TEXT: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.IfExp: "a conditional expression (x if c else y)",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string",
    ast.Starred: "a starred expression",
    ast.NamedExpr: "the walrus operator :=",
    ast.Slice: "a slice here",
}


# the roles of integer expressions named in errors, by the ``what`` their parser is given
_ROLES = {
    "a shape": "shape expressions",
    "a loop bound": "loop bounds",
    "a bound": "window bounds",
    "a window index": "index expressions",
    "an index": "index expressions",
}


class ExprParser:
    """Parses the expressions of one proc; ``ctx`` holds its variables and scope."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        # what the outermost integer expression being parsed is (a shape, a loop bound, an
        # index), so that an error deep inside it names that role
        self._role = "index expressions"

    # -- errors -------------------------------------------------------------------------------
    def not_in_language(self, node: ast.AST) -> None:
        """Raise a ``ParseError`` naming the Python construct at ``node``."""
        what = _EXPR_TEXT.get(type(node))
        if isinstance(node, ast.BinOp | ast.UnaryOp):
            op = _OP_TEXT.get(type(node.op), type(node.op).__name__)
            hint = "; '/' is floor division on control values" if op == "//" else ""
            self.ctx.parse_error(node, f"operator {op} is not in the language{hint}")
        if isinstance(node, ast.Constant):
            self.ctx.parse_error(node, f"literal {node.value!r} is not in the language")
        what = what or type(node).__name__
        hint = _HINTS.get(type(node), "")
        self.ctx.parse_error(node, f"{what} is not in the language{hint}")

    def var(self, node: ast.expr) -> Var:
        """The proc variable a ``Name`` node names (TypeCheckError when undefined)."""
        if not isinstance(node, ast.Name):
            if isinstance(node, ast.Subscript):
                self.ctx.parse_error(node, "index with A[i, j], not A[i][j]")
            self.ctx.parse_error(node, "expected the name of a variable")
        var = self.ctx.lookup(node.id)
        if var is None:
            self.ctx.type_error(node, f"'{node.id}' is not defined")
        return var

    # -- control expressions ------------------------------------------------------------------
    def integer(self, node: ast.expr, what: str) -> Expr:
        """An integer control expression (an index, bound, shape or size argument)."""
        role = _ROLES.get(what)
        if role is None:
            return self._integer(node, what)
        outer, self._role = self._role, role
        try:
            return self._integer(node, what)
        finally:
            self._role = outer

    def _integer(self, node: ast.expr, what: str) -> Expr:
        e = self.control(node)
        if e.type == BOOL:
            self.ctx.type_error(node, f"{what} must be an integer expression, not a bool")
        return e

    def condition(self, node: ast.expr, what: str) -> Expr:
        """A bool control expression (an ``if`` condition or an assert)."""
        e = self.control(node)
        if e.type != BOOL:
            self.ctx.type_error(node, f"{what} must be a condition (a comparison), not {e.type}")
        return e

    def control(self, node: ast.expr) -> Expr:
        """A control expression of any control type."""
        loc = self.ctx.loc(node)
        match node:
            case ast.Constant(value=bool() as b):
                return Const(b, BOOL, srcinfo=loc)
            case ast.Constant(value=int() as v):
                return Const(v, INT, srcinfo=loc)
            case ast.Constant(value=float()):
                self.ctx.type_error(node, "a float is not a control value (use an integer)")
            case ast.Name(id=name):
                var = self.ctx.lookup(name)
                if var is not None:
                    if not isinstance(var.type, ControlType):
                        self._data_in_control(node, name)
                    return Read(var.sym, (), var.type, srcinfo=loc)
                return self._control_constant(node, self.ctx.env_get(name), name)
            case ast.Attribute():
                obj = self.ctx.resolve_dotted(node)
                if isinstance(obj, ConfigField):
                    self._data_in_control(node, obj.name)
                return self._control_constant(node, obj, ast.unparse(node))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                arg = self.integer(operand, "the operand of -")
                if isinstance(arg, Const) and isinstance(arg.value, int):
                    return Const(-arg.value, INT, srcinfo=loc)
                return USub(arg, INT if arg.type == INT else INDEX, srcinfo=loc)
            case ast.UnaryOp(op=ast.Not()):
                self.ctx.parse_error(
                    node, "'not' is not in the language; write the opposite comparison"
                )
            case ast.BinOp(op=op) if type(op) in _ARITH:
                return self._control_arith(node, _ARITH[type(op)])
            case ast.Compare():
                return self._compare(node)
            case ast.BoolOp(op=op, values=values):
                bop: BinOpName = "and" if isinstance(op, ast.And) else "or"
                parts = [self.condition(v, f"an operand of '{bop}'") for v in values]
                out = parts[0]
                for part in parts[1:]:
                    out = BinOp(bop, out, part, BOOL, srcinfo=loc)
                return out
            case ast.Call(func=ast.Name(id="stride")) if self.ctx.lookup("stride") is None:
                return self._stride(node)
            case ast.Call(func=func):
                if self.extern_name(func) is not None:
                    self.ctx.type_error(node, "an extern computes data; it is not a control value")
                self.ctx.type_error(node, "only stride(A, d) can be called in a control expression")
            case ast.Subscript(value=ast.Name(id=name)) if self.ctx.lookup(name) is not None:
                self._data_in_control(node, name)
        self.not_in_language(node)
        raise AssertionError("unreachable")  # not_in_language always raises

    def _data_in_control(self, node: ast.AST, name: str) -> None:
        if self._role == "shape expressions":
            self.ctx.type_error(
                node, f"data value '{name}' in a shape: a shape is built from sizes and constants"
            )
        self.ctx.type_error(
            node,
            f"data value '{name}' used where a control value (index, bound or condition) "
            "is needed; compare data with select(a, b, c, d)",
        )

    def _control_constant(self, node: ast.expr, obj: object, text: str) -> Expr:
        loc = self.ctx.loc(node)
        if isinstance(obj, bool | np.bool_):
            return Const(bool(obj), BOOL, srcinfo=loc)
        if isinstance(obj, int | np.integer):
            return Const(int(obj), INT, srcinfo=loc)
        if is_missing(obj):
            if text == "inf":
                self.ctx.type_error(node, "inf is a data literal, not a control value")
            self.ctx.type_error(node, f"'{text}' is not defined")
        self.ctx.type_error(node, f"'{text}' is a Python {type(obj).__name__}, not a control value")

    def _control_arith(self, node: ast.BinOp, op: BinOpName) -> Expr:
        lhs = self.integer(node.left, f"the left operand of {op}")
        rhs = self.integer(node.right, f"the right operand of {op}")
        if op == "*" and has_vars(lhs) and has_vars(rhs):
            self.ctx.type_error(node, f"{self._role} must be affine: '*' needs a constant operand")
        if op in ("/", "%"):
            divisor = const_eval(rhs)
            if divisor is None or divisor <= 0:
                self.ctx.type_error(
                    node, f"the divisor of '{op}' must be a positive integer constant"
                )
        return BinOp(op, lhs, rhs, arith_type(lhs.type, rhs.type), srcinfo=self.ctx.loc(node))

    def _compare(self, node: ast.Compare) -> Expr:
        loc = self.ctx.loc(node)
        left = self.control(node.left)
        out: Expr | None = None
        for cmpop, right_node in zip(node.ops, node.comparators, strict=True):
            if type(cmpop) not in _CMP:
                op_text = _OP_TEXT.get(type(cmpop), type(cmpop).__name__)
                self.ctx.parse_error(node, f"operator {op_text} is not in the language")
            op = _CMP[type(cmpop)]
            right = self.control(right_node)
            both_bool = left.type == BOOL and right.type == BOOL
            if not (both_bool and op in ("==", "!=")) and BOOL in (left.type, right.type):
                self.ctx.type_error(node, f"'{op}' compares integers, not bools")
            cmp = BinOp(op, left, right, BOOL, srcinfo=loc)
            out = cmp if out is None else BinOp("and", out, cmp, BOOL, srcinfo=loc)
            left = fresh(right)  # the next comparison's operand is a node of its own
        assert out is not None  # ast.Compare has at least one operator
        return out

    def _stride(self, node: ast.Call) -> Expr:
        if node.keywords or len(node.args) != 2:
            self.ctx.type_error(node, "stride takes two arguments: stride(A, dim)")
        buf, dim_node = node.args
        var = self.var(buf)
        if not isinstance(var.type, TensorType):
            self.ctx.type_error(buf, f"stride needs a tensor or window; '{var.sym}' is not one")
        if not (isinstance(dim_node, ast.Constant) and type(dim_node.value) is int):
            self.ctx.type_error(dim_node, "the dimension of stride must be an integer literal")
        dim = dim_node.value
        if not 0 <= dim < var.type.rank():
            self.ctx.type_error(
                dim_node, f"dimension {dim} out of range for rank {var.type.rank()}"
            )
        return StrideExpr(var.sym, dim, INDEX, srcinfo=self.ctx.loc(node))

    # -- data expressions ---------------------------------------------------------------------
    def data(self, node: ast.expr, dest: DataType) -> Expr:
        """A data expression computed in the precision ``dest`` of its destination."""
        loc = self.ctx.loc(node)
        literal = self._numeric(node)
        if literal is not None:
            return self._literal(node, literal, dest)
        match node:
            case ast.Constant(value=bool()):
                self.ctx.type_error(node, "a bool is not a data value")
            case ast.Name(id=name):
                var = self.ctx.lookup(name)
                if var is not None:
                    return self._scalar_read(node, var)
                self._not_data_constant(node, self.ctx.env_get(name), name)
            case ast.Attribute():
                obj = self.ctx.resolve_dotted(node)
                if isinstance(obj, ConfigField):
                    return Read(obj, (), obj.type, srcinfo=loc)
                self._not_data_constant(node, obj, ast.unparse(node))
            case ast.Subscript():
                return self.read(node)
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return USub(self.data(operand, dest), dest, srcinfo=loc)
            case ast.UnaryOp(op=ast.Not()):
                self.ctx.parse_error(node, "'not' is not in the language")
            case ast.BinOp(op=op) if type(op) in _ARITH:
                name_op = _ARITH[type(op)]
                if name_op == "%" and dest.is_float():
                    self.ctx.type_error(node, f"'%' on data needs an integer type, not {dest}")
                lhs = self.data(node.left, dest)
                rhs = self.data(node.right, dest)
                return BinOp(name_op, lhs, rhs, dest, srcinfo=loc)
            case ast.Compare() | ast.BoolOp():
                self.ctx.type_error(
                    node, "comparisons are control values; compare data with select(a, b, c, d)"
                )
            case ast.Call():
                return self._extern(node, dest)
        self.not_in_language(node)
        raise AssertionError("unreachable")

    def _literal(self, node: ast.expr, v: int | float, dest: DataType) -> Expr:
        if not dest.is_float():
            if isinstance(v, float):
                self.ctx.type_error(node, f"the float {v!r} is not a value of {dest}")
            info = np.iinfo(dest.numpy)
            if not int(info.min) <= v <= int(info.max):
                self.ctx.type_error(node, f"{v} is out of the range of {dest}")
        return Const(v, dest, srcinfo=self.ctx.loc(node))

    def _numeric(self, node: ast.expr) -> int | float | None:
        """The value of a numeric literal: a number, ``inf``, a Python int or float constant
        of the defining scope, or ``-`` of one of those (folded, so ``-128`` fits ``i8``).
        """
        match node:
            case ast.Constant(value=bool()):
                return None
            case ast.Constant(value=int() | float() as v):
                return v
            case ast.Name(id=name) if self.ctx.lookup(name) is None:
                obj = self.ctx.env_get(name)
                if is_missing(obj):
                    return math.inf if name == "inf" else None
                return _python_number(obj)
            case ast.Attribute():
                return _python_number(self.ctx.resolve_dotted(node))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                inner = self._numeric(operand)
                return None if inner is None else -inner
        return None

    def _not_data_constant(self, node: ast.expr, obj: object, text: str) -> NoReturn:
        if is_missing(obj):
            self.ctx.type_error(node, f"'{text}' is not defined")
        self.ctx.type_error(node, f"'{text}' is a Python {type(obj).__name__}, not a data value")

    def _scalar_read(self, node: ast.Name, var: Var) -> Expr:
        if isinstance(var.type, ControlType):
            self.ctx.type_error(
                node,
                f"control value '{node.id}' ({var.type}) cannot be used as data; "
                "only literals convert to data",
            )
        if isinstance(var.type, TensorType):
            self.ctx.type_error(
                node, f"'{node.id}' is a tensor of rank {var.type.rank()}; index it"
            )
        return Read(var.sym, (), var.type, srcinfo=self.ctx.loc(node))

    def indices(self, node: ast.Subscript) -> list[ast.expr]:
        """The index expressions of ``A[i, j]`` (slices included)."""
        sl = node.slice
        return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]

    def access(self, node: ast.Subscript, what: str) -> tuple[Var, tuple[Expr, ...]]:
        """The buffer and the indices of an element access ``A[i, j]`` (read or written)."""
        var = self.var(node.value)
        name = var.sym.name
        if isinstance(var.type, ControlType):
            self.ctx.type_error(node, f"control value '{name}' cannot be indexed")
        if isinstance(var.type, DataType):
            self.ctx.type_error(node, f"'{name}' is a scalar; it cannot be indexed")
        idx_nodes = self.indices(node)
        for i in idx_nodes:
            if isinstance(i, ast.Slice):
                self.ctx.type_error(
                    i, f"a slice {what}; slices only appear in windows (w = A[0:8]) and calls"
                )
        if len(idx_nodes) != var.type.rank():
            self.ctx.type_error(
                node,
                f"'{name}' has rank {var.type.rank()} but is indexed with {len(idx_nodes)} indices",
            )
        idx = tuple(self.integer(i, "an index") for i in idx_nodes)
        return var, idx

    def read(self, node: ast.Subscript) -> Read:
        """A read of one element ``A[i, j]``."""
        var, idx = self.access(node, "cannot be read as a value")
        assert isinstance(var.type, TensorType)  # access() checked it
        return Read(var.sym, idx, var.type.elem, srcinfo=self.ctx.loc(node))

    def extern_name(self, func: ast.expr) -> str | None:
        """The extern a call's function names (a built-in or an imported name), or None."""
        obj = self.ctx.resolve_dotted(func)
        if isinstance(obj, ExternFunction):
            return obj.name
        if isinstance(func, ast.Name) and func.id in EXTERNS and self.ctx.lookup(func.id) is None:
            return func.id
        return None

    def _extern(self, node: ast.Call, dest: DataType) -> Expr:
        name = self.extern_name(node.func)
        if name is None:
            if self.ctx.proc_def(node.func) is not None:
                self.ctx.type_error(node, "a proc call is a statement, not a value")
            if isinstance(node.func, ast.Name | ast.Attribute):
                self.ctx.type_error(node, f"'{ast.unparse(node.func)}' is not an extern")
            self.ctx.parse_error(node, "only externs can be called in an expression")
        if node.keywords:
            self.ctx.parse_error(node, "keyword arguments are not in the language")
        spec = EXTERNS[name]
        if len(node.args) != spec.arity:
            self.ctx.type_error(
                node, f"{name} takes {spec.arity} arguments, {len(node.args)} given"
            )
        args = tuple(self.data(a, dest) for a in node.args)
        return Extern(name, args, dest, srcinfo=self.ctx.loc(node))


def _python_number(obj: object) -> int | float | None:
    """``obj`` as a Python int or float when it is a number (bools are not), else None."""
    if isinstance(obj, bool | np.bool_):
        return None
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj)
    return None
