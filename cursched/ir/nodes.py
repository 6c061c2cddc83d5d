"""The nodes of the IR: frozen, slotted dataclasses, children in tuples.

``Expr`` and ``Stmt`` are closed unions: code that inspects nodes uses ``match`` over them and
ends with ``assert_never``. Variables are ``Sym`` objects (identity semantics). Source locations
(``srcinfo``) ride along and take no part in equality. ``node.replace(**kw)`` returns the very
same object when every new value is identical to the old one, so untouched subtrees are shared
between versions of a proc.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from typing import Any, Literal, Self, TypeAlias, TypeVar

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
        # every rewrite rebuilds nodes through here: a builder per class and changed fields
        # (``rebuilder``), not ``dataclasses.replace``'s per-call reflection over the fields
        out: Self = rebuilder(type(self), tuple(changes))(self, *changes.values())
        return out


# (node class, fields) -> a function building a copy of a node with those fields changed.
# Every rewrite rebuilds nodes (``Node.replace``; ``update_at`` on the path of an edit, through
# ``cursors.tree.with_field``), and a frozen dataclass's constructor costs about 110 ns a field
# (each assignment goes through ``object.__setattr__``, past the frozen check);
# ``dataclasses.replace`` adds a reflection over the fields per call.
_REBUILD: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}


def _make_rebuilder(cls: type, attrs: tuple[str, ...]) -> Callable[..., Any]:
    """A function ``(node, *values)`` -> a new ``cls`` node with the fields ``attrs`` set to
    ``values`` and every other field from ``node``.

    A slotted dataclass with the generated ``__init__`` and no ``__post_init__`` (every IR
    node) is filled through its slot descriptors, half the cost of its constructor and the
    same object the constructor would make (that ``__init__`` only assigns the fields); any
    other class calls its constructor.
    """
    fs = [f for f in dataclasses.fields(cls) if f.init]
    unknown = set(attrs) - {f.name for f in fs}
    if unknown:  # what the constructor would say of an unknown keyword
        raise TypeError(f"{cls.__name__} has no init field {sorted(unknown)[0]!r}")
    slots = getattr(cls, "__slots__", ())
    env: dict[str, Any] = {"cls": cls, "new": object.__new__}
    params = ", ".join(["n", *(f"v{k}" for k in range(len(attrs)))])

    def value(name: str) -> str:
        return f"v{attrs.index(name)}" if name in attrs else f"n.{name}"

    # ``dataclasses`` writes ``__init__`` with ``exec`` (its code comes from "<string>"); a
    # hand-written one may do more than assign, and is called
    init = getattr(getattr(cls, "__init__", None), "__code__", None)
    generated = init is not None and init.co_filename == "<string>"
    direct = generated and not hasattr(cls, "__post_init__") and all(f.name in slots for f in fs)
    if direct and len(fs) == len(dataclasses.fields(cls)):
        lines = [f"def build({params}):", "    o = new(cls)"]
        for f in fs:
            env[f"set_{f.name}"] = getattr(cls, f.name).__set__
            lines.append(f"    set_{f.name}(o, {value(f.name)})")
        lines.append("    return o")
    else:
        parts = [f"{f.name}={value(f.name)}" if f.kw_only else value(f.name) for f in fs]
        lines = [f"def build({params}):", f"    return cls({', '.join(parts)})"]
    # generated code, as ``dataclasses`` generates ``__init__``: one plain call per field
    exec("\n".join(lines), env)
    fn: Callable[..., Any] = env["build"]
    _REBUILD[cls, attrs] = fn
    return fn


_T = TypeVar("_T")


def slot_init(cls: type[_T]) -> type[_T]:
    """Replace the generated ``__init__`` of a frozen slotted dataclass by one with the same
    parameters and defaults that fills the slots through their descriptors, as ``rebuilder``
    does: the generated one sets each field by ``object.__setattr__(self, name, v)``, about
    twice the cost, and the framework makes a ``Rewrite`` and a ``StepRecord`` every call.
    The instance is as frozen (assigning a field still raises), and type checkers still read
    the dataclass's signature."""
    env: dict[str, Any] = {}
    params, lines = ["self"], []
    klass: type = cls  # any class, for ``dataclasses.fields``' signature
    for f in dataclasses.fields(klass):
        if f.default_factory is not dataclasses.MISSING or f.kw_only or not f.init:
            raise TypeError(f"slot_init: {cls.__name__}.{f.name} needs the generated __init__")
        env[f"set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            env[f"default_{f.name}"] = f.default
            params.append(f"{f.name}=default_{f.name}")
        lines.append(f"    set_{f.name}(self, {f.name})")
    # generated code, as ``dataclasses`` generates ``__init__``: one plain call per field
    exec("\n".join([f"def __init__({', '.join(params)}):", *lines]), env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)  # noqa: B010 - replacing a method, which mypy forbids
    return cls


def rebuilder(cls: type, attrs: tuple[str, ...]) -> Callable[..., Any]:
    """The function ``(node, *values)`` -> a new ``cls`` object with the fields ``attrs`` set
    to ``values`` and every other field from ``node`` (made once per class and fields)."""
    fn = _REBUILD.get((cls, attrs))
    return _make_rebuilder(cls, attrs) if fn is None else fn


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
