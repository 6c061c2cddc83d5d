"""The user-facing ``Proc``: an immutable IR value plus the history that made it.

``Proc`` is the facade over the parts below it (printer, interpreter, code generators,
cursors): the IR itself knows nothing of it. The decorators ``@proc`` and ``@instr`` live here
because they return ``Proc`` objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

from cursched.errors import api_boundary
from cursched.ir.nodes import ProcDef

if TYPE_CHECKING:
    from cursched.cursors import (
        ArgCursor,
        BlockCursor,
        Cursor,
        ForCursor,
        ScopeCursor,
        StepRecord,
        Tombstone,
    )


class Proc:
    """A procedure of the language: its IR and the link to the version it was made from.

    Procs are values: every scheduling primitive returns a new ``Proc`` and leaves its input
    untouched.
    """

    __slots__ = ("_fwd_cache", "_ir", "_parent", "_step", "_version")

    def __init__(
        self,
        ir: ProcDef,
        parent: Proc | None = None,
        step: StepRecord | Callable[[], StepRecord] | None = None,
    ) -> None:
        """A proc of ``ir``; ``step`` says how it was made from ``parent``: the record, or a
        function making it when ``step()`` is first called (the registry passes one: most
        versions' records are never read, and building one is ~1 us of a small call)."""
        self._ir = ir
        self._parent = parent
        self._step: StepRecord | Callable[[], StepRecord] | None = step
        self._version: int = 0 if parent is None else parent._version + 1
        self._fwd_cache: dict[Any, Any] | None = None

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

    def step(self) -> StepRecord | None:
        """How this version was made from its parent (None for the original)."""
        step = self._step
        if callable(step):  # the record's maker (``__init__``): built once, then kept
            step = self._step = step()
        return step

    def __getstate__(self) -> object:
        """The slots, for ``pickle`` and ``copy``, with the step record built: a copy holds
        the record itself, never the function that makes it."""
        self.step()
        return object.__getstate__(self)

    def history(self, var: str | None = None) -> str:
        """The schedule that made this proc, as a Python script replaying it.

        Args:
            var: the name of the original proc where the script runs (default: its name).
        """
        from cursched.cursors.history import history_script

        return history_script(self, var)

    def show_history(self) -> Any:
        """Step through the schedule that made this proc: each step's call, and its proc with
        the cursors that step returned highlighted.

        Returns:
            In Jupyter (with ipywidgets), a widget with a slider over the versions; elsewhere a
            ``HistoryView`` (static HTML of every step: ``_repr_html_``, ``html()``).
        """
        from cursched.cursors.history_view import show_history

        return show_history(self)

    # -- cursors (the facade over cursched.cursors) ------------------------------------------
    def _forward_cache(self) -> dict[Any, Any]:
        if self._fwd_cache is None:
            self._fwd_cache = {}
        return self._fwd_cache

    @api_boundary
    def forward(self, cursor: Cursor | Tombstone) -> Cursor | Tombstone:
        """``cursor``, made on this proc or on an ancestor version, as a cursor of this proc.

        Returns a ``Tombstone`` (falsy) when a step on the way killed its node.

        Raises:
            ForeignCursorError: when the cursor's version is not an ancestor of this one.
        """
        from cursched.cursors.lineage import forward_cursor

        return forward_cursor(self, cursor)

    @api_boundary
    def find(self, pattern: str, many: bool = False) -> Any:
        """The first match of ``pattern`` (``"for i in _: _"``, ``"x[_] * _ #1"``, ...), or
        the list of all matches with ``many=True``.

        Raises:
            PatternError: when the pattern is malformed or matches nothing.
        """
        from cursched.cursors.patterns import find

        return find(self, pattern, many=many)

    @api_boundary
    def find_all(self, pattern: str) -> list[Cursor]:
        """Every match of ``pattern``."""
        from cursched.cursors.patterns import find

        out: list[Cursor] = find(self, pattern, many=True)
        return out

    @overload
    def find_loop(self, pattern: str, many: Literal[False] = False) -> ForCursor: ...
    @overload
    def find_loop(self, pattern: str, many: Literal[True]) -> list[ForCursor]: ...
    @api_boundary
    def find_loop(self, pattern: str, many: bool = False) -> ForCursor | list[ForCursor]:
        """The loop named by ``"i"`` or ``"i #1"`` (the second loop over ``i``): a
        ``ForCursor``, or the list of every such loop with ``many=True``.
        """
        from cursched.cursors.patterns import find_loop

        out: ForCursor | list[ForCursor] = find_loop(self, pattern, many=many)
        return out

    @api_boundary
    def find_alloc_or_arg(self, name: str) -> Cursor:
        """The allocation named ``name``, else the parameter of that name."""
        from cursched.cursors.patterns import find_alloc_or_arg

        return find_alloc_or_arg(self, name)

    @api_boundary
    def find_scope(self, name: str) -> ScopeCursor:
        """The named region ``with scope(name):`` (a kernel when its target is cuda).

        Raises:
            PatternError: no scope has that name.
        """
        from cursched.cursors import NodeLoc, ScopeCursor, make_cursor
        from cursched.cursors.tree import walk_stmts
        from cursched.errors import PatternError
        from cursched.ir.nodes import Scope

        names: list[str] = []
        for path, s in walk_stmts(self._ir.body, ()):
            if isinstance(s, Scope):
                if s.name == name:
                    c = make_cursor(self, NodeLoc(path))
                    assert isinstance(c, ScopeCursor)
                    return c
                names.append(s.name)
        raise PatternError(f"no scope named {name!r} (scopes: {', '.join(names) or 'none'})")

    @api_boundary
    def at(self, where: str) -> Cursor:
        """The cursor at a printed location: ``"body[0].body[1]"``, ``"body[0].rhs"``,
        ``"body[2:4]"`` (a block), ``"args[1]"`` (what ``history()`` writes).
        """
        from cursched.cursors import at

        return at(self, where)

    def body(self) -> BlockCursor:
        """The proc's body as a block cursor."""
        from cursched.cursors import BlockCursor, BlockLoc

        return BlockCursor(self, BlockLoc((), "body", 0, len(self._ir.body)))

    def args(self) -> tuple[ArgCursor, ...]:
        """The parameters, as cursors."""
        from cursched.cursors import ArgCursor, ArgLoc

        return tuple(ArgCursor(self, ArgLoc(i)) for i in range(len(self._ir.args)))

    # -- showing ---------------------------------------------------------------------------
    def __str__(self) -> str:
        from cursched.ir.printer import print_proc

        return print_proc(self._ir)

    def __repr__(self) -> str:
        return f"<Proc {self._ir.name} v{self._version}>"

    def _repr_html_(self) -> str:
        from cursched.cursors.show import html_text

        return html_text(str(self))

    # -- running ---------------------------------------------------------------------------
    @api_boundary
    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the proc in the reference interpreter (outputs are written in place)."""
        from cursched.interp import interpret

        interpret(self._ir, *args, **kwargs)

    @api_boundary
    def compile(self, target: str = "c", **options: Any) -> Callable[..., None]:
        """Compile the proc into a callable (outputs written in place).

        Args:
            target: ``"c"`` (the C backend; numpy arrays and ints), ``"cuda-emulated"``
                (the CUDA text run on the CPU; numpy arrays; option ``check_races=True``)
                or ``"cuda"`` (cupy arrays, on the GPU).
            options: the backend's options (``unsafe_skip_checks=True`` skips the barrier
                checker of the CUDA targets).
        """
        if target in ("cuda", "cuda-emulated"):
            from cursched.codegen.cuda import compile_cuda

            return compile_cuda(self._ir, target, **options)
        if target != "c":
            from cursched.errors import CodegenError

            raise CodegenError(f"unknown target {target!r} (c, cuda, cuda-emulated)")
        from cursched.codegen.c import compile_proc

        return compile_proc(self._ir, **options)

    @api_boundary
    def cuda_source(self, unsafe_skip_checks: bool = False) -> str:
        """The ``.cu`` text of the proc's kernels (one per ``target="cuda"`` scope).

        Raises:
            CodegenError: data code outside every cuda scope (named), or no cuda scope.
            KernelRaceError: the barrier checker found a race (skip it with
                ``unsafe_skip_checks=True``).
        """
        from cursched.codegen.cuda import generate_cuda

        return generate_cuda(self._ir, unsafe_skip_checks=unsafe_skip_checks).source


@api_boundary
def proc(fn: Callable[..., Any]) -> Proc:
    """Decorator: parse a Python function in the cursched language into a ``Proc``.

    The function is never executed. Free names resolve in the function's defining scope
    (its globals and closure): constants, other procs and memories.
    """
    from cursched.analysis.aliasing import check_call_aliasing
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_function

    return Proc(check_call_aliasing(check_bounds(parse_function(fn))))


def instr(c_template: str, c_global: str = "") -> Callable[[Callable[..., Any]], Proc]:
    """Decorator factory: declare a hardware instruction by its semantics and C template.

    Example:
        >>> @instr("{dst_data} = {src_data};")            # doctest: +SKIP
        ... def copy1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
        ...     dst[0] = src[0]
    """
    from cursched.analysis.bounds import check_bounds
    from cursched.frontend import parse_function

    @api_boundary
    def wrap(fn: Callable[..., Any]) -> Proc:
        return Proc(check_bounds(parse_function(fn, instr=(c_template, c_global))))

    return wrap
