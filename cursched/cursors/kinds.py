"""Cursor kinds: what a cursor points at and how to navigate from there.

A cursor is a (proc, location) pair (``cursched.cursors.locs``). There is one class per
statement kind (``ForCursor`` with ``name()``, ``lo()``, ``hi()``, ``body()``; ``IfCursor``
with ``cond()``, ``body()``, ``orelse()``; ...), plus ``BlockCursor``, ``GapCursor``,
``ExprCursor``, ``ArgCursor``, the falsy ``InvalidCursor`` (``next()`` past the end, a field
that does not apply) and the falsy ``Tombstone`` (a cursor whose node an earlier step killed).

Cursors are values: equal when they point at the same place of the same proc version.
Navigation never fails for a missing neighbour: it returns an ``InvalidCursor`` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from cursched.cursors.locs import ArgLoc, Loc, NodeLoc, NoLoc
from cursched.cursors.tree import is_expr
from cursched.errors import CursorError, StaleCursorError
from cursched.ir.nodes import FnArg
from cursched.ir.paths import Path, get_at

if TYPE_CHECKING:
    from cursched.proc import Proc


class Cursor:
    """Base class of every cursor kind: a place in one version of a proc."""

    __slots__ = ("_loc", "_proc")

    def __init__(self, proc: Proc, loc: Loc) -> None:
        self._proc = proc
        self._loc = loc

    # -- identity ---------------------------------------------------------------------------
    @property
    def loc(self) -> Loc:
        """The location inside the proc's IR."""
        return self._loc

    def proc(self) -> Proc:
        """The proc version this cursor points into."""
        return self._proc

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cursor) and other._proc is self._proc and other._loc == self._loc

    def __hash__(self) -> int:
        return hash((id(self._proc), self._loc))

    def __bool__(self) -> bool:
        return True

    def is_valid(self) -> bool:
        """False for invalid cursors and tombstones."""
        return bool(self)

    def kind(self) -> str:
        """A short name of what the cursor points at (``For``, ``Block``, ``Gap``, ...)."""
        return type(self).__name__.removesuffix("Cursor")

    def describe(self) -> str:
        """``For 'i'``, ``Assign 'x'``, ``Block of 2 statements``...: for messages."""
        return self.kind()

    # -- showing ----------------------------------------------------------------------------
    def __str__(self) -> str:
        from cursched.cursors.show import show_cursor

        return show_cursor(self)

    def _repr_html_(self) -> str:
        from cursched.cursors.show import html_cursor

        return html_cursor(self)

    def __repr__(self) -> str:
        from cursched.cursors.show import loc_text

        return f"<{self.describe()} at {loc_text(self._loc)} of {self._proc!r}>"

    # -- navigation shared by all kinds -----------------------------------------------------
    def find(self, pattern: str, many: bool = False) -> Any:
        """Like ``Proc.find``, searching only below this cursor."""
        from cursched.cursors.patterns import find

        return find(self._proc, pattern, many=many, within=self)

    def find_all(self, pattern: str) -> list[Cursor]:
        """Every match of ``pattern`` below this cursor."""
        out: list[Cursor] = self.find(pattern, many=True)
        return out

    def find_loop(self, pattern: str, many: bool = False) -> Any:
        """The loop named by ``"i"`` or ``"i #2"`` below this cursor (all of them with
        ``many=True``).
        """
        from cursched.cursors.patterns import find_loop

        return find_loop(self._proc, pattern, within=self, many=many)


def _node_loc_path(c: Cursor) -> Path:
    loc = c.loc
    assert isinstance(loc, NodeLoc)
    return loc.path


class InvalidCursor(Cursor):
    """A cursor pointing nowhere (falsy). Navigating from it raises ``CursorError``."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def describe(self) -> str:
        why = self._loc.why if isinstance(self._loc, NoLoc) else ""
        return f"invalid cursor ({why})" if why else "invalid cursor"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"

    def __str__(self) -> str:
        return repr(self)

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("_"):  # protocol probes (copy, IPython) get the usual answer
            raise AttributeError(name)
        raise CursorError(f"{self.describe()} has no {name}(): it points nowhere")


class Tombstone:
    """What a cursor becomes when a later step killed its node (falsy, printable).

    Attributes:
        what: what the cursor pointed at (``For 'i'``).
        killer: the primitive that killed it.
        version: the version that primitive made.
        hint: what to use instead, from the killer (may be empty).
        proc: the version the cursor was forwarded to.
        origin: the cursor that died (in its own, older version).
    """

    __slots__ = ("hint", "killer", "origin", "proc", "version", "what")

    def __init__(
        self,
        what: str,
        killer: str,
        version: int,
        hint: str,
        proc: Proc,
        origin: Cursor | None = None,
    ) -> None:
        self.what = what
        self.killer = killer
        self.version = version
        self.hint = hint
        self.proc = proc
        self.origin = origin

    def __bool__(self) -> bool:
        return False

    def is_valid(self) -> bool:
        return False

    def story(self) -> str:
        """``For 'i' was killed by unroll_loop at v5 (unrolled; use .copies[k])``."""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{self.what} was killed by {self.killer} at v{self.version}{hint}"

    def __repr__(self) -> str:
        hint = f"; {self.hint}" if self.hint else ""
        return f"<stale {self.what}: killed by {self.killer} at v{self.version}{hint}>"

    __str__ = __repr__

    def raise_stale(self, argument: str | None = None, primitive: str | None = None) -> NoReturn:
        """Raise ``StaleCursorError`` telling the story (and the argument it was passed as)."""
        where = ""
        if argument is not None:
            where = f"argument {argument!r}" + (f" of {primitive}" if primitive else "") + ": "
        raise StaleCursorError(f"{where}stale cursor: {self.story()}")

    def _repr_html_(self) -> str:
        import html

        return f"<code>{html.escape(repr(self))}</code>"

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("_"):  # protocol probes (copy, IPython) get the usual answer
            raise AttributeError(name)
        self.raise_stale()


class ArgCursor(Cursor):
    """A parameter of the proc."""

    __slots__ = ()

    def node(self) -> FnArg:
        assert isinstance(self._loc, ArgLoc)
        arg = self._proc.ir().args[self._loc.index]
        return arg

    def name(self) -> str:
        return self.node().sym.name

    def type(self) -> Any:
        """The parameter's type (a ``ControlType``, ``DataType`` or ``TensorType``)."""
        return self.node().type

    def mem(self) -> Any:
        """The memory of a data parameter (None for a control one)."""
        return self.node().mem

    def shape(self) -> tuple[Any, ...]:
        """The shape expressions of a tensor parameter (empty for a scalar)."""
        return tuple(getattr(self.node().type, "shape", ()))

    def describe(self) -> str:
        return f"argument {self.name()!r}"

    def parent(self) -> InvalidCursor:
        return InvalidCursor(self._proc, NoLoc("a parameter has no parent"))


class ExprCursor(Cursor):
    """An expression (or a window coordinate) inside a statement, an assert or a parameter."""

    __slots__ = ()

    def node(self) -> Any:
        return get_at(self._proc.ir(), _node_loc_path(self))

    def path(self) -> Path:
        return _node_loc_path(self)

    def describe(self) -> str:
        from cursched.ir.printer import print_expr

        node = self.node()
        text = print_expr(node) if is_expr(node) else type(node).__name__
        return f"{type(node).__name__} {text!r}"

    def kind(self) -> str:
        return type(self.node()).__name__

    def parent(self) -> Cursor:
        """The enclosing expression or statement."""
        from cursched.cursors.stmts import make_cursor

        return make_cursor(self._proc, NodeLoc(self.path()[:-1]))

    def children(self) -> tuple[ExprCursor, ...]:
        """The direct sub-expressions, as cursors."""
        from cursched.cursors.tree import children

        p = self.path()
        return tuple(ExprCursor(self._proc, NodeLoc((*p, s))) for s, _ in children(self.node()))

    def _child(self, attr: str) -> ExprCursor:
        if not hasattr(self.node(), attr):
            raise CursorError(f"{self.describe()} has no {attr}()")
        return ExprCursor(self._proc, NodeLoc((*self.path(), (attr, -1))))

    def lhs(self) -> ExprCursor:
        return self._child("lhs")

    def rhs(self) -> ExprCursor:
        return self._child("rhs")

    def arg(self) -> ExprCursor:
        return self._child("arg")

    def op(self) -> str:
        return str(getattr(self.node(), "op", ""))

    def name(self) -> str:
        """The variable a read, window or stride refers to (or an extern's name)."""
        node = self.node()
        sym = getattr(node, "sym", None)
        return sym.name if sym is not None else str(getattr(node, "name", ""))

    def idx(self) -> tuple[ExprCursor, ...]:
        n = len(getattr(self.node(), "idx", ()))
        return tuple(ExprCursor(self._proc, NodeLoc((*self.path(), ("idx", i)))) for i in range(n))

    def args(self) -> tuple[ExprCursor, ...]:
        n = len(getattr(self.node(), "args", ()))
        return tuple(ExprCursor(self._proc, NodeLoc((*self.path(), ("args", i)))) for i in range(n))

    def value(self) -> Any:
        """A constant's value (None for other expressions)."""
        return getattr(self.node(), "value", None)

    def dim(self) -> int:
        """The dimension of ``stride(A, dim)``."""
        node = self.node()
        if not hasattr(node, "dim"):
            raise CursorError(f"{self.describe()} has no dim()")
        return int(node.dim)

    def type(self) -> Any:
        """The expression's type."""
        return getattr(self.node(), "type", None)
