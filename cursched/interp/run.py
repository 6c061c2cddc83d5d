"""The reference interpreter: runs a proc on numpy arrays and Python ints.

It is the oracle of every test, so it follows ``docs/semantics.md`` to the letter and is built
for speed: each ``ProcDef`` is compiled once into the source of a Python function over plain
Python numbers (``cursched.interp.compile`` for statements, ``cursched.interp.exprs`` for
expressions) and cached; running it binds and validates the arguments (a generated function
for the common case, ``CompiledProc.run``, the general binding here otherwise), passes the
arrays as flat memoryviews of their own memory (views of one array share one; f16, which a
memoryview cannot index, and odd layouts are copied into lists and written back), checks the
asserts and runs the body.

Example:
    >>> interpret(sgemm, 64, 64, 64, A, B, C)     # doctest: +SKIP
    >>> interpret(sgemm, n=64, m=64, k=64, A=A, B=B, C=C)     # doctest: +SKIP
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, assert_never

import numpy as np

from cursched.errors import ArgumentError, InterpreterError
from cursched.interp.compile import CompiledProc, Compiler
from cursched.interp.exprs import CTRL_OPS, reset_config_state
from cursched.interp.run_source import MEMORYVIEW_FORMATS
from cursched.interp.values import fmt_expr, quiet_numpy, restore_numpy, to_python
from cursched.ir.nodes import (
    BinOp,
    Const,
    Expr,
    Extern,
    FnArg,
    ProcDef,
    Read,
    StrideExpr,
    USub,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["compiled", "eval_control", "interpret"]

# Keyed by id(ProcDef); the entry keeps the ProcDef alive so the id cannot be reused while it
# is cached. Bounded so that the many intermediate versions a schedule makes do not pile up.
_CACHE: OrderedDict[int, CompiledProc] = OrderedDict()
_CACHE_SIZE = 512
#: The same entries' ``(pd, run)``: what ``interpret`` calls first, in one lookup (the fixed
#: cost of a call is most of what a small proc's run costs).
_RUNS: dict[int, tuple[ProcDef, Callable[..., bool]]] = {}


def compiled(pd: ProcDef) -> CompiledProc:
    """The compiled form of ``pd`` (compiled on first use, then cached)."""
    hit = _CACHE.get(id(pd))
    if hit is not None and hit.pd is pd:
        # no LRU reordering: evicting in order of compilation is as correct, and cheaper on
        # every call (the per-call cost dominates at the sizes tests use)
        return hit
    cp = Compiler(pd, compiled).compile()
    _CACHE[id(pd)] = cp
    _RUNS[id(pd)] = (pd, cp.run)
    while len(_CACHE) > _CACHE_SIZE:
        key, _ = _CACHE.popitem(last=False)
        _RUNS.pop(key, None)
    return cp


def procdef_of(p: Any) -> ProcDef:
    """The ``ProcDef`` of ``p``: ``p`` itself, or the IR of a ``Proc`` (``__cursched_ir__``).

    Raises:
        TypeError: ``p`` is neither.
    """
    if isinstance(p, ProcDef):
        return p
    ir = getattr(p, "__cursched_ir__", None)
    if isinstance(ir, ProcDef):
        return ir
    raise TypeError(f"expected a Proc or ProcDef, got {type(p).__name__}")


def interpret(p: ProcDef | Any, *args: Any, **kwargs: Any) -> None:
    """Run proc ``p`` on ``args`` (by position) and ``kwargs`` (by name); outputs in place.

    Args:
        p: the proc (a ``ProcDef``, or a ``Proc``).
        *args: arguments in parameter order: sizes and indices as Python ints, bools as
            Python bools, tensors as numpy arrays of the exact dtype and shape (contiguous
            unless the parameter is a window), data scalars as numpy arrays of shape ``()``
            or ``(1,)`` (a Python number is accepted when the proc never writes it).
        **kwargs: arguments by name.

    Raises:
        ArgumentError: an argument is missing, extra, or of the wrong kind, dtype or shape.
        InterpreterError: an assert fails or an access is out of bounds.
    """
    hit = _RUNS.get(id(p))
    if hit is None or hit[0] is not p:  # not a ProcDef compiled before (or a Proc)
        pd = procdef_of(p)
        hit = (pd, compiled(pd).run)
    try:
        if hit[1](*args, **kwargs):
            return
    except TypeError as e:
        # Python's own binding of ``run``'s parameters refused the call (an argument given
        # twice): the general binding names it. A TypeError from inside the run (its
        # traceback goes on into ``run``) is the run's own.
        if e.__traceback__ is None or e.__traceback__.tb_next is not None:
            raise
    cp = compiled(hit[0])
    values = bind_args(cp, args, kwargs)
    flat, write_back = _flatten(cp, values)
    cp.preds(*flat)
    if cp.uses_config:
        reset_config_state()
    token = quiet_numpy() if cp.uses_numpy else None
    try:
        cp.body(*flat)
    finally:
        # arrays the generated code could not work on in place were copied into lists:
        # what it wrote goes back to them, also when it stops with an error (the arrays
        # then hold the writes made so far, as the ones worked on in place do)
        for wb in write_back:
            wb()
        if token is not None:
            restore_numpy(token)


# ----------------------------------------------------------------------------- arguments


def _describe(a: FnArg) -> str:
    t = a.type
    match t:
        case ControlType():
            texts = {"size": "a positive int (size)", "index": "an int (index)", "bool": "a bool"}
            return texts.get(t.name, "an int")
        case DataType():
            return f"a numpy {t.np_dtype} array of shape () or (1,)"
        case TensorType():
            shape = ", ".join(fmt_expr(s) for s in t.shape)
            what = "window (any strides)" if t.window else "C-contiguous array"
            return f"a numpy {t.elem.np_dtype} {what} of shape ({shape})"
        case _:
            assert_never(t)


def _got(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"a {v.dtype} array of shape {v.shape}"
    return f"{type(v).__name__} {v!r}"


def _bad(pd: ProcDef, a: FnArg, v: Any, why: str = "") -> ArgumentError:
    extra = f" ({why})" if why else ""
    return ArgumentError(
        f"{pd.name}: argument {a.sym.name} expects {_describe(a)}, got {_got(v)}{extra}"
    )


def _match(pd: ProcDef, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    """Python-style binding of positional and keyword arguments to the parameters."""
    names = [a.sym.name for a in pd.args]
    if len(args) > len(names):
        raise ArgumentError(
            f"{pd.name} takes {len(names)} arguments ({', '.join(names)}), got {len(args)}"
        )
    values: dict[str, Any] = dict(zip(names, args, strict=False))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentError(f"{pd.name} has no argument {k!r} (it has {', '.join(names)})")
        if k in values:
            raise ArgumentError(f"{pd.name}: argument {k} given twice")
        values[k] = v
    missing = [n for n in names if n not in values]
    if missing:
        raise ArgumentError(f"{pd.name}: missing argument(s) {', '.join(missing)}")
    return [values[n] for n in names]


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _control(pd: ProcDef, a: FnArg, t: ControlType, v: Any) -> int | bool:
    if t.name == "bool":
        if not isinstance(v, bool | np.bool_):
            raise _bad(pd, a, v)
        return bool(v)
    if not _is_int(v):
        raise _bad(pd, a, v)
    if t.name == "size" and v <= 0:
        raise _bad(pd, a, v, "sizes are positive")
    return int(v)


def _scalar(pd: ProcDef, a: FnArg, t: DataType, v: Any, written: bool) -> Any:
    dt = t.np_dtype
    if isinstance(v, np.ndarray):
        if v.dtype != dt or v.shape not in ((), (1,)):
            raise _bad(pd, a, v)
        if written and not v.flags.writeable:
            raise _bad(pd, a, v, "the proc writes it but the array is read-only")
        return v.reshape(())  # a view: writes reach the caller's array
    number = _is_int(v) or (dt.kind == "f" and isinstance(v, float | np.floating))
    if not number:
        raise _bad(pd, a, v)
    if written:
        raise _bad(pd, a, v, "the proc writes it, so pass an array")
    bits = dt.itemsize * 8
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if dt.kind == "i" else (0, 1 << bits)
    if dt.kind in "iu" and not lo <= int(v) < hi:
        raise _bad(pd, a, v, f"out of range for {dt}")
    return np.array(v, dtype=dt)


def _tensor(pd: ProcDef, a: FnArg, t: TensorType, v: Any, written: bool) -> Any:
    if not isinstance(v, np.ndarray):
        raise _bad(pd, a, v)
    if v.dtype != t.elem.np_dtype:
        raise _bad(pd, a, v, f"dtype {v.dtype}")
    if v.ndim != t.rank():
        raise _bad(pd, a, v, f"rank {v.ndim} instead of {t.rank()}")
    if not t.window and not v.flags.c_contiguous:
        raise _bad(pd, a, v, "not C-contiguous; pass np.ascontiguousarray(...)")
    if written and not v.flags.writeable:
        raise _bad(pd, a, v, "the proc writes it but the array is read-only")
    return v


def bind_args(cp: CompiledProc, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    """Validate the arguments; return their values in parameter order (data scalars as
    numpy arrays of shape ``()``).

    Raises:
        ArgumentError: naming the argument and what was expected.
    """
    pd = cp.pd
    values = _match(pd, args, kwargs)
    controls: dict[Sym, Any] = {}
    for i, (a, v) in enumerate(zip(pd.args, values, strict=True)):
        t = a.type
        match t:
            case ControlType():
                values[i] = controls[a.sym] = _control(pd, a, t, v)
            case DataType():
                values[i] = _scalar(pd, a, t, v, i in cp.written)
            case TensorType():
                values[i] = _tensor(pd, a, t, v, i in cp.written)
            case _:
                assert_never(t)
    # shapes may name any size argument, so they are checked once all controls are bound
    for i, a in enumerate(pd.args):
        if isinstance(a.type, TensorType):
            want = tuple(eval_control(e, controls) for e in a.type.shape)
            if values[i].shape != want:
                raise _bad(pd, a, values[i], f"shape should be {want}")
    return values


# ------------------------------------------------------------------------ buffer layout


def _root(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array owning ``v``'s memory (the end of its chain of numpy bases)."""
    r = v
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


def _address(v: np.ndarray[Any, Any]) -> int:
    return int(v.__array_interface__["data"][0])


def _flatten(cp: CompiledProc, values: list[Any]) -> tuple[list[Any], list[Callable[[], None]]]:
    """The flat parameters of the generated code for ``values``, and the write-backs to run
    after it (``cursched.interp.compile``: each buffer a list, an offset, strides, sizes).

    Arrays are passed as flat memoryviews of their memory: arguments that are views of one
    C-contiguous numpy array share one memoryview of that array (offsets and strides into
    it), so that a write through one is seen through the other, as in the compiled code,
    and the generated code's test that two buffers are not one object is a test that they
    do not overlap. What a memoryview cannot index (f16) or lay out is copied into lists.
    """
    pd = cp.pd
    groups: dict[int, list[int]] = {}
    for i, v in enumerate(values):
        if isinstance(v, np.ndarray):
            groups.setdefault(id(_root(v)), []).append(i)
    parts: dict[int, tuple[Any, int, tuple[int, ...]]] = {}
    write_back: list[Callable[[], None]] = []
    shared: list[list[int]] = []
    for members in groups.values():
        wrote = any(i in cp.written for i in members)
        if _in_place(values, members, parts):
            continue
        if len(members) == 1 and values[members[0]].flags.c_contiguous:
            v = values[members[0]]
            flat_view = v.reshape(-1)
            data = flat_view.tolist()
            parts[members[0]] = (data, 0, tuple(s // v.itemsize for s in v.strides))
            if wrote:
                write_back.append(_assign(flat_view, data))
            continue
        if not _span(values, members, parts, write_back, wrote):
            for i in members:
                v = values[i]
                data = np.ascontiguousarray(v).reshape(-1).tolist()
                parts[i] = (data, 0, _contiguous_strides(v.shape))
                if i in cp.written:
                    write_back.append(_assign_shaped(v, data))
            shared.append(members)
    _refuse_unshared_overlap(cp, values, groups, shared)
    flat: list[Any] = []
    for i, (a, v) in enumerate(zip(pd.args, values, strict=True)):
        match a.type:
            case ControlType():
                flat.append(v)
            case DataType():
                if isinstance(v, np.ndarray):
                    data, off, _ = parts[i]
                    flat += [data, off]
                else:
                    flat += [[to_python(v, a.type.np_dtype)], 0]
            case TensorType():
                data, off, strides = parts[i]
                flat += [data, off, *strides, *v.shape]
            case _:
                assert_never(a.type)
    return flat, write_back


def _in_place(
    values: list[Any], members: list[int], parts: dict[int, tuple[Any, int, tuple[int, ...]]]
) -> bool:
    """Lay out views of one array as offsets into one flat memoryview of the C-contiguous
    array owning their memory; False if a memoryview cannot index them."""
    first = values[members[0]]
    single = len(members) == 1 and first.flags.c_contiguous
    root = first if single else _root(first)
    if not root.flags.c_contiguous:
        return False
    dt = root.dtype
    if dt.char not in MEMORYVIEW_FORMATS or any(values[i].dtype != dt for i in members):
        return False
    size = dt.itemsize
    if single:
        parts[members[0]] = (_flat_view(root), 0, tuple(s // size for s in root.strides))
        return True
    base = _address(root)
    layout: dict[int, tuple[int, tuple[int, ...]]] = {}
    for i in members:
        v = values[i]
        delta = _address(v) - base
        if delta % size or any(s % size for s in v.strides):
            return False
        layout[i] = (delta // size, tuple(s // size for s in v.strides))
    data = _flat_view(root)
    for i, (off, strides) in layout.items():
        parts[i] = (data, off, strides)
    return True


def _flat_view(v: np.ndarray[Any, Any]) -> memoryview[Any]:
    """A one-dimensional memoryview of C-contiguous ``v``'s elements."""
    m: memoryview[Any] = memoryview(v.data)
    if m.ndim == 1:
        return m
    # an empty array is never indexed, and a memoryview of one cannot be cast
    return m.cast("B").cast(v.dtype.char) if m.nbytes else memoryview(b"")


def _span(
    values: list[Any],
    members: list[int],
    parts: dict[int, tuple[Any, int, tuple[int, ...]]],
    write_back: list[Callable[[], None]],
    wrote: bool,
) -> bool:
    """Lay out views of one contiguous root array as offsets into one list holding the part
    of the root they span, with their real strides; False if the root does not allow it."""
    first = values[members[0]]
    root = _root(first)
    size = first.itemsize
    if not root.flags.c_contiguous or any(values[i].dtype != root.dtype for i in members):
        return False
    base = _address(root)
    lo, hi = None, None
    layout: dict[int, tuple[int, tuple[int, ...]]] = {}
    for i in members:
        v = values[i]
        delta = _address(v) - base
        if delta % size or any(s % size for s in v.strides):
            return False
        off, strides = delta // size, tuple(s // size for s in v.strides)
        layout[i] = (off, strides)
        if v.size == 0:
            continue
        a = off + sum(min(0, (n - 1) * s) for n, s in zip(v.shape, strides, strict=True))
        b = off + sum(max(0, (n - 1) * s) for n, s in zip(v.shape, strides, strict=True))
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
    lo, hi = (0, -1) if lo is None or hi is None else (lo, hi)
    flat_root = root.reshape(-1)
    region = flat_root[lo : hi + 1]
    data = region.tolist()
    for i, (off, strides) in layout.items():
        parts[i] = (data, off - lo, strides)
    if wrote:
        write_back.append(_assign(region, data))
    return True


def _refuse_unshared_overlap(
    cp: CompiledProc, values: list[Any], groups: dict[int, list[int]], shared: list[list[int]]
) -> None:
    """Arrays that overlap without one list for both would not see each other's writes:
    refuse them when either is written (numpy views of one array never come here; arrays
    over one foreign buffer, or views of a non-contiguous array, may)."""
    suspects = [i for members in shared for i in members]
    for members in groups.values():
        if _root(values[members[0]]).base is not None:
            suspects += members
    for x, i in enumerate(suspects):
        for j in suspects[x + 1 :]:
            if (i in cp.written or j in cp.written) and np.shares_memory(values[i], values[j]):
                names = (cp.pd.args[i].sym.name, cp.pd.args[j].sym.name)
                raise ArgumentError(
                    f"{cp.pd.name}: arguments {names[0]} and {names[1]} overlap in a way the "
                    "interpreter cannot share (not views of one contiguous array)"
                )


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _assign(view: np.ndarray[Any, Any], data: list[Any]) -> Callable[[], None]:
    def write() -> None:
        view[:] = data

    return write


def _assign_shaped(v: np.ndarray[Any, Any], data: list[Any]) -> Callable[[], None]:
    def write() -> None:
        v[...] = np.array(data, dtype=v.dtype).reshape(v.shape)

    return write


# ------------------------------------------------------------------------ control values


def eval_control(e: Expr, values: Mapping[Sym, Any]) -> Any:
    """Evaluate control expression ``e`` (an assert, a shape) with ``values`` for its symbols.

    A slow tree walk for tools (argument generators, error messages); the interpreter itself
    runs generated code. ``values`` maps size/index/bool symbols to Python values and, for
    ``stride``, tensor symbols to numpy arrays.

    Raises:
        InterpreterError: ``e`` is not a control expression or names an unbound symbol.
    """
    match e:
        case Const():
            return e.value
        case Read():
            if e.idx or e.sym not in values:
                raise InterpreterError(f"cannot evaluate {fmt_expr(e)} as a control value")
            return values[e.sym]
        case BinOp():
            lhs = eval_control(e.lhs, values)
            if e.op == "and":
                return lhs and eval_control(e.rhs, values)
            if e.op == "or":
                return lhs or eval_control(e.rhs, values)
            rhs = eval_control(e.rhs, values)
            if e.op in ("/", "%") and rhs == 0:
                raise InterpreterError(f"division by zero in {fmt_expr(e)}")
            return CTRL_OPS[e.op](lhs, rhs)
        case USub():
            return -eval_control(e.arg, values)
        case StrideExpr():
            arr = values.get(e.sym)
            if not isinstance(arr, np.ndarray):
                raise InterpreterError(f"cannot evaluate {fmt_expr(e)} without the array")
            return arr.strides[e.dim] // arr.itemsize
        case Extern() | WindowExpr():
            raise InterpreterError(f"{fmt_expr(e)} is not a control expression")
        case _:
            assert_never(e)
