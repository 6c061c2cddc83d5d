"""The extern names, for ``from cursched.externs import expf, select, inf``.

Inside a proc the externs are built in; importing them only helps editors and linters.
"""

from cursched.frontend.externs import (
    ExternFunction,
    exp,
    exp2,
    expf,
    fmax,
    fmaxf,
    fmin,
    inf,
    log,
    relu,
    select,
    sigmoid,
    sin,
    sqrt,
)

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
