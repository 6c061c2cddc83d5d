"""Search spaces: named parameters, each with the finite list of values a schedule accepts.

Example:
    >>> space = Space(mc=[48, 96], unroll=[True, False])
    >>> space.size
    4
    >>> space.default()
    {'mc': 48, 'unroll': True}
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cursched.tune.errors import SpaceError

#: The value types a parameter may take: they go through JSON into the record unchanged.
Value = int | float | str | bool | None


@dataclass(frozen=True)
class Space:
    """A grid of named parameters (a schedule function's keyword arguments).

    Args:
        **params: each parameter's candidate values, in the order a grid search visits them;
            the first value of each is the default.

    Raises:
        SpaceError: a parameter has no values, repeats a value, or a value that is not an int,
            float, str, bool or None.
    """

    params: Mapping[str, tuple[Value, ...]]

    def __init__(self, **params: Sequence[Value]) -> None:
        checked: dict[str, tuple[Value, ...]] = {}
        for name, values in params.items():
            checked[name] = _check_values(name, values)
        if not checked:
            raise SpaceError("a search space needs at least one parameter")
        object.__setattr__(self, "params", checked)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.params)

    @property
    def size(self) -> int:
        """How many distinct candidates the space holds."""
        n = 1
        for values in self.params.values():
            n *= len(values)
        return n

    def default(self) -> dict[str, Value]:
        """The first value of every parameter."""
        return {name: values[0] for name, values in self.params.items()}

    def grid(self) -> Iterator[dict[str, Value]]:
        """Every candidate, the first parameter varying slowest."""
        for combo in itertools.product(*self.params.values()):
            yield dict(zip(self.params, combo, strict=True))

    def signature(self) -> str:
        """A canonical text of the space (names and values), stable across runs."""
        return json.dumps({k: list(v) for k, v in self.params.items()}, sort_keys=True)

    def check(self, params: Mapping[str, Any]) -> dict[str, Value]:
        """``params`` as a candidate of this space.

        Raises:
            SpaceError: a name is missing or unknown, or a value is not one of its choices.
        """
        unknown = set(params) - set(self.params)
        missing = set(self.params) - set(params)
        if unknown or missing:
            raise SpaceError(
                f"candidate {dict(params)} does not fit the space {self.signature()}"
                f" (unknown: {sorted(unknown)}, missing: {sorted(missing)})"
            )
        for name, value in params.items():
            if value not in self.params[name]:
                raise SpaceError(f"{name}={value!r} is not one of {list(self.params[name])}")
        return {name: params[name] for name in self.params}


def params_key(params: Mapping[str, Any]) -> str:
    """The canonical JSON of a candidate's parameters (the record's key)."""
    return json.dumps(dict(params), sort_keys=True)


def _check_values(name: str, values: Sequence[Value]) -> tuple[Value, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise SpaceError(f"parameter {name!r}: give a list of values, not {values!r}")
    if not values:
        raise SpaceError(f"parameter {name!r} has no values")
    for v in values:
        if v is not None and not isinstance(v, int | float | str | bool):
            raise SpaceError(f"parameter {name!r}: {v!r} is not an int, float, str, bool or None")
    keys = [json.dumps(v) for v in values]
    if len(set(keys)) != len(keys):
        raise SpaceError(f"parameter {name!r} repeats a value: {list(values)}")
    return tuple(values)
