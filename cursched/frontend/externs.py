"""Importable names for the built-in externs: ``from cursched.externs import expf``.

Externs are built into the language (no import is needed inside a proc), but editors and
linters want the names defined. Each name is an ``ExternFunction`` that only stands for the
extern: the frontend resolves a call through it by its ``name`` (so ``import ... as`` works),
and calling it from Python raises ``TypeError`` because procs are never executed by Python.
"""

from __future__ import annotations

from typing import NoReturn


class ExternFunction:
    """A stand-in for the extern called ``name`` (see ``cursched.ir.externs.EXTERNS``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: object) -> NoReturn:
        raise TypeError(f"{self.name} is a cursched extern; it can only be used inside a @proc")

    def __repr__(self) -> str:
        return f"<cursched extern {self.name}>"


select = ExternFunction("select")
relu = ExternFunction("relu")
sin = ExternFunction("sin")
sqrt = ExternFunction("sqrt")
exp = ExternFunction("exp")
expf = ExternFunction("expf")
exp2 = ExternFunction("exp2")
log = ExternFunction("log")
fmax = ExternFunction("fmax")
fmaxf = ExternFunction("fmaxf")
fmin = ExternFunction("fmin")
sigmoid = ExternFunction("sigmoid")

#: The literal ``inf`` (``-inf`` is written with a minus), a Python float.
inf = float("inf")

ALL: dict[str, ExternFunction] = {
    f.name: f for f in (select, relu, sin, sqrt, exp, expf, exp2, log, fmax, fmaxf, fmin, sigmoid)
}

__all__ = [
    "ExternFunction",
    "exp",
    "exp2",
    "expf",
    "fmax",
    "fmaxf",
    "fmin",
    "inf",
    "log",
    "relu",
    "select",
    "sigmoid",
    "sin",
    "sqrt",
]
