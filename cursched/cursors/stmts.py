"""Statement, block and gap cursors, and ``make_cursor`` (the right kind for a location)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, assert_never, overload

from cursched.cursors.kinds import ArgCursor, Cursor, ExprCursor, InvalidCursor
from cursched.cursors.locs import ArgLoc, BlockLoc, GapLoc, GapSide, Loc, NodeLoc, NoLoc
from cursched.cursors.tree import STMT_LISTS, stmt_list
from cursched.errors import CursorError
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Call,
    FnArg,
    For,
    If,
    Pass,
    ProcDef,
    Reduce,
    Scope,
    Stmt,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at, is_prefix

if TYPE_CHECKING:
    from cursched.proc import Proc


def _invalid(proc: Proc, why: str) -> InvalidCursor:
    return InvalidCursor(proc, NoLoc(why))


class StmtCursor(Cursor):
    """A statement. Subclasses add the accessors of each statement kind."""

    __slots__ = ()

    def path(self) -> Path:
        assert isinstance(self._loc, NodeLoc)
        return self._loc.path

    def node(self) -> Stmt:
        node: Stmt = get_at(self._proc.ir(), self.path())
        return node

    def describe(self) -> str:
        name = getattr(self, "name", None)
        return f"{self.kind()} {name()!r}" if callable(name) else self.kind()

    def index(self) -> int:
        """The position of the statement in its list."""
        return self.path()[-1][1]

    def _list(self) -> tuple[Stmt, ...]:
        *parent, (attr, _) = self.path()
        return stmt_list(self._proc.ir(), tuple(parent), attr)

    def _sibling(self, k: int) -> Cursor:
        *parent, (attr, i) = self.path()
        if 0 <= i + k < len(self._list()):
            return make_cursor(self._proc, NodeLoc((*parent, (attr, i + k))))
        return _invalid(self._proc, "no statement there")

    def next(self, k: int = 1) -> Cursor:
        """The statement ``k`` after this one, or an invalid cursor past the end."""
        return self._sibling(k)

    def prev(self, k: int = 1) -> Cursor:
        """The statement ``k`` before this one, or an invalid cursor before the start."""
        return self._sibling(-k)

    def parent(self) -> Cursor:
        """The enclosing statement (an invalid cursor at the top level)."""
        if len(self.path()) == 1:
            return _invalid(self._proc, "a top-level statement has no parent")
        return make_cursor(self._proc, NodeLoc(self.path()[:-1]))

    def before(self) -> GapCursor:
        """The gap just before this statement."""
        return GapCursor(self._proc, GapLoc(self.path(), "before"))

    def after(self) -> GapCursor:
        """The gap just after this statement."""
        return GapCursor(self._proc, GapLoc(self.path(), "after"))

    def start(self, attr: str = "body") -> GapCursor:
        """The gap at the start of this statement's list ``attr`` (``"body"``, ``"orelse"``):
        the way to point into an empty ``orelse``. It stays at the start of that list.
        """
        if attr not in ("body", "orelse") or not hasattr(self.node(), attr):
            raise CursorError(f"{self.describe()} has no statement list {attr!r}")
        return GapCursor(self._proc, GapLoc(self.path(), "start", attr))

    def as_block(self) -> BlockCursor:
        """The block holding just this statement."""
        *parent, (attr, i) = self.path()
        return BlockCursor(self._proc, BlockLoc(tuple(parent), attr, i, i + 1))

    def expand(self, delta_lo: int | None = None, delta_hi: int | None = None) -> BlockCursor:
        """``as_block().expand(delta_lo, delta_hi)``."""
        return self.as_block().expand(delta_lo, delta_hi)

    def is_ancestor_of(self, other: Cursor) -> bool:
        """Whether ``other`` (of the same proc version) lies strictly inside this statement."""
        if other.proc() is not self._proc:
            return False
        loc = other.loc
        match loc:
            case NodeLoc():
                inner = loc.path
            case BlockLoc():
                inner = (*loc.parent, (loc.attr, loc.lo))
            case GapLoc():
                inner = (*loc.anchor, (loc.attr, 0)) if loc.side == "start" else loc.anchor
            case ArgLoc() | NoLoc():
                return False
            case _:
                assert_never(loc)
        return len(inner) > len(self.path()) and is_prefix(self.path(), inner)

    def _block(self, attr: str) -> BlockCursor | InvalidCursor:
        n = len(getattr(self.node(), attr))
        if n == 0:
            return _invalid(self._proc, f"empty {attr}")
        return BlockCursor(self._proc, BlockLoc(self.path(), attr, 0, n))

    def _expr(self, attr: str) -> ExprCursor:
        return ExprCursor(self._proc, NodeLoc((*self.path(), (attr, -1))))

    def _exprs(self, attr: str) -> tuple[ExprCursor, ...]:
        n = len(getattr(self.node(), attr))
        return tuple(ExprCursor(self._proc, NodeLoc((*self.path(), (attr, i)))) for i in range(n))


class ForCursor(StmtCursor):
    """A loop: ``name()``, ``lo()``, ``hi()``, ``body()``, ``mode()``."""

    __slots__ = ()

    def loop(self) -> For:
        node = self.node()
        assert isinstance(node, For)
        return node

    def name(self) -> str:
        return self.loop().iter.name

    def lo(self) -> ExprCursor:
        return self._expr("lo")

    def hi(self) -> ExprCursor:
        return self._expr("hi")

    def mode(self) -> str:
        """``"seq"`` or ``"par"``."""
        return self.loop().mode

    def body(self) -> BlockCursor:
        return BlockCursor(self._proc, BlockLoc(self.path(), "body", 0, len(self.loop().body)))


class IfCursor(StmtCursor):
    """A conditional: ``cond()``, ``body()``, ``orelse()`` (invalid when there is none)."""

    __slots__ = ()

    def cond(self) -> ExprCursor:
        return self._expr("cond")

    def body(self) -> BlockCursor | InvalidCursor:
        return self._block("body")

    def orelse(self) -> BlockCursor | InvalidCursor:
        return self._block("orelse")


class _WriteCursor(StmtCursor):
    __slots__ = ()

    def name(self) -> str:
        node = self.node()
        assert isinstance(node, Assign | Reduce)
        return node.sym.name

    def idx(self) -> tuple[ExprCursor, ...]:
        return self._exprs("idx")

    def rhs(self) -> ExprCursor:
        return self._expr("rhs")


class AssignCursor(_WriteCursor):
    """``x[idx] = rhs``: ``name()``, ``idx()``, ``rhs()``."""

    __slots__ = ()


class ReduceCursor(_WriteCursor):
    """``x[idx] += rhs``: ``name()``, ``idx()``, ``rhs()``."""

    __slots__ = ()


class PassCursor(StmtCursor):
    """``pass``."""

    __slots__ = ()


class AllocCursor(StmtCursor):
    """An allocation: ``name()``, ``mem()``, ``type()``, ``shape()``."""

    __slots__ = ()

    def alloc(self) -> Alloc:
        node = self.node()
        assert isinstance(node, Alloc)
        return node

    def name(self) -> str:
        return self.alloc().sym.name

    def mem(self) -> Any:
        return self.alloc().mem

    def type(self) -> Any:
        return self.alloc().type

    def shape(self) -> tuple[Any, ...]:
        """The shape expressions (empty for a scalar)."""
        return tuple(getattr(self.alloc().type, "shape", ()))


class CallCursor(StmtCursor):
    """A call of another proc: ``name()`` (the callee's), ``subproc()``, ``args()``."""

    __slots__ = ()

    def subproc(self) -> ProcDef:
        node = self.node()
        assert isinstance(node, Call)
        return node.proc

    def name(self) -> str:
        return self.subproc().name

    def args(self) -> tuple[ExprCursor, ...]:
        return self._exprs("args")


class WindowStmtCursor(StmtCursor):
    """``w = A[i, 0:8]``: ``name()``, ``rhs()``."""

    __slots__ = ()

    def name(self) -> str:
        node = self.node()
        assert isinstance(node, WindowStmt)
        return node.sym.name

    def rhs(self) -> ExprCursor:
        return self._expr("rhs")


class ScopeCursor(StmtCursor):
    """``with scope(name):``: ``name()``, ``target()``, ``body()``."""

    __slots__ = ()

    def scope(self) -> Scope:
        node = self.node()
        assert isinstance(node, Scope)
        return node

    def name(self) -> str:
        return self.scope().name

    def target(self) -> str | None:
        return self.scope().target

    def body(self) -> BlockCursor:
        return BlockCursor(self._proc, BlockLoc(self.path(), "body", 0, len(self.scope().body)))


class BlockCursor(Cursor):
    """Consecutive statements of one list. Indexable (``b[0]``, ``b[1:]``) and iterable."""

    __slots__ = ()

    def block(self) -> BlockLoc:
        assert isinstance(self._loc, BlockLoc)
        return self._loc

    def describe(self) -> str:
        n = len(self)
        return f"Block of {n} statement{'s' if n != 1 else ''}"

    def __len__(self) -> int:
        b = self.block()
        return b.hi - b.lo

    @overload
    def __getitem__(self, k: int) -> StmtCursor: ...
    @overload
    def __getitem__(self, k: slice) -> BlockCursor: ...
    def __getitem__(self, k: int | slice) -> StmtCursor | BlockCursor:
        b = self.block()
        if isinstance(k, slice):
            lo, hi, step = k.indices(len(self))
            if step != 1 or hi <= lo:
                raise CursorError(f"a block slice must be non-empty and contiguous, got {k}")
            return BlockCursor(self._proc, BlockLoc(b.parent, b.attr, b.lo + lo, b.lo + hi))
        if not -len(self) <= k < len(self):
            raise IndexError(f"block index {k} out of range for {self.describe()}")
        return stmt_at(self._proc, b.stmt_paths()[k])

    def __iter__(self) -> Iterator[StmtCursor]:
        for p in self.block().stmt_paths():
            yield stmt_at(self._proc, p)

    def stmts(self) -> tuple[Stmt, ...]:
        """The statement nodes."""
        b = self.block()
        return stmt_list(self._proc.ir(), b.parent, b.attr)[b.lo : b.hi]

    def paths(self) -> tuple[Path, ...]:
        """The path of each statement."""
        return self.block().stmt_paths()

    def parent(self) -> Cursor:
        """The statement holding the block (an invalid cursor for the proc's body)."""
        b = self.block()
        if not b.parent:
            return _invalid(self._proc, "the proc's body has no parent statement")
        return make_cursor(self._proc, NodeLoc(b.parent))

    def as_block(self) -> BlockCursor:
        return self

    def before(self) -> GapCursor:
        return self[0].before()

    def after(self) -> GapCursor:
        return self[-1].after()

    def next(self) -> Cursor:
        """The statement just after the block (or an invalid cursor)."""
        return self[-1].next()

    def prev(self) -> Cursor:
        """The statement just before the block (or an invalid cursor)."""
        return self[0].prev()

    def expand(self, delta_lo: int | None = None, delta_hi: int | None = None) -> BlockCursor:
        """Grow the block by ``delta_lo`` statements up and ``delta_hi`` down (None: as far
        as the list goes), clamped to the list.
        """
        b = self.block()
        n = len(stmt_list(self._proc.ir(), b.parent, b.attr))
        lo = 0 if delta_lo is None else max(0, b.lo - delta_lo)
        hi = n if delta_hi is None else min(n, b.hi + delta_hi)
        return BlockCursor(self._proc, BlockLoc(b.parent, b.attr, lo, hi))

    def is_ancestor_of(self, other: Cursor) -> bool:
        """Whether ``other`` lies inside one of the block's statements."""
        return any(s.is_ancestor_of(other) or s == other for s in self)


class GapCursor(Cursor):
    """The space before or after a statement, where statements can be inserted."""

    __slots__ = ()

    def gap(self) -> GapLoc:
        assert isinstance(self._loc, GapLoc)
        return self._loc

    def anchor(self) -> StmtCursor:
        """The statement the gap is attached to (for a ``"start"`` gap: the one whose list it
        starts).
        """
        return stmt_at(self._proc, self.gap().anchor)

    def side(self) -> GapSide:
        """``"before"`` or ``"after"`` its anchor, or ``"start"`` of the anchor's list."""
        return self.gap().side

    def describe(self) -> str:
        if self.side() == "start":
            return f"Gap at the start of the {self.gap().attr} of {self.anchor().describe()}"
        return f"Gap {self.side()} {self.anchor().describe()}"

    def position(self) -> tuple[Path, str, int]:
        """(parent path, list attribute, index) of the gap."""
        return self.gap().position()

    # The gap after one statement is the gap before the next: equal by position.
    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GapCursor)
            and other._proc is self._proc
            and other.position() == self.position()
        )

    def __hash__(self) -> int:
        return hash((id(self._proc), self.position()))

    def parent(self) -> Cursor:
        a = self.anchor()
        return a if self.side() == "start" else a.parent()

    def next(self) -> Cursor:
        """The statement just after the gap (or an invalid cursor)."""
        a = self.anchor()
        if self.side() == "start":
            parent, attr, _ = self.position()
            if stmt_list(self._proc.ir(), parent, attr):
                return make_cursor(self._proc, NodeLoc((*parent, (attr, 0))))
            return _invalid(self._proc, "an empty list")
        return a if self.side() == "before" else a.next()

    def prev(self) -> Cursor:
        """The statement just before the gap (or an invalid cursor)."""
        if self.side() == "start":
            return _invalid(self._proc, "the start of a list")
        a = self.anchor()
        return a if self.side() == "after" else a.prev()


_STMT_CLASSES: dict[type, type[StmtCursor]] = {
    Assign: AssignCursor,
    Reduce: ReduceCursor,
    Pass: PassCursor,
    If: IfCursor,
    For: ForCursor,
    Alloc: AllocCursor,
    Call: CallCursor,
    WindowStmt: WindowStmtCursor,
    Scope: ScopeCursor,
}


def make_cursor(proc: Proc, loc: Loc) -> Cursor:
    """The cursor of the right kind for ``loc`` in ``proc``.

    Raises:
        CursorError: when ``loc`` addresses nothing in ``proc``.
    """
    match loc:
        case NodeLoc():
            if not loc.path:
                return _invalid(proc, "the proc itself")
            try:
                node = get_at(proc.ir(), loc.path)
            except LookupError as e:
                raise CursorError(f"no node at {loc.path} in {proc!r}: {e}") from None
            cls = _STMT_CLASSES.get(type(node))
            if cls is not None and loc.path[-1][0] in STMT_LISTS:
                return cls(proc, loc)
            if isinstance(node, FnArg):
                return ArgCursor(proc, ArgLoc(loc.path[-1][1]))
            return ExprCursor(proc, loc)
        case BlockLoc() | GapLoc() | ArgLoc() | NoLoc():
            return _located(proc, loc)
        case _:
            assert_never(loc)


def _located(proc: Proc, loc: BlockLoc | GapLoc | ArgLoc | NoLoc) -> Cursor:
    match loc:
        case BlockLoc():
            return BlockCursor(proc, loc)
        case GapLoc():
            return GapCursor(proc, loc)
        case ArgLoc():
            return ArgCursor(proc, loc)
        case NoLoc():
            return InvalidCursor(proc, loc)
        case _:
            assert_never(loc)


def stmt_at(proc: Proc, path: Path) -> StmtCursor:
    """The statement cursor at ``path`` (which must address a statement)."""
    c = make_cursor(proc, NodeLoc(path))
    if not isinstance(c, StmtCursor):
        raise CursorError(f"no statement at {path} in {proc!r}")
    return c
