"""The interpreter's two ways of running a proc agree bit for bit on the whole corpus.

``_run`` (arguments that own their memory: the specialised body, numpy's dot-product nests,
lists and memoryviews) and the general binding (the same arguments as views: the checked
loops) are two implementations of one semantics; the fuzzer and the differential tests trust
either. Every corpus proc runs both ways on random data at its registered sizes and at sizes
x4 (where the numpy nests run), and every array must hold the same bits afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from corpus import CASES, Case

from cursched.errors import CurschedError
from cursched.interp import eval_control, interpret
from cursched.ir.nodes import ProcDef
from cursched.ir.types import ControlType, TensorType


def _scaled(pd: ProcDef, args: dict[str, Any], k: int, rng: np.random.Generator) -> dict[str, Any]:
    """``args`` with every size times ``k`` and new random tensors of the new shapes."""
    out = dict(args)
    values: dict[Any, Any] = {}
    for a in pd.args:
        if isinstance(a.type, ControlType):
            v = args[a.sym.name] * k if a.type.name == "size" else args[a.sym.name]
            out[a.sym.name] = values[a.sym] = v
    for a in pd.args:
        if isinstance(a.type, TensorType):
            shape = tuple(eval_control(e, values) for e in a.type.shape)
            dt = a.type.elem.np_dtype
            data = rng.standard_normal(shape) if dt.kind == "f" else rng.integers(-9, 9, shape)
            out[a.sym.name] = data.astype(dt)
    return out


def _run(pd: ProcDef, args: dict[str, Any], views: bool) -> tuple[dict[str, Any], str]:
    """Run on copies of ``args`` (as views of them when ``views``): the arrays, the error."""
    fresh = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    given = {k: v[...] if views and isinstance(v, np.ndarray) else v for k, v in fresh.items()}
    try:
        interpret(pd, **given)
    except CurschedError as e:
        return fresh, f"{type(e).__name__}: {e}"
    return fresh, ""


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("scale", [1, 4])
def test_run_and_general_binding_agree_bit_for_bit(case: Case, scale: int) -> None:
    rng = np.random.default_rng(11)
    pd = case.proc.ir()
    for _ in range(2):
        args = case.inputs(rng)
        if scale != 1:
            args = _scaled(pd, args, scale, rng)
        fast, fast_error = _run(pd, args, views=False)
        general, general_error = _run(pd, args, views=True)
        assert fast_error == general_error
        for name, value in fast.items():
            if isinstance(value, np.ndarray):
                bits = f"u{value.itemsize}" if value.dtype.kind == "f" else value.dtype
                assert np.array_equal(value.view(bits), general[name].view(bits)), name
