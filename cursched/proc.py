"""The user-facing ``Proc``: an immutable IR value plus the history that made it.

``Proc`` is the facade over the parts below it (printer, interpreter, code generators,
cursors): the IR itself knows nothing of it. The decorators ``@proc`` and ``@instr`` live here
because they return ``Proc`` objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cursched.ir.nodes import ProcDef


class Proc:
    """A procedure of the language: its IR and the link to the version it was made from.

    Procs are values: every scheduling primitive returns a new ``Proc`` and leaves its input
    untouched.
    """

    __slots__ = ("_ir", "_parent", "_step", "_version")

    def __init__(self, ir: ProcDef, parent: Proc | None = None, step: Any = None) -> None:
        self._ir = ir
        self._parent = parent
        self._step = step
        self._version = 0 if parent is None else parent._version + 1

    # -- the IR --------------------------------------------------------------------------
    @property
    def __cursched_ir__(self) -> ProcDef:
        """The IR (the protocol the frontend uses to resolve calls to procs)."""
        return self._ir

    def ir(self) -> ProcDef:
        """The proc's IR (a frozen ``ProcDef``)."""
        return self._ir

    def name(self) -> str:
        return self._ir.name

    def is_instr(self) -> bool:
        return self._ir.instr is not None

    @property
    def version(self) -> int:
        """How many scheduling steps separate this proc from the one ``@proc`` made."""
        return self._version

    def parent(self) -> Proc | None:
        """The version this proc was made from, or None for a proc made by ``@proc``."""
        return self._parent

    # -- showing ---------------------------------------------------------------------------
    def __str__(self) -> str:
        from cursched.ir.printer import print_proc

        return print_proc(self._ir)

    def __repr__(self) -> str:
        return f"<Proc {self._ir.name} v{self._version}>"

    # -- running ---------------------------------------------------------------------------
    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the proc in the reference interpreter (outputs are written in place)."""
        from cursched.interp import interpret

        interpret(self._ir, *args, **kwargs)

    def compile(self, **options: Any) -> Callable[..., None]:
        """Compile the proc with the C backend into a callable taking numpy arrays and ints."""
        from cursched.codegen.c import compile_proc

        return compile_proc(self._ir, **options)


def proc(fn: Callable[..., Any]) -> Proc:
    """Decorator: parse a Python function in the cursched language into a ``Proc``.

    The function is never executed. Free names resolve in the function's defining scope
    (its globals and closure): constants, other procs and memories.
    """
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_function

    return Proc(check_bounds(parse_function(fn)))


def instr(c_template: str, c_global: str = "") -> Callable[[Callable[..., Any]], Proc]:
    """Decorator factory: declare a hardware instruction by its semantics and C template.

    Example:
        >>> @instr("{dst_data} = {src_data};")            # doctest: +SKIP
        ... def copy1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
        ...     dst[0] = src[0]
    """
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_function

    def wrap(fn: Callable[..., Any]) -> Proc:
        return Proc(check_bounds(parse_function(fn, instr=(c_template, c_global))))

    return wrap
