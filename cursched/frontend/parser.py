"""Statements and procs: a Python ``FunctionDef`` -> a typed ``ProcDef``.

Every construct of Python that the language does not have is a ``ParseError`` naming it;
everything in the language but wrongly typed, undefined or misused is a ``TypeCheckError``.
``assert`` statements become the proc's preconditions and must stand at the top level of the
body. A docstring (first statement) is skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TypeGuard

from cursched.errors import TypeCheckError
from cursched.frontend.annotations import parse_type
from cursched.frontend.calls import check_call
from cursched.frontend.exprs import ExprParser
from cursched.frontend.scope import Ctx, Var
from cursched.frontend.source import Source
from cursched.frontend.windows import is_window, window
from cursched.ir.config import ConfigDef, ConfigField
from cursched.ir.memory import DRAM
from cursched.ir.nodes import (
    CUDA_AXES,
    Alloc,
    Assign,
    Call,
    Expr,
    Extern,
    FnArg,
    For,
    If,
    InstrInfo,
    LoopMode,
    Pass,
    ProcDef,
    Reduce,
    Scope,
    Stmt,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import proc_exprs, walk_stmts
from cursched.ir.types import INDEX, ControlType, DataType, TensorType

_STMT_TEXT: dict[type[ast.AST], str] = {
    ast.While: "a while loop",
    ast.Return: "return",
    ast.FunctionDef: "a nested def",
    ast.AsyncFunctionDef: "a nested def",
    ast.ClassDef: "a class definition",
    ast.Delete: "del",
    ast.Import: "import (import at module level)",
    ast.ImportFrom: "import (import at module level)",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Try: "try",
    ast.Raise: "raise",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
    ast.Match: "match",
}


class ProcParser:
    """Parses one function definition into a ``ProcDef``.

    Args:
        src: the user source (locations).
        env: the Python names of the defining scope.
    """

    def __init__(self, src: Source, env: Mapping[str, object]) -> None:
        self.ctx = Ctx(src, env)
        self.exprs = ExprParser(self.ctx)

    # -- the proc -----------------------------------------------------------------------------
    def proc(self, fdef: ast.FunctionDef, instr: InstrInfo | None) -> ProcDef:
        """The ``ProcDef`` of ``fdef``; ``instr`` makes it an instruction."""
        if fdef.returns is not None:
            self.ctx.parse_error(fdef.returns, "a proc returns nothing; remove the annotation")
        if getattr(fdef, "type_params", None):  # Python 3.12's def f[T](...)
            self.ctx.parse_error(fdef, "type parameters are not in the language")
        try:
            args = self._params(fdef.args)
        except RecursionError:
            self.ctx.parse_error(fdef, "a parameter's type is nested too deeply")
        body_nodes = list(fdef.body)
        if _is_docstring(body_nodes[0]):
            # A docstring alone stands for an empty body, which the printer prints as pass.
            body_nodes = body_nodes[1:] or [ast.Pass(**_position(body_nodes[0]))]
        preds: list[Expr] = []
        body: list[Stmt] = []
        for node in body_nodes:
            try:
                if isinstance(node, ast.Assert):
                    if node.msg is not None:
                        self.ctx.parse_error(node.msg, "an assert takes no message")
                    preds.append(self.exprs.condition(node.test, "an assert"))
                else:
                    body.append(self.stmt(node))
            except RecursionError:
                # The parsers recurse over expressions; Python's own parser stops at a
                # similar depth, so this only affects machine-generated sources.
                self.ctx.parse_error(node, "this statement is nested too deeply")
        p = ProcDef(fdef.name, args, tuple(preds), tuple(body), instr, srcinfo=self.ctx.loc(fdef))
        self._check_param_names(p)
        return p

    def _check_param_names(self, p: ProcDef) -> None:
        """A parameter may not be named like a memory, proc or extern the proc uses.

        Parameter names are the proc's interface (arguments are passed by name); inside the
        body such a name would also be ambiguous in the printout, which must rename one.
        """
        used: dict[str, str] = {}
        for s in walk_stmts(p.body):
            if isinstance(s, Call):
                used.setdefault(s.proc.name, "a proc")
            elif isinstance(s, Alloc):
                used.setdefault(s.mem.name(), "a memory")
        for a in p.args:
            if a.mem is not None:
                used.setdefault(a.mem.name(), "a memory")
        for e in proc_exprs(p):
            if isinstance(e, Extern):
                used.setdefault(e.name, "an extern")
        for a in p.args:
            if a.sym.name in used:
                assert a.srcinfo is not None  # every FnArg made here has one
                what = used[a.sym.name]
                raise TypeCheckError(
                    f"parameter '{a.sym.name}' has the name of {what} this proc uses", a.srcinfo
                )

    def _params(self, a: ast.arguments) -> tuple[FnArg, ...]:
        extras: list[ast.AST] = [*a.posonlyargs, *a.kwonlyargs, *a.defaults]
        extras += [d for d in a.kw_defaults if d is not None]
        extras += [x for x in (a.vararg, a.kwarg) if x is not None]
        if extras:
            self.ctx.parse_error(
                extras[0], "only plain parameters (name: type) are in the language"
            )
        for p in a.args:
            if p.annotation is None:
                self.ctx.parse_error(p, f"parameter '{p.arg}' needs a type, such as size or f32[n]")
        # One pass in order: a shape names only sizes declared before it (as in Exo), so
        # that every symbol is bound before its first use, for the verifier and alpha_equal.
        out: list[FnArg] = []
        for p in a.args:
            typ, mem = parse_type(self.ctx, self.exprs, _ann(p), param=True)
            if self.ctx.lookup(p.arg) is not None:
                self.ctx.type_error(p, f"duplicate parameter '{p.arg}'")
            sym = Sym(p.arg)
            self.ctx.declare(p, p.arg, Var(sym, typ, mem, "arg"))
            out.append(FnArg(sym, typ, mem, srcinfo=self.ctx.loc(p)))
        return tuple(out)

    # -- statements ---------------------------------------------------------------------------
    def block(self, nodes: list[ast.stmt]) -> tuple[Stmt, ...]:
        """The statements of a nested block, in a new naming block."""
        self.ctx.push()
        try:
            return tuple(self.stmt(n) for n in nodes)
        finally:
            self.ctx.pop()

    def stmt(self, node: ast.stmt) -> Stmt:
        """One statement."""
        loc = self.ctx.loc(node)
        match node:
            case ast.Pass():
                return Pass(srcinfo=loc)
            case ast.Assign(targets=[target], value=value):
                return self._assign(node, target, value)
            case ast.Assign():
                self.ctx.parse_error(node, "chained assignment (a = b = c) is not in the language")
            case ast.AugAssign(op=ast.Add(), target=target, value=value):
                return self._reduce(node, target, value)
            case ast.AugAssign():
                self.ctx.parse_error(
                    node, "only += is in the language (of the augmented assignments)"
                )
            case ast.AnnAssign():
                return self._alloc(node)
            case ast.For():
                return self._for(node)
            case ast.If(test=test, body=body, orelse=orelse):
                cond = self.exprs.condition(test, "an if condition")
                return If(cond, self.block(body), self.block(orelse), srcinfo=loc)
            case ast.With():
                return self._scope(node)
            case ast.Expr(value=ast.Call() as call):
                return self._call(call)
            case ast.Expr(value=ast.Constant(value=str())):
                self.ctx.parse_error(node, "a string is only allowed as the docstring")
            case ast.Expr():
                self.ctx.parse_error(node, "an expression alone is not a statement")
            case ast.Assert():
                self.ctx.parse_error(node, "assert is only allowed at the top level of a proc")
        what = _STMT_TEXT.get(type(node), type(node).__name__)
        self.ctx.parse_error(node, f"{what} is not in the language")

    def _target(self, target: ast.expr, verb: str) -> tuple[Var, tuple[Expr, ...]]:
        """The buffer and indices a statement writes (``x``, ``A[i, j]``)."""
        if isinstance(target, ast.Subscript):
            return self.exprs.access(target, f"cannot be {verb}")
        if not isinstance(target, ast.Name):
            if isinstance(target, ast.Tuple | ast.List):
                self.ctx.parse_error(target, "tuple assignment is not in the language")
            self.ctx.parse_error(target, "can only assign to a variable or an element A[i, j]")
        var = self.ctx.lookup(target.id)
        if var is None:
            self.ctx.type_error(
                target,
                f"'{target.id}' is not defined; declare it first ({target.id}: f32) "
                f"or bind a window ({target.id} = A[0:8])",
            )
        if isinstance(var.type, ControlType):
            what = "a loop variable" if var.kind == "loop" else f"a {var.type} parameter"
            self.ctx.type_error(target, f"cannot write '{target.id}': it is {what}")
        if isinstance(var.type, TensorType):
            self.ctx.type_error(
                target, f"'{target.id}' is a tensor of rank {var.type.rank()}; write an element"
            )
        return var, ()

    def _dest_type(self, var: Var) -> DataType:
        t = var.type
        assert isinstance(t, DataType | TensorType)  # _target rejected control variables
        return t.elem if isinstance(t, TensorType) else t

    def _config_field(self, target: ast.expr) -> ConfigField | None:
        """The configuration field a target ``C.f`` names (``cursched.ir.config``), if any."""
        if not isinstance(target, ast.Attribute):
            return None
        obj = self.ctx.resolve_dotted(target)
        if isinstance(obj, ConfigField):
            return obj
        if isinstance(self.ctx.resolve_dotted(target.value), ConfigDef):
            self.ctx.type_error(target, f"configuration has no field {target.attr!r}")
        return None

    def _assign(self, node: ast.Assign, target: ast.expr, value: ast.expr) -> Stmt:
        loc = self.ctx.loc(node)
        if isinstance(target, ast.Name) and is_window(value):
            assert isinstance(value, ast.Subscript)  # is_window checked it
            rhs = window(self.exprs, value)
            src = self.exprs.var(value.value)
            sym = Sym(target.id)
            self.ctx.declare(target, target.id, Var(sym, rhs.type, src.mem, "window"))
            return WindowStmt(sym, rhs, srcinfo=loc)
        field = self._config_field(target)
        if field is not None:
            return Assign(field, (), self.exprs.data(value, field.type), srcinfo=loc)
        var, idx = self._target(target, "assigned")
        rhs_e = self.exprs.data(value, self._dest_type(var))
        return Assign(var.sym, idx, rhs_e, srcinfo=loc)

    def _reduce(self, node: ast.AugAssign, target: ast.expr, value: ast.expr) -> Stmt:
        if isinstance(target, ast.Name):
            var = self.ctx.lookup(target.id)
            if var is not None and isinstance(var.type, ControlType):
                self.ctx.type_error(target, f"+= to the control variable '{target.id}'")
        field = self._config_field(target)
        if field is not None:
            rhs_f = self.exprs.data(value, field.type)
            return Reduce(field, (), rhs_f, srcinfo=self.ctx.loc(node))
        var, idx = self._target(target, "reduced into")
        rhs = self.exprs.data(value, self._dest_type(var))
        return Reduce(var.sym, idx, rhs, srcinfo=self.ctx.loc(node))

    def _alloc(self, node: ast.AnnAssign) -> Stmt:
        if not isinstance(node.target, ast.Name):
            self.ctx.parse_error(node.target, "an allocation declares a plain name: t: f32[4]")
        if node.value is not None:
            self.ctx.parse_error(
                node.value, "an allocation takes no initial value; assign on the next line"
            )
        typ, mem = parse_type(self.ctx, self.exprs, node.annotation, param=False)
        assert isinstance(typ, DataType | TensorType)  # param=False rejects control types
        sym = Sym(node.target.id)
        self.ctx.declare(node.target, node.target.id, Var(sym, typ, mem, "alloc"))
        return Alloc(sym, typ, mem or DRAM, srcinfo=self.ctx.loc(node))

    def _for(self, node: ast.For) -> Stmt:
        if node.orelse:
            self.ctx.parse_error(node.orelse[0], "for ... else is not in the language")
        if not isinstance(node.target, ast.Name):
            self.ctx.parse_error(node.target, "a loop variable is a plain name")
        it = node.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id in ("seq", "par")
        ):
            self.ctx.parse_error(it, "loops are written 'for i in seq(lo, hi)' or par(lo, hi)")
        if len(it.args) != 2 or any(isinstance(a, ast.Starred) for a in it.args):
            self.ctx.parse_error(it, f"{it.func.id} takes two arguments: {it.func.id}(lo, hi)")
        axis: str | None = None
        for kw in it.keywords:
            # par(lo, hi, axis="threadIdx.x"): what bind_loop prints
            if it.func.id != "par" or kw.arg != "axis" or not _is_str(kw.value):
                self.ctx.parse_error(it, f"{it.func.id} takes two arguments: {it.func.id}(lo, hi)")
            if kw.value.value not in CUDA_AXES:
                self.ctx.type_error(kw.value, f"axis is one of {', '.join(CUDA_AXES)}")
            axis = str(kw.value.value)
        lo = self.exprs.integer(it.args[0], "a loop bound")
        hi = self.exprs.integer(it.args[1], "a loop bound")
        sym = Sym(node.target.id)
        self.ctx.push()
        try:
            self.ctx.declare(node.target, node.target.id, Var(sym, INDEX, None, "loop"))
            body = tuple(self.stmt(s) for s in node.body)
        finally:
            self.ctx.pop()
        mode: LoopMode = "par" if it.func.id == "par" else "seq"
        return For(sym, lo, hi, body, mode, axis, srcinfo=self.ctx.loc(node))

    def _scope(self, node: ast.With) -> Stmt:
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            self.ctx.parse_error(node, 'the only with statement is: with scope("name"):')
        call = node.items[0].context_expr
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            self.ctx.parse_error(call, 'the only with statement is: with scope("name"):')
        if call.func.id != "scope":
            self.ctx.parse_error(call, 'the only with statement is: with scope("name"):')
        if len(call.args) != 1 or not _is_str(call.args[0]):
            self.ctx.type_error(call, 'scope takes a name string: scope("name")')
        name = str(call.args[0].value)
        if not name:
            self.ctx.type_error(call.args[0], "a scope name cannot be empty")
        target: str | None = None
        for kw in call.keywords:
            if kw.arg != "target" or not _is_str(kw.value):
                self.ctx.type_error(kw.value, 'scope\'s only option is target="cuda"')
            if kw.value.value != "cuda":
                self.ctx.type_error(kw.value, 'the only scope target is "cuda"')
            target = "cuda"
        return Scope(name, self.block(node.body), target, srcinfo=self.ctx.loc(node))

    # -- calls --------------------------------------------------------------------------------
    def _call(self, node: ast.Call) -> Stmt:
        # A variable shadows the defining scope, procs included.
        if isinstance(node.func, ast.Name) and self.ctx.lookup(node.func.id) is not None:
            self.ctx.type_error(node.func, f"'{node.func.id}' is a variable, not a proc")
        callee = self.ctx.proc_def(node.func)
        if callee is None:
            text = ast.unparse(node.func)
            if self.exprs.extern_name(node.func) is not None:
                self.ctx.type_error(node, f"extern {text} computes a value; it is not a statement")
            if isinstance(node.func, ast.Name | ast.Attribute):
                self.ctx.type_error(node.func, f"'{text}' is not a proc in scope")
            self.ctx.parse_error(node.func, "only procs in scope can be called")
        if node.keywords:
            self.ctx.parse_error(node, "keyword arguments are not in the language")
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.ctx.parse_error(a, "a starred argument is not in the language")
        if len(node.args) != len(callee.args):
            self.ctx.type_error(
                node,
                f"{callee.name} takes {len(callee.args)} arguments, {len(node.args)} given",
            )
        args = check_call(self.ctx, self.exprs, node, callee)
        return Call(callee, args, srcinfo=self.ctx.loc(node))


def _ann(p: ast.arg) -> ast.expr:
    assert p.annotation is not None  # _params checked every annotation
    return p.annotation


def _position(node: ast.stmt) -> dict[str, int]:
    return {"lineno": node.lineno, "col_offset": node.col_offset}


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and _is_str(node.value)


def _is_str(node: ast.expr) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
