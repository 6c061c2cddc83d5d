'''The primitive framework: one decorator turns a rewrite into a scheduling primitive.

A primitive is ``prim(proc, target, ...) -> (new_proc, PrimCursors)`` (docs/architecture.md,
contract 6). ``@primitive`` does everything that is the same for all of them:

1. **coerces arguments** by their annotations: a parameter annotated with a cursor class
   (``ForCursor``, ``BlockCursor``, ``GapCursor``, ``ExprCursor``, ``Buffer``, a union of
   those, or a tuple of them) accepts a cursor of this or of any ancestor version (forwarded
   automatically) or a pattern string (``"for i in _: _"``, a loop name for ``ForCursor``, a
   buffer name for ``Buffer``); a statement is accepted for a block and a one-statement
   block for a statement. A tombstone, a foreign cursor or the wrong kind raises
   ``StaleCursorError`` / ``ForeignCursorError`` / ``CursorError`` naming the argument;
   **checks and parses the other arguments** by ``Annotated`` metadata from
   ``cursched.primitives.arguments`` (the one place for syntactic checks shared by primitives):

   - ``Annotated[str, NewName(TheNameError, at="loop", scope="inside")]``: a new name (or a
     tuple of distinct ones) refused by ``check_new_name`` (keywords, reserved words, ``_``,
     names that clash at the place of ``at``; ``scope`` is ``"inside"``, ``"rest"``,
     ``"proc"`` or ``"none"``, see ``arguments.taken_names``); the rewrite gets the name;
   - ``Annotated[Any, Index(at="loop", what="cut point")]``: an integer control expression
     (int, text ``"n - 4"``, IR expression, expression cursor) resolved at ``at``'s place;
     the rewrite gets an IR ``Expr`` (``BadIndexExpressionError`` unless ``error=`` says);
   - ``Annotated[Any, Condition(TheCondError, at="block", many=True)]``: one condition or a
     sequence; the rewrite gets IR conditions (with ``many``, ``arguments.Conditions``: a
     tuple whose ``given`` holds those given as nodes, the only ones that may be the proc's);
   - ``Annotated[str, Window(TheWindowError, at="block")]``: ``"A[lo:hi, pt]"``; the rewrite
     gets an ``arguments.ParsedWindow`` (buffer, type, memory, coordinates).

   ``at`` names the cursor parameter giving the place (default: the first cursor
   parameter); a refusal raises the given precondition class through ``fail``, marking that
   cursor. ``history()`` records the argument as the user wrote it;
2. runs the rewrite, which edits the IR only through an ``Editor``
   (``cursched.cursors.edits``) and returns ``ed.done(TheCursors, field=location, ...)``;
3. makes the new ``Proc`` with its ``StepRecord`` (primitive, arguments, forwarding map,
   result locations) so that ``forward`` and ``history()`` work; the record is built when
   ``Proc.step()`` first reads it (``_Primitive.record``), most never are;
4. verifies the new IR when ``settings.verify`` is on (default on; ``CURSCHED_VERIFY=0``
   turns it off): by default incrementally, only what the step changed against its input
   (``cursched.ir.verify_step``; the input is known valid when an earlier verified step
   made it, else the whole new proc is walked), told by the step's map which top-level
   statements the edit left alone (``top_shared``); a step that only inserted ``pass``
   statements into one block (its map says so) keeps every invariant and is not walked;
   ``CURSCHED_VERIFY=full`` runs the whole-proc ``verify_proc`` reusing nothing; then it
   checks that every returned cursor points into the new proc;
5. is the API boundary: a ``CurschedError`` leaves through ``errors.at_boundary`` (the
   user's traceback ends at the primitive's call; the internal chain stays on the error);
6. offers **check-only mode**: ``prim(proc, ..., check_only=True)``, or ``can(prim, proc,
   ...)``, returns a ``Verdict`` (truthy when the call would succeed; ``error`` holds the
   precondition error it would raise) without making a ``Proc``. A primitive calls
   ``checks_passed()`` after its last check and before it builds anything, which ends a
   check-only call there; one whose last check needs the rewritten IR (``stage_mem``,
   ``fuse``, ``join_loops``, ``lift_alloc``, ``replace``) runs its rewrite to decide.

Writing a primitive (the whole of ``delete_pass``, minus its docstring): preconditions as
``_check_*`` functions (or one-line tests), then ``checks_passed()``, then the rewrite::

    class NotAPassError(ShapeMismatchError):   # its reason class (cursched.errors.REASONS)
        """delete_pass, precondition 1: the statement is not ``pass``."""

    @prim_cursors
    class DeletePassCursors(PrimCursors):
        """``delete_pass`` returns no cursors."""

    @primitive
    def delete_pass(proc: Proc, stmt: StmtCursor) -> Rewrite[DeletePassCursors]:
        if not isinstance(stmt, PassCursor):                      # precondition 1
            raise fail(NotAPassError, "delete_pass", "the statement is not `pass`", stmt)
        checks_passed()
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

import contextvars
import functools
import inspect
import os
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Annotated, Any, TypeAlias, TypeVar, Union

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
from cursched.cursors.forwarding import (
    IN_PLACE,
    ComposedMap,
    MoveMap,
    NodeMap,
    PathMap,
    SpliceMap,
)
from cursched.cursors.show import loc_text, show_loc
from cursched.cursors.tree import stmt_list
from cursched.errors import (
    CurschedError,
    CursorError,
    ForeignCursorError,
    IRVerificationError,
    SchedulingError,
    at_boundary,
    debug_tracebacks,
)
from cursched.ir import verify as verify_mod
from cursched.ir import verify_step as step_mod
from cursched.ir.nodes import Pass, ProcDef
from cursched.primitives.arguments import (
    ArgSpec,
    Condition,
    Index,
    NewName,
    Window,
    check_new_name,
    fail,
)
from cursched.proc import Proc

Buffer: TypeAlias = AllocCursor | ArgCursor
"""A parameter annotation for a buffer: an allocation or a parameter (strings are names)."""


_VERIFY_ENV = os.environ.get("CURSCHED_VERIFY", "1")


@dataclass
class Settings:
    """Process-wide switches of the framework.

    Attributes:
        verify: verify the IR after every primitive (``CURSCHED_VERIFY=0`` turns the
            default off; the test suite always runs with it on).
        verify_mode: ``"incremental"`` (the default): check only what the step changed
            against its input, known valid (``cursched.ir.verify_step``), the cost of the
            change and not of the proc; ``"full"`` (``CURSCHED_VERIFY=full``): the whole
            proc, reusing nothing (``verify_proc(ir, memo=False)``).
    """

    verify: bool = _VERIFY_ENV != "0"
    verify_mode: str = "full" if _VERIFY_ENV == "full" else "incremental"


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
        from cursched.cursors.show import html_table

        return html_table(type(self).__name__, ("field", "kind", "source", "line"), self.rows())


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
    if (
        isinstance(value, Cursor)
        and value.proc() is proc
        and isinstance(value, want)
        and not isinstance(value, InvalidCursor)
    ):
        return value  # already a cursor of this version: nothing to find or forward
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


# ----------------------------------------------------------------------------- check-only

_CHECK_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("check_only", default=False)


class _ChecksPassed(Exception):
    """Raised by ``checks_passed`` in check-only mode: every precondition held."""


def checks_passed() -> None:
    """Call in a primitive after its last precondition check and before it builds anything:
    in check-only mode it ends the call there (a verdict of "accepted"); otherwise it does
    nothing. A primitive whose last check needs the rewritten IR (``stage_mem``'s
    parallelism proof) does not call it, and check-only mode runs its rewrite too."""
    if _CHECK_ONLY.get():
        raise _ChecksPassed


@dataclass(frozen=True)
class Verdict:
    """What a primitive called with ``check_only=True`` (or through ``can``) answers.

    Attributes:
        primitive: the primitive's name.
        error: the precondition error the real call would raise, or None when it would
            succeed.
        built: for an accepted call, whether the rewrite ran to its end to decide (the
            primitive has no ``checks_passed`` point: its last check needs the rewritten
            IR, as ``stage_mem``'s); False for a refusal.

    A verdict is truthy when the call would succeed.
    """

    primitive: str
    error: SchedulingError | None
    built: bool = False

    def __bool__(self) -> bool:
        return self.error is None

    @property
    def reason(self) -> type[SchedulingError] | None:
        """The reason class of the refusal (``RaceError``, ...), or None."""
        from cursched.errors import REASONS

        if self.error is None:
            return None
        return next((r for r in REASONS if isinstance(self.error, r)), type(self.error))

    def __repr__(self) -> str:
        if self.error is None:
            return f"<Verdict {self.primitive}: accepted>"
        return f"<Verdict {self.primitive}: refused, {type(self.error).__name__}>"


def can(prim: Callable[..., Any], proc: Proc, *args: Any, **kwargs: Any) -> Verdict:
    """Whether ``prim(proc, *args, **kwargs)`` would succeed, running its precondition checks
    and building nothing where the primitive allows (see ``checks_passed``).

    ``can(split, p, "i", 4)`` is ``split(p, "i", 4, check_only=True)``. A refused
    precondition is the verdict's ``error``; other errors (a cursor that does not resolve, a
    malformed pattern) are raised as the real call raises them.
    """
    if not getattr(prim, "__cursched_primitive__", False):
        raise CursorError(f"can: {getattr(prim, '__name__', prim)!r} is not a primitive")
    verdict: Verdict = prim(proc, *args, check_only=True, **kwargs)
    return verdict


# ------------------------------------------------------------------------------ decorator


def primitive(fn: Callable[..., Rewrite[C]]) -> Callable[..., tuple[Proc, C]]:
    """Make a scheduling primitive of ``fn(proc, ...) -> Rewrite`` (see the module doc)."""
    prim = _Primitive(fn)

    @functools.wraps(fn)
    def run(proc: Proc, *args: Any, check_only: bool = False, **kwargs: Any) -> Any:
        # the API boundary: a user's error shows the user's line and this one, not the
        # frames of the checks behind it (their chain stays on ``internal_cause``)
        try:
            if check_only:
                return prim.check(proc, args, kwargs)
            return prim.apply(proc, args, kwargs)
        except CurschedError as e:
            if debug_tracebacks():
                raise
            raise at_boundary(e) from None

    run.__cursched_primitive__ = True  # type: ignore[attr-defined]
    return run


_STR_OR_CURSOR: tuple[type, ...] = (str, Cursor)
"""One of a sequence parameter's items given alone (a tuple: see ``_CURSOR_OR_TOMBSTONE``)."""


class _Primitive:
    """What ``@primitive`` knows of a rewrite: how to coerce and resolve its arguments (read
    once from its annotations), run it in full or in check-only mode."""

    def __init__(self, fn: Callable[..., Rewrite[Any]]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
        self.params = list(self.sig.parameters)[1:]
        self.plans: dict[str, tuple[str, tuple[type, ...]]] = {}
        self.specs: dict[str, ArgSpec] = {}
        for p in self.params:
            ann = hints.get(p)
            if typing.get_origin(ann) is Annotated:
                meta = [m for m in typing.get_args(ann)[1:] if isinstance(m, ArgSpec)]
                if meta:
                    self.specs[p] = meta[0]
                ann = typing.get_args(ann)[0]
            single, many = _cursor_classes(ann), _seq_item(ann)
            if single is not None:
                self.plans[p] = ("one", single)
            elif many is not None:
                self.plans[p] = ("many", many)
        self.first_cursor = next(iter(self.plans), None)
        for p, spec in self.specs.items():
            assert spec.at is None or spec.at in self.plans, f"{self.name}: {p} at {spec.at!r}"
        # Every primitive's parameters are plain positional-or-keyword ones: binding them by
        # name is then a zip and a default fill (``Signature.bind`` cost more than the whole
        # rewrite of a small primitive); any other signature binds through ``inspect``.
        plain = inspect.Parameter.POSITIONAL_OR_KEYWORD
        ps = list(self.sig.parameters.values())
        self.simple = all(p.kind is plain for p in ps)
        self.defaults = {p.name: p.default for p in ps[1:] if p.default is not p.empty}
        self.param_set = frozenset(self.params)

    def bind(self, proc: Proc, args: Any, kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The arguments after the proc as passed (by parameter name) and with the defaults
        filled in, both in the signature's order. Raises ``CursorError`` for a call that does
        not fit the signature (its message is ``inspect``'s)."""
        if self.simple and len(args) <= len(self.params) and self.param_set.issuperset(kwargs):
            passed = dict(zip(self.params, args, strict=False))
            if not kwargs or passed.keys().isdisjoint(kwargs):
                passed.update(kwargs)
                if len(passed) == len(self.params):
                    full = passed if not kwargs else {p: passed[p] for p in self.params}
                    return full, full
                if all(p in passed or p in self.defaults for p in self.params):
                    full = {p: passed[p] if p in passed else self.defaults[p] for p in self.params}
                    if not kwargs:  # the zip's order is already the signature's
                        return passed, full
                    return {p: passed[p] for p in self.params if p in passed}, full
        try:
            bound = self.sig.bind(proc, *args, **kwargs)
        except TypeError as e:
            raise CursorError(f"{self.name}: {e}") from None
        passed = dict(bound.arguments)
        bound.apply_defaults()
        full = dict(bound.arguments)
        del passed[next(iter(self.sig.parameters))], full[next(iter(self.sig.parameters))]
        return passed, full

    def resolve(
        self, proc: Proc, args: Any, kwargs: Any
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """The arguments after the proc by name: as the rewrite takes them, as passed, and
        as recorded."""
        name = self.name
        if not isinstance(proc, Proc):
            raise CursorError(f"{name} wants a Proc first, got {type(proc).__name__}")
        passed, full = self.bind(proc, args, kwargs)
        arguments = dict(full)
        for p, (how, want) in self.plans.items():
            v = arguments[p]
            if how == "one":
                arguments[p] = coerce(proc, v, want, p, name)
            else:
                items = [v] if isinstance(v, _STR_OR_CURSOR) else list(v)
                arguments[p] = tuple(coerce(proc, x, want, p, name) for x in items)
        # what history() records: cursors forwarded, other arguments as the user wrote them
        inputs = dict(arguments) if self.specs else arguments
        for p, spec in self.specs.items():
            at = spec.at or self.first_cursor
            where = arguments[at] if at else None
            others: tuple[Cursor, ...] = ()
            if isinstance(where, tuple):  # a sequence of cursors: the first one is the place
                where, others = (where[0], where[1:]) if where else (None, ())
            value = arguments[p]
            arguments[p] = spec.resolve(proc.ir(), value, where, name, others)
        return arguments, passed, inputs

    def call(self, proc: Proc, arguments: dict[str, Any]) -> Rewrite[Any]:
        """The rewrite on the resolved arguments."""
        if self.simple:
            return self.fn(proc, *arguments.values())
        return self.fn(proc, **arguments)

    def check(self, proc: Proc, args: Any, kwargs: Any) -> Verdict:
        """Check-only mode: the verdict of the call (see ``checks_passed``)."""
        token = _CHECK_ONLY.set(True)
        try:
            arguments, _, _ = self.resolve(proc, args, kwargs)  # the argument layer's checks
            self.call(proc, arguments)
        except _ChecksPassed:
            return Verdict(self.name, None, built=False)
        except SchedulingError as e:
            return Verdict(self.name, e, built=False)
        finally:
            _CHECK_ONLY.reset(token)
        # a primitive that does not call ``checks_passed`` ran its rewrite to the end (still
        # no Proc, no verification, no cursors)
        return Verdict(self.name, None, built=True)

    def apply(self, proc: Proc, args: Any, kwargs: Any) -> tuple[Proc, Any]:
        """The call: the rewrite, the new ``Proc`` with its step record, verified, and the
        returned cursors bound to it."""
        name = self.name
        arguments, passed, inputs = self.resolve(proc, args, kwargs)
        if _CHECK_ONLY.get():
            token = _CHECK_ONLY.set(False)  # a primitive called inside a check runs in full
            try:
                rw = self.call(proc, arguments)
            finally:
                _CHECK_ONLY.reset(token)
        else:
            rw = self.call(proc, arguments)
        # the step record is built when first read (``Proc.step``), from values no one
        # changes after the call; parent and step by position: keywords cost 0.18 us more
        record = functools.partial(self.record, args, kwargs, passed, inputs, rw)
        new = Proc(rw.ir, proc, record)
        if settings.verify:
            _verify(new, proc, name, rw.fmap)
        if not rw.fields:
            return new, rw.cursors()
        out = rw.cursors(**{k: _bind(new, v, k, name) for k, v in rw.fields.items()})
        return new, out

    def record(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        passed: dict[str, Any],
        inputs: dict[str, Any],
        rw: Rewrite[Any],
    ) -> StepRecord:
        """The step record of a call (``resolve``'s ``passed`` and ``inputs``)."""
        n_pos = len(args)
        names = _field_names(rw.cursors)
        # in the dataclass's field order, which unpacking in history() follows (a list made
        # in place costs half a ``zip`` with a ``map`` for the usual few fields)
        fields = rw.fields
        results = tuple([(f, fields[f]) for f in names]) if names else ()
        if not kwargs and self.simple:
            # the common call, all positional: ``bind`` made ``passed`` of exactly ``args``
            # in order, and ``inputs`` is in the signature's order, so its first values are
            # theirs; slicing these beats a lookup by name per argument (~2 us a call)
            ins = tuple(inputs.values())
            ins = ins if len(ins) == n_pos else ins[:n_pos]
            return StepRecord(self.name, tuple(args), (), ins, (), rw.fmap, results)
        pos = self.params[:n_pos]
        kws = [p for p in self.params[n_pos:] if p in passed] if kwargs else ()
        return StepRecord(
            self.name,
            tuple(map(passed.__getitem__, pos)),
            tuple((p, passed[p]) for p in kws),
            tuple(map(inputs.__getitem__, pos)),
            tuple((p, inputs[p]) for p in kws),
            rw.fmap,
            results,
        )


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """The fields of a cursors dataclass, in order (read once per class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _verify(proc: Proc, before: Proc, prim: str, fmap: PathMap | None = None) -> None:
    try:
        if settings.verify_mode == "full":
            verify_mod.verify_proc(proc.ir(), memo=False)
        elif fmap is not None and _passes_inserted(proc.ir(), before.ir(), fmap):
            verify_mod.remember_valid(proc.ir())
        else:
            top = None if fmap is None else top_shared(fmap, proc.ir(), before.ir())
            step_mod.verify_step(proc.ir(), before.ir(), top, _is_retag(fmap))
    except IRVerificationError as e:
        raise IRVerificationError(f"{prim} made v{proc.version} of {proc.name()}: {e}") from e


def top_shared(fmap: PathMap, new: ProcDef, old: ProcDef) -> tuple[int, int] | None:
    """How many statements at the start and at the end of ``new``'s body are ``old``'s, as
    the step's map says by construction of the edit operations (a splice of the body keeps
    the statements around it; an edit below one top-level statement, or of it in place,
    keeps every other, since ``update_at`` rebuilds only the nodes on its path; several
    edits all below one top-level statement, e.g. ``bind_expr``'s insertion and
    replacement, keep every other too); None where the map does not say (edits under
    different top-level statements, a move across them, an edit of the parameters)."""
    n, o = len(new.body), len(old.body)
    if isinstance(fmap, SpliceMap) and fmap.parent == () and fmap.attr == "body":
        return (fmap.lo, o - fmap.hi) if n - fmap.lo - fmap.n_new == o - fmap.hi else None
    maps = fmap.maps if isinstance(fmap, ComposedMap) else (fmap,)
    tops = {_top_index(m) for m in maps}
    if len(tops) != 1:
        return None
    t = tops.pop()
    if t is not None and n == o and 0 <= t < n:
        return t, n - t - 1
    return None


def _top_index(fmap: PathMap) -> int | None:
    """The index of the one top-level statement below which (or in place of which) the edit
    of ``fmap`` is, leaving the body's length; None when the map does not say."""
    if isinstance(fmap, SpliceMap):
        if fmap.parent == ():
            return None  # a splice of the body itself (or of the parameters)
        path = fmap.parent
    elif isinstance(fmap, NodeMap):
        path = fmap.path
    elif isinstance(fmap, MoveMap) and fmap.parent and fmap.dest[0][:1] == fmap.parent[:1]:
        path = fmap.parent  # a move inside one top-level statement (lift_alloc)
    else:
        return None
    return path[0][1] if path and path[0][0] == "body" else None


def _is_retag(fmap: PathMap | None) -> bool:
    """Whether the step's map is that of one ``Editor.retag`` (``IN_PLACE``), the only
    steps ``verify_step``'s descent to one retagged statement can pass (a hint: the descent
    checks by identity); None (no map): it may be."""
    return fmap is None or (isinstance(fmap, NodeMap) and fmap.survivors is IN_PLACE)


def _passes_inserted(new: ProcDef, old: ProcDef, fmap: PathMap) -> bool:
    """Whether the step made ``new`` from the valid ``old`` by inserting ``pass`` statements
    into one block and nothing else, which keeps every invariant (a ``pass`` binds and reads
    nothing; the statements after it see the same bindings). The step's map says so: one
    splice removing nothing (the editor rebuilt only the nodes on its path), parameters and
    asserts the very objects of ``old``."""
    if not isinstance(fmap, SpliceMap) or fmap.lo != fmap.hi:
        return False
    if new.args is not old.args or new.preds is not old.preds or not verify_mod.known_valid(old):
        return False
    added = stmt_list(new, fmap.parent, fmap.attr)[fmap.lo : fmap.lo + fmap.n_new]
    return all(type(s) is Pass for s in added)


_CURSOR_OR_TOMBSTONE: tuple[type, ...] = (Cursor, Tombstone)
"""A tuple, not a union: ``isinstance`` with a union is ~0.1 us slower in Python 3.11 when it
does not match, as for every location ``_bind`` is given."""


def _bind(proc: Proc, value: Any, field: str, prim: str) -> Any:
    """A returned location as a cursor of ``proc``, checked to point into it."""
    if isinstance(value, tuple):
        return tuple(_bind(proc, v, field, prim) for v in value)
    if isinstance(value, Dead):
        return InvalidCursor(proc, NoLoc(value.hint))
    if isinstance(value, _CURSOR_OR_TOMBSTONE):
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
    "ArgSpec",
    "Buffer",
    "Condition",
    "Index",
    "NewName",
    "PrimCursors",
    "Rewrite",
    "Settings",
    "Verdict",
    "Window",
    "can",
    "check_new_name",
    "checks_passed",
    "coerce",
    "fail",
    "prim_cursors",
    "primitive",
    "settings",
]
