"""What to tune: a proc, a schedule function of named parameters, its space and its inputs.

A worker process (or a Ray task) cannot receive a ``Proc`` or a schedule function by value,
so a ``Tunable`` is sent as a ``TargetRef``: the Python file that defines them and their
module-level names. The worker loads the file once and finds them by name.

Example (a schedule file)::

    space = tune.Space(tile=[8, 16, 32])

    def tiled(p: Proc, tile: int) -> Proc:
        ...

    def inputs() -> tuple[object, ...]:
        ...

    tunable = tune.Tunable(sgemm, tiled, space, inputs)
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cursched.proc import Proc
from cursched.tune.errors import TargetError
from cursched.tune.space import Space

#: A schedule function: the proc, then the candidate's parameters as keywords.
ScheduleFn = Callable[..., Proc]
#: The call's arguments: a tuple of positional ones or a dict of keyword ones.
Inputs = tuple[Any, ...] | dict[str, Any]


@dataclass(frozen=True)
class Tunable:
    """A schedule to tune.

    Args:
        proc: the untuned proc; its compiled output is the reference every candidate must
            reproduce.
        schedule: ``schedule(proc, **params) -> Proc``, a module-level function.
        space: the parameters' values.
        inputs: the arguments of the timed call: a module-level function returning them (a
            tuple or a dict; called once per worker), or the arguments themselves.
    """

    proc: Proc
    schedule: ScheduleFn
    space: Space
    inputs: Callable[[], Inputs] | Inputs


@dataclass(frozen=True)
class TargetRef:
    """A ``Tunable`` by file and names, for worker processes."""

    file: str
    proc: str
    schedule: str
    inputs: str | None  # None: the inputs travel by value
    key: str  # the record's name of the target: file stem, names and a hash of their source

    def load(self) -> tuple[Proc, ScheduleFn, Callable[[], Inputs] | None]:
        """The proc, schedule function and inputs function, from a fresh load of the file."""
        module = load_file(self.file)
        proc = getattr(module, self.proc, None)
        schedule = getattr(module, self.schedule, None)
        if not isinstance(proc, Proc) or not callable(schedule):
            raise TargetError(f"{self.file} defines no proc {self.proc} or no {self.schedule}")
        inputs = getattr(module, self.inputs) if self.inputs else None
        return proc, schedule, inputs


def reference(t: Tunable) -> TargetRef:
    """The ``TargetRef`` of ``t``.

    Raises:
        TargetError: the schedule function is not a module-level function of a file, or the
            proc is not a module-level name of that file.
    """
    fn = t.schedule
    file = inspect.getsourcefile(fn) if inspect.isfunction(fn) else None
    if file is None or fn.__qualname__ != fn.__name__:
        raise TargetError(
            f"the schedule {fn!r} must be a module-level function of a Python file,"
            " so that worker processes can load it by name"
        )
    module = sys.modules.get(fn.__module__)
    proc_name = _name_in(module, t.proc)
    if proc_name is None:
        raise TargetError(f"proc {t.proc.name()} is not a module-level name of {file}")
    inputs_name = None
    if callable(t.inputs):
        inputs_name = _name_in(module, t.inputs)
        if inputs_name is None:
            raise TargetError(f"the inputs function {t.inputs!r} is not a module-level name")
    return TargetRef(file, proc_name, fn.__name__, inputs_name, target_key(t, file))


def target_key(t: Tunable, file: str | None = None) -> str:
    """Names the target in the record; it changes when the proc or the schedule's code does,
    so results measured for an older schedule are never reused."""
    if file is None:
        fn = t.schedule
        file = (inspect.getsourcefile(fn) if inspect.isfunction(fn) else None) or "<local>"
    try:
        source = inspect.getsource(t.schedule)
    except (OSError, TypeError):
        source = t.schedule.__qualname__
    digest = hashlib.sha256(f"{t.proc}\n{source}\n{t.space.signature()}".encode()).hexdigest()
    return f"{Path(file).stem}:{t.proc.name()}:{t.schedule.__name__}:{digest[:12]}"


def resolve_inputs(inputs: Callable[[], Inputs] | Inputs) -> Inputs:
    """The call's arguments (calling ``inputs`` if it is a function)."""
    value = inputs() if callable(inputs) else inputs
    if not isinstance(value, tuple | dict):
        raise TargetError(f"inputs must be a tuple or a dict of arguments, not {type(value)}")
    return value


_LOADED: dict[str, ModuleType] = {}


def load_file(path: str) -> ModuleType:
    """The Python file at ``path`` run as a module (once per process)."""
    resolved = str(Path(path).resolve())
    if resolved in _LOADED:
        return _LOADED[resolved]
    name = "_cursched_tune_" + hashlib.sha256(resolved.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load {path} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        del sys.modules[name]
        raise TargetError(f"no such file: {path}") from None
    _LOADED[resolved] = module
    return module


def tunables_of(module: ModuleType) -> dict[str, Tunable]:
    """The module-level ``Tunable`` values of ``module``, by name."""
    return {k: v for k, v in vars(module).items() if isinstance(v, Tunable)}


def _name_in(module: ModuleType | None, value: object) -> str | None:
    if module is None:
        return None
    for name, v in vars(module).items():
        if v is value:
            return name
    return None
