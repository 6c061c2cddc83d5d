"""The Python side of compiled procs: argument checking and the ctypes call.

``compile_proc`` generates C for a proc, builds it through the cache, and returns a callable
with the interpreter's argument conventions (docs/semantics.md). The callable is Python source
generated once per proc (then ``exec``-ed), specialised to the proc's signature: the common
case (right types, dtypes, shapes, flags) costs a handful of identity and tuple comparisons
per argument, and any failed fast check falls into a slow checker that names the argument and
what was expected in an ``ArgumentError``. Everything is checked before any C runs.

Arrays reach C as the array objects themselves: the ``cs_entry_*`` shim reads the data
pointer out of the object (``CS_NP_DATA``), which is far cheaper than ``ndarray.ctypes`` per
call. The offset is verified once per process against ``ndarray.ctypes.data``; if it ever
disagrees, the wrapper falls back to passing ``ndarray.ctypes.data`` to the plain function.
ctypes releases the GIL during the call (``CDLL``, not ``PyDLL``).

The shim also refuses overlapping arrays (docs/semantics.md, "Aliasing"): two arrays whose
byte spans meet while the proc writes one, or a written window whose strides may reach one
element twice, make it return a code before any C runs; the wrapper then decides exactly
(``np.shares_memory``), raising ``ArgumentError`` or calling ``cs_entry_unchecked_*``. A failed heap
allocation inside the call makes it return -1: ``AllocationError``.
"""

from __future__ import annotations

import ctypes
import functools
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cursched.codegen.build import (
    SANITIZE_CFLAGS,
    BuildResult,
    build_library,
    default_cflags,
    load_library,
)
from cursched.codegen.c.expressions import row_major
from cursched.codegen.c.naming import sanitize as c_ident
from cursched.codegen.c.pyexpr import py_ctrl
from cursched.codegen.c.unit import CFunction, generate_unit
from cursched.codegen.c.vector_math import VECTOR_MATH_CFLAGS, with_vector_math
from cursched.codegen.cpu import check_features
from cursched.errors import (
    AllocationError,
    ArgumentError,
    CodegenError,
    CurschedError,
    at_boundary,
)
from cursched.ir.nodes import ProcDef
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import written_args
from cursched.ir.types import ControlType, DataType, TensorType

_MAX_INT = 2**62  # sizes and indices stay far from int64 overflow in index arithmetic


@functools.cache
def np_data_offset_ok() -> bool:
    """Whether an ndarray's fields sit where the entry shims read them (CPython's layout:
    data pointer right after the object header, then ``nd``, ``dimensions``, ``strides``)."""
    base = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for a in (base, base[1:, ::-1, ::2], base.T, np.zeros((), np.int8), np.arange(3)[1:]):
        at = id(a) + 16
        if ctypes.c_void_p.from_address(at).value != a.ctypes.data:
            return False
        if ctypes.c_int.from_address(at + 8).value != a.ndim:
            return False
        if a.ndim:
            dims = ctypes.c_void_p.from_address(at + 16).value
            strides = ctypes.c_void_p.from_address(at + 24).value
            if dims is None or strides is None:
                return False
            shape = (ctypes.c_ssize_t * a.ndim).from_address(dims)
            steps = (ctypes.c_ssize_t * a.ndim).from_address(strides)
            if tuple(shape) != a.shape or tuple(steps) != a.strides:
                return False
    return True


def self_overlaps(a: np.ndarray[Any, Any]) -> bool:
    """Whether two distinct indices of ``a`` reach the same element (exact up to 2**20
    elements; larger arrays that the shim's quick test flagged count as overlapping)."""
    if a.size <= 1:
        return False
    if a.size > 2**20:
        return True
    offsets = np.zeros(1, np.int64)
    for n, s in zip(a.shape, a.strides, strict=True):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    return bool(np.unique(offsets).size != offsets.size)


def shares_memory(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    """numpy's exact test (a problem it finds too hard counts as shared)."""
    try:
        return bool(np.shares_memory(a, b))
    except np.exceptions.TooHardError:
        return True


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """What the wrapper checks for one argument."""

    index: int
    name: str
    kind: str  # size | index | bool | scalar | tensor | window
    dtype: np.dtype[Any] | None
    shape_text: str
    written: bool


class Checker:
    """The slow path of the wrapper: precise diagnostics, conversions, binding by name."""

    def __init__(self, proc: ProcDef, specs: tuple[ArgSpec, ...]) -> None:
        self.proc = proc
        self.specs = specs
        self.names = tuple(s.name for s in specs)

    def _err(self, k: int, msg: str) -> ArgumentError:
        return ArgumentError(f"{self.proc.name}: argument '{self.names[k]}': {msg}")

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        n = len(self.names)
        if not args and len(kwargs) == n:  # all by name: the common keyword call
            try:
                return tuple(map(kwargs.__getitem__, self.names))
            except KeyError:
                pass
        if len(args) > n:
            raise ArgumentError(
                f"{self.proc.name} takes {n} arguments ({', '.join(self.names)}), {len(args)} given"
            )
        values: dict[str, Any] = dict(zip(self.names, args, strict=False))
        for k, v in kwargs.items():
            if k not in self.names:
                raise ArgumentError(
                    f"{self.proc.name} has no argument {k!r} (it has {', '.join(self.names)})"
                )
            if k in values:
                raise ArgumentError(f"{self.proc.name}: argument {k!r} given twice")
            values[k] = v
        missing = [x for x in self.names if x not in values]
        if missing:
            raise ArgumentError(f"{self.proc.name}: missing argument(s) {', '.join(missing)}")
        return tuple(values[x] for x in self.names)

    def integer(self, v: Any, k: int) -> int:
        kind = self.specs[k].kind
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise self._err(k, f"expected an int ({kind}), got {type(v).__name__} {v!r}")
        x = operator.index(v)
        if kind == "size" and x <= 0:
            raise self._err(k, f"sizes are positive, got {x}")
        if not -_MAX_INT <= x <= _MAX_INT:
            raise self._err(k, f"{x} is out of range (|{kind}| <= 2**62)")
        return x

    def boolean(self, v: Any, k: int) -> bool:
        if not isinstance(v, bool | np.bool_):
            raise self._err(k, f"expected a bool, got {type(v).__name__} {v!r}")
        return bool(v)

    def scalar(self, v: Any, k: int) -> np.ndarray[Any, Any]:
        s = self.specs[k]
        dt = s.dtype
        assert dt is not None
        if isinstance(v, np.ndarray):
            if v.dtype != dt or v.shape not in ((), (1,)):
                raise self._err(
                    k, f"expected a {dt} array of shape () or (1,), got {v.dtype} {v.shape}"
                )
            return v
        number = (isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)) or (
            dt.kind == "f" and isinstance(v, float | np.floating)
        )
        if not number:
            raise self._err(k, f"expected a {dt} array of shape (), got {type(v).__name__}")
        if s.written:
            raise self._err(k, "the proc writes it, so pass a numpy array of shape ()")
        if dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= int(v) <= info.max:
                raise self._err(k, f"{v} is out of range for {dt}")
        return np.array(v, dtype=dt)

    def array(self, v: Any, k: int, shape: tuple[int, ...]) -> Any:
        s = self.specs[k]
        want = f"a {s.dtype} array of shape {s.shape_text} = {shape}"
        if not isinstance(v, np.ndarray):
            raise self._err(k, f"expected {want}, got {type(v).__name__}")
        if v.dtype != s.dtype:
            raise self._err(k, f"expected {want}, got dtype {v.dtype}")
        if v.ndim != len(shape):
            raise self._err(k, f"expected {want}, got {v.ndim} dimensions (shape {v.shape})")
        if v.shape != shape:
            raise self._err(k, f"expected {want}, got shape {v.shape}")
        return v

    def flags(self, v: Any, k: int) -> None:
        s = self.specs[k]
        f = v.flags
        if s.kind != "window" and not f.c_contiguous:
            raise self._err(
                k,
                "a tensor argument must be C-contiguous (pass np.ascontiguousarray(...),"
                " or declare the parameter as a window [type][...])",
            )
        if not f.aligned:
            raise self._err(k, "the array's data is not aligned to its element size")
        if s.written and not f.writeable:
            raise self._err(k, "the proc writes it but the array is read-only")

    def strides(self, v: Any, k: int) -> None:
        raise self._err(
            k, f"strides {v.strides} are not multiples of the element size {v.itemsize}"
        )

    def overlaps(self, values: tuple[Any, ...]) -> None:
        """Refuse arrays that share memory while the proc writes one of them, and written
        windows that overlap themselves (docs/semantics.md, "Aliasing")."""
        arrays = [k for k, s in enumerate(self.specs) if s.kind in ("scalar", "tensor", "window")]
        for x, i in enumerate(arrays):
            for j in arrays[x + 1 :]:
                si, sj = self.specs[i], self.specs[j]
                if (si.written or sj.written) and shares_memory(values[i], values[j]):
                    both = "both" if si.written and sj.written else "one of them"
                    how = "are the same array" if values[i] is values[j] else "share memory"
                    raise ArgumentError(
                        f"{self.proc.name}: arguments '{si.name}' and '{sj.name}' {how}"
                        f" and the proc writes {both}; pass arrays that do not overlap"
                        " (e.g. a copy of the one it reads)"
                    )
            s = self.specs[i]
            if s.kind == "window" and s.written and self_overlaps(values[i]):
                raise self._err(
                    i,
                    f"the proc writes it, but its strides {values[i].strides} make distinct"
                    " indices reach the same element",
                )

    def status(self, r: int, values: tuple[Any, ...], again: Callable[[], int]) -> None:
        """Act on a nonzero result of an entry shim (see ``unit._entry_text``): check the
        overlap it flagged exactly (and every other pair), then run ``again`` unchecked."""
        if r > 0:
            self.overlaps(values)
            r = again()
        if r == -1:
            raise AllocationError(
                f"{self.proc.name}: a buffer could not be allocated (out of memory, or its"
                " size overflows); the outputs are not valid"
            )
        if r != 0:
            raise CodegenError(f"entry shim of {self.proc.name} returned {r}")

    def assert_failed(self, k: int, values: tuple[Any, ...]) -> None:
        shown = ", ".join(
            f"{s.name}={v}"
            for s, v in zip(self.specs, values, strict=True)
            if s.kind in ("size", "index", "bool")
        )
        raise ArgumentError(
            f"{self.proc.name}: assert {print_expr(self.proc.preds[k])} does not hold"
            + (f" ({shown})" if shown else "")
        )


def _specs(p: ProcDef) -> tuple[ArgSpec, ...]:
    written = written_args(p)
    names = {a.sym: a.sym.name for a in p.args}
    out = []
    for k, a in enumerate(p.args):
        t = a.type
        dtype: np.dtype[Any] | None = None
        shape_text = ""
        if isinstance(t, ControlType):
            kind = t.name if t.name in ("size", "bool") else "index"
        elif isinstance(t, DataType):
            kind, dtype = "scalar", t.np_dtype
        else:
            kind, dtype = ("window" if t.window else "tensor"), t.elem.np_dtype
            parts = [py_ctrl(s, names, lambda s_, d: f"stride({s_}, {d})") for s in t.shape]
            shape_text = "(" + ", ".join(x.strip("()") for x in parts)
            shape_text += ",)" if len(parts) == 1 else ")"
        out.append(ArgSpec(k, a.sym.name, kind, dtype, shape_text, k in written))
    return tuple(out)


def _wrapper_source(p: ProcDef, specs: tuple[ArgSpec, ...], shim: bool) -> str:
    """Python source of ``make(ns) -> call``, the argument-checking fast path."""
    n = len(specs)
    local = {a.sym: f"a{k}" for k, a in enumerate(p.args)}
    shapes: dict[Sym, tuple[str, ...]] = {}
    for a in p.args:
        if isinstance(a.type, TensorType):
            shapes[a.sym] = tuple(py_ctrl(s, local, lambda s_, d: "0") for s in a.type.shape)

    def stride(sym: Sym, d: int) -> str:
        k = next(i for i, a in enumerate(p.args) if a.sym is sym)
        if specs[k].kind == "window":
            return f"s{k}_{d}"
        return row_major(shapes[sym])[d]

    lines = ["def call(*args, **kwargs):"]
    add = lines.append
    add(f"    if kwargs or len(args) != {n}:")
    add("        args = _c.bind(args, kwargs)")
    if n:
        add(f"    {', '.join(local[a.sym] for a in p.args)}{',' if n == 1 else ''} = args")
    call_args: list[str] = []
    arrays: list[int] = []
    for k, s in enumerate(specs):
        v = f"a{k}"
        if s.kind in ("size", "index"):
            low = "0" if s.kind == "size" else f"-{_MAX_INT}"
            add(f"    if type({v}) is not int or not {low} < {v} <= {_MAX_INT}:")
            add(f"        {v} = _c.integer({v}, {k})")
            call_args.append(v)
            continue
        if s.kind == "bool":
            add(f"    if type({v}) is not bool:")
            add(f"        {v} = _c.boolean({v}, {k})")
            call_args.append(v)
            continue
        arrays.append(k)
        if s.kind == "scalar":
            add(f"    if type({v}) is not _nd or {v}.dtype is not _dt{k} or {v}.shape not in _sc:")
            add(f"        {v} = _c.scalar({v}, {k})")
        else:
            shp = shapes[p.args[k].sym]
            tup = f"({', '.join(shp)}{',' if len(shp) == 1 else ''})"
            add(f"    if type({v}) is not _nd or {v}.dtype is not _dt{k} or {v}.shape != {tup}:")
            add(f"        {v} = _c.array({v}, {k}, {tup})")
        need = ["c_contiguous"] if s.kind != "window" else []
        need.append("aligned")
        if s.written:
            need.append("writeable")
        add(f"    f = {v}.flags")
        add(f"    if not ({' and '.join('f.' + x for x in need)}):")
        add(f"        _c.flags({v}, {k})")
        call_args.append(v if shim else f"{v}.ctypes.data")
        if s.kind == "window":
            rank = len(shapes[p.args[k].sym])
            isz = s.dtype.itemsize if s.dtype is not None else 1
            add(f"    st = {v}.strides")
            if isz > 1:
                add(f"    if {' or '.join(f'st[{d}] % {isz}' for d in range(rank))}:")
                add(f"        _c.strides({v}, {k})")
            for d in range(rank):
                add(f"    s{k}_{d} = st[{d}] // {isz}")
                call_args.append(f"s{k}_{d}")
    for k, pred in enumerate(p.preds):
        add(f"    if not {py_ctrl(pred, local, stride)}:")
        add(f"        _c.assert_failed({k}, ({', '.join(local[a.sym] for a in p.args)},))")
    everything = f"({', '.join(local[a.sym] for a in p.args)}{',' if n == 1 else ''})"
    if shim:
        # The shim checks overlaps and reports failed allocations.
        add(f"    r = _fn({', '.join(call_args)})")
        add("    if r:")
        add(f"        _c.status(r, {everything}, lambda: _fnu({', '.join(call_args)}))")
    else:
        conflict = any(
            specs[i].written or specs[j].written for i in arrays for j in arrays if i < j
        ) or any(specs[k].written and specs[k].kind == "window" for k in arrays)
        if conflict:
            add(f"    _c.overlaps({everything})")
        add("    before = _failures()")
        add(f"    _fn({', '.join(call_args)})")
        add("    if _failures() != before:")
        add("        _c.status(-1, (), int)")
    return "\n".join(lines) + "\n"


def _at_boundary(src: str) -> str:
    """``call``'s source with its body inside ``try``: an error raised by a check in
    ``Checker`` leaves through ``errors.at_boundary``, so the user's traceback shows their line
    and ``call``'s, not the checker's frames (``try`` costs nothing on the fast path)."""
    head, *body = src.rstrip("\n").split("\n")
    tail = ["    except _CE as e:", "        raise _boundary(e) from None"]
    return "\n".join([head, "    try:", *("    " + ln for ln in body), *tail]) + "\n"


def _ctypes_argtypes(f: CFunction, shim: bool) -> list[Any]:
    out: list[Any] = []
    for cp in f.params:
        t = cp.arg.type
        if isinstance(t, ControlType):
            out.append(ctypes.c_bool if t.name == "bool" else ctypes.c_int64)
        else:
            out.append(ctypes.py_object if shim else ctypes.c_void_p)
            out += [ctypes.c_int64] * (len(cp.names) - 1)
    return out


def _failure_count(built: BuildResult, root: str) -> Callable[[], int]:
    """Reads the unit's count of failed allocations (for calls without the entry shim)."""
    fn = getattr(load_library(built), f"cs_alloc_failures_{root}")
    fn.argtypes = []
    fn.restype = ctypes.c_uint
    return fn  # type: ignore[no-any-return]


def compile_proc(
    p: ProcDef,
    *,
    cflags: tuple[str, ...] | list[str] | None = None,
    extra_cflags: tuple[str, ...] | list[str] = (),
    sanitize: bool = False,
    fp_contract_off: bool = False,
    vector_math: bool = False,
) -> Callable[..., None]:
    """Compile ``p`` to C and return a callable running it on numpy arrays and ints.

    Args:
        p: the proc (an instruction proc compiles to a function running its template).
        cflags: compiler flags replacing the defaults (``build.DEFAULT_CFLAGS``); ignored
            when ``sanitize`` is set (sanitized builds use ``build.SANITIZE_CFLAGS``).
        extra_cflags: flags appended to the defaults or to ``cflags``.
        sanitize: build with ASan + UBSan and run every call in a child process that preloads
            the sanitizer runtime; a report raises ``CodegenError`` after the outputs are
            copied back (see ``cursched.codegen.c.sanitize``).
        fp_contract_off: add ``-ffp-contract=off`` (no fused multiply-add), for results
            bitwise equal to the interpreter's.
        vector_math: opt-in: let the compiler vectorise calls of ``expf``, ``logf``, ``sinf``
            (and the double ones) with glibc's libmvec (``-fno-math-errno`` and the variants'
            declarations; see ``cursched.codegen.c.vector_math``). Unlike ``-ffast-math`` it
            keeps infinities, NaN and the order of reductions; a vectorised call may differ
            from the scalar libm's result by a few ulp.

    Returns:
        ``call(*args, **kwargs)``, taking arguments like ``p.interpret``; it has the
        attributes ``c_source``, ``h_source``, ``lib_path``, ``source_path``, ``cache_hit``
        and, when sanitized, ``sanitizer`` (whose ``last_report`` holds the last stderr).

    Raises:
        CodegenError: ``p`` has no C translation, or uses a memory whose instructions the
            running CPU lacks (``cursched.codegen.cpu``).
        BuildError: the C compiler failed.
        ArgumentError: (from the callable) an argument does not fit the signature or asserts.
    """
    shim = np_data_offset_ok()
    # The shims are always built: without them (another array layout) a call still reads
    # the unit's failed-allocation count through one of them.
    unit = generate_unit(c_ident(p.name), [p], entry=True)
    check_features(unit.requires, f"compiling {p.name}")
    flags = tuple(SANITIZE_CFLAGS if sanitize else (cflags or default_cflags()))
    flags += tuple(extra_cflags)
    if fp_contract_off:
        flags += ("-ffp-contract=off",)
    source = unit.c_source
    if vector_math:
        flags += VECTOR_MATH_CFLAGS
        source = with_vector_math(source)
    built: BuildResult = build_library(unit.name, source, flags)
    root = unit.roots[0]
    entry = f"cs_entry_{root.cname}" if shim else root.cname
    specs = _specs(p)
    fn: Any
    runner = None
    if sanitize:
        from cursched.codegen.c.sanitize import SanitizedCall

        argtypes = _ctypes_argtypes(root, shim)
        runner = fn = SanitizedCall(built.lib_path, entry, argtypes)
        unchecked: Any = SanitizedCall(built.lib_path, f"cs_entry_unchecked_{root.cname}", argtypes)
    else:
        lib = load_library(built)
        fn = getattr(lib, entry)
        unchecked = getattr(lib, f"cs_entry_unchecked_{root.cname}")
        for f in (fn, unchecked):
            f.argtypes = _ctypes_argtypes(root, shim)
            f.restype = ctypes.c_int if shim else None
    ns: dict[str, Any] = {"_c": Checker(p, specs), "_fn": fn, "_nd": np.ndarray, "_sc": ((), (1,))}
    ns["_fnu"] = unchecked
    if not shim:
        # (a sanitized library cannot be loaded here: its failures go unseen)
        ns["_failures"] = int if sanitize else _failure_count(built, root.cname)
    for s in specs:
        if s.dtype is not None:
            ns[f"_dt{s.index}"] = s.dtype
    ns.update(_CE=CurschedError, _boundary=at_boundary)
    src = _at_boundary(_wrapper_source(p, specs, shim))
    exec(compile(src, f"<cursched wrapper of {p.name}>", "exec"), ns)
    call: Callable[..., None] = ns["call"]
    for attr, val in (
        ("c_source", source),
        ("h_source", unit.h_source),
        ("lib_path", built.lib_path),
        ("source_path", built.source_path),
        ("cache_hit", built.hit),
        ("wrapper_source", src),
        ("sanitizer", runner),
        ("__name__", p.name),
    ):
        setattr(call, attr, val)
    return call
