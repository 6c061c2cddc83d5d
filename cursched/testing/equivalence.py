"""Differential testing: run two procs on the same random inputs and compare their outputs.

``assert_equivalent(p_before, p_after)`` is how every scheduling primitive is tested: the
reference interpreter runs both procs on random inputs that satisfy the asserts and every data
argument is compared afterwards (integers exactly, floats within a tolerance by dtype, NaN
equal to NaN). ``random_args`` draws one such set of inputs and is reused by the C backend's
tests.

Sizes are drawn by ``cursched.testing.sizes``: small candidate values, equalities solved,
rejection sampling; no SMT solver is needed for the asserts procs actually carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_never

import numpy as np

from cursched.errors import ArgumentError, InterpreterError
from cursched.interp import eval_control, interpret, procdef_of
from cursched.interp.values import fmt_expr
from cursched.ir.nodes import FnArg, ProcDef, StrideExpr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_expr
from cursched.ir.types import ControlType, DataType, TensorType, Type
from cursched.testing.sizes import UnsatisfiableAssertsError, draw_controls

__all__ = ["DEFAULT_TOLERANCES", "UnsatisfiableAssertsError", "assert_equivalent", "random_args"]

#: (rtol, atol) by numpy dtype name, for float outputs when none is given.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-9, 1e-9),
}


# ------------------------------------------------------------------------- drawing data


def _random_data(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> Any:
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    lo = -8 if dt.kind == "i" else 0
    return rng.integers(lo, 9, size=shape).astype(dt)


def _shape(t: TensorType, values: Mapping[Sym, Any]) -> tuple[int, ...]:
    return tuple(int(eval_control(s, values)) for s in t.shape)


def _random_tensor(rng: np.random.Generator, t: TensorType, shape: tuple[int, ...]) -> Any:
    dt = t.elem.np_dtype
    if not t.window or len(shape) < 2:
        return _random_data(rng, shape, dt)
    # a window argument gets padded rows, so that code assuming contiguity shows up; the last
    # dimension stays unit-stride, which instructions on vector memories may require
    base = _random_data(rng, (*shape[:-1], shape[-1] + 3), dt)
    return base[..., : shape[-1]]


def random_args(
    p: Any, rng: np.random.Generator, sizes: Mapping[str, int | bool] | None = None
) -> dict[str, object]:
    """Random arguments for ``p`` that satisfy its asserts.

    Args:
        p: a ``Proc`` or ``ProcDef``.
        rng: the source of randomness (``np.random.default_rng(seed)``).
        sizes: values pinned by name for control arguments (sizes, indices, bools).

    Returns:
        A dict from argument name to value: ints and bools for control arguments, numpy
        arrays for tensors (windows get non-contiguous rows) and data scalars (shape ``()``);
        floats are drawn normal, integers small (-8..8, or 0..8 unsigned).

    Raises:
        UnsatisfiableAssertsError: no assignment satisfying the asserts was found (they
            contradict each other, or a ``stride`` assert no drawn array meets).
        ArgumentError: ``sizes`` names an argument that is not a control argument.
    """
    pd = procdef_of(p)
    values: dict[Sym, Any] = dict(draw_controls(pd, rng, sizes or {}))
    out: dict[str, object] = {}
    for a in pd.args:
        t = a.type
        match t:
            case ControlType():
                out[a.sym.name] = values[a.sym]
            case DataType():
                out[a.sym.name] = _random_data(rng, (), t.np_dtype)
            case TensorType():
                arr = _random_tensor(rng, t, _shape(t, values))
                values[a.sym] = arr
                out[a.sym.name] = arr
            case _:
                assert_never(t)
    _check_stride_asserts(pd, values)
    return out


def _check_stride_asserts(pd: ProcDef, values: Mapping[Sym, Any]) -> None:
    """Refuse inputs whose arrays break an assert on strides (``draw_controls`` cannot see
    those): no input this generator makes can satisfy it, so say so instead of letting the
    interpreter fail on entry."""
    for pred in pd.preds:
        if not any(isinstance(x, StrideExpr) for x in walk_expr(pred)):
            continue
        if not eval_control(pred, values):
            strides = ", ".join(
                f"{a.sym.name}: {tuple(s // values[a.sym].itemsize for s in values[a.sym].strides)}"
                for a in pd.args
                if isinstance(a.type, TensorType)
            )
            raise UnsatisfiableAssertsError(
                f"no inputs assert_equivalent can draw satisfy assert {fmt_expr(pred)} of"
                f" {pd.name}: tensor arguments are contiguous and window arguments get rows"
                f" padded by 3 elements (drawn element strides: {strides})"
            )


def _clone(v: object) -> object:
    """A deep copy of an argument that keeps a window's strides."""
    if not isinstance(v, np.ndarray):
        return v
    base = v.base
    if v.flags.c_contiguous or not isinstance(base, np.ndarray) or not base.flags.c_contiguous:
        return v.copy()
    new_base = base.copy()
    offset = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return np.ndarray(v.shape, v.dtype, buffer=new_base, offset=offset, strides=v.strides)


# --------------------------------------------------------------------------- comparing


def _type_text(t: Type, *, key: bool = False) -> str:
    """``t`` as written; with ``key``, the form compared between two signatures: a window
    and a tensor match (both take a contiguous array) and ``R`` matches ``f32`` (same storage).
    """

    def elem(d: DataType) -> str:
        return str(d.np_dtype) if key else d.name

    match t:
        case ControlType():
            return t.name
        case DataType():
            return elem(t)
        case TensorType():
            shape = ", ".join(fmt_expr(s) for s in t.shape)
            if t.window and not key:
                return f"[{elem(t.elem)}][{shape}]"
            return f"{elem(t.elem)}[{shape}]"
        case _:
            assert_never(t)


def _signature_diff(p: ProcDef, q: ProcDef) -> str | None:
    def sig(args: tuple[FnArg, ...], key: bool) -> list[str]:
        return [f"{a.sym.name}: {_type_text(a.type, key=key)}" for a in args]

    if sig(p.args, True) == sig(q.args, True):
        return None
    sp, sq = sig(p.args, False), sig(q.args, False)
    for i, (kp, kq) in enumerate(zip(sig(p.args, True), sig(q.args, True), strict=False)):
        if kp != kq:
            return f"argument {i} is `{sp[i]}` in {p.name} but `{sq[i]}` in {q.name}"
    return f"{p.name} has {len(sp)} arguments, {q.name} has {len(sq)}"


def _common_signature(p: ProcDef, q: ProcDef) -> ProcDef:
    """``p`` with a tensor parameter wherever either proc has one (not a window), so that
    the arguments drawn from it suit both procs.
    """
    args = []
    for a, b in zip(p.args, q.args, strict=True):
        t = a.type
        if isinstance(t, TensorType) and isinstance(b.type, TensorType) and not b.type.window:
            t = TensorType(t.elem, t.shape, window=False)
        args.append(a.replace(type=t))
    return p.replace(args=tuple(args))


def _first_difference(
    x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], rtol: float | None, atol: float | None
) -> tuple[tuple[int, ...], int, str] | None:
    """(index, number of differing elements, tolerance text) of the first difference."""
    if x.dtype.kind == "f":
        rt, at = DEFAULT_TOLERANCES.get(x.dtype.name, (1e-4, 1e-4))
        rt = rt if rtol is None else rtol
        at = at if atol is None else atol
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isclose(x, y, rtol=rt, atol=at, equal_nan=True)
        tol = f" (rtol={rt:g}, atol={at:g})"
    else:
        bad = x != y
        tol = ""
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return first, int(bad.sum()), tol


def assert_equivalent(
    p: Any,
    q: Any,
    *,
    trials: int = 5,
    sizes: Mapping[str, int | bool] | None = None,
    seed: int = 0,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Assert that procs ``p`` and ``q`` compute the same outputs on random inputs.

    Each trial draws arguments with ``random_args`` (satisfying the asserts), runs ``p`` and
    ``q`` in the reference interpreter on separate copies, and compares every data argument
    afterwards. Deterministic for a given ``seed``.

    Args:
        p: the reference proc (``Proc`` or ``ProcDef``).
        q: the proc to check, with the same signature.
        trials: how many random inputs to try.
        sizes: control arguments pinned by name, e.g. ``{"n": 8}``.
        seed: seed of the random inputs.
        rtol: relative tolerance for float outputs (default by dtype, DEFAULT_TOLERANCES).
        atol: absolute tolerance for float outputs (default by dtype).

    Raises:
        AssertionError: the signatures differ, ``q`` fails where ``p`` runs, or an output
            differs (the message gives the trial's control values, the output, the first
            differing index and both values).
        UnsatisfiableAssertsError: no inputs satisfying ``p``'s asserts could be drawn
            (an ``ArgumentError``; the message says whether the asserts contradict each
            other).
        InterpreterError: ``p`` itself fails on the drawn inputs.
    """
    pd, qd = procdef_of(p), procdef_of(q)
    diff = _signature_diff(pd, qd)
    if diff is not None:
        raise AssertionError(f"{pd.name} and {qd.name} have different signatures: {diff}")
    common = _common_signature(pd, qd)
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        args = random_args(common, rng, sizes)
        controls = ", ".join(
            f"{a.sym.name} = {args[a.sym.name]}" for a in pd.args if isinstance(a.type, ControlType)
        )
        where = f"trial {trial} (seed {seed}; {controls or 'no control arguments'})"
        ap = {k: _clone(v) for k, v in args.items()}
        aq = {k: _clone(v) for k, v in args.items()}
        try:
            interpret(pd, **ap)
        except (InterpreterError, ArgumentError) as err:
            err.add_note(f"(running the reference {pd.name} in assert_equivalent, {where})")
            raise
        try:
            interpret(qd, **aq)
        except (InterpreterError, ArgumentError) as err:
            raise AssertionError(f"{qd.name} fails where {pd.name} runs, {where}: {err}") from err
        for a in pd.args:
            if isinstance(a.type, ControlType):
                continue
            x, y = ap[a.sym.name], aq[a.sym.name]
            assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
            found = _first_difference(x, y, rtol, atol)
            if found is not None:
                idx, count, tol = found
                raise AssertionError(
                    f"{pd.name} and {qd.name} differ on {where}: output {a.sym.name}{list(idx)} "
                    f"is {x[idx]!s} in {pd.name} but {y[idx]!s} in {qd.name}{tol}; "
                    f"{count} of {x.size} elements differ"
                )
