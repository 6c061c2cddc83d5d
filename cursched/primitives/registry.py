'''The primitive framework: one decorator turns a rewrite into a scheduling primitive.

A primitive is ``prim(proc, target, ...) -> (new_proc, PrimCursors)`` (DESIGN.md, contract 6).
``@primitive`` does everything that is the same for all of them:

1. **coerces arguments** by their annotations: a parameter annotated with a cursor class
   (``ForCursor``, ``BlockCursor``, ``GapCursor``, ``ExprCursor``, ``Buffer``, a union of
   those, or a tuple of them) accepts a cursor of this or of any ancestor version (forwarded
   automatically) or a pattern string (``"for i in _: _"``, a loop name for ``ForCursor``, a
   buffer name for ``Buffer``); a statement is accepted for a block and a one-statement
   block for a statement. A tombstone, a foreign cursor or the wrong kind raises
   ``StaleCursorError`` / ``ForeignCursorError`` / ``CursorError`` naming the argument;
2. runs the rewrite, which edits the IR only through an ``Editor``
   (``cursched.cursors.edits``) and returns ``ed.done(TheCursors, field=location, ...)``;
3. makes the new ``Proc`` with its ``StepRecord`` (primitive, arguments, forwarding map,
   result locations) so that ``forward`` and ``history()`` work;
4. verifies the new IR with ``cursched.ir.verify.verify_proc`` when ``settings.verify`` is on
   (default on; ``CURSCHED_VERIFY=0`` turns it off) and checks that every returned cursor
   points into the new proc.

Writing a primitive (the whole of ``delete_pass``, minus its docstring)::

    class NotAPassError(SchedulingError):
        """delete_pass: the statement is not ``pass``."""

    @prim_cursors
    class DeletePassCursors(PrimCursors):
        """``delete_pass`` returns no cursors."""

    @primitive
    def delete_pass(proc: Proc, stmt: StmtCursor) -> Rewrite[DeletePassCursors]:
        if not isinstance(stmt, PassCursor):                      # precondition 1
            raise fail(NotAPassError, "delete_pass", "the statement is not `pass`", stmt)
        ed = Editor(proc.ir())
        ed.delete(stmt.as_block().block(), hint="deleted by delete_pass")
        return ed.done(DeletePassCursors)

Cursors passed in are already forwarded to ``proc``; their ``.loc`` addresses ``proc.ir()``,
which is what the editor starts from. Use ``ed.forward(loc)`` to find a location again after
earlier edits of the same step. Keep identity by reusing old node objects in what you build
(a loop rebuilt around its old iteration variable stays the same loop; pass ``same=`` to the
edit for other rebuilt nodes); give ``hint=`` to say what replaces the nodes you kill.
'''

from __future__ import annotations

import functools
import inspect
import os
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, TypeAlias, TypeVar, Union

from cursched.cursors import (
    AllocCursor,
    ArgCursor,
    ArgLoc,
    BlockCursor,
    BlockLoc,
    Cursor,
    Dead,
    ForCursor,
    GapCursor,
    GapLoc,
    InvalidCursor,
    Loc,
    NodeLoc,
    NoLoc,
    StepRecord,
    StmtCursor,
    Tombstone,
    make_cursor,
)
from cursched.cursors.edits import Rewrite
from cursched.cursors.show import loc_text, show_loc
from cursched.errors import (
    CurschedError,
    CursorError,
    ForeignCursorError,
    IRVerificationError,
    SchedulingError,
)
from cursched.proc import Proc

Buffer: TypeAlias = AllocCursor | ArgCursor
"""A parameter annotation for a buffer: an allocation or a parameter (strings are names)."""


@dataclass
class Settings:
    """Process-wide switches of the framework.

    Attributes:
        verify: run ``verify_proc`` after every primitive (``CURSCHED_VERIFY=0`` turns the
            default off; the test suite always runs with it on).
    """

    verify: bool = os.environ.get("CURSCHED_VERIFY", "1") != "0"


settings = Settings()


# ------------------------------------------------------------------------ cursor dataclasses


class PrimCursors:
    """Base of the dataclass of cursors every primitive returns.

    Iterating yields the fields in order (``p, (outer, inner) = ...``); ``repr`` is a table
    (field, kind, source snippet, line of ``str(proc)``); ``_repr_html_`` shows it in notebooks.
    Declare subclasses with ``@prim_cursors``.
    """

    def __iter__(self) -> Iterator[Any]:
        for f in fields(self):  # type: ignore[arg-type]
            yield getattr(self, f.name)

    def __len__(self) -> int:
        return len(fields(self))  # type: ignore[arg-type]

    def items(self) -> list[tuple[str, Any]]:
        """(field name, value) pairs in order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self)]  # type: ignore[arg-type]

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(field, kind, snippet, line) for each cursor of each field."""
        out: list[tuple[str, str, str, str]] = []
        for name, value in self.items():
            values = value if isinstance(value, tuple) else (value,)
            if not values:
                out.append((name, "()", "", ""))
            for k, v in enumerate(values):
                label = f"{name}[{k}]" if isinstance(value, tuple) else name
                out.append((label, *_row(v)))
        return out

    def __repr__(self) -> str:
        rows = [("field", "kind", "source", "line"), *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        return f"{type(self).__name__}\n" + "\n".join("  " + ln.rstrip() for ln in lines)

    def _repr_html_(self) -> str:
        import html

        cells = "".join(
            "<tr>" + "".join(f"<td><code>{html.escape(c)}</code></td>" for c in r) + "</tr>"
            for r in self.rows()
        )
        head = "<tr><th>field</th><th>kind</th><th>source</th><th>line</th></tr>"
        return f"<b>{type(self).__name__}</b><table>{head}{cells}</table>"


def _row(v: Any) -> tuple[str, str, str]:
    if isinstance(v, Cursor) and v:
        ir = v.proc().ir()
        try:
            text = show_loc(ir, v.loc).splitlines()
        except LookupError:
            return v.kind(), v.describe(), "?"
        # Line numbers are those of str(proc): the marker lines of a block or a gap are not
        # counted, so they name the first statement of the block / the one after the gap.
        for i, line in enumerate(text):
            if "# <--" in line:
                return v.kind(), line.replace("# <--", "").strip(), str(i + 1)
            if "# BLOCK START" in line and i + 1 < len(text):
                more = isinstance(v, BlockCursor) and len(v) > 1
                return v.kind(), text[i + 1].strip() + (" ..." if more else ""), str(i + 1)
            if "[GAP]" in line:
                nxt = text[i + 1].strip() if i + 1 < len(text) else ""
                return v.kind(), f"[GAP] before `{nxt}`" if nxt else "[GAP] at the end", str(i + 1)
            if line.strip() and set(line.strip()) <= {"^"} and i > 0:
                start = len(line) - len(line.lstrip())
                return v.kind(), text[i - 1][start : len(line)], str(i)
        return v.kind(), v.describe(), "?"
    if isinstance(v, Cursor | Tombstone):
        return "invalid", repr(v), ""
    return type(v).__name__, repr(v), ""


C = TypeVar("C", bound=PrimCursors)


def prim_cursors(cls: type[C]) -> type[C]:
    """Declare a primitive's cursors dataclass (frozen, with ``PrimCursors``' table repr)."""
    return dataclass(frozen=True, repr=False, eq=False)(cls)


# ------------------------------------------------------------------------------- rewrites


def fail(
    cls: type[SchedulingError], primitive: str, message: str, where: Cursor | None = None
) -> SchedulingError:
    """A precondition error: names the primitive and shows the proc with ``where`` marked."""
    text = f"{primitive}: {message}"
    if where is not None:
        try:
            shown = show_loc(where.proc().ir(), where.loc)
        except LookupError:
            shown = str(where.proc())
        text += f"\n  at {loc_text(where.loc)}:\n" + "\n".join(
            "    " + ln for ln in shown.splitlines()
        )
    return cls(text)


# ---------------------------------------------------------------------- argument coercion


def _cursor_classes(ann: Any) -> tuple[type, ...] | None:
    if isinstance(ann, type) and issubclass(ann, Cursor):
        return (ann,)
    if typing.get_origin(ann) in (Union, types.UnionType):
        out: list[type] = []
        for a in typing.get_args(ann):
            if a is type(None):
                continue
            sub = _cursor_classes(a)
            if sub is None:
                return None
            out.extend(sub)
        return tuple(out) or None
    return None


def _seq_item(ann: Any) -> tuple[type, ...] | None:
    if typing.get_origin(ann) in (tuple, list):
        args = [a for a in typing.get_args(ann) if a is not Ellipsis]
        if len(args) == 1:
            return _cursor_classes(args[0])
    return None


def _from_string(proc: Proc, text: str, want: tuple[type, ...]) -> Cursor:
    if want == (ForCursor,):
        return proc.find_loop(text)
    if set(want) <= {AllocCursor, ArgCursor}:
        return proc.find_alloc_or_arg(text)
    found: Cursor = proc.find(text)
    return found


def coerce(proc: Proc, value: Any, want: tuple[type, ...], arg: str, prim: str) -> Any:
    """``value`` as a cursor of one of the kinds ``want`` on ``proc`` (see the module doc)."""
    if value is None:
        return None
    if isinstance(value, Tombstone):
        value.raise_stale(arg, prim)
    if isinstance(value, str):
        value = _from_string(proc, value, want)
    if not isinstance(value, Cursor):
        raise CursorError(
            f"argument {arg!r} of {prim} wants a cursor or a pattern string, "
            f"got {type(value).__name__}"
        )
    try:
        value = proc.forward(value)
    except ForeignCursorError as e:
        raise ForeignCursorError(f"argument {arg!r} of {prim}: {e}") from None
    if isinstance(value, Tombstone):
        value.raise_stale(arg, prim)
    if isinstance(value, InvalidCursor):
        raise CursorError(f"argument {arg!r} of {prim} is {value.describe()}")
    if isinstance(value, want):
        return value
    if BlockCursor in want and isinstance(value, StmtCursor):
        return value.as_block()
    if isinstance(value, BlockCursor) and len(value) == 1 and isinstance(value[0], want):
        return value[0]
    kinds = " or ".join(w.__name__.removesuffix("Cursor") for w in want)
    raise CursorError(f"argument {arg!r} of {prim} wants a {kinds} cursor, got {value.describe()}")


# ------------------------------------------------------------------------------ decorator


def primitive(fn: Callable[..., Rewrite[C]]) -> Callable[..., tuple[Proc, C]]:
    """Make a scheduling primitive of ``fn(proc, ...) -> Rewrite`` (see the module doc)."""
    name = fn.__name__
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    params = list(sig.parameters)[1:]
    plans: dict[str, tuple[str, tuple[type, ...]]] = {}
    for p in params:
        ann = hints.get(p)
        single, many = _cursor_classes(ann), _seq_item(ann)
        if single is not None:
            plans[p] = ("one", single)
        elif many is not None:
            plans[p] = ("many", many)

    @functools.wraps(fn)
    def run(proc: Proc, *args: Any, **kwargs: Any) -> tuple[Proc, C]:
        if not isinstance(proc, Proc):
            raise CursorError(f"{name} wants a Proc first, got {type(proc).__name__}")
        try:
            bound = sig.bind(proc, *args, **kwargs)
        except TypeError as e:
            raise CursorError(f"{name}: {e}") from None
        passed = dict(bound.arguments)
        bound.apply_defaults()
        for p, (how, want) in plans.items():
            v = bound.arguments[p]
            if how == "one":
                bound.arguments[p] = coerce(proc, v, want, p, name)
            else:
                items = [v] if isinstance(v, str | Cursor) else list(v)
                bound.arguments[p] = tuple(coerce(proc, x, want, p, name) for x in items)
        rw = fn(*bound.args, **bound.kwargs)
        n_pos = len(args)
        record = StepRecord(
            primitive=name,
            args=tuple(passed[p] for p in params[:n_pos]),
            kwargs=tuple((p, passed[p]) for p in params[n_pos:] if p in passed),
            inputs=tuple(bound.arguments[p] for p in params[:n_pos]),
            kw_inputs=tuple((p, bound.arguments[p]) for p in params[n_pos:] if p in passed),
            fmap=rw.fmap,
            # in the dataclass's field order, which unpacking in history() follows
            results=tuple((f.name, rw.fields[f.name]) for f in fields(rw.cursors)),  # type: ignore[arg-type]
        )
        new = Proc(rw.ir, parent=proc, step=record)
        if settings.verify:
            _verify(new, name)
        out = rw.cursors(**{k: _bind(new, v, k, name) for k, v in rw.fields.items()})
        return new, out

    run.__cursched_primitive__ = True  # type: ignore[attr-defined]
    return run


def _verify(proc: Proc, prim: str) -> None:
    from cursched.ir.verify import verify_proc

    try:
        verify_proc(proc.ir())
    except IRVerificationError as e:
        raise IRVerificationError(f"{prim} made v{proc.version} of {proc.name()}: {e}") from e


def _bind(proc: Proc, value: Any, field: str, prim: str) -> Any:
    """A returned location as a cursor of ``proc``, checked to point into it."""
    if isinstance(value, tuple):
        return tuple(_bind(proc, v, field, prim) for v in value)
    if isinstance(value, Dead):
        return InvalidCursor(proc, NoLoc(value.hint))
    if isinstance(value, Cursor | Tombstone):
        if isinstance(value, Cursor) and value.proc() is proc:
            return value
        raise AssertionError(
            f"{prim} returned field {field!r} as a cursor of another version ({value!r}); "
            "return locations (Loc) of the new IR"
        )
    if not isinstance(value, NodeLoc | BlockLoc | GapLoc | ArgLoc | NoLoc):
        return value
    loc: Loc = value
    try:
        c = make_cursor(proc, loc)
        if isinstance(c, BlockCursor):
            c.stmts()[len(c) - 1]
        elif isinstance(c, GapCursor):
            c.anchor()
    except (CurschedError, LookupError, IndexError) as e:
        raise AssertionError(
            f"{prim} returned field {field!r} at {loc_text(loc)}, which is not in its result: {e}"
        ) from None
    return c


__all__ = [
    "Buffer",
    "PrimCursors",
    "Rewrite",
    "Settings",
    "coerce",
    "fail",
    "prim_cursors",
    "primitive",
    "settings",
]
