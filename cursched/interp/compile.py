"""The reference interpreter's compiler: a ``ProcDef`` -> the source of a Python function.

Each proc is compiled once (``cursched.interp`` caches the result) into three functions,
exec'd together: ``body`` runs the statements, ``entry`` is what a call site of another proc
calls (it checks the argument shapes and the asserts, then runs ``body``) and ``preds``
checks the asserts on entry to a top-level run. Expressions are compiled by ``ExprCompiler``
(``cursched.interp.exprs``); this module adds statements, allocations and calls, one small
method per statement kind (``_stmt_<kind>``), and the ``CompiledProc`` that
``cursched.interp`` runs; the fast entry ``_run`` (arguments bound and checked, the body
specialised to them) is written by ``RunCompiler`` (``cursched.interp.run_source``).

The function's parameters are flat: a control argument is one parameter, a data scalar two
(list, offset), a tensor of rank r is 2 + 2r (list, offset, r strides, r sizes).

Loops are versioned. A loop nest whose inner loops' ranges do not depend on the nest is
checked on entry: if every access of the nest into a buffer defined outside it, with indices
affine in the nest's loop variables, is in bounds at the corners of the box of the loop ranges
(so, being affine, everywhere in it), a copy of the nest without those checks runs; otherwise
a checked copy runs, and raises the error at the very access that fails. An innermost loop
outside such a nest is versioned alone, the same way (at both ends of its range). In the
unchecked copy, the part of each offset invariant in the innermost loop is computed before
it (``w + i * dw``), and an element written at one place through the loop is held in a local.
"""

from __future__ import annotations

import functools
import math
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, assert_never

import numpy as np

from cursched.errors import AllocationError, InterpreterError
from cursched.interp import nest_analysis as na
from cursched.interp.exprs import (
    Buf,
    Hoisted,
)
from cursched.interp.run_source import RunCompiler
from cursched.interp.values import (
    c_div,
    c_rem,
    cast_scalar,
    float_div,
    float_mod,
    fmt_expr,
    round_f16,
    rounder,
    sqrt_float,
    to_python,
)
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Call,
    Expr,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.traversal import free_syms_expr, walk_stmts, written_args
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["CompiledProc", "Compiler", "GeneralFunctions", "new_buffer"]

#: Fill value of fresh integer buffers: the low bytes of 0xDEADBEEF, so that a read before a
#: write shows up as a recognisable garbage value in differential tests.
_GARBAGE = 0xDEADBEEF


#: Allocations of at most this many bytes, of a size known when compiling, are not checked
#: against the machine's memory (they cannot fail the check).
_SMALL_ALLOC = 1 << 20

#: What the generated code finds in its namespace (besides its own constants and callees).
_HELPERS: dict[str, Any] = {
    "_rounder": rounder,
    "_c_div": c_div,
    "_c_rem": c_rem,
    "_float_div": float_div,
    "_float_mod": float_mod,
    "_round_f16": round_f16,
    "_sqrt": sqrt_float,
    "_NAN": math.nan,
}


def _fill(dt: np.dtype[Any]) -> int | float:
    """The value of an uninitialised element: NaN for floats, the garbage pattern else."""
    return math.nan if dt.kind == "f" else to_python(_GARBAGE, dt)


def new_buffer(shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """An uninitialised buffer: NaN for floats, the garbage pattern for integers.

    Raises:
        AllocationError: the buffer takes more bytes than the machine has memory (checked
            before allocating: filling it would page the machine to death first), or the
            allocation failed; compiled code raises the same error.
    """
    nbytes = check_alloc(math.prod(shape), dt.itemsize, f"a {dt} buffer of shape {shape}")
    fill = np.nan if dt.kind == "f" else cast_scalar(_GARBAGE, dt)
    try:
        return np.full(shape, fill, dtype=dt)
    except (MemoryError, ValueError) as e:  # numpy's "array is too big" is a ValueError
        raise AllocationError(
            f"cannot allocate a {dt} buffer of shape {shape} ({nbytes} bytes): {e}"
        ) from None


#: Code objects by (source, file name): procs of one structure (a fuzzer's many similar
#: procs, the versions a schedule makes and undoes) generate the same source, and Python's
#: compiling of it is half of what compiling a proc costs. Bounded, oldest out first.
_CODE: OrderedDict[tuple[str, str], CodeType] = OrderedDict()
_CODE_SIZE = 1024


def _code(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, cached (see ``_CODE``)."""
    key = (source, filename)
    code = _CODE.get(key)
    if code is None:
        code = _CODE[key] = compile(source, filename, "exec")
        while len(_CODE) > _CODE_SIZE:
            _CODE.popitem(last=False)
    return code


@functools.cache
def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):  # not POSIX: let numpy find out
        return 2**63


def check_alloc(count: int, itemsize: int, what: str) -> int:
    """The bytes of an allocation of ``count`` elements, checked before allocating.

    Raises:
        AllocationError: it takes more bytes than the machine has memory (filling it would
            page the machine to death first); compiled code raises the same error.
    """
    nbytes = itemsize * count
    if nbytes > _physical_memory():
        raise AllocationError(
            f"cannot allocate {what}: {nbytes} bytes, more than this machine's memory"
            f" ({_physical_memory()} bytes)"
        )
    return nbytes


_HELPERS["_check_alloc"] = check_alloc


@dataclass(frozen=True)
class GeneralFunctions:
    """The functions of a proc for the general case (any layout, called by other procs).

    Attributes:
        source: their generated source.
        body: runs the statements.
        entry: checks shapes and asserts as a call site does, then runs the statements.
        preds: checks the asserts as on entry to a run (``InterpreterError``).
    """

    source: str
    body: Callable[..., None]
    entry: Callable[..., None]
    preds: Callable[..., None]


@dataclass(eq=False)
class CompiledProc:
    """A proc compiled to Python functions (see the module docstring).

    ``run`` is compiled at once; the general functions (``body``, ``entry``, ``preds``) when
    first asked for, since a proc run only by ``interpret`` on plain arguments, as most of
    the fuzzer's and the tests' are, never needs them and compiling is most of what a proc
    run once costs.

    Attributes:
        pd: the proc (kept alive so that caches keyed by ``id`` stay valid).
        written: indices of the parameters the proc may write (directly, through a window or
            by passing them to a callee that writes them).
        run_source: the generated source of ``run`` (for reading when debugging).
        run: a whole run (binding, asserts, body) for the arguments' common case: called
            with a run's arguments, it returns True when it ran them, False (having done
            nothing) when the general binding must decide (an error, a view, a numpy int:
            ``cursched.interp.run``); too many, unknown or repeated arguments raise
            Python's TypeError from the call itself, which ``interpret`` takes as False.
            Its body is a
            copy of the statements specialised to that case (offsets 0, unit innermost
            strides, distinct arrays).
        uses_numpy: the proc or a callee calls numpy (externs), which reports overflow as
            floating-point errors: the caller silences them for the run.
        uses_config: the proc or a callee reads or writes a configuration field: a run
            resets the configuration state first (a proc that does not cannot observe it).
        make_general: compiles the general functions.
    """

    pd: ProcDef
    written: frozenset[int]
    run_source: str
    run: Callable[..., bool]
    uses_numpy: bool
    uses_config: bool
    make_general: Callable[[], GeneralFunctions]
    _general: GeneralFunctions | None = field(default=None, repr=False)

    def general(self) -> GeneralFunctions:
        """The general functions (compiled on first use)."""
        g = self._general
        if g is None:
            # two threads may both compile it: either result is the same functions
            g = self._general = self.make_general()
        return g

    @property
    def body(self) -> Callable[..., None]:
        """Runs the statements (flat parameters: see the module docstring)."""
        return self.general().body

    @property
    def entry(self) -> Callable[..., None]:
        """Checks shapes and asserts as a call site does, then runs the statements."""
        return self.general().entry

    @property
    def preds(self) -> Callable[..., None]:
        """Checks the asserts as on entry to a run (``InterpreterError``)."""
        return self.general().preds

    @property
    def source(self) -> str:
        """The generated source: the general functions, then ``run``."""
        return self.general().source + self.run_source


# ------------------------------------------------------------------------------ compiler


class Compiler(RunCompiler):
    """Compiles one ``ProcDef``; ``callee`` compiles (and caches) the procs it calls."""

    def __init__(self, pd: ProcDef, callee: Callable[[ProcDef], CompiledProc]) -> None:
        super().__init__(pd)
        self.callee = callee
        self.callees: dict[int, str] = {}
        # data scalars passed by reference to a call need a list; the others are locals
        self.by_ref = {
            e.sym
            for s in walk_stmts(pd.body)
            if isinstance(s, Call)
            for e in s.args
            if isinstance(e, Read) and not e.idx
        }

    def compile(self) -> CompiledProc:
        """Compile the proc's ``run`` (the general functions are compiled when needed)."""
        pd, callee = self.pd, self.callee
        written = written_args(pd, lambda q: self.callee(q).written)
        source = "\n".join(self._fast_run(written)) + "\n"
        ns = dict(_HELPERS, **self.ns)
        exec(_code(source, f"<cursched interp {pd.name} run>"), ns)
        return CompiledProc(
            pd=pd,
            written=written,
            run_source=source,
            run=ns["_run"],
            uses_numpy=self.uses_numpy,
            uses_config=self.uses_config,
            make_general=lambda: Compiler(pd, callee).compile_general(),
        )

    def compile_general(self) -> GeneralFunctions:
        """Compile the general functions: parameters, body, asserts, shapes."""
        pd = self.pd
        params = self._params()
        self.block(pd.body)
        body_lines = self.lines
        body_lines[:0] = [f"    {c}" for c in self.cells()]
        if any("_R[0]" in ln for ln in body_lines):
            body_lines.insert(0, "    _R = _rounder()")
        sig = ", ".join(params)
        src = [f"def _body({sig}):", *body_lines, "    pass"]
        src += [f"def _entry({sig}):", *self._entry_checks(), f"    _body({sig})"]
        src += [f"def _preds({sig}):", *self._pred_checks("on entry to"), "    pass"]
        source = "\n".join(src) + "\n"
        ns = dict(_HELPERS, **self.ns)
        exec(_code(source, f"<cursched interp {pd.name}>"), ns)
        return GeneralFunctions(
            source=source, body=ns["_body"], entry=ns["_entry"], preds=ns["_preds"]
        )

    def _params(self) -> list[str]:
        params: list[str] = []
        for a in self.pd.args:
            n = self.name(a.sym)
            match a.type:
                case ControlType():
                    params.append(n)
                case DataType():
                    self.bufs[a.sym] = Buf(f"{n}_d", f"{n}_o", (), (), a.type)
                    params += [f"{n}_d", f"{n}_o"]
                case TensorType():
                    r = a.type.rank()
                    b = Buf(
                        f"{n}_d",
                        f"{n}_o",
                        tuple(f"{n}_s{k}" for k in range(r)),
                        tuple(f"{n}_n{k}" for k in range(r)),
                        a.type.elem,
                    )
                    self.bufs[a.sym] = b
                    params += b.parts()
                case _:
                    assert_never(a.type)
        return params

    def _control_values(self) -> str:
        names = [self.name(a.sym) for a in self.pd.args if isinstance(a.type, ControlType)]
        return f"({', '.join(names)},)" if names else "()"

    def _pred_checks(self, where: str) -> list[str]:
        out = []
        for e in self.pd.preds:
            cond = self.ctrl(e)
            if na.holds(cond):
                continue  # true whatever the arguments
            fail = self.const(_pred_raiser(self.pd, e, where), "pred")
            # the asserts' source is compiled after the body: its names are all parameters
            out.append(f"    if not ({cond}): {fail}({self._control_values()})")
        return out

    def _entry_checks(self) -> list[str]:
        out = []
        for a in self.pd.args:
            if isinstance(a.type, TensorType):
                b = self.bufs[a.sym]
                got = f"({', '.join(b.dims)},)"
                want = f"({', '.join(self.ctrl(s) for s in a.type.shape)},)"
                fail = self.const(_shape_raiser(self.pd.name, a.sym.name), "shape")
                out.append(f"    if {got} != {want}: {fail}({got}, {want})")
        return out + self._pred_checks("at a call to")

    # -- statements ----------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...]) -> None:
        """Emit the statements of ``body`` in order (``pass`` when none emits anything)."""
        n = len(self.lines)
        for k, s in enumerate(body):
            if isinstance(s, Alloc) and _assigned_next(s, body[k + 1 : k + 2]):
                self._stmt_alloc(s, filled=False)
            else:
                self.stmt(s)
        if len(self.lines) == n:
            self.line("pass")

    def stmt(self, s: Stmt) -> None:
        """Emit statement ``s``: one small method per kind."""
        match s:
            case Assign() | Reduce():
                self._stmt_store(s)
            case Pass():
                pass
            case If():
                self._stmt_if(s)
            case For():
                self._stmt_for(s)
            case Alloc():
                self._stmt_alloc(s)
            case Call():
                self._stmt_call(s)
            case WindowStmt():
                self._stmt_window(s)
            case Scope():
                self.block(s.body)
            case _:
                assert_never(s)

    def _stmt_if(self, s: If) -> None:
        self.line(f"if {self.ctrl(s.cond)}:")
        self.nested(s.body)
        if s.orelse:
            self.line("else:")
            self.nested(s.orelse)

    def _stmt_store(self, s: Assign | Reduce) -> None:
        dt = self.elem_type(s.sym).np_dtype
        buf = self.buf(s.sym)
        # the destination's index is checked before the right-hand side runs
        h = self.hoisted.get(id(s))
        if buf.local:
            target = buf.data
        elif h is not None and h.scalar is not None:
            target = h.scalar
        else:
            off = self.offset(s, s.sym, s.idx, "write")
            if not na.is_name(off) and isinstance(s, Reduce):  # read and written: once
                o = self.tmp("o")
                self.line(f"{o} = {off}")
                off = o
            target = f"{buf.data}[{off}]"
        direct = not buf.local and buf.data in self.direct and target != h_scalar(h)
        if isinstance(s, Assign):
            if direct:
                # the f32 memoryview rounds the value it stores, as ``_R`` would
                self.line(f"{target} = {self.data(s.rhs, dt)[0]}")
                return
            self.line(f"{target} = {self._rounded(self.value(s.rhs, dt))}")
            return
        code, exact = self.data(s.rhs, dt)
        if not exact and dt.kind == "f":
            code = self._rounded(self.round(code, dt))
        total = f"{target} + {code}"
        if direct:
            self.line(f"{target} = {total}")
        elif target in self.unwrapped:
            # an integer accumulator only added to: wrapped once, when stored (wrapping
            # commutes with + - *)
            self.line(f"{target} = {total}")
        elif dt.kind == "f" and dt.itemsize == 4:
            self.line(f"_R[0] = {total}")
            self.line(f"{target} = _R[0]")
        else:
            self.line(f"{target} = {self.round(total, dt)}")

    def _rounded(self, code: str) -> str:
        """``code``, or ``_R[0]`` itself when ``code`` is the temporary the line just emitted
        loaded from it (``_t = _R[0]``): its one use reads the rounder directly."""
        if code.startswith("_t") and self.lines and self.lines[-1].strip() == f"{code} = _R[0]":
            self.lines.pop()
            return "_R[0]"
        return code

    def _stmt_alloc(self, s: Alloc, filled: bool = True) -> None:
        """An allocation; ``filled=False``: a data scalar the next statement assigns without
        reading it, whose fill value, held in a local, nothing can see (``_assigned_next``)."""
        n = self.name(s.sym)
        if isinstance(s.type, DataType):
            fill = self.lit(_fill(s.type.np_dtype))
            if s.sym in self.by_ref:
                self.bufs[s.sym] = Buf(f"{n}_d", "0", (), (), s.type)
                self.line(f"{n}_d = [{fill}]")
            else:
                self.bufs[s.sym] = Buf(n, "0", (), (), s.type, local=True)
                if filled:
                    self.line(f"{n} = {fill}")
            return
        dims: list[str] = []
        for k, e in enumerate(s.type.shape):
            t = self.ctrl(e)
            if not na.is_name(t):  # (a name is a control value: it cannot change)
                self.line(f"{n}_n{k} = {t}")
                t = f"{n}_n{k}"
            dims.append(t)
        if not all(self._true(f"0 <= {d}") for d in dims):
            fail = self.const(_neg_alloc_raiser(s.sym.name), "alloc")
            shape = f"({', '.join(dims)},)"
            self.line(f"if min({shape}) < 0: {fail}({shape})")
        strides = ["1"] * len(dims)
        for k in range(len(dims) - 2, -1, -1):
            prod = f"{dims[k + 1]} * {strides[k + 1]}"
            if all(na.is_int_literal(x) for x in (dims[k + 1], strides[k + 1])):
                strides[k] = str(int(dims[k + 1]) * int(strides[k + 1]))
            else:
                self.line(f"{n}_s{k} = {prod}")
                strides[k] = f"{n}_s{k}"
        size = f"{dims[0]} * {strides[0]}" if dims else "1"
        dt = s.type.elem.np_dtype
        fill = self.lit(_fill(dt))
        # the list is checked as the buffer it stands for (its itemsize, not a list's)
        what = repr(f"buffer {s.sym.name}")
        known = na.literal_value(size)
        if known is None or known * dt.itemsize > _SMALL_ALLOC:
            self.line(f"_check_alloc({size}, {dt.itemsize}, {what})")
        self.line(f"{n}_d = [{fill}] * ({size})")
        self.bufs[s.sym] = Buf(f"{n}_d", "0", tuple(strides), tuple(dims), s.type.elem)

    def _stmt_window(self, s: WindowStmt) -> None:
        self.bufs[s.sym] = self.window(s.rhs)

    # -- calls ---------------------------------------------------------------------------
    def _stmt_call(self, s: Call) -> None:
        """Control arguments by value; tensors, windows and data scalars by reference."""
        callee = self.callee(s.proc)
        self.uses_numpy |= callee.uses_numpy
        self.uses_config |= callee.uses_config
        fn = self.callees.get(id(callee))
        if fn is None:
            fn = self.callees[id(callee)] = self.const(callee.entry, "call")
        args: list[str] = []
        for a, e in zip(s.proc.args, s.args, strict=True):
            args += self._call_arg(a.type, e)
        self.line(f"{fn}({', '.join(args)})")

    def _call_arg(self, t: DataType | ControlType | TensorType, e: Expr) -> list[str]:
        match t:
            case ControlType():
                return [self.ctrl(e)]
            case TensorType():
                if isinstance(e, WindowExpr):
                    return self.window(e).parts()
                if isinstance(e, Read) and not e.idx and e.sym in self.bufs:
                    b = self.bufs[e.sym]
                    if len(b.dims) != t.rank():
                        raise InterpreterError(f"{fmt_expr(e)} passed for a rank {t.rank()} tensor")
                    return b.parts()
                raise InterpreterError(f"{fmt_expr(e)} passed for a tensor parameter")
            case DataType():
                if isinstance(e, Read) and isinstance(e.type, DataType) and e.sym in self.bufs:
                    b = self.bufs[e.sym]
                    if not e.idx:
                        return [b.data, b.off]
                    # a reference to one element of a tensor
                    off = self.offset(e, e.sym, e.idx, "read")
                    return [b.data, off]
                # not an lvalue: pass a fresh one-element buffer holding the value
                box = self.tmp("a")
                self.line(f"{box} = [{self.value(e, t.np_dtype)}]")
                return [box, "0"]
            case _:
                assert_never(t)


def _assigned_next(s: Alloc, after: tuple[Stmt, ...]) -> bool:
    """Whether data scalar ``s`` is assigned by the statement right after it (``after``, that
    statement or none) with a right-hand side that does not read it: its fill value is then
    overwritten before anything reads it (in a local, a failing right-hand side leaves
    nothing that could show it)."""
    if not isinstance(s.type, DataType) or len(after) != 1:
        return False
    nxt = after[0]
    return (
        isinstance(nxt, Assign)
        and nxt.sym == s.sym
        and not nxt.idx
        and s.sym not in free_syms_expr(nxt.rhs)
    )


# ------------------------------------------------------------------------- error builders


def h_scalar(h: Hoisted | None) -> str | None:
    """The local holding a scalar-replaced element, if any."""
    return None if h is None else h.scalar


def _pred_raiser(pd: ProcDef, e: Expr, where: str) -> Callable[[tuple[Any, ...]], None]:
    names = [a.sym.name for a in pd.args if isinstance(a.type, ControlType)]
    at = f" at {e.srcinfo}" if e.srcinfo is not None else ""

    def fail(values: tuple[Any, ...]) -> None:
        shown = ", ".join(f"{n} = {v}" for n, v in zip(names, values, strict=True))
        raise InterpreterError(f"assert {fmt_expr(e)} failed {where} proc {pd.name} ({shown}){at}")

    return fail


def _shape_raiser(proc: str, arg: str) -> Callable[[tuple[int, ...], tuple[int, ...]], None]:
    def fail(got: tuple[int, ...], want: tuple[int, ...]) -> None:
        raise InterpreterError(f"call to {proc}: argument {arg} has shape {got}, expected {want}")

    return fail


def _neg_alloc_raiser(name: str) -> Callable[[tuple[int, ...]], None]:
    def fail(dims: tuple[int, ...]) -> None:
        raise InterpreterError(f"allocation of {name} with negative shape {dims}")

    return fail
