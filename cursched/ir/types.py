"""Types of the IR: data types, control types and tensor types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

if TYPE_CHECKING:
    from cursched.ir.nodes import Expr


@dataclass(frozen=True, slots=True)
class DataType:
    """A scalar data type stored in buffers (``f32``, ``i8``, ...).

    ``R`` is Exo's "real of unspecified precision"; it is stored as ``float`` (f32) by the
    interpreter and the C backend, as in Exo.
    """

    name: str
    numpy: str
    c_name: str

    @property
    def np_dtype(self) -> np.dtype[np.generic]:
        return np.dtype(self.numpy)

    def is_float(self) -> bool:
        return self.np_dtype.kind == "f"

    def __str__(self) -> str:
        return self.name


R = DataType("R", "float32", "float")
F16 = DataType("f16", "float16", "_Float16")
F32 = DataType("f32", "float32", "float")
F64 = DataType("f64", "float64", "double")
I8 = DataType("i8", "int8", "int8_t")
UI8 = DataType("ui8", "uint8", "uint8_t")
UI16 = DataType("ui16", "uint16", "uint16_t")
I32 = DataType("i32", "int32", "int32_t")

DATA_TYPES: dict[str, DataType] = {t.name: t for t in (R, F16, F32, F64, I8, UI8, UI16, I32)}


@dataclass(frozen=True, slots=True)
class ControlType:
    """A control type: ``size`` (a positive argument), ``index`` (loop variables and index
    arithmetic), ``int`` (integer literals) or ``bool``.
    """

    name: str

    def is_integer(self) -> bool:
        return self.name != "bool"

    def __str__(self) -> str:
        return self.name


SIZE = ControlType("size")
INDEX = ControlType("index")
INT = ControlType("int")
BOOL = ControlType("bool")

CONTROL_TYPES: dict[str, ControlType] = {t.name: t for t in (SIZE, INDEX, INT, BOOL)}


@dataclass(frozen=True, slots=True)
class TensorType:
    """An n-dimensional array of ``elem``; ``window`` marks a window (a strided view).

    ``shape`` holds control expressions (sizes and constants).
    """

    elem: DataType
    shape: tuple[Expr, ...]
    window: bool = False

    def rank(self) -> int:
        return len(self.shape)


Type: TypeAlias = DataType | ControlType | TensorType


def is_data(t: Type) -> bool:
    """True for scalar data types (the element type of buffers)."""
    return isinstance(t, DataType)


def is_numeric_control(t: Type) -> bool:
    """True for integer control types (size, index, int)."""
    return isinstance(t, ControlType) and t.is_integer()
