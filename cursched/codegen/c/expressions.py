"""C expressions: control arithmetic, data arithmetic in the destination's precision, accesses.

Control values are ``int_fast64_t`` (``bool`` for conditions). Control ``/`` and ``%`` are
floor division and modulo (docs/semantics.md); C's ``/`` truncates, so they go through the
``cs_floordiv``/``cs_floormod`` helpers unless a syntactic check proves the numerator
non-negative (constants >= 0, sizes, loop variables whose lower bound is non-negative, and
``+ * / %`` of those).

Data expressions are printed for one destination type ``T`` (the precision of the statement):
every read is cast to ``T``, every operation is done in ``T``. Floats use plain C operators
(``float`` for f32/R, ``double`` for f64); ``_Float16`` operations are computed in ``float``
and cast back after every operation, as numpy does. Integer ``+ - *`` are cast back to ``T``
after every operation, so they wrap around like numpy; those that could overflow C's ``int``
(undefined behaviour) go through ``uint32_t`` first (see ``fits_int``). Integer ``/ %`` call
helpers that truncate like C but return 0 for a zero
divisor instead of trapping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import assert_never

import numpy as np

from cursched.codegen.c.helpers import Helpers
from cursched.codegen.c.naming import Namer
from cursched.errors import CodegenError
from cursched.ir.config import ConfigField
from cursched.ir.externs import EXTERNS
from cursched.ir.memory import Memory
from cursched.ir.nodes import (
    BinOp,
    Const,
    Expr,
    Extern,
    Interval,
    Point,
    Read,
    StrideExpr,
    USub,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.types import F16, F64, ControlType, DataType


def has_window_hook(mem: type[Memory]) -> bool:
    """Whether ``mem`` overrides ``Memory.c_window`` (its buffers may not be pointers)."""
    return getattr(mem.c_window, "__func__", None) is not getattr(Memory.c_window, "__func__", 0)


@dataclass(frozen=True, slots=True)
class Root:
    """The allocation a buffer views, for its memory's hooks (``Memory.c_window``,
    ``Memory.c_access``).

    Attributes:
        mem: the allocation's memory.
        name: its C name.
        ctype: its element's C type.
        shape: its shape (C expressions).
        starts: the index, in every dimension of the allocation, of the view's element
            ``[0, ..., 0]``.
        dims: the dimensions of the allocation the view keeps, in order.
    """

    mem: type[Memory]
    name: str
    ctype: str
    shape: tuple[str, ...]
    starts: tuple[str, ...]
    dims: tuple[int, ...]

    def index(self, idx: tuple[str, ...]) -> tuple[str, ...]:
        """The allocation's index of element ``idx`` of the view."""
        full = list(self.starts)
        for d, i in zip(self.dims, idx, strict=True):
            full[d] = add_terms([full[d], i])
        return tuple(full)

    def offset(self, idx: tuple[str, ...]) -> str:
        """The row-major offset of the allocation's element ``idx``."""
        return add_terms([mul(i, s) for i, s in zip(idx, row_major(self.shape), strict=True)])


@dataclass(frozen=True, slots=True)
class Buffer:
    """How generated C reaches a buffer (argument, allocation or window).

    Attributes:
        elem: element type.
        base: C expression of a pointer to element ``[0, ..., 0]``.
        strides: C expressions of the element stride of each dimension.
        scalar: for a rank-0 buffer, the C lvalue of its single element (``m``, ``*x``).
        memory: the name of a memory that scalar code may not read or write (registers an
            instruction library declares ``addressable = False``), else None.
        root: for an allocation and the windows into it, the allocation (its memory's hooks
            address it); None for arguments.
        hooked: the allocation's memory has a ``c_window`` hook: its views are not pointers
            (an AVX2 register is ``Ct[i]``), so only instruction templates take them
            (``ExprGen.view``) and ``base`` is never printed.
    """

    elem: DataType
    base: str
    strides: tuple[str, ...]
    scalar: str | None = None
    memory: str | None = None
    root: Root | None = None
    hooked: bool = False


_NUMBER = re.compile(r"\d+(\.\d*)?([eE][+-]?\d+)?[fF]?")
_CAST = re.compile(r"\([A-Za-z_][A-Za-z0-9_]*\)")


def is_atom(s: str) -> bool:
    """Whether ``s`` can be an operand of a binary operator without parentheses."""
    if s.isidentifier() or _NUMBER.fullmatch(s):
        return True
    cast = _CAST.match(s)
    if cast and cast.end() < len(s) and s[cast.end()] != "(" and is_atom(s[cast.end() :]):
        return True  # ``(float)x[i]``: a cast binds tighter than any binary operator
    # ``f(...)``, ``a[...]`` and ``(...)``: one balanced group that closes at the very end.
    depth = 0
    opened = False
    for k, ch in enumerate(s):
        if ch in "([":
            if depth == 0 and opened and s[k - 1] not in "])":
                return False
            depth += 1
            opened = True
        elif ch in ")]":
            depth -= 1
            if depth == 0 and k != len(s) - 1 and s[k + 1] not in "([":
                return False
        elif depth == 0 and not (ch.isalnum() or ch == "_"):
            return False
    return opened and depth == 0 and s[-1] in ")]"


def paren(s: str) -> str:
    return s if is_atom(s) else f"({s})"


_PREC = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<": 10, "<=": 10, ">": 10, ">=": 10}
_PREC |= {"==": 9, "!=": 9, "&&": 5, "||": 4, "?": 3, ":": 3}


def _top_prec(s: str) -> int:
    """Lowest precedence among the binary operators of ``s`` outside parentheses.

    Generated code writes every binary operator between spaces and nothing else that way,
    so a space-delimited token at depth 0 is an operator.
    """
    depth, low = 0, 100
    for k, tok in enumerate(s.split(" ")):
        if depth == 0 and k and tok in _PREC:
            low = min(low, _PREC[tok])
        depth += tok.count("(") + tok.count("[") - tok.count(")") - tok.count("]")
    return low


def binary(a: str, op: str, b: str) -> str:
    """``a op b`` with the parentheses C's precedence needs (and those gcc asks for).

    A right operand of the same precedence keeps its parentheses: ``a - (b + c)``, and
    ``a + (b + c)``, which rounds differently from ``a + b + c``.
    """
    p = _PREC[op]
    pa, pb = _top_prec(a), _top_prec(b)
    # gcc -Wparentheses: comparisons and && inside ||/&&/comparisons get parentheses.
    if pa < p or (p <= 10 and pa <= 10 and pa != 100):
        a = f"({a})"
    if pb <= p or (p <= 10 and pb <= 10):
        b = f"({b})"
    return f"{a} {op} {b}"


def mul(a: str, b: str) -> str:
    """``a * b`` with the trivial factors folded away (index arithmetic readability)."""
    if b == "1":
        return a
    if a == "1":
        return b
    if "0" in (a, b):
        return "0"
    return binary(a, "*", b)


def add_terms(terms: list[str]) -> str:
    terms = [t for t in terms if t != "0"]
    return " + ".join(terms) if terms else "0"


def row_major(shape: tuple[str, ...]) -> tuple[str, ...]:
    """Element strides of a contiguous row-major buffer of ``shape`` (C expressions)."""
    out: list[str] = []
    acc = "1"
    for s in reversed(shape):
        out.append(acc)
        acc = mul(acc, s) if acc != "1" else s
    return tuple(reversed(out))


def fits_int(t: DataType, op: str) -> bool:
    """Whether ``op`` on two values of the integer type ``t``, done in C's ``int`` (where they
    are promoted), can never overflow: then the cast back to ``t`` wraps like numpy, with no
    detour through ``uint32_t``. True for 8-bit types, and for ui16 ``+``/``-``."""
    bits = t.np_dtype.itemsize * 8
    return bits == 8 or (bits == 16 and op in ("+", "-"))


def float_literal(value: float, t: DataType) -> str:
    """A C literal of ``value`` rounded to ``t`` exactly as numpy rounds it."""
    v = float(np.dtype(t.numpy).type(value))
    if np.isnan(v):
        text = "NAN"
    elif np.isinf(v):
        text = "INFINITY" if v > 0 else "-INFINITY"
    elif t == F64:
        text = repr(v)
    else:
        # repr() of a value exactly representable in float parses back to that float.
        text = repr(v) + "f"
    return f"(_Float16){paren(text)}" if t == F16 else text


def int_literal(value: int | float | bool, t: DataType) -> str:
    wrapped = int(np.array(int(value), dtype=np.int64).astype(t.numpy))
    if t.numpy == "int32" and wrapped == -(2**31):
        return "(-2147483647 - 1)"
    return str(wrapped)


class ExprGen:
    """Prints expressions of one C function; ``bufs`` and ``nonneg`` grow as blocks open."""

    def __init__(self, names: Namer, helpers: Helpers) -> None:
        self.names = names
        self.helpers = helpers
        self.bufs: dict[Sym, Buffer] = {}
        self.nonneg: set[Sym] = set()

    # -- control ---------------------------------------------------------------------------
    def is_nonneg(self, e: Expr) -> bool:
        """A cheap syntactic proof that the control expression ``e`` is >= 0."""
        match e:
            case Const():
                return isinstance(e.value, int) and e.value >= 0
            case Read():
                return not e.idx and e.sym in self.nonneg
            case BinOp():
                if e.op in ("+", "*"):
                    return self.is_nonneg(e.lhs) and self.is_nonneg(e.rhs)
                if e.op in ("/", "%"):
                    return self.is_nonneg(e.lhs) and self.is_nonneg(e.rhs)
                return False
            case USub() | Extern() | WindowExpr() | StrideExpr():
                return False
            case _:
                assert_never(e)

    def ctrl(self, e: Expr) -> str:
        """C text of a control (integer or boolean) expression."""
        match e:
            case Const():
                if isinstance(e.value, bool):
                    return "true" if e.value else "false"
                if isinstance(e.value, float):
                    raise CodegenError(f"float literal {e.value} in a control expression")
                return str(e.value)
            case Read():
                if e.idx or e.sym in self.bufs:
                    raise CodegenError(f"data read of '{e.sym}' in a control expression")
                return self.names.name(e.sym)
            case BinOp():
                lhs, rhs = self.ctrl(e.lhs), self.ctrl(e.rhs)
                if e.op in ("/", "%"):
                    if self.is_nonneg(e.lhs) and self.is_nonneg(e.rhs):
                        return binary(lhs, e.op, rhs)
                    fn = "cs_floordiv" if e.op == "/" else "cs_floormod"
                    self.helpers.need(fn)
                    return f"{fn}({lhs}, {rhs})"
                return binary(lhs, {"and": "&&", "or": "||"}.get(e.op, e.op), rhs)
            case USub():
                return f"-{paren(self.ctrl(e.arg))}"
            case StrideExpr():
                return self.buf(e.sym).strides[e.dim]
            case Extern() | WindowExpr():
                raise CodegenError(f"{type(e).__name__} in a control expression")
            case _:
                assert_never(e)

    # -- buffers ---------------------------------------------------------------------------
    def buf(self, sym: Sym) -> Buffer:
        try:
            return self.bufs[sym]
        except KeyError:
            if isinstance(sym, ConfigField):
                # a member of the configuration's global struct (``cursched.codegen.c.unit``)
                lv = f"{sym.config.c_struct()}.{sym.field}"
                return Buffer(sym.type, f"(&{lv})", (), scalar=lv)
            raise CodegenError(f"'{sym}' is not a buffer in scope") from None

    def offset(self, b: Buffer, idx: tuple[Expr, ...]) -> str:
        if len(idx) != len(b.strides):
            raise CodegenError(f"{len(idx)} indices for a buffer of rank {len(b.strides)}")
        return add_terms([mul(self.ctrl(i), s) for i, s in zip(idx, b.strides, strict=True)])

    def access(self, sym: Sym, idx: tuple[Expr, ...]) -> str:
        """The C lvalue of element ``sym[idx]`` (the memory's ``c_access`` hook first)."""
        b = self.buf(sym)
        if b.memory is not None:
            raise CodegenError(
                f"'{sym}' lives in {b.memory}, which only instructions can access;"
                " replace this access by an instruction call"
            )
        if b.root is not None:
            if len(idx) != len(b.root.dims):
                raise CodegenError(f"{len(idx)} indices for a buffer of rank {len(b.root.dims)}")
            r = b.root
            full = r.index(tuple(self.ctrl(i) for i in idx))
            text = r.mem.c_access(r.name, r.ctype, r.shape, full)
            if text is not None:
                return text
            if b.hooked:
                return f"{r.name}[{r.offset(full)}]"
        if not idx and b.scalar is not None:
            return b.scalar
        return f"{b.base}[{self.offset(b, idx)}]"

    def address(self, sym: Sym, idx: tuple[Expr, ...]) -> str:
        """The C address of element ``sym[idx]`` (``idx`` empty: the buffer's start)."""
        b = self.buf(sym)
        if b.hooked:
            if b.memory is not None:
                raise CodegenError(f"'{sym}' lives in {b.memory}: it has no address")
            return f"&{paren(self.access(sym, idx))}"
        if not idx:
            return b.base
        off = self.offset(b, idx)
        return b.base if off == "0" else binary(b.base, "+", off)

    def window(self, w: WindowExpr) -> Buffer:
        """The buffer a window expression denotes (an alias into its tensor)."""
        b = self.buf(w.sym)
        if len(w.idx) != len(b.strides):
            raise CodegenError(f"window of rank {len(w.idx)} into '{w.sym}'")
        terms: list[str] = []
        strides: list[str] = []
        starts: list[str] = []
        kept: list[int] = []
        for k, (acc, s) in enumerate(zip(w.idx, b.strides, strict=True)):
            match acc:
                case Point():
                    starts.append(self.ctrl(acc.pt))
                    terms.append(mul(starts[-1], s))
                case Interval():
                    starts.append(self.ctrl(acc.lo))
                    terms.append(mul(starts[-1], s))
                    strides.append(s)
                    kept.append(k)
                case _:
                    assert_never(acc)
        root: Root | None = None
        if b.root is not None:
            r = b.root
            dims = tuple(r.dims[k] for k in kept)
            root = Root(r.mem, r.name, r.ctype, r.shape, r.index(tuple(starts)), dims)
        off = add_terms(terms)
        base = b.base if off == "0" else binary(b.base, "+", off)
        return Buffer(b.elem, base, tuple(strides), None, b.memory, root, b.hooked)

    def view(self, b: Buffer) -> str:
        """The C text of buffer ``b`` as an instruction's tensor argument: the memory's
        ``c_window`` text for a view of an allocation in a memory with that hook, else the
        pointer ``b.base``."""
        r = b.root
        if r is None or not b.hooked:
            return b.base
        text = r.mem.c_window(r.name, r.ctype, r.shape, r.starts, r.dims)
        if text is not None:
            return text
        off = r.offset(r.starts)
        return r.name if off == "0" else binary(r.name, "+", off)

    # -- data ------------------------------------------------------------------------------
    def data(self, e: Expr, t: DataType) -> str:
        """C text of data expression ``e`` computed in precision ``t``."""
        ct = t.c_name
        if isinstance(getattr(e, "type", None), ControlType) and not isinstance(e, Const):
            return f"({ct}){paren(self.ctrl(e))}"
        match e:
            case Const():
                if t.is_float():
                    return float_literal(float(e.value), t)
                if isinstance(e.value, float) and not np.isfinite(e.value):
                    raise CodegenError(f"{e.value} cannot be stored in {t}")
                return int_literal(e.value, t)
            case Read():
                text = self.access(e.sym, e.idx)
                elem = self.buf(e.sym).elem
                return text if elem.c_name == ct else f"({ct}){paren(text)}"
            case BinOp():
                return self._binop(e, t)
            case USub():
                a = self.data(e.arg, t)
                if t.is_float():
                    return f"-{paren(a)}"
                if fits_int(t, "-"):
                    return f"({ct})-{paren(a)}"
                return f"({ct})(0u - (uint32_t){paren(a)})"
            case Extern():
                return self._extern(e, t)
            case StrideExpr():
                return f"({ct}){paren(self.ctrl(e))}"
            case WindowExpr():
                raise CodegenError("a window used as a data value")
            case _:
                assert_never(e)

    def _binop(self, e: BinOp, t: DataType) -> str:
        a, b = self.data(e.lhs, t), self.data(e.rhs, t)
        ct = t.c_name
        if e.op not in ("+", "-", "*", "/", "%"):
            raise CodegenError(f"operator '{e.op}' on data values")
        if t.is_float():
            if e.op == "%":
                # C's fmod, as the interpreter's np.fmod: the remainder takes a's sign.
                if t == F16:
                    return f"(_Float16)fmodf((float){paren(a)}, (float){paren(b)})"
                return f"{'fmod' if t == F64 else 'fmodf'}({a}, {b})"
            if t == F16:
                return f"(_Float16)((float){paren(a)} {e.op} (float){paren(b)})"
            return binary(a, e.op, b)
        if e.op in ("/", "%"):
            fn = f"cs_{'div' if e.op == '/' else 'mod'}_{ct}"
            self.helpers.need(fn)
            return f"{fn}({a}, {b})"
        if fits_int(t, e.op):
            return f"({ct})({binary(a, e.op, b)})"
        return f"({ct})((uint32_t){paren(a)} {e.op} (uint32_t){paren(b)})"

    def _extern(self, e: Extern, t: DataType) -> str:
        spec = EXTERNS.get(e.name)
        if spec is None or spec.arity != len(e.args):
            raise CodegenError(f"unknown extern {e.name}/{len(e.args)}")
        args = [self.data(a, t) for a in e.args]
        ct = t.c_name
        if e.name == "select":
            a, b, c, d = (paren(x) for x in args)
            return f"({a} < {b} ? {c} : {d})"
        if e.name in ("relu", "sigmoid"):
            if e.name == "sigmoid" and not t.is_float():
                raise CodegenError(f"sigmoid of integer type {t}")
            fn = f"cs_{e.name}_{ct}"
            self.helpers.need(fn)
            return f"{fn}({args[0]})"
        if not t.is_float():
            if e.name in ("fmax", "fmaxf", "fmin"):
                fn = f"cs_{'max' if e.name != 'fmin' else 'min'}_{ct}"
                self.helpers.need(fn)
                return f"{fn}({', '.join(args)})"
            raise CodegenError(f"extern {e.name} on integer type {t}")
        if e.name in ("fmax", "fmaxf", "fmin"):
            # an inline helper, not libm's function: a call per element made a running max
            # (softmax, flash attention) a chain of calls
            fn = f"cs_{'fmin' if e.name == 'fmin' else 'fmax'}_{'double' if t == F64 else 'float'}"
            self.helpers.need(fn)
        elif t == F64:
            return f"{spec.c_name}({', '.join(args)})"
        else:
            fn = spec.c_name + ("f" if spec.c_suffix_f else "")
        if t == F16:
            inner = ", ".join(f"(float){paren(a)}" for a in args)
            return f"(_Float16){fn}({inner})"
        return f"{fn}({', '.join(args)})"
