"""The reference interpreter's expression compiler: expressions -> Python source text.

A proc is compiled to the source of one Python function (``cursched.interp.compile``) whose
locals are the proc's variables. Control values (sizes, indices, bools) are Python ints and
bools. A buffer (tensor, window, data scalar) is a flat sequence of numbers (a memoryview of
the caller's array, or a Python list: an allocation, an f16 array) plus an offset,
a stride per dimension (in elements) and a size per dimension, each a local variable, so that
element ``A[i, j]`` is ``A_d[A_o + i * A_s0 + j * A_s1]``; a window shares its base's list, so
every write through a window lands in the base. A data scalar that is never passed to a call
is a plain local variable.

Data expressions are compiled against the *destination's* type (docs/semantics.md): every
read is converted to it at the leaf and every operation is rounded to it: f32 through a store
into a one-element ``array('f')`` (C's ``(float)`` conversion), f16 through ``struct``,
integers by masking to their width. Each value the generated code holds is therefore an exact
value of its type, and ``+ - * /`` done on doubles and rounded once give the type's correctly
rounded result. Externs other than the exact ones (select, fmax, fmin, relu, sqrt) run the
table's numpy function on a numpy scalar of the type, exactly as they did before.

Every element access checks its indices against the buffer's sizes with integer comparisons
(numpy would silently wrap a negative index); ``cursched.interp.compile`` removes the checks
of an innermost loop whose accesses it proves in bounds for the whole loop on entry.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, assert_never

import numpy as np

from cursched.errors import InterpreterError, SrcInfo
from cursched.interp.nest_analysis import holds
from cursched.interp.values import float_to_int, fmt_expr, oob_error, to_python
from cursched.ir.config import ConfigField, fresh_state
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Const,
    Expr,
    Extern,
    Interval,
    Point,
    ProcDef,
    Read,
    Reduce,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import proc_exprs, walk_expr, walk_stmts
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["CTRL_OPS", "Buf", "ExprCompiler", "Hoisted"]

CTRL_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.floordiv,  # control division is floor division (Python's //)
    "%": operator.mod,  # and floor modulo (Python's %)
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}

#: Integer data types: (bits, signed) by numpy dtype name.
_INT_BITS = {"int8": (8, True), "uint8": (8, False), "uint16": (16, False), "int32": (32, True)}
_INT_BITS.update({"int16": (16, True), "uint32": (32, False), "int64": (64, True)})


@dataclass(frozen=True)
class Buf:
    """How a buffer lives in the generated code: the source text of its parts.

    Attributes:
        data: the list (or, for a local scalar, the variable holding the value).
        off: the element offset of element 0 in ``data``.
        strides: per dimension, the stride in elements.
        dims: per dimension, the size.
        dt: the element type.
        local: a data scalar held in a plain local variable (never passed by reference).
    """

    data: str
    off: str
    strides: tuple[str, ...]
    dims: tuple[str, ...]
    dt: DataType
    local: bool = False

    def parts(self) -> list[str]:
        """The texts passed for this buffer in a call: list, offset, strides, sizes."""
        return [self.data, self.off, *self.strides, *self.dims]


@dataclass(frozen=True)
class Hoisted:
    """An access whose bounds an innermost loop checked on entry: the variable holding its
    offset (computed before the loop, or walked by the loop)."""

    base: str
    #: the local variable holding the element through the loop (scalar replacement)
    scalar: str | None = None


def _is_int(dt: np.dtype[Any]) -> bool:
    return dt.kind in "iu"


def wrap_text(code: str, dt: np.dtype[Any]) -> str:
    """Source wrapping the Python int ``code`` to integer type ``dt`` (two's complement)."""
    bits, signed = _INT_BITS[dt.name]
    mask = (1 << bits) - 1
    if not signed:
        return f"(({code}) & {mask})"
    half = 1 << (bits - 1)
    return f"(((({code}) + {half}) & {mask}) - {half})"


def fits(src: np.dtype[Any], dst: np.dtype[Any]) -> bool:
    """Every value of integer type ``src`` is a value of integer type ``dst``."""
    sb, ss = _INT_BITS[src.name]
    db, ds = _INT_BITS[dst.name]
    if ss == ds:
        return sb <= db
    return not ss and sb < db  # unsigned into a wider signed


def _float_exact(src: np.dtype[Any], dst: np.dtype[Any]) -> bool:
    """Every value of type ``src`` (int or float) is exactly a value of float type ``dst``."""
    mant = {2: 11, 4: 24, 8: 53}[dst.itemsize]
    if src.kind == "f":
        return src.itemsize <= dst.itemsize
    bits, signed = _INT_BITS[src.name]
    return bits - signed <= mant


#: The configuration state of the interpreter (``cursched.ir.config``): one one-element list
#: per field, shared by a proc and its callees; ``reset_config_state`` gives every field the
#: fresh-allocation value at the start of each top-level run (docs/semantics.md).
CONFIG_STATE: dict[ConfigField, list[Any]] = {}


def config_cell(f: ConfigField) -> list[Any]:
    """The list holding field ``f``'s value (made on first use)."""
    cell = CONFIG_STATE.get(f)
    if cell is None:
        cell = CONFIG_STATE[f] = [fresh_state(f).item()]
    return cell


def reset_config_state() -> None:
    """Every field back to its unspecified entry value (the lists stay the same objects)."""
    for f, cell in CONFIG_STATE.items():
        cell[0] = fresh_state(f).item()


def _config_fields(pd: ProcDef) -> list[ConfigField]:
    found: dict[int, ConfigField] = {}
    for st in walk_stmts(pd.body):
        if isinstance(st, Assign | Reduce) and isinstance(st.sym, ConfigField):
            found.setdefault(st.sym.id, st.sym)
    for root in proc_exprs(pd):
        for e in walk_expr(root):
            if isinstance(e, Read) and isinstance(e.sym, ConfigField):
                found.setdefault(e.sym.id, e.sym)
    return list(found.values())


class ExprCompiler:
    """Compiles the expressions of one ``ProcDef`` to source; names its variables.

    Statements are emitted by the subclass ``cursched.interp.compile.Compiler``; expressions
    that need statements before them (rounding, bounds checks, temporaries) emit them through
    ``line`` at the current indentation.
    """

    def __init__(self, pd: ProcDef) -> None:
        self.pd = pd
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[Sym, str] = {}
        self.bufs: dict[Sym, Buf] = {}
        self.ns: dict[str, Any] = {}
        self.ntmp = 0
        self.uses_numpy = False
        self.uses_config = False
        #: one-element numpy arrays (by dtype) through which externs get numpy scalars:
        #: name -> dtype; each run makes its own (``cells``)
        self.np_cells: dict[str, np.dtype[Any]] = {}
        #: accesses whose checks the enclosing loop hoisted (by node identity)
        self.hoisted: dict[int, Hoisted] = {}
        #: accesses (by node identity) that an enclosing loop nest proved in bounds on entry
        self.unchecked: frozenset[int] = frozenset()
        self.inner_var: Sym | None = None
        self.types: dict[Sym, DataType | TensorType] = {}
        for a in pd.args:
            if isinstance(a.type, DataType | TensorType):
                self.types[a.sym] = a.type
        for st in walk_stmts(pd.body):
            if isinstance(st, Alloc):
                self.types[st.sym] = st.type
            elif isinstance(st, WindowStmt):
                self.types[st.sym] = st.rhs.type
        for f in _config_fields(pd):
            self.uses_config = True
            # a global data scalar (cursched.ir.config): its one-element list is shared by
            # every compiled proc, which names it as a global of its code
            name = f"_cfg{f.id}"
            self.ns[name] = config_cell(f)
            self.bufs[f] = Buf(name, "0", (), (), f.type)
            self.types[f] = f.type

    # -- emission ------------------------------------------------------------------------
    def _true(self, cond: str) -> bool:
        """Condition ``cond`` (source) holds whatever the arguments (here: it is literal)."""
        return bool(holds(cond))

    def line(self, text: str) -> None:
        """Emit one line of source at the current depth."""
        self.lines.append("    " * self.depth + text)

    def tmp(self, stem: str = "t") -> str:
        """A fresh local variable name."""
        self.ntmp += 1
        return f"_{stem}{self.ntmp}"

    def const(self, value: Any, stem: str = "k") -> str:
        """A name in the generated module's namespace bound to ``value``."""
        name = self.tmp(stem)
        self.ns[name] = value
        return name

    def name(self, sym: Sym) -> str:
        """The Python identifier of ``sym`` (a new one on first sight)."""
        if sym not in self.names:
            base = re.sub(r"\W", "_", sym.name) or "v"
            self.names[sym] = f"{base}_{len(self.names)}"
        return self.names[sym]

    def where(self, loc: SrcInfo | None) -> str:
        """Where an error happened: the proc, and the source position when known."""
        return f"in proc {self.pd.name}" + (f" ({loc})" if loc is not None else "")

    def lit(self, value: int | float) -> str:
        """Source of a number literal (non-finite floats through the namespace)."""
        if isinstance(value, float) and not math.isfinite(value):
            return self.const(value)
        return repr(value)

    # -- control expressions -------------------------------------------------------------
    def ctrl(self, e: Expr, subst: dict[Sym, str] | None = None) -> str:
        """Source computing control expression ``e`` (a Python int or bool); ``subst``
        replaces variables by source text (a loop's bounds, when checks are hoisted)."""
        match e:
            case Const():
                v = e.value
                if isinstance(v, bool):
                    return repr(v)
                if isinstance(v, float):
                    raise InterpreterError(f"{fmt_expr(e)} is not a control expression")
                return repr(int(v))
            case Read():
                if e.idx or not isinstance(e.type, ControlType):
                    raise InterpreterError(f"{fmt_expr(e)} is not a control expression")
                if subst is not None and e.sym in subst:
                    return subst[e.sym]
                return self.name(e.sym)
            case BinOp():
                return self._ctrl_binop(e, subst)
            case USub():
                return f"(-{self.ctrl(e.arg, subst)})"
            case StrideExpr():
                buf = self.buf(e.sym)
                if e.dim >= len(buf.strides):
                    raise InterpreterError(f"{fmt_expr(e)}: no dimension {e.dim}")
                return buf.strides[e.dim]
            case Extern() | WindowExpr():
                raise InterpreterError(f"{fmt_expr(e)} is not a control expression")
            case _:
                assert_never(e)

    def _ctrl_binop(self, e: BinOp, subst: dict[Sym, str] | None) -> str:
        a, b = self.ctrl(e.lhs, subst), self.ctrl(e.rhs, subst)
        if e.op in ("and", "or"):
            return f"({a} {e.op} {b})"
        if e.op in ("/", "%"):
            py = "//" if e.op == "/" else "%"
            if isinstance(e.rhs, Const):
                if e.rhs.value == 0:
                    raise InterpreterError(f"division by zero in {fmt_expr(e)}")
                return f"({a} {py} {b})"
            fn = self.const(_ctrl_divider(e.op, f"division by zero in {fmt_expr(e)}"), "div")
            return f"{fn}({a}, {b})"
        if e.op not in CTRL_OPS:
            raise InterpreterError(f"{fmt_expr(e)}: '{e.op}' is not a control operation")
        return f"({a} {e.op} {b})"

    # -- buffers and element access ------------------------------------------------------
    def buf(self, sym: Sym) -> Buf:
        """The buffer ``sym`` names."""
        b = self.bufs.get(sym)
        if b is None:
            raise InterpreterError(f"{sym.name} is not a buffer in proc {self.pd.name}")
        return b

    def elem_type(self, sym: Sym) -> DataType:
        """The element type of buffer ``sym`` (parameter, allocation or window)."""
        t = self.types.get(sym)
        if isinstance(t, TensorType):
            return t.elem
        if isinstance(t, DataType):
            return t
        raise InterpreterError(f"{sym.name} is not a data buffer and cannot be written")

    def offset(self, node: Any, sym: Sym, idx: tuple[Expr, ...], kind: str) -> str:
        """Source of the flat offset of element ``sym[idx]`` into its list, after emitting
        the bounds check (unless the enclosing loop hoisted it)."""
        buf = self.buf(sym)
        if len(idx) != len(buf.dims):
            raise InterpreterError(
                f"{sym.name}[{', '.join(fmt_expr(i) for i in idx)}] indexes {len(idx)} of "
                f"{len(buf.dims)} dimensions"
            )
        if not idx:
            return buf.off
        hoisted = self.hoisted.get(id(node))
        if hoisted is not None:
            return hoisted.base
        if id(node) in self.unchecked:
            return self.flat(buf, [self.ctrl(i) for i in idx])
        ix = []
        for i in idx:
            t = self.ctrl(i)
            if not re.fullmatch(r"\w+", t):
                v = self.tmp("i")
                self.line(f"{v} = {t}")
                t = v
            ix.append(t)
        cond = " and ".join(f"0 <= {t} < {n}" for t, n in zip(ix, buf.dims, strict=True))
        if self._true(cond):
            return self.flat(buf, ix)
        text = f"{sym.name}[{', '.join(fmt_expr(i) for i in idx)}]"
        where = self.where(getattr(node, "srcinfo", None))
        fail = self.const(_oob_raiser(kind, text, where), "oob")
        index = ix[0] if len(ix) == 1 else f"({', '.join(ix)},)"
        self.line(f"if not ({cond}): {fail}({index}, ({', '.join(buf.dims)},))")
        return self.flat(buf, ix)

    def varies(self, e: Expr) -> bool:
        """Whether ``e`` mentions the variable of the loop whose checks are hoisted."""
        v = self.inner_var
        return v is not None and any(isinstance(x, Read) and x.sym is v for x in walk_expr(e))

    @staticmethod
    def _scaled(t: str, s: str) -> str:
        if t in ("0", "1"):
            return s if t == "1" else "0"
        return t if s == "1" else f"{t} * {s}"

    def flat(self, buf: Buf, ix: list[str]) -> str:
        """Source of ``buf.off + sum(ix[d] * strides[d])``."""
        terms = [] if buf.off == "0" else [buf.off]
        terms += [self._scaled(t, s) for t, s in zip(ix, buf.strides, strict=True)]
        return " + ".join(terms) or "0"

    def elem_read(self, e: Read) -> str:
        """Source reading one element (a value of the buffer's own type)."""
        buf = self.buf(e.sym)
        if buf.local:
            return buf.data
        h = self.hoisted.get(id(e))
        if h is not None and h.scalar is not None:
            return h.scalar
        return f"{buf.data}[{self.offset(e, e.sym, e.idx, 'read')}]"

    # -- data expressions ----------------------------------------------------------------
    def round(self, code: str, dt: np.dtype[Any]) -> str:
        """Source of ``code`` rounded (or wrapped) to data type ``dt``."""
        if _is_int(dt):
            return wrap_text(code, dt)
        if dt.itemsize == 4:
            self.line(f"_R[0] = {code}")
            v = self.tmp()
            self.line(f"{v} = _R[0]")
            return v
        if dt.itemsize == 2:
            return f"_round_f16({code})"
        return code

    def value(self, e: Expr, dt: np.dtype[Any]) -> str:
        """Source of data expression ``e`` as an exact value of ``dt``."""
        code, exact = self.data(e, dt)
        return code if exact else self.round(code, dt)

    def simple(self, e: Expr, dt: np.dtype[Any]) -> str:
        """``value``, held in a temporary unless it is a name or literal (evaluated once)."""
        code = self.value(e, dt)
        if re.fullmatch(r"[\w.]+", code):
            return code
        v = self.tmp()
        self.line(f"{v} = {code}")
        return v

    def data(self, e: Expr, dt: np.dtype[Any]) -> tuple[str, bool]:
        """Source computing data expression ``e`` in type ``dt``, and whether the value is
        already exact (rounded, or wrapped); the caller rounds it otherwise."""
        if not isinstance(e, Const) and isinstance(e.type, ControlType):
            # a control value used as data (an index in select): computed with control
            # semantics (floor / and %), then converted
            return self._from_control(self.ctrl(e), dt), True
        match e:
            case Const():
                return self.lit(to_python(e.value, dt)), True
            case Read():
                rd = self.elem_read(e)
                # the buffer's declared type decides whether a conversion is needed
                declared = self.types.get(e.sym)
                src = declared.elem if isinstance(declared, TensorType) else declared or e.type
                if not isinstance(src, DataType):
                    raise InterpreterError(f"{fmt_expr(e)} is not data")
                return self._convert(rd, src.np_dtype, dt), True
            case BinOp():
                return self._data_binop(e, dt)
            case USub():
                code, exact = self.data(e.arg, dt)
                # negation is exact in floats; integers wrap lazily (a ring operation)
                return f"(-{code})", exact and not _is_int(dt)
            case Extern():
                return self._extern(e, dt)
            case StrideExpr():
                return self._from_control(self.ctrl(e), dt), True
            case WindowExpr():
                raise InterpreterError(f"window {fmt_expr(e)} used as a value")
            case _:
                assert_never(e)

    def _from_control(self, code: str, dt: np.dtype[Any]) -> str:
        if _is_int(dt):
            return wrap_text(f"int({code})", dt)
        return self.round(f"float({code})", dt) if dt.itemsize < 8 else f"float({code})"

    def _convert(self, code: str, src: np.dtype[Any], dt: np.dtype[Any]) -> str:
        """An exact ``src`` value converted to ``dt`` as C converts."""
        if src == dt:
            return code
        if _is_int(dt):
            if _is_int(src):
                return code if fits(src, dt) else wrap_text(code, dt)
            fn = self.const(lambda x, _dt=dt: float_to_int(x, _dt), "f2i")
            return f"{fn}({code})"
        if _is_int(src):
            code = f"float({code})"  # so that -0 and 0 / 0 are float operations
        if _float_exact(src, dt):
            return code
        return self.round(code, dt)

    def _data_binop(self, e: BinOp, dt: np.dtype[Any]) -> tuple[str, bool]:
        is_int = _is_int(dt)
        match e.op:
            case "+" | "-" | "*":
                a, ea = self.data(e.lhs, dt)
                b, eb = self.data(e.rhs, dt)
                if is_int:
                    # wrap-around commutes with + - *: wrapping once, where the value is
                    # used, gives the per-operation result
                    return f"({a} {e.op} {b})", False
                if not ea:
                    a = self.round(a, dt)
                if not eb:
                    b = self.round(b, dt)
                return f"({a} {e.op} {b})", False
            case "/" | "%":
                a, b = self.value(e.lhs, dt), self.value(e.rhs, dt)
                if is_int:
                    fn = "_c_div" if e.op == "/" else "_c_rem"
                    return f"{fn}({a}, {b})", False
                if e.op == "%":
                    return f"_float_mod({a}, {b})", False
                if isinstance(e.rhs, Const) and e.rhs.value != 0:
                    return f"({a} / {b})", False
                return f"_float_div({a}, {b})", False
            case _:
                raise InterpreterError(f"{fmt_expr(e)}: '{e.op}' is not a data operation")

    def _extern(self, e: Extern, dt: np.dtype[Any]) -> tuple[str, bool]:
        spec = EXTERNS.get(e.name)
        if spec is None or spec.arity != len(e.args):
            raise InterpreterError(f"unknown extern {e.name}/{len(e.args)}")
        ufunc = isinstance(spec.numpy, np.ufunc) and len(e.args) == 1 and dt.kind == "f"
        if ufunc and dt.itemsize == 4 and e.name != "sqrt":
            # a float ufunc gives its operand's type: called on a numpy scalar of dt, as
            # _numpy_extern's, without a Python call or a numpy scalar built from nothing;
            # the operand is rounded by its store into the f32 array, as ``_R`` would (the
            # same C conversion; the run has numpy's errors silenced: uses_numpy)
            self.uses_numpy = True
            fn = self.const(spec.numpy, e.name)
            code, _ = self.data(e.args[0], dt)
            return self._held(f"float({fn}({self._np_scalar(code, dt)}))"), True
        # every operand is evaluated (as C does) before the call
        xs = [self.simple(a, dt) for a in e.args]
        is_float = not _is_int(dt)
        if e.name == "select":
            a, b, c, d = xs
            return f"({c} if {a} < {b} else {d})", True
        # the same choices as numpy's fmax/fmin/maximum, including which zero and NaN win
        if e.name in ("fmax", "fmaxf") and is_float:
            a, b = xs
            return f"({a} if ({a} >= {b} or {b} != {b}) else {b})", True
        if e.name == "fmin" and is_float:
            a, b = xs
            return f"({a} if ({a} <= {b} or {b} != {b}) else {b})", True
        if e.name == "relu":
            (a,) = xs
            zero = "0.0" if is_float else "0"
            return f"({a} if ({a} >= {zero} or {a} != {a}) else {zero})", True
        if e.name == "sqrt" and is_float:
            # sqrt_float inline (a Python call costs as much): NaN below zero, -0.0 stays
            self.ns["_msqrt"] = math.sqrt
            x = xs[0]
            return f"(_msqrt({x}) if {x} >= 0 else _NAN)", False
        self.uses_numpy = True
        if e.name == "sigmoid" and dt.kind == "f" and dt.itemsize >= 4:
            # the table's operations on numpy scalars of dt, in the same order (_sigmoid)
            one, exp = self.const(dt.type(1), "one"), self.const(np.exp, "exp")
            x = self._np_scalar(f"(-{xs[0]})", dt)
            return self._held(f"float({one} / ({one} + {exp}({x})))"), True
        if isinstance(spec.numpy, np.ufunc) and len(xs) == 1 and dt.kind == "f":
            # a float ufunc gives its operand's type: the call on a numpy scalar of dt, as
            # _numpy_extern's, without a Python call or a numpy scalar built from nothing
            fn = self.const(spec.numpy, e.name)
            return self._held(f"float({fn}({self._np_scalar(xs[0], dt)}))"), True
        fn = self.const(_numpy_extern(spec.numpy, dt, len(xs)), e.name)
        return f"{fn}({', '.join(xs)})", True

    def _np_scalar(self, code: str, dt: np.dtype[Any]) -> str:
        """Source of a numpy scalar of float type ``dt`` holding ``code``'s exact value of
        ``dt`` (stored into the run's one-element array, then read: the read must come
        before anything else is stored there, so its user holds the result, ``_held``)."""
        cell = next((n for n, d in self.np_cells.items() if d == dt), None)
        if cell is None:
            cell = f"_A{dt.char}"
            self.np_cells[cell] = dt
        self.line(f"{cell}[0] = {code}")
        return f"{cell}[0]"

    def _held(self, code: str) -> str:
        """``code`` evaluated now into a temporary (see ``_np_scalar``)."""
        v = self.tmp()
        self.line(f"{v} = {code}")
        return v

    def cells(self) -> list[str]:
        """The lines making the run's one-element arrays (``_np_scalar``)."""
        self.ns["_np_empty"] = np.empty
        out = []
        for name, dt in self.np_cells.items():
            t = self.const(dt, "dt")
            out.append(f"{name} = _np_empty(1, {t})")
        return out

    # -- windows -------------------------------------------------------------------------
    def window(self, w: WindowExpr) -> Buf:
        """Emit the bounds checks of window ``w``; return its parts (temporaries)."""
        base = self.buf(w.sym)
        if len(w.idx) != len(base.dims):
            raise InterpreterError(f"window {fmt_expr(w)} has the wrong number of dimensions")
        text, where = fmt_expr(w), self.where(w.srcinfo)
        offs = [] if base.off == "0" else [base.off]
        strides: list[str] = []
        dims: list[str] = []
        shape = f"({', '.join(base.dims)},)"
        for d, (a, n, s) in enumerate(zip(w.idx, base.dims, base.strides, strict=True)):
            fail = self.const(_window_raiser(text, where, d), "oob")
            match a:
                case Point():
                    i = self.tmp("i")
                    self.line(f"{i} = {self.ctrl(a.pt)}")
                    self.line(f"if not 0 <= {i} < {n}: {fail}({i}, {shape})")
                    offs.append(self._scaled(i, s))
                case Interval():
                    lo, hi = self.tmp("i"), self.tmp("i")
                    self.line(f"{lo} = {self.ctrl(a.lo)}")
                    self.line(f"{hi} = {self.ctrl(a.hi)}")
                    self.line(f"if not 0 <= {lo} <= {hi} <= {n}: {fail}(({lo}, {hi}), {shape})")
                    offs.append(self._scaled(lo, s))
                    strides.append(s)
                    n_ = self.tmp("n")
                    self.line(f"{n_} = {hi} - {lo}")
                    dims.append(n_)
                case _:
                    assert_never(a)
        off = self.tmp("o")
        self.line(f"{off} = {' + '.join(offs) or '0'}")
        return Buf(base.data, off, tuple(strides), tuple(dims), base.dt)


def _ctrl_divider(op: str, msg: str) -> Callable[[int, int], int]:
    def div(a: int, b: int) -> int:
        if b == 0:
            raise InterpreterError(msg)
        return a // b if op == "/" else a % b

    return div


def _oob_raiser(kind: str, text: str, where: str) -> Callable[[Any, tuple[int, ...]], None]:
    def fail(index: Any, shape: tuple[int, ...]) -> None:
        raise oob_error(kind, text, index, shape, where)

    return fail


def _window_raiser(text: str, where: str, dim: int) -> Callable[[Any, tuple[int, ...]], None]:
    def fail(index: Any, shape: tuple[int, ...]) -> None:
        raise oob_error("window", text, index, shape, where, dim=dim)

    return fail


def _sigmoid(dt: np.dtype[Any]) -> Callable[[float], float]:
    """The table's ``sigmoid`` (``ones_like(x) / (ones_like(x) + exp(-x))``) on a float of
    f32 or f64 ``dt``: the same numpy operations on numpy scalars of ``dt``, in the same
    order, so the same bits, without building ``ones_like``'s array twice."""
    conv = dt.type
    one = conv(1)
    exp = np.exp

    def sigmoid(x: float) -> float:
        return float(one / (one + exp(conv(-x))))

    return sigmoid


def _numpy_extern(fn: Callable[..., Any], dt: np.dtype[Any], nargs: int) -> Callable[..., Any]:
    """The table's numpy function on numpy scalars of ``dt``, its result as a Python number
    of ``dt`` (numpy may promote: exp of an int is a float)."""
    conv = dt.type
    back: Callable[[Any], Any] = int if _is_int(dt) else float

    def call1(x: Any) -> Any:  # the common arity, without building argument tuples
        r = fn(conv(x))
        return back(r if type(r) is conv else conv(r))

    def call1_f64(x: float) -> Any:  # numpy takes a Python float as an f64 as it is
        r = fn(x)
        return back(r if type(r) is conv else conv(r))

    if nargs == 1 and dt == np.float64:
        return call1_f64

    def call(*xs: Any) -> Any:
        r = fn(*(conv(x) for x in xs))
        return back(r if type(r) is conv else conv(r))

    return call1 if nargs == 1 else call
