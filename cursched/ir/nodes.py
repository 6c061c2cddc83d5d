"""The nodes of the IR: frozen, slotted dataclasses, children in tuples.

``Expr`` and ``Stmt`` are closed unions: code that inspects nodes uses ``match`` over them and
ends with ``assert_never``. Variables are ``Sym`` objects (identity semantics). Source locations
(``srcinfo``) ride along and take no part in equality. ``node.replace(**kw)`` returns the very
same object when every new value is identical to the old one, so untouched subtrees are shared
between versions of a proc.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from typing import Any, Literal, Self, TypeAlias

from cursched.errors import SrcInfo
from cursched.ir.memory import Memory
from cursched.ir.symbols import Sym
from cursched.ir.types import DataType, TensorType, Type


def _same(old: Any, new: Any) -> bool:
    if old is new:
        return True
    if isinstance(old, tuple) and isinstance(new, tuple) and len(old) == len(new):
        # only the pairs that are not identical, filtered at C speed: a block of a big proc
        # has thousands of statements, all but a few shared
        pairs = compress(zip(old, new, strict=True), map(is_not, old, new))
        return all(_same(a, b) for a, b in pairs)
    return False


@dataclass(frozen=True, slots=True)
class Node:
    """Base class of every IR node."""

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied; ``self`` itself when nothing would change."""
        for k, v in changes.items():
            if not _same(getattr(self, k), v):
                break
        else:
            return self
        # What ``dataclasses.replace`` does, without its per-call reflection over the
        # fields: every rewrite rebuilds nodes through here.
        cls = type(self)
        names = _FIELDS.get(cls)
        if names is None:
            names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(self) if f.init)
        kw = {n: getattr(self, n) for n in names}
        kw.update(changes)
        return cls(**kw)


# The init fields of each node class, for ``Node.replace``.
_FIELDS: dict[type, tuple[str, ...]] = {}


_loc = field(default=None, compare=False, repr=False, kw_only=True)

# Named at module level: inside Alloc and FnArg the field called ``type`` shadows the builtin,
# so mypy would read ``type[Memory]`` there as an index into that field.
MemoryClass: TypeAlias = type[Memory]

BinOpName: TypeAlias = Literal[
    "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "and", "or"
]
ARITH_OPS: frozenset[str] = frozenset({"+", "-", "*", "/", "%"})
CMP_OPS: frozenset[str] = frozenset({"<", ">", "<=", ">=", "==", "!="})
BOOL_OPS: frozenset[str] = frozenset({"and", "or"})


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Const(Node):
    """A literal: an int, a float (``inf`` included) or a bool, with its type."""

    value: int | float | bool
    type: Type
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Read(Node):
    """A read of a variable, or of one element of a tensor (``idx`` non-empty).

    With an empty ``idx`` and a tensor ``type`` it names a whole tensor (a call argument).
    """

    sym: Sym
    idx: tuple[Expr, ...]
    type: Type
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class BinOp(Node):
    """A binary operation. Control ``/`` and ``%`` are floor division and modulo."""

    op: BinOpName
    lhs: Expr
    rhs: Expr
    type: Type
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class USub(Node):
    """Arithmetic negation."""

    arg: Expr
    type: Type
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Extern(Node):
    """A call of an extern function from ``cursched.ir.externs.EXTERNS`` by name."""

    name: str
    args: tuple[Expr, ...]
    type: Type
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Point(Node):
    """A window coordinate that selects one index (the dimension disappears)."""

    pt: Expr
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Interval(Node):
    """A window coordinate that keeps the half-open range ``lo:hi``."""

    lo: Expr
    hi: Expr
    srcinfo: SrcInfo | None = _loc


WAccess: TypeAlias = Point | Interval


@dataclass(frozen=True, slots=True)
class WindowExpr(Node):
    """A window of a tensor: ``A[i, 0:8]``. ``type`` is the window's tensor type."""

    sym: Sym
    idx: tuple[WAccess, ...]
    type: TensorType
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class StrideExpr(Node):
    """``stride(A, dim)``: the stride, in elements, of dimension ``dim`` of ``A``."""

    sym: Sym
    dim: int
    type: Type
    srcinfo: SrcInfo | None = _loc


Expr: TypeAlias = Const | Read | BinOp | USub | Extern | WindowExpr | StrideExpr


# ---------------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Assign(Node):
    """``sym[idx] = rhs``; the rhs is computed in the precision of ``sym``."""

    sym: Sym
    idx: tuple[Expr, ...]
    rhs: Expr
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Reduce(Node):
    """``sym[idx] += rhs``; the rhs is computed in the precision of ``sym``."""

    sym: Sym
    idx: tuple[Expr, ...]
    rhs: Expr
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Pass(Node):
    """``pass``: a statement that does nothing."""

    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class If(Node):
    """``if cond: body else: orelse`` (``orelse`` may be empty)."""

    cond: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    srcinfo: SrcInfo | None = _loc


LoopMode: TypeAlias = Literal["seq", "par"]

#: The CUDA axes a ``par`` loop can be bound to (``bind_loop``): block and thread indices.
CUDA_AXES: tuple[str, ...] = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
)


@dataclass(frozen=True, slots=True)
class For(Node):
    """``for iter in seq(lo, hi): body`` (or ``par``).

    ``axis`` (one of ``CUDA_AXES``, on ``par`` loops inside a cuda scope only) binds the loop
    to a CUDA block or thread index: ``for tx in par(0, 64, axis="threadIdx.x")``.
    """

    iter: Sym
    lo: Expr
    hi: Expr
    body: tuple[Stmt, ...]
    mode: LoopMode = "seq"
    axis: str | None = None
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Alloc(Node):
    """``sym: f32[4, n] @ MEM`` (or a scalar ``sym: f32``)."""

    sym: Sym
    type: DataType | TensorType
    mem: MemoryClass
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Call(Node):
    """A call of another proc; ``args`` match the callee's parameters one to one."""

    proc: ProcDef
    args: tuple[Expr, ...]
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class WindowStmt(Node):
    """``sym = A[i, 0:8]``: binds a name to a window."""

    sym: Sym
    rhs: WindowExpr
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class Scope(Node):
    """``with scope("name"):`` a named region; ``target="cuda"`` makes it a kernel."""

    name: str
    body: tuple[Stmt, ...]
    target: str | None = None
    srcinfo: SrcInfo | None = _loc


Stmt: TypeAlias = Assign | Reduce | Pass | If | For | Alloc | Call | WindowStmt | Scope


# -------------------------------------------------------------------------------- procs


@dataclass(frozen=True, slots=True)
class FnArg(Node):
    """A parameter: a control value (size, index, bool), a data scalar or a tensor/window."""

    sym: Sym
    type: Type
    mem: MemoryClass | None = None
    srcinfo: SrcInfo | None = _loc


@dataclass(frozen=True, slots=True)
class InstrInfo(Node):
    """What makes a proc a hardware instruction: its C template and global text.

    The template names the instruction's parameters in braces: ``"{dst_data} = {a_data};"``
    (``{x}`` is the value of a control parameter, ``{x_data}`` the address of a tensor's
    first element; the C backend documents the full set).
    """

    c_template: str
    c_global: str = ""


@dataclass(frozen=True, slots=True)
class ProcDef(Node):
    """A procedure: name, parameters, asserts (``preds``), body, and instruction info."""

    name: str
    args: tuple[FnArg, ...]
    preds: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    instr: InstrInfo | None = None
    srcinfo: SrcInfo | None = _loc


STMT_TYPES: tuple[type, ...] = (Assign, Reduce, Pass, If, For, Alloc, Call, WindowStmt, Scope)
EXPR_TYPES: tuple[type, ...] = (Const, Read, BinOp, USub, Extern, WindowExpr, StrideExpr)
