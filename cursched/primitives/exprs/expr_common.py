"""Helpers shared by the expression and write primitives (``exprs``, ``binds``, ``writes``).

- ``fresh``: a copy of an expression made of new node objects, so that the edit operations see
  every old node die (no cursor to an operand silently re-targets to whatever now sits at its
  position: the Exo bug this project exists to fix);
- ``stmt_path_of``: the innermost statement holding an expression;
- ``dest_type``: the precision of a statement's destination (docs/semantics.md: a data
  expression is computed in that precision, so moving one between statements is exact only
  between statements of the same precision);
- ``buffers_read`` / ``buffers_written``: the underlying buffers (through windows) an
  expression reads and statements write, for the syntactic "nothing changes in between"
  checks;
- ``same_expr``: structural equality with index expressions proven equal in context;
- ``in_body`` / ``check_disjoint``: the preconditions every expression primitive shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.context import PathContext
from cursched.analysis.effects import block_effects
from cursched.cursors import ExprCursor
from cursched.cursors.tree import copy_tree, walk
from cursched.errors import BadArgumentError
from cursched.ir.config import ConfigField
from cursched.ir.nodes import (
    STMT_TYPES,
    Alloc,
    Assign,
    BinOp,
    Const,
    Expr,
    Extern,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at, is_prefix
from cursched.ir.symbols import Sym
from cursched.ir.types import DataType, TensorType, Type
from cursched.primitives.registry import fail


class NotInBodyError(BadArgumentError):
    """An expression primitive was given an expression outside the proc's body (an assert or
    a parameter's shape, which the analysis takes as given)."""


class OverlappingExprsError(BadArgumentError):
    """commute_expr / bind_expr: one expression is inside another (or given twice)."""


def in_body(prim: str, e: ExprCursor) -> Path:
    """The path of ``e``, which must be inside the body (else ``NotInBodyError``)."""
    path = e.path()
    if not path or path[0][0] != "body":
        raise fail(NotInBodyError, prim, f"{e.describe()} is not inside the proc's body", e)
    return path


def check_disjoint(prim: str, exprs: Sequence[ExprCursor], paths: Sequence[Path]) -> None:
    """Refuse (``OverlappingExprsError``) when one expression is inside another."""
    for i, a in enumerate(paths):
        for j, b in enumerate(paths):
            if i != j and is_prefix(a, b):
                msg = f"{exprs[j].describe()} is inside (or the same as) {exprs[i].describe()}"
                raise fail(OverlappingExprsError, prim, msg, exprs[j])


ASSOCIATIVE: frozenset[str] = frozenset({"+", "*"})
"""Operators that commute and associate (exactly on integers; commuting is exact on floats,
reassociating is not)."""


def fresh(e: Expr) -> Expr:
    """``e`` rebuilt from new node objects throughout (same symbols, same types)."""
    out: Expr = copy_tree(e)
    return out


def stmt_path_of(ir: ProcDef, path: Path) -> Path:
    """The path of the innermost statement holding the node at ``path``."""
    k = len(path)
    while k > 0 and not isinstance(get_at(ir, path[:k]), STMT_TYPES):
        k -= 1
    return path[:k]


def is_data(e: Expr) -> bool:
    """Whether ``e`` is a data value (not a control value, a window or a whole tensor)."""
    t = getattr(e, "type", None)
    return isinstance(t, DataType)


def decl_type(ir: ProcDef, sym: Sym) -> Type | None:
    """The declared type of a buffer symbol (parameter, allocation, window or configuration
    field)."""
    if isinstance(sym, ConfigField):
        return sym.type
    for a in ir.args:
        if a.sym is sym:
            return a.type
    for _, node in walk(ir):
        if isinstance(node, Alloc) and node.sym is sym:
            return node.type
        if isinstance(node, WindowStmt) and node.sym is sym:
            return node.rhs.type
    return None


def dest_type(ir: ProcDef, s: Assign | Reduce) -> DataType | None:
    """The precision a write's right-hand side is computed in (its buffer's element type)."""
    t = decl_type(ir, s.sym)
    if isinstance(t, TensorType):
        return t.elem
    return t if isinstance(t, DataType) else None


_SCRATCH = Sym("scratch")


def buffers_read(e: Expr, windows: Mapping[Sym, WindowStmt]) -> set[Sym]:
    """The buffers (windows resolved to what they view) ``e`` reads."""
    effs = block_effects((Assign(_SCRATCH, (), e),), windows)
    return {a.buf for a in effs if a.kind == "read"}


def buffers_written(stmts: Sequence[Stmt], windows: Mapping[Sym, WindowStmt]) -> set[Sym]:
    """The buffers (windows resolved) ``stmts`` write or reduce into, calls included."""
    return {a.buf for a in block_effects(tuple(stmts), windows) if a.kind != "read"}


def index_equal(a: Expr, b: Expr, ctx: PathContext) -> bool:
    """Whether two control expressions are provably equal in ``ctx``."""
    if a == b:
        return True
    x, y = af.to_aff(a), af.to_aff(b)
    if x is None or y is None:
        return False
    if x == y:
        return True
    return smt.valid(af.Eq(x - y), ctx.props()).ok


def same_expr(a: Expr, b: Expr, ctx: PathContext) -> bool:
    """Whether ``a`` and ``b`` are the same data expression: the same tree, with the same
    symbols, operators and constants, index expressions proven equal in ``ctx``."""
    match a, b:
        case Read(), Read():
            return (
                a.sym is b.sym
                and a.type == b.type
                and len(a.idx) == len(b.idx)
                and all(index_equal(x, y, ctx) for x, y in zip(a.idx, b.idx, strict=True))
            )
        case Const(), Const():
            return a.value == b.value and type(a.value) is type(b.value) and a.type == b.type
        case BinOp(), BinOp():
            return (
                a.op == b.op
                and a.type == b.type
                and same_expr(a.lhs, b.lhs, ctx)
                and same_expr(a.rhs, b.rhs, ctx)
            )
        case USub(), USub():
            return a.type == b.type and same_expr(a.arg, b.arg, ctx)
        case Extern(), Extern():
            return (
                a.name == b.name
                and a.type == b.type
                and len(a.args) == len(b.args)
                and all(same_expr(x, y, ctx) for x, y in zip(a.args, b.args, strict=True))
            )
        case (WindowExpr(), WindowExpr()) | (StrideExpr(), StrideExpr()):
            return a == b
        case _:
            return False


def reads_sym(e: Expr, sym: Sym) -> bool:
    """Whether ``e`` reads (or windows, or strides) the symbol ``sym`` itself."""
    return any(getattr(n, "sym", None) is sym for _, n in walk(e))


__all__ = [
    "ASSOCIATIVE",
    "NotInBodyError",
    "OverlappingExprsError",
    "buffers_read",
    "buffers_written",
    "check_disjoint",
    "decl_type",
    "dest_type",
    "fresh",
    "in_body",
    "index_equal",
    "is_data",
    "reads_sym",
    "same_expr",
    "stmt_path_of",
]
