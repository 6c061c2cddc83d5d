"""The reference interpreter's compiler: a ``ProcDef`` -> the source of a Python function.

Each proc is compiled once (``cursched.interp`` caches the result) into three functions,
exec'd together: ``body`` runs the statements, ``entry`` is what a call site of another proc
calls (it checks the argument shapes and the asserts, then runs ``body``) and ``preds``
checks the asserts on entry to a top-level run. Expressions are compiled by ``ExprCompiler``
(``cursched.interp.exprs``); this module adds statements, allocations and calls, one small
method per statement kind (``_stmt_<kind>``), and the ``CompiledProc`` that
``cursched.interp`` runs.

The function's parameters are flat: a control argument is one parameter, a data scalar two
(list, offset), a tensor of rank r is 2 + 2r (list, offset, r strides, r sizes).

Innermost loops are versioned: on entry, if every access in the body whose indices are affine
in the loop variable is in bounds at both ends of the loop's range (so, being affine, over the
whole range), a copy of the body without those checks runs, with the loop-invariant part of
each offset computed once before the loop; otherwise the checked copy runs, and raises the
error at the very access that fails.
"""

from __future__ import annotations

import functools
import keyword
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any, assert_never

import numpy as np

from cursched.errors import AllocationError, InterpreterError
from cursched.interp.exprs import Buf, ExprCompiler, Hoisted
from cursched.interp.values import (
    c_div,
    c_rem,
    cast_scalar,
    float_div,
    float_mod,
    fmt_expr,
    round_f16,
    sqrt_float,
    to_python,
)
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import stmt_exprs, walk_expr, walk_stmts, written_args
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["CompiledProc", "Compiler", "new_buffer"]

#: Fill value of fresh integer buffers: the low bytes of 0xDEADBEEF, so that a read before a
#: write shows up as a recognisable garbage value in differential tests.
_GARBAGE = 0xDEADBEEF


#: Loops of at most this many iterations are not versioned (see the module docstring).
_SHORT = 6

#: The default of ``_fast``'s parameters: a missing argument.
_MISSING = object()

#: What the generated code finds in its namespace (besides its own constants and callees).
_HELPERS: dict[str, Any] = {
    "_memoryview": memoryview,
    "_bytearray": bytearray,
    "_c_div": c_div,
    "_c_rem": c_rem,
    "_float_div": float_div,
    "_float_mod": float_mod,
    "_round_f16": round_f16,
    "_sqrt": sqrt_float,
    "_NAN": math.nan,
    "_repeat": repeat,
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


@dataclass(eq=False)
class CompiledProc:
    """A proc compiled to Python functions over flat parameters (see the module docstring).

    Attributes:
        pd: the proc (kept alive so that caches keyed by ``id`` stay valid).
        written: indices of the parameters the proc may write (directly, through a window or
            by passing them to a callee that writes them).
        source: the generated source (for reading when debugging).
        body: runs the statements.
        entry: checks shapes and asserts as a call site does, then runs the statements.
        preds: checks the asserts as on entry to a run (``InterpreterError``).
        fast_bind: the arguments' common case, bound without building anything else: called
            with a run's arguments, it returns the flat parameters and the (flat view, list)
            pairs to write back, or None when the general binding must decide (an error, a
            view, a numpy int, aliasing: ``cursched.interp.run``).
        uses_numpy: the proc or a callee calls numpy (externs), which reports overflow as
            floating-point errors: the caller silences them for the run.
        uses_config: the proc or a callee reads or writes a configuration field: a run
            resets the configuration state first (a proc that does not cannot observe it).
    """

    pd: ProcDef
    written: frozenset[int]
    source: str
    body: Callable[..., None]
    entry: Callable[..., None]
    preds: Callable[..., None]
    fast_bind: Callable[..., Any]
    uses_numpy: bool
    uses_config: bool


# ------------------------------------------------------------------------------ compiler


class Compiler(ExprCompiler):
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
        """Compile the whole proc: parameters, body, asserts, shapes."""
        pd = self.pd
        params = self._params()
        self.block(pd.body)
        body_lines = self.lines
        if any("_R[0]" in ln for ln in body_lines):
            body_lines.insert(0, "    _R = _memoryview(_bytearray(4)).cast('f')")
        sig = ", ".join(params)
        src = [f"def _body({sig}):", *body_lines, "    pass"]
        src += [f"def _entry({sig}):", *self._entry_checks(), f"    _body({sig})"]
        src += [f"def _preds({sig}):", *self._pred_checks("on entry to"), "    pass"]
        src += self._fast_bind(params)
        source = "\n".join(src) + "\n"
        ns = dict(_HELPERS, **self.ns)
        exec(compile(source, f"<cursched interp {pd.name}>", "exec"), ns)
        return CompiledProc(
            pd=pd,
            written=written_args(pd, lambda q: self.callee(q).written),
            source=source,
            body=ns["_body"],
            entry=ns["_entry"],
            preds=ns["_preds"],
            fast_bind=ns["_fast"],
            uses_numpy=self.uses_numpy,
            uses_config=self.uses_config,
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
            fail = self.const(_pred_raiser(self.pd, e, where), "pred")
            # the asserts' source is compiled after the body: its names are all parameters
            out.append(f"    if not ({self.ctrl(e)}): {fail}({self._control_values()})")
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

    def _fast_bind(self, params: list[str]) -> list[str]:
        """Source of ``_fast`` (see ``CompiledProc.fast_bind``): plain ints and bools, and
        C-contiguous arrays that own their memory, of the exact dtype, shape and rank."""
        pd, written = self.pd, written_args(self.pd, lambda q: self.callee(q).written)
        names = [self.name(a.sym) for a in pd.args]
        given = [a.sym.name for a in pd.args]
        if not all(g.isidentifier() and not keyword.iskeyword(g) for g in given) or any(
            g.startswith("_") for g in given
        ):
            # the names must be usable as Python parameters (by keyword)
            return ["def _fast(*_args, **_kw):", "    return None"]
        sig = ", ".join([f"{g}=_MISS" for g in given] + ["*_extra", "**_kw"])
        out = [f"def _fast({sig}):", "    if _extra or _kw: return None"]
        out += [f"    {n} = {g}" for n, g in zip(names, given, strict=True) if n != g]
        self.ns["_MISS"] = _MISSING
        self.ns["_nd"] = np.ndarray
        arrays: list[str] = []
        back: list[str] = []
        for i, (a, n) in enumerate(zip(pd.args, names, strict=True)):
            t = a.type
            match t:
                case ControlType():
                    if t.name == "bool":
                        out.append(f"    if type({n}) is not bool: return None")
                    elif t.name == "size":
                        out.append(f"    if type({n}) is not int or {n} <= 0: return None")
                    else:
                        out.append(f"    if type({n}) is not int: return None")
                    continue
                case DataType():
                    dt, shape_ok = t.np_dtype, f"{n}.ndim > 1 or {n}.size != 1"
                case TensorType():
                    dt = t.elem.np_dtype
                    want = ", ".join(self.ctrl(e) for e in t.shape)
                    shape_ok = f"{n}.shape != ({want},)"
                case _:
                    assert_never(t)
            dname = self.const(dt, "dt")
            # one flags object per array (each ``.flags`` makes a new one)
            test = (
                f"type({n}) is not _nd or {n}.dtype is not {dname} or {n}.base is not None"
                f" or not (_fl := {n}.flags).c_contiguous or {shape_ok}"
            )
            if i in written:
                test += " or not _fl.writeable"
                back.append(n)
            out.append(f"    if {test}: return None")
            arrays.append(n)
        # distinct arrays that own their memory cannot overlap; the same one twice shares
        for x, p in enumerate(arrays):
            for q in arrays[x + 1 :]:
                out.append(f"    if {p} is {q}: return None")
        flat: list[str] = []
        for a, n in zip(pd.args, names, strict=True):
            t = a.type
            if isinstance(t, ControlType):
                flat.append(n)
                continue
            if isinstance(t, TensorType) and t.rank() == 1:  # flat already: no view to make
                out.append(f"    {n}_f = {n}")
            else:
                out.append(f"    {n}_f = {n}.reshape(-1)")
            out.append(f"    {n}_d = {n}_f.tolist()")
            if isinstance(t, DataType):
                flat += [f"{n}_d", "0"]
                continue
            r = t.rank()
            dims = [f"{n}_n{k}" for k in range(r)]
            if r:
                out.append(f"    {', '.join(dims)}, = {n}.shape")
            strides = ["1"] * r
            for k in range(r - 2, -1, -1):
                strides[k] = f"{dims[k + 1]} * {strides[k + 1]}"
            flat += [f"{n}_d", "0", *strides, *dims]
        pairs = "".join(f"({n}_f, {n}_d), " for n in back)
        out.append(f"    return [{', '.join(flat)}], ({pairs})")
        return out

    # -- statements ----------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...]) -> None:
        """Emit the statements of ``body`` in order (``pass`` when none emits anything)."""
        n = len(self.lines)
        for s in body:
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

    def nested(self, body: tuple[Stmt, ...]) -> None:
        """Emit ``body`` one level deeper."""
        self.depth += 1
        self.block(body)
        self.depth -= 1

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
            if not _is_name(off):
                o = self.tmp("o")
                self.line(f"{o} = {off}")
                off = o
            target = f"{buf.data}[{off}]"
        if isinstance(s, Assign):
            self.line(f"{target} = {self.value(s.rhs, dt)}")
            return
        code, exact = self.data(s.rhs, dt)
        if not exact and dt.kind == "f":
            code = self.round(code, dt)
        total = f"{target} + {code}"
        if dt.kind == "f" and dt.itemsize == 4:
            self.line(f"_R[0] = {total}")
            self.line(f"{target} = _R[0]")
        else:
            self.line(f"{target} = {self.round(total, dt)}")

    def _stmt_alloc(self, s: Alloc) -> None:
        n = self.name(s.sym)
        if isinstance(s.type, DataType):
            fill = self.lit(_fill(s.type.np_dtype))
            if s.sym in self.by_ref:
                self.bufs[s.sym] = Buf(f"{n}_d", "0", (), (), s.type)
                self.line(f"{n}_d = [{fill}]")
            else:
                self.bufs[s.sym] = Buf(n, "0", (), (), s.type, local=True)
                self.line(f"{n} = {fill}")
            return
        dims: list[str] = []
        for k, e in enumerate(s.type.shape):
            t = self.ctrl(e)
            if not _is_int_literal(t):
                self.line(f"{n}_n{k} = {t}")
                t = f"{n}_n{k}"
            dims.append(t)
        if not all(_is_int_literal(d) and int(d) >= 0 for d in dims):
            fail = self.const(_neg_alloc_raiser(s.sym.name), "alloc")
            shape = f"({', '.join(dims)},)"
            self.line(f"if min({shape}) < 0: {fail}({shape})")
        strides = ["1"] * len(dims)
        for k in range(len(dims) - 2, -1, -1):
            prod = f"{dims[k + 1]} * {strides[k + 1]}"
            if all(_is_int_literal(x) for x in (dims[k + 1], strides[k + 1])):
                strides[k] = str(int(dims[k + 1]) * int(strides[k + 1]))
            else:
                self.line(f"{n}_s{k} = {prod}")
                strides[k] = f"{n}_s{k}"
        size = f"{dims[0]} * {strides[0]}" if dims else "1"
        dt = s.type.elem.np_dtype
        fill = self.lit(_fill(dt))
        # the list is checked as the buffer it stands for (its itemsize, not a list's)
        what = repr(f"buffer {s.sym.name}")
        self.line(f"_check_alloc({size}, {dt.itemsize}, {what})")
        self.line(f"{n}_d = [{fill}] * ({size})")
        self.bufs[s.sym] = Buf(f"{n}_d", "0", tuple(strides), tuple(dims), s.type.elem)

    def _stmt_window(self, s: WindowStmt) -> None:
        self.bufs[s.sym] = self.window(s.rhs)

    # -- loops ---------------------------------------------------------------------------
    def _stmt_for(self, s: For) -> None:
        # lo and hi are evaluated once, on entry; par loops run like seq loops
        lo, hi = self.ctrl(s.lo), self.ctrl(s.hi)
        if not _is_name(lo):
            t = self.tmp("lo")
            self.line(f"{t} = {lo}")
            lo = t
        if not _is_name(hi):
            t = self.tmp("hi")
            self.line(f"{t} = {hi}")
            hi = t
        v = self.name(s.iter)
        head = f"for {v} in range({lo}, {hi}):"
        short = _is_int_literal(lo) and _is_int_literal(hi) and int(hi) - int(lo) <= _SHORT
        hoist = self._hoistable(s) if _innermost(s.body) and not short else []
        if not hoist:
            self.line(head)
            self.nested(s.body)
            return
        conds: dict[str, None] = {}
        bases: dict[str, str] = {}
        walks: dict[tuple[str, str], str] = {}
        hoisted: dict[int, Hoisted] = {}
        first, second = {s.iter: lo}, {s.iter: f"({lo} + 1)"}
        last = {s.iter: f"({hi} - 1)"}
        self.inner_var = s.iter
        for node, sym, idx in hoist:
            buf = self.buf(sym)
            start = [] if buf.off == "0" else [buf.off]
            step = []
            for e, n, st in zip(idx, buf.dims, buf.strides, strict=True):
                if self.varies(e):
                    a, b = self.ctrl(e, first), self.ctrl(e, last)
                    conds[f"0 <= {a} < {n}"] = None
                    conds[f"0 <= {b} < {n}"] = None
                    start.append(self._scaled(a, st))
                    step.append(self._scaled(f"({self.ctrl(e, second)} - {a})", st))
                else:
                    conds[f"0 <= {self.ctrl(e)} < {n}"] = None
                    start.append(self._scaled(self.ctrl(e), st))
            text = " + ".join(start) or "0"
            if step:
                # the offset is affine in the loop variable: a range walks it (in C)
                key = (text, " + ".join(step))
                if key not in walks:
                    walks[key] = self.tmp("p")
                hoisted[id(node)] = Hoisted(walks[key])
                continue
            if text not in bases:
                bases[text] = text if _is_name(text) else self.tmp("b")
            hoisted[id(node)] = Hoisted(bases[text])
        # a short loop does not repay the checks and set-up on entry: it runs checked
        scalars, distinct = self._scalar_replace(s, hoisted, set(bases.values()))
        self.line(f"if {hi} - {lo} > {_SHORT} and ({' and '.join([*conds, *distinct])}):")
        self.depth += 1
        for text, name in bases.items():
            if name != text:
                self.line(f"{name} = {text}")
        for data, off, local in scalars:
            self.line(f"{local} = {data}[{off}]")
        if scalars:
            # the element goes back to its list also when the loop stops with an error
            self.line("try:")
            self.depth += 1
        if walks:
            count = self.tmp("n")
            self.line(f"{count} = {hi} - {lo}")
            walkers = []
            for a, b in walks:
                w0, dw = self.tmp("w"), self.tmp("w")
                self.line(f"{w0} = {a}")
                self.line(f"{dw} = {b}")
                # a range walks the offsets in C; a zero stride (a broadcast) repeats one
                walkers.append(
                    f"(range({w0}, {w0} + {dw} * {count}, {dw}) if {dw} "
                    f"else _repeat({w0}, {count}))"
                )
            targets = ", ".join([v, *walks.values()])
            self.line(f"for {targets} in zip(range({lo}, {hi}), {', '.join(walkers)}):")
        else:
            self.line(head)
        saved = self.hoisted
        self.hoisted = hoisted
        self.nested(s.body)
        self.hoisted = saved
        self.inner_var = None
        if scalars:
            self.depth -= 1
            self.line("finally:")
            for data, off, local in scalars:
                self.line(f"    {data}[{off}] = {local}")
        self.depth -= 1
        self.line("else:")
        self.depth += 1
        self.line(head)
        self.nested(s.body)
        self.depth -= 1

    def _hoistable(self, s: For) -> list[tuple[Any, Sym, tuple[Expr, ...]]]:
        """The accesses in the body of innermost loop ``s`` whose checks can move to entry:
        into a buffer defined outside the loop, with indices affine in the loop variable."""
        inside = {st.sym for st in walk_stmts(s.body) if isinstance(st, Alloc | WindowStmt)}
        out: list[tuple[Any, Sym, tuple[Expr, ...]]] = []
        for node, sym, idx in self._accesses(s.body):
            out.append((node, sym, idx))
        return [
            (node, sym, idx)
            for node, sym, idx in out
            if sym not in inside
            and sym in self.bufs
            and not self.bufs[sym].local
            and all(_affine_in(e, s.iter, inside) for e in idx)
        ]

    def _accesses(self, body: tuple[Stmt, ...]) -> list[tuple[Any, Sym, tuple[Expr, ...]]]:
        """Every element access in ``body``: (node, buffer, indices); data scalars too."""
        out: list[tuple[Any, Sym, tuple[Expr, ...]]] = []

        def data(sym: Sym) -> bool:
            return sym in self.types

        for st in walk_stmts(body):
            if isinstance(st, Assign | Reduce) and data(st.sym):
                out.append((st, st.sym, st.idx))
            for root in stmt_exprs(st):
                for e in walk_expr(root):
                    if isinstance(e, Read) and data(e.sym) and isinstance(e.type, DataType):
                        out.append((e, e.sym, e.idx))
        return out

    def _scalar_replace(
        self, s: For, hoisted: dict[int, Hoisted], invariant: set[str]
    ) -> tuple[list[tuple[str, str, str]], list[str]]:
        """Elements of the loop's body written at one loop-invariant place of a list that no
        other access of the body may touch: held in a local through the loop.

        Returns (list, offset, local) per element, and the runtime conditions that the other
        lists of the body are other lists (views of one array share a list).
        """
        if any(isinstance(st, Call) for st in walk_stmts(s.body)):
            return [], []  # a callee may read or write any list
        places: dict[str, set[str]] = {}
        written: set[str] = set()
        for node, sym, _ in self._accesses(s.body):
            b = self.bufs.get(sym)
            if b is None:
                # a buffer defined in the body: a window of it may share any list
                return [], []
            if b.local:
                continue
            h = hoisted.get(id(node))
            places.setdefault(b.data, set()).add(h.base if h is not None else "?")
            if isinstance(node, Assign | Reduce):
                written.add(b.data)
        chosen = []
        for data, where in places.items():
            (only,) = where if len(where) == 1 else ("?",)
            if data in written and only in invariant:
                chosen.append((data, only, self.tmp("s")))
        if not chosen:
            return [], []
        for node, sym, _ in self._accesses(s.body):
            h = hoisted.get(id(node))
            b = self.bufs[sym]
            for data, off, local in chosen:
                if h is not None and b.data == data and h.base == off:
                    hoisted[id(node)] = Hoisted(off, local)
        conds = [f"{d} is not {o}" for d, _, _ in chosen for o in places if o != d]
        return chosen, conds

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


# ------------------------------------------------------------------------------ analyses


def _innermost(body: tuple[Stmt, ...]) -> bool:
    return not any(isinstance(s, For) for s in walk_stmts(body))


def _affine_in(e: Expr, v: Sym, inside: set[Sym]) -> bool:
    """``e`` is a control expression that is ``a * v + b`` with ``b`` invariant in the loop
    of ``v`` (so its extremes over the loop are at the ends), and computing it cannot fail."""

    def invariant(x: Expr) -> bool:
        return not any(
            (isinstance(y, Read) and y.sym is v) or (isinstance(y, StrideExpr) and y.sym in inside)
            for y in walk_expr(x)
        )

    def ok(x: Expr) -> bool:
        match x:
            case Const():
                return isinstance(x.value, int) and not isinstance(x.value, bool)
            case Read():
                return not x.idx and isinstance(x.type, ControlType)
            case USub():
                return ok(x.arg)
            case BinOp():
                if x.op in ("+", "-"):
                    return ok(x.lhs) and ok(x.rhs)
                if x.op == "*":
                    return ok(x.lhs) and ok(x.rhs) and (invariant(x.lhs) or invariant(x.rhs))
                if x.op in ("/", "%"):
                    # floor division is monotone but not affine: only in invariant parts
                    return (
                        isinstance(x.rhs, Const) and x.rhs.value != 0 and invariant(x) and ok(x.lhs)
                    )
                return False
            case StrideExpr():
                return x.sym not in inside
            case _:
                return False

    return ok(e)


def _is_name(text: str) -> bool:
    return text.isidentifier() or _is_int_literal(text)


def _is_int_literal(text: str) -> bool:
    return text.lstrip("-").isdigit()


# ------------------------------------------------------------------------- error builders


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
