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

import builtins
import functools
import math
import operator
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
    ExprCompiler,
    Hoisted,
    fits,
    reset_config_state,
    wrap_text,
)
from cursched.interp.values import (
    c_div,
    c_rem,
    cast_scalar,
    float_div,
    float_mod,
    fmt_expr,
    quiet_numpy,
    restore_numpy,
    round_f16,
    rounder,
    sqrt_float,
    to_python,
)
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Expr,
    FnArg,
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
from cursched.ir.symbols import Sym
from cursched.ir.traversal import stmt_exprs, walk_expr, walk_stmts, written_args
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["MEMORYVIEW_FORMATS", "CompiledProc", "Compiler", "GeneralFunctions", "new_buffer"]

#: Fill value of fresh integer buffers: the low bytes of 0xDEADBEEF, so that a read before a
#: write shows up as a recognisable garbage value in differential tests.
_GARBAGE = 0xDEADBEEF


#: Loops of at most this many iterations are not versioned (see the module docstring).
_SHORT = 3

#: Innermost loops of at most this many iterations, known when compiling, are unrolled in
#: ``_run``'s body (``Compiler._emit_unrolled``).
_UNROLL = 4

#: Allocations of at most this many bytes, of a size known when compiling, are not checked
#: against the machine's memory (they cannot fail the check).
_SMALL_ALLOC = 1 << 20

#: Arrays of at most this many elements that a run only reads are copied into a list (see
#: ``Compiler._fast_run``); bigger ones, of which the proc may read a little, are not.
_LIST_MAX = 1 << 16

#: The value of a parameter of ``_run`` not given.
_MISSING = object()

#: Element types (``dtype.char``) a memoryview can index: the generated code reads and
#: writes such arrays in place; others (f16) go through a list copied back after the run.
MEMORYVIEW_FORMATS = frozenset("fdbBhHiIlLqQ")
_MEMORYVIEW_FORMATS = MEMORYVIEW_FORMATS

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


class Compiler(ExprCompiler):
    """Compiles one ``ProcDef``; ``callee`` compiles (and caches) the procs it calls."""

    def __init__(self, pd: ProcDef, callee: Callable[[ProcDef], CompiledProc]) -> None:
        super().__init__(pd)
        self.callee = callee
        self.callees: dict[int, str] = {}
        #: emitting the copy of a loop nest whose checks were moved to its entry
        self.in_nest = False
        #: emitting the checked copy of a versioned nest
        self.checked_copy = False
        #: integer accumulators held unwrapped through a loop (wrapped when stored), by type
        self.unwrapped: dict[str, np.dtype[Any]] = {}
        #: compiling ``_run``'s body (``_fast_run``): its arrays are distinct objects
        self.fast = False
        #: lists that are f32 memoryviews: a store into one rounds (``_fast_buf``)
        self.direct: set[str] = set()
        #: the walked offsets of an innermost loop's accesses, by node: (w, dw), the offset
        #: at loop value v being ``w + v * dw``
        self.walk_of: dict[int, tuple[str, str]] = {}
        #: the strides of ``_run``'s arrays but the innermost (products of sizes: positive
        #: where an access in bounds ran)
        self.fast_strides: set[str] = set()
        #: the size arguments' names (in ``_run``'s body they are known positive)
        self.positive = frozenset(
            self.name(a.sym)
            for a in pd.args
            if isinstance(a.type, ControlType) and a.type.name == "size"
        )
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

    def _fast_run(self, written: frozenset[int]) -> list[str]:
        """Source of ``_run`` (see ``CompiledProc.run``): the arguments' common case (plain
        ints and bools, C-contiguous arrays that own their memory, of the exact dtype and
        shape, all given by position or all by name) bound, checked and run in one call,
        the body inlined and specialised to that case.

        Arrays the proc writes are passed to the body as flat memoryviews of their own
        memory (reads give the element as a Python number, stores of the exact values the
        code computes write it through; an f32 memoryview rounds what it stores, so a store
        into one needs no rounding of its own); arrays it only reads as lists of their
        elements (a list is read several times faster than a memoryview, and an array that
        owns its memory cannot change while the run does not write it), unless big; f16,
        which memoryview cannot index, goes through a list written back at the end, as the
        general binding does. Distinct arrays that own their memory cannot overlap, so the
        body's tests that two lists are not one are decided when compiling."""
        pd = self.pd
        self.fast = True
        names = [self.name(a.sym) for a in pd.args]
        self.ns.update(_MISS=_MISSING, _nd=np.ndarray, _mv=memoryview)
        out = self._run_binding(names, [a.sym.name for a in pd.args])
        arrays: list[str] = []
        back: list[str] = []
        for i, (a, n) in enumerate(zip(pd.args, names, strict=True)):
            out += self._run_check(a, n, i in written, back)
            self._fast_buf(a, n, i in written)
            if not isinstance(a.type, ControlType):
                arrays.append(n)
        # distinct arrays that own their memory cannot overlap; the same one twice shares
        same = [f"{p} is {q}" for x, p in enumerate(arrays) for q in arrays[x + 1 :]]
        if same:
            out.append(f"    if {' or '.join(same)}: return False")
        return out + self._run_body(back)

    def _fast_buf(self, a: FnArg, n: str, written: bool) -> None:
        """The buffer of argument ``a`` (local ``n``) in ``_run``'s body: offset 0, unit
        innermost stride; an f32 memoryview written in place is stored into directly."""
        t = a.type
        match t:
            case ControlType():
                return
            case DataType():
                self.bufs[a.sym] = Buf(f"{n}_d", "0", (), (), t)
                elem = t
            case TensorType():
                r = t.rank()
                strides = tuple(f"{n}_s{k}" for k in range(r - 1)) + (("1",) if r else ())
                self.fast_strides.update(strides[:-1])
                self.bufs[a.sym] = Buf(f"{n}_d", "0", strides, self._fast_dims(t, n), t.elem)
                elem = t.elem
            case _:
                assert_never(t)
        if written and elem.np_dtype.char == "f":
            self.direct.add(f"{n}_d")

    def _fast_dims(self, t: TensorType, n: str) -> tuple[str, ...]:
        """The sizes of tensor argument ``t`` (local ``n``) in ``_run``'s body: ``_run``
        checked that they are the declared shape, so a literal or a size argument of the
        shape stands for its size (bounds checks against a literal are decided when
        compiling); a compound one is the local ``{n}_n{k}``."""
        dims = []
        for k, e in enumerate(t.shape):
            text = self.ctrl(e)
            dims.append(text if na.is_name(text) else f"{n}_n{k}")
        return tuple(dims)

    @staticmethod
    def _run_binding(names: list[str], given: list[str]) -> list[str]:
        """``_run``'s header: the arguments bound by Python itself (by position or by name;
        a missing one is ``_MISS``, which fails its type test), else False."""
        plain = all(not g.startswith("_") and not hasattr(builtins, g) for g in given)
        if given and plain and len(set(given)) == len(given):
            # (a name given twice, an unknown one or too many arguments raise TypeError
            # at the call: ``interpret`` then leaves it to the general binding, which
            # names the argument)
            params = ", ".join(f"{g}=_MISS" for g in given)
            return [f"def _run({params}):", f"    {', '.join(names)}, = {', '.join(given)},"]
        head = "def _run(*_a, **_kw):"
        if given:
            return [
                head,
                f"    if _kw or len(_a) != {len(given)}: return False",
                f"    {', '.join(names)}, = _a",
            ]
        return [head, "    if _a or _kw: return False"]

    def _run_check(self, a: FnArg, n: str, written: bool, back: list[str]) -> list[str]:
        """``_run``'s check of argument ``a`` (local ``n``) and, for an array, its flat data
        ``{n}_d`` and sizes ``{n}_n{k}``; an f16 array written goes into ``back``."""
        t = a.type
        match t:
            case ControlType():
                if t.name == "bool":
                    return [f"    if type({n}) is not bool: return False"]
                if t.name == "size":
                    return [f"    if type({n}) is not int or {n} <= 0: return False"]
                return [f"    if type({n}) is not int: return False"]
            case DataType():
                dt, shape_bad, rank = t.np_dtype, f"{n}.ndim > 1 or {n}.size != 1", 0
            case TensorType():
                dt, rank = t.elem.np_dtype, t.rank()
                shape_bad = f"_s != ({', '.join(self.ctrl(e) for e in t.shape)},)"
            case _:
                assert_never(t)
        dname = self.const(dt, "dt")
        out = [
            f"    if type({n}) is not _nd or {n}.dtype is not {dname} or {n}.base is not None:"
            " return False"
        ]
        if rank:
            out.append(f"    _s = {n}.shape")
        out.append(f"    if {shape_bad}: return False")
        if rank:
            out.append(f"    {', '.join(f'{n}_n{k}' for k in range(rank))}, = _s")
        if dt.char not in _MEMORYVIEW_FORMATS:
            # memoryview cannot index it (f16): a list, written back after the run
            out.append(f"    if not (_fl := {n}.flags).c_contiguous: return False")
            if written:
                out.append("    if not _fl.writeable: return False")
                back.append(n)
            return [*out, f"    {n}_f = {n}.reshape(-1)", f"    {n}_d = {n}_f.tolist()"]
        if isinstance(t, DataType) and not written:
            # read only: its value in a list (the array owns its memory: nothing the run
            # writes can change it)
            return [*out, f"    {n}_d = [{n}.item()]"]
        # (an empty array is never indexed, and a memoryview of one cannot be cast)
        flat = "_m" if rank == 1 else f"_m.cast('B').cast({dt.char!r}) if _m.nbytes else []"
        if not written:
            # read only: a list of its elements (the same Python numbers a memoryview's
            # reads give), which is read faster; a big one, of which the proc may read a
            # little, stays a memoryview
            listed = f"{n}.tolist()" if rank == 1 else f"{n}.ravel().tolist()"
            # (its size from the shape's ints: numpy's .size costs as much as a check)
            size = " * ".join(f"{n}_n{k}" for k in range(rank)) or "1"
            return [
                *out,
                f"    if not {n}.flags.c_contiguous: return False",
                f"    if {size} <= {_LIST_MAX}: {n}_d = {listed}",
                f"    else: _m = _mv({n}); {n}_d = {flat}",
            ]
        bad = "not _m.c_contiguous or _m.readonly"
        return [*out, f"    _m = _mv({n})", f"    if {bad}: return False", f"    {n}_d = {flat}"]

    def _run_body(self, back: list[str]) -> list[str]:
        """``_run``'s end: strides, the asserts, the configuration reset, the body (the
        statements compiled for ``_run``'s buffers), the write-back of f16 lists and numpy's
        error state restored."""
        out: list[str] = []
        for a in self.pd.args:
            t = a.type
            if isinstance(t, TensorType):
                # named, since the asserts and the body may read them (stride(x, 0))
                b = self.bufs[a.sym]
                for k in range(t.rank() - 2, -1, -1):
                    out.append(f"    {b.strides[k]} = {b.dims[k + 1]} * {b.strides[k + 1]}")
        out += self._pred_checks("on entry to")
        cleanup = [f"{n}_f[:] = {n}_d" for n in back]
        self.lines, self.depth = [], 2
        self.block(self.pd.body)
        body = self.lines
        if any("_R[0]" in ln for ln in body):
            out.append("    _R = _rounder()")
        out += [f"    {c}" for c in self.cells()]
        if self.uses_config:
            self.ns["_reset_config"] = reset_config_state
            out.append("    _reset_config()")
        if self.uses_numpy:
            # numpy externs report overflow and NaN as floating-point errors, which tests
            # running with -W error would turn into exceptions; they are the defined
            # semantics here, so they are silenced for the run, and only there
            self.ns.update(_quiet=quiet_numpy, _loud=restore_numpy)
            out.append("    _tok = _quiet()")
            cleanup.append("_loud(_tok)")
        if cleanup:
            # what the run wrote goes back also when it stops with an error
            out += ["    try:", *body, "        pass", "    finally:"]
            out += [f"        {c}" for c in cleanup]
        else:
            out += ["    if True:", *body, "        pass"]
        out.append("    return True")
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

    # -- loops ---------------------------------------------------------------------------
    def _stmt_for(self, s: For) -> None:
        """A loop; a nest whose accesses are affine in its loop variables is versioned on
        entry (see ``_nest_conditions``), an innermost loop on its own (``_emit_for``)."""
        plan = None if self.in_nest or na.innermost(s.body) else self._nest_conditions(s)
        if plan is None:
            self._emit_for(s)
            return
        conds, ids = plan
        if conds == ["True"]:
            # in bounds whatever the arguments: only the unchecked copy
            self.in_nest, saved = True, self.unchecked
            self.unchecked = saved | ids
            self._emit_for(s)
            self.unchecked = saved
            self.in_nest = False
            return
        self.line(f"if {' and '.join(conds)}:")
        self.in_nest, saved = True, self.unchecked
        self.unchecked = saved | ids
        self.depth += 1
        self._emit_for(s)
        self.depth -= 1
        self.unchecked = saved
        self.line("else:")
        # the checked copy: nothing in it is versioned again (the copies would double with
        # each level, and compiling the source is most of what a proc run once costs)
        self.depth += 1
        self.checked_copy = True
        self._emit_for(s)
        self.checked_copy = False
        self.depth -= 1
        self.in_nest = False

    def _nest_conditions(self, s: For) -> tuple[list[str], frozenset[int]] | None:
        """The bounds checks of loop nest ``s``, moved to its entry: conditions that hold iff
        every access of the nest into a buffer defined outside it, with indices affine in the
        nest's loop variables, is in bounds over the whole box of the loop ranges (an affine
        index takes its extremes at the box's corners), and those accesses; None when the
        inner loops' ranges depend on the nest or no access qualifies.

        An empty range makes the box meaningless, but then the accesses inside that loop
        never run, and the others are checked over the loops enclosing them; when the
        conditions fail, the checked copy runs and raises at the very access that fails.
        """
        loops = [s, *(st for st in walk_stmts(s.body) if isinstance(st, For))]
        nest = frozenset(lp.iter for lp in loops)
        defined = {st.sym for st in walk_stmts(s.body) if isinstance(st, Alloc | WindowStmt)}
        inside = defined | nest
        for lp in loops:
            for e in (lp.lo, lp.hi):
                if not na.affine_in(e, frozenset(), inside) or not na.invariant(e, inside):
                    return None
        ranges = {lp.iter: (self.ctrl(lp.lo), f"({self.ctrl(lp.hi)} - 1)") for lp in loops}
        conds: dict[str, None] = {}
        ids: set[int] = set()
        for node, sym, idx in self._accesses((s,)):
            b = self.bufs.get(sym)
            if sym in inside or b is None or b.local:
                continue
            if not all(na.affine_in(e, nest, defined) for e in idx):
                continue
            ids.add(id(node))
            for e, n in zip(idx, b.dims, strict=True):
                low, high = na.corners(e, ranges)
                for sub in low:
                    t = self.ctrl(e, sub)
                    if not (na.is_int_literal(t) and int(t) >= 0):
                        conds[f"0 <= {t}"] = None
                for sub in high:
                    conds[f"{self.ctrl(e, sub)} < {n}"] = None
        if not ids or any(na.holds(c) is False for c in conds):
            return None
        return [c for c in conds if not self._true(c)] or ["True"], frozenset(ids)

    def _true(self, cond: str) -> bool:
        """Condition ``cond`` holds whatever the arguments: it is literal, or (in ``_run``'s
        body, where sizes were checked positive) proved from the sizes being positive."""
        if na.holds(cond):
            return True
        return self.fast and na.proved(cond, self.positive)

    def _emit_for(self, s: For) -> None:
        # lo and hi are evaluated once, on entry; par loops run like seq loops
        lo, hi = self.ctrl(s.lo), self.ctrl(s.hi)
        if not na.is_name(lo):
            t = self.tmp("lo")
            self.line(f"{t} = {lo}")
            lo = t
        if not na.is_name(hi):
            t = self.tmp("hi")
            self.line(f"{t} = {hi}")
            hi = t
        v = self.name(s.iter)
        head = f"for {v} in range({lo}, {hi}):"
        short = na.is_int_literal(lo) and na.is_int_literal(hi) and int(hi) - int(lo) <= _SHORT
        hoist = self._hoistable(s) if na.innermost(s.body) and not self.checked_copy else []
        if short:
            # a short loop does not repay checks on entry, only offsets computed there
            hoist = [h for h in hoist if id(h[0]) in self.unchecked]
        if not hoist:
            self.line(head)
            self.nested(s.body)
            return
        self.inner_var = s.iter
        conds, bases, walks, hoisted = self._plan_offsets(s, hoist, lo, hi)
        scalars, distinct = self._scalar_replace(s, hoisted, set(bases.values()))
        # a short loop does not repay the checks on entry: it runs checked
        if any(na.holds(c) is False for c in conds):
            # an access fails at an end of the loop whatever the arguments: only checked
            self.inner_var = None
            self.line(head)
            self.nested(s.body)
            return
        conds = {c: None for c in conds if not self._true(c)}
        tests = [f"{hi} - {lo} > {_SHORT}", *conds] if conds else []
        tests += distinct
        if tests:
            self.line(f"if {' and '.join(tests)}:")
            self.depth += 1
        self._emit_unchecked(s, (head, lo, hi), bases, walks, hoisted, scalars)
        if not tests:
            return
        self.depth -= 1
        self.line("else:")
        self.depth += 1
        self.line(head)
        self.nested(s.body)
        self.depth -= 1

    def _plan_offsets(
        self, s: For, hoist: list[tuple[Any, Sym, tuple[Expr, ...]]], lo: str, hi: str
    ) -> tuple[
        dict[str, None], dict[str, str], dict[tuple[str, str], tuple[str, str]], dict[int, Hoisted]
    ]:
        """The checks on entry of innermost loop ``s`` for the accesses ``hoist`` (those its
        nest did not check), and their offsets: invariant ones (``bases``, text -> name) and
        affine ones (``walks``, (start, step) -> (w, dw): ``w + v * dw``), by node."""
        v = self.name(s.iter)
        conds: dict[str, None] = {}
        bases: dict[str, str] = {}
        walks: dict[tuple[str, str], tuple[str, str]] = {}
        hoisted: dict[int, Hoisted] = {}
        first, second = {s.iter: lo}, {s.iter: f"({lo} + 1)"}
        last = {s.iter: f"({hi} - 1)"}
        for node, sym, idx in hoist:
            buf = self.buf(sym)
            start = [] if buf.off == "0" else [buf.off]
            step = []
            checked = id(node) not in self.unchecked  # else the nest checked it on entry
            for e, n, st in zip(idx, buf.dims, buf.strides, strict=True):
                if self.varies(e):
                    a, b = self.ctrl(e, first), self.ctrl(e, last)
                    if checked:
                        conds[f"0 <= {a} < {n}"] = None
                        conds[f"0 <= {b} < {n}"] = None
                    start.append(self._scaled(a, st))
                    c = na.coef(e, s.iter)
                    if c is None:
                        step.append(self._scaled(f"({self.ctrl(e, second)} - {a})", st))
                    elif c:
                        step.append(self._scaled(str(c), st))
                else:
                    if checked:
                        conds[f"0 <= {self.ctrl(e)} < {n}"] = None
                    start.append(self._scaled(self.ctrl(e), st))
            text = " + ".join(t for t in start if t != "0") or "0"
            if step:
                # the offset is affine in the loop variable: w + v * dw, with w and dw
                # computed on entry
                key = (text, " + ".join(step))
                if key not in walks:
                    dw = key[1] if na.is_name(key[1]) else self.tmp("dw")
                    w = "0" if text == "0" and lo == "0" else self.tmp("w")
                    walks[key] = (w, dw)
                w, dw = walks[key]
                moved = self._scaled(v, dw)
                hoisted[id(node)] = Hoisted(moved if w == "0" else f"{w} + {moved}")
                self.walk_of[id(node)] = (w, dw)
                continue
            if text not in bases:
                bases[text] = text if na.is_name(text) else self.tmp("b")
            hoisted[id(node)] = Hoisted(bases[text])
        return conds, bases, walks, hoisted

    def _emit_unchecked(
        self,
        s: For,
        range_: tuple[str, str, str],
        bases: dict[str, str],
        walks: dict[tuple[str, str], tuple[str, str]],
        hoisted: dict[int, Hoisted],
        scalars: list[tuple[str, str, str]],
    ) -> None:
        """The copy of innermost loop ``s`` (``range_``: its ``for`` line, lo and hi) whose
        accesses ``hoisted`` are not checked: their offsets computed on entry, the elements
        ``scalars`` held in locals; an integer dot product is one sum (``_int_dot``)."""
        head, lo, hi = range_
        for text, name in bases.items():
            if name != text:
                self.line(f"{name} = {text}")
        for (a, b), (w, dw) in walks.items():
            if dw != b:
                self.line(f"{dw} = {b}")
            if w != "0":
                self.line(f"{w} = {a}" if lo == "0" else f"{w} = {a} - {lo} * {dw}")
        for data, off, local in scalars:
            self.line(f"{local} = {data}[{off}]")
        dot = self._int_dot(s, hi, hoisted)
        if dot is not None:
            # the loop as one sum computed by Python's C code; nothing in it can fail
            acc = hoisted[id(s.body[0])].scalar
            self.line(f"{acc} = {acc} + {dot}")
            for data, off, local in scalars:
                dt = self.unwrapped.get(local)
                value = local if dt is None else wrap_text(local, dt)
                self.line(f"{data}[{off}] = {value}")
            self.inner_var = None
            return
        if scalars:
            # the element goes back to its list also when the loop stops with an error
            self.line("try:")
            self.depth += 1
        saved = self.hoisted
        trip = na.literal_value(f"{hi} - {lo}") if na.is_int_literal(lo) else None
        # (an f32 dot product's products from C, array('f', map(mul, slices)), was tried:
        # at the corpus's lengths it costs more than it saves, 1.06M against 0.88M
        # instructions for sgemm, attention_row, gemv and conv1d)
        if self.fast and trip is not None and 0 < trip <= _UNROLL:
            self._emit_unrolled(s, int(lo), trip, hoisted)
        else:
            self.line(head)
            self.hoisted = hoisted
            self.nested(s.body)
        self.hoisted = saved
        self.inner_var = None
        if scalars:
            self.depth -= 1
            self.line("finally:")
            for data, off, local in scalars:
                dt = self.unwrapped.get(local)
                value = local if dt is None else wrap_text(local, dt)
                self.line(f"    {data}[{off}] = {value}")

    def _emit_unrolled(self, s: For, lo: int, trip: int, hoisted: dict[int, Hoisted]) -> None:
        """The body of innermost loop ``s`` (``trip`` iterations from literal ``lo``) once
        per iteration, the loop variable a literal: walked offsets ``w + v * dw`` become
        ``w + k * dw`` (``w + k`` for a unit step), and no loop runs."""
        sym = s.iter
        name = self.names[sym]
        try:
            for k in range(lo, lo + trip):
                self.names[sym] = str(k)  # every use of the variable reads the literal
                self.hoisted = dict(hoisted)
                for key, h in hoisted.items():
                    if h.scalar is None and key in self.walk_of:
                        w, dw = self.walk_of[key]
                        moved = self._scaled(str(k), dw)
                        base = moved if w == "0" else w if moved == "0" else f"{w} + {moved}"
                        self.hoisted[key] = Hoisted(base)
                self.block(s.body)
        finally:
            self.names[sym] = name

    def _reduction(
        self, s: For, hoisted: dict[int, Hoisted]
    ) -> tuple[str, np.dtype[Any], list[Read]] | None:
        """When innermost loop ``s`` is ``acc += x[..] * y[..]`` (or ``acc += x[..]``) into
        an accumulator held in a local: the local, its type and the reads; else None."""
        if not self.fast or len(s.body) != 1 or not isinstance(s.body[0], Reduce):
            return None
        red = s.body[0]
        h = hoisted.get(id(red))
        if h is None or h.scalar is None:
            return None
        rhs = red.rhs
        reads: list[Expr] = [rhs] if isinstance(rhs, Read) else []
        if isinstance(rhs, BinOp) and rhs.op == "*":
            reads = [rhs.lhs, rhs.rhs]
        if not reads or not all(isinstance(r, Read) for r in reads):
            return None
        return h.scalar, self.elem_type(red.sym).np_dtype, [r for r in reads if isinstance(r, Read)]

    def _slices(
        self, s: For, hi: str, hoisted: dict[int, Hoisted], reads: list[Read]
    ) -> list[str] | None:
        """Slices of the lists that innermost loop ``s`` reads through ``reads``, in the
        loop's order: only in ``_run``'s body, where the strides are positive (an access in
        bounds over the range ran from a non-empty array) and for walks of positive step,
        so that a slice with the walk's step visits the loop's elements; else None."""
        out = []
        lo = self.ctrl(s.lo)
        for r in reads:
            if id(r) not in self.walk_of or hoisted[id(r)].scalar is not None:
                return None
            w, dw = self.walk_of[id(r)]
            if not (dw in self.fast_strides or (na.is_int_literal(dw) and int(dw) > 0)):
                return None  # a step that may be negative (a reversed walk) or zero
            start = f"{w} + {self._scaled(lo, dw)}"
            stop = f"{w} + {self._scaled(hi, dw)}"
            step = "" if dw == "1" else f":{dw}"
            out.append(f"{self.buf(r.sym).data}[{start}:{stop}{step}]")
        return out

    def _read_type(self, r: Read) -> np.dtype[Any] | None:
        src = self.types.get(r.sym)
        src_dt = src.elem if isinstance(src, TensorType) else src
        return src_dt.np_dtype if isinstance(src_dt, DataType) else None

    def _int_dot(self, s: For, hi: str, hoisted: dict[int, Hoisted]) -> str | None:
        """Source of the sum that innermost loop ``s`` adds to its accumulator, when the loop
        is ``acc += x[..] * y[..]`` (or ``acc += x[..]``) in integers held unwrapped: the
        sum of products over slices of the lists (``_slices``; exact integers: wrapping
        once, when the accumulator is stored, gives the per-operation result); else None."""
        red = self._reduction(s, hoisted)
        if red is None or red[0] not in self.unwrapped:
            return None
        _, dt, reads = red
        for r in reads:
            src = self._read_type(r)
            if src is None or src.kind not in "iu" or not fits(src, dt):
                return None
        slices = self._slices(s, hi, hoisted, reads)
        if slices is None:
            return None
        # (an empty range may come with a stride 0, which a slice refuses)
        lo = self.ctrl(s.lo)
        if len(slices) == 1:
            return f"(sum({slices[0]}) if {lo} < {hi} else 0)"
        self.ns["_mul"] = operator.mul
        return f"(sum(map(_mul, {', '.join(slices)})) if {lo} < {hi} else 0)"

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
            and all(na.affine_in(e, s.iter, inside) for e in idx)
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
        dts: dict[str, np.dtype[Any]] = {}
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
            dts[b.data] = b.dt.np_dtype
            if isinstance(node, Assign | Reduce):
                written.add(b.data)
        chosen = []
        for data, where in places.items():
            (only,) = where if len(where) == 1 else ("?",)
            if data in written and only in invariant:
                chosen.append((data, only, self.tmp("s")))
        if not chosen:
            return [], []
        read: set[str] = set()
        for node, sym, _ in self._accesses(s.body):
            h = hoisted.get(id(node))
            b = self.bufs[sym]
            for data, off, local in chosen:
                if h is not None and b.data == data and h.base == off:
                    hoisted[id(node)] = Hoisted(off, local)
                    if not isinstance(node, Assign | Reduce):
                        read.add(local)
        for data, _, local in chosen:
            if local not in read and dts[data].kind in "iu":
                self.unwrapped[local] = dts[data]
        if self.fast:
            # ``_run``'s lists are distinct objects (one per array, allocation or field)
            return chosen, []
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
