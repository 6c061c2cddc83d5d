"""Extern functions: scalar math the language calls by name (``expf(x)``, ``select(...)``).

The table is the single source of each extern's arity and meaning. The interpreter evaluates
``numpy`` on arrays of the destination precision; the C backend calls ``c_name`` (with an ``f``
suffix for float arguments where ``c_suffix_f`` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class ExternSpec:
    """One extern: its name, arity, numpy meaning and C spelling."""

    name: str
    arity: int
    numpy: Callable[..., Any]
    c_name: str
    c_suffix_f: bool
    doc: str


def _select(a: Any, b: Any, c: Any, d: Any) -> Any:
    return np.where(a < b, c, d)


def _relu(x: Any) -> Any:
    return np.maximum(x, np.zeros_like(x))


def _sigmoid(x: Any) -> Any:
    one = np.ones_like(x)
    return one / (one + np.exp(-x))


EXTERNS: dict[str, ExternSpec] = {
    e.name: e
    for e in (
        ExternSpec("select", 4, _select, "", False, "select(a, b, c, d) is c if a < b else d"),
        ExternSpec("relu", 1, _relu, "", False, "relu(x) is max(x, 0)"),
        ExternSpec("sin", 1, np.sin, "sin", True, "sine"),
        ExternSpec("sqrt", 1, np.sqrt, "sqrt", True, "square root"),
        ExternSpec("exp", 1, np.exp, "exp", True, "e to the power x"),
        ExternSpec("expf", 1, np.exp, "exp", True, "e to the power x (C's expf)"),
        ExternSpec("exp2", 1, np.exp2, "exp2", True, "2 to the power x"),
        ExternSpec("log", 1, np.log, "log", True, "natural logarithm"),
        ExternSpec("fmax", 2, np.fmax, "fmax", True, "maximum (a NaN loses)"),
        ExternSpec("fmaxf", 2, np.fmax, "fmax", True, "maximum (C's fmaxf)"),
        ExternSpec("fmin", 2, np.fmin, "fmin", True, "minimum (a NaN loses)"),
        ExternSpec("sigmoid", 1, _sigmoid, "", False, "1 / (1 + exp(-x))"),
    )
}


def same_extern(a: str, b: str) -> bool:
    """Whether externs ``a`` and ``b`` are one function under two names (``expf`` and ``exp``,
    ``fmaxf`` and ``fmax``: the same meaning, arity and C spelling), so that an instruction
    whose body says ``expf`` matches code that says ``exp``."""
    if a == b:
        return True
    sa, sb = EXTERNS.get(a), EXTERNS.get(b)
    if sa is None or sb is None:
        return False
    return (sa.numpy, sa.arity, sa.c_name, sa.c_suffix_f) == (
        sb.numpy,
        sb.arity,
        sb.c_name,
        sb.c_suffix_f,
    )
