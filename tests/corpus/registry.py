"""The corpus registry: each proc with a random-input builder and its numpy meaning.

A ``Case`` is all that a test needs to run a corpus proc against numpy, whatever runs it:
the reference interpreter today, the C backend's ``p.compile()`` later. ``check_case`` does
the comparison for any runner that takes the proc's arguments by name and writes its outputs
in place (the argument conventions of docs/semantics.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cursched import Proc

Inputs = dict[str, Any]
Reference = Callable[..., dict[str, np.ndarray]]


@dataclass(frozen=True)
class Case:
    """One corpus proc.

    Attributes:
        proc: the proc.
        inputs: builds random arguments (by parameter name) that satisfy the proc's asserts.
        reference: called with copies of those arguments (by name); returns the expected final
            value of every argument the proc writes. Every other array must stay unchanged.
        rtol, atol: tolerances of the comparison (floats); integer outputs compare exactly.
        features: the language features the proc exercises (for the coverage test).
    """

    proc: Proc
    inputs: Callable[[np.random.Generator], Inputs]
    reference: Reference
    rtol: float = 1e-5
    atol: float = 1e-6
    features: frozenset[str] = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        return self.proc.name()

    def __repr__(self) -> str:
        return f"<Case {self.name}>"


CASES: list[Case] = []


def register(
    proc: Proc,
    inputs: Callable[[np.random.Generator], Inputs],
    reference: Reference,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    features: str = "",
) -> Proc:
    """Add a proc to the corpus; ``features`` is a space-separated list of feature names."""
    assert all(c.name != proc.name() for c in CASES), f"duplicate corpus proc {proc.name()}"
    CASES.append(Case(proc, inputs, reference, rtol, atol, frozenset(features.split())))
    return proc


def copy_inputs(args: Mapping[str, Any]) -> Inputs:
    """A deep copy of an argument mapping (arrays copied, ints and bools kept)."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


def check_case(case: Case, run: Callable[..., None], rng: np.random.Generator) -> None:
    """Run ``case`` with ``run(**args)`` on random inputs and compare with its reference.

    Raises:
        AssertionError: an output differs from the reference (the message names the
            argument and the first differing index), or an input array was written.
    """
    args = case.inputs(rng)
    expected = case.reference(**copy_inputs(args))
    actual = copy_inputs(args)
    run(**actual)
    for name, value in args.items():
        if not isinstance(value, np.ndarray):
            continue
        got = actual[name]
        if name in expected:
            want = np.asarray(expected[name])
            assert got.dtype == value.dtype, f"{case.name}: {name} changed dtype"
            _compare(case, name, got, want)
        else:
            assert np.array_equal(got, value, equal_nan=True), (
                f"{case.name}: input {name} was written"
            )
    missing = set(expected) - set(args)
    assert not missing, f"{case.name}: reference names unknown outputs {sorted(missing)}"


def _compare(case: Case, name: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape, f"{case.name}: {name} has shape {got.shape}"
    if got.dtype.kind == "f":
        close = np.isclose(got, want, rtol=case.rtol, atol=case.atol, equal_nan=True)
    else:
        close = got == want.astype(got.dtype)
    if not np.all(close):
        first = tuple(int(i) for i in np.argwhere(~close)[0])
        raise AssertionError(
            f"{case.name}: output {name} differs at {first}: got {got[first]!r}, "
            f"expected {want[first]!r} ({int((~close).sum())} of {close.size} elements differ)"
        )


# -- input builders shared by the corpus modules -----------------------------------------


def randn(rng: np.random.Generator, *shape: int, dtype: Any = np.float32) -> np.ndarray:
    """Standard normal values of ``dtype``."""
    return rng.standard_normal(shape).astype(dtype)


def positive(rng: np.random.Generator, *shape: int, dtype: Any = np.float32) -> np.ndarray:
    """Values in [0.5, 2) (for log, sqrt and divisions)."""
    return rng.uniform(0.5, 2.0, shape).astype(dtype)


def ints(
    rng: np.random.Generator, lo: int, hi: int, *shape: int, dtype: Any = np.int32
) -> np.ndarray:
    """Integers in [lo, hi) of ``dtype``."""
    return rng.integers(lo, hi, shape).astype(dtype)


def scalar(value: float, dtype: Any = np.float32) -> np.ndarray:
    """A data scalar argument: a numpy array of shape ()."""
    return np.array(value, dtype=dtype)
