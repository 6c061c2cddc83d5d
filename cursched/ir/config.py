"""Configuration state: Exo's ``@config`` classes, global scalars that procs read and write.

A configuration models the state of a hardware unit that instructions set and use (a
scale factor, an activation mode): Exo's accelerator libraries keep it in ``@config``
classes. In cursched::

    @config
    class ConfigLoad:
        scale: f32
        mode: i32

declares two fields; a proc reads ``ConfigLoad.scale`` in a data expression and writes it
with ``ConfigLoad.scale = e`` (or ``+=``).

Representation: each field is a ``ConfigField``, a ``Sym`` that is bound by no statement
of any proc (it is global), so reads and writes are ordinary ``Read``/``Assign``/``Reduce``
nodes of a data scalar and every analysis sees them as accesses of a scalar buffer that
outlives the proc. It prints as ``ConfigLoad.scale``.

Meaning (``docs/semantics.md``): fields hold data values (``R``, ``f16``, ... ``i32``); control
types are not fields, because a value that changes inside a proc cannot be an index or a
bound. The state is shared by a proc and the procs it calls. At the entry of a top-level
run its value is unspecified (the interpreter fills it with NaN or the garbage pattern, as
a fresh allocation), and it is not an output: the C backend keeps it in a global struct
per configuration, which the instructions' templates may read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from cursched.errors import TypeCheckError
from cursched.ir.symbols import Sym
from cursched.ir.types import DATA_TYPES, DataType


class ConfigField(Sym):
    """One field of a configuration: a global data scalar.

    Attributes:
        config: the configuration it belongs to.
        field: the field's name.
        type: its data type.
    """

    __slots__ = ("config", "field", "type")

    def __init__(self, config: ConfigDef, field: str, typ: DataType) -> None:
        super().__init__(f"{config.name}.{field}")
        self.config = config
        self.field = field
        self.type = typ

    def copy(self) -> Sym:
        # A field is global: a copy of a proc's body refers to the very same field.
        return self


class ConfigDef:
    """A configuration: a name and its fields (``C.f`` is the ``ConfigField`` ``f``)."""

    def __init__(self, name: str, fields: dict[str, DataType]) -> None:
        self.name = name
        self.fields: dict[str, ConfigField] = {
            f: ConfigField(self, f, t) for f, t in fields.items()
        }

    def __getattr__(self, field: str) -> ConfigField:
        # only reached for names that are not attributes of the object itself
        fields = self.__dict__.get("fields", {})
        if field in fields:
            return fields[field]  # type: ignore[no-any-return]
        raise AttributeError(f"configuration {self.__dict__.get('name')} has no field {field!r}")

    def __iter__(self) -> Iterator[ConfigField]:
        return iter(self.fields.values())

    def __repr__(self) -> str:
        body = ", ".join(f"{f.field}: {f.type}" for f in self)
        return f"<config {self.name}({body})>"

    def c_struct(self) -> str:
        """The C name of the global struct holding the fields."""
        return f"cs_config_{self.name}"


def config(cls: type[Any]) -> ConfigDef:
    """Declare a configuration from a class whose annotations name data types.

    Args:
        cls: a class with one annotation per field (``scale: f32``); with
            ``from __future__ import annotations`` the annotations are strings.

    Returns:
        The ``ConfigDef``; its fields are attributes (``ConfigLoad.scale``).

    Raises:
        TypeCheckError: a field's type is not a data type, or there are no fields.
    """
    ann: dict[str, Any] = dict(getattr(cls, "__annotations__", {}))
    if not ann:
        raise TypeCheckError(f"config {cls.__name__}: declare at least one field (x: f32)")
    fields: dict[str, DataType] = {}
    for name, t in ann.items():
        text = t if isinstance(t, str) else getattr(t, "name", repr(t))
        if text not in DATA_TYPES:
            raise TypeCheckError(
                f"config {cls.__name__}.{name}: type {text} is not a data type "
                f"({', '.join(DATA_TYPES)}); control values cannot be configuration state"
            )
        fields[name] = DATA_TYPES[text]
    return ConfigDef(cls.__name__, fields)


def fresh_state(f: ConfigField) -> np.ndarray[Any, Any]:
    """The unspecified value of a field at the entry of a run (as for a fresh allocation)."""
    dt = f.type.np_dtype
    fill: Any = np.nan if dt.kind == "f" else np.array(0xDEADBEEF).astype(dt)
    return np.full((), fill, dtype=dt)


__all__ = ["ConfigDef", "ConfigField", "config", "fresh_state"]
