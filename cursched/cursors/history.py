"""``Proc.history()``: the schedule that made a proc, as a Python script that replays it.

Each step becomes ``p, (field, ...) = primitive(p, args...)`` with the variables named after
the fields of the returned cursors dataclass. An argument that was a cursor returned by an
earlier step is written as that step's variable when the variable still holds it; any other
cursor is written as a locator on the current proc (``p.at("body[0].body[1]")``), which replays
to the same node because the script rebuilds the same versions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cursched.cursors.kinds import Cursor, Tombstone
from cursched.cursors.locs import ArgLoc, BlockLoc, GapLoc, Loc, NodeLoc, NoLoc, format_path

if TYPE_CHECKING:
    from cursched.cursors.lineage import StepRecord
    from cursched.proc import Proc


def locator(loc: Loc, var: str = "p") -> str:
    """Python text that, evaluated with ``var`` bound to the proc, yields a cursor at ``loc``."""
    match loc:
        case NodeLoc():
            return f"{var}.at({format_path(loc.path)!r})"
        case BlockLoc():
            head = format_path(loc.parent)
            text = f"{head + '.' if head else ''}{loc.attr}[{loc.lo}:{loc.hi}]"
            return f"{var}.at({text!r})"
        case GapLoc() if loc.side == "start":
            return f"{var}.at({format_path(loc.anchor)!r}).start({loc.attr!r})"
        case GapLoc():
            return f"{var}.at({format_path(loc.anchor)!r}).{loc.side}()"
        case ArgLoc():
            return f"{var}.at('args[{loc.index}]')"
        case NoLoc():
            return "None"
    raise AssertionError(loc)


class _Script:
    """Builds the script, tracking which variable holds which step's result."""

    def __init__(self, reserved: set[str]) -> None:
        self.reserved = reserved
        self.procs: set[str] = set()
        self.lines: list[str] = []
        # (version whose step bound it, field) -> location it holds; variables are written as
        # placeholders first and named at the end, once every use is known (``names``)
        self.vars: dict[tuple[int, str], Any] = {}
        self.last_use: dict[tuple[int, str], int] = {}
        self.current = 0

    def value(self, raw: Any, forwarded: Any) -> str:
        if isinstance(raw, Cursor):
            return self.cursor(raw, forwarded)
        if isinstance(raw, tuple) and raw and all(isinstance(r, Cursor) for r in raw):
            versions = {r.proc().version for r in raw}
            if len(versions) == 1:
                whole = self.held(versions.pop(), tuple(r.loc for r in raw))
                if whole is not None:
                    return whole
        if isinstance(raw, tuple | list):
            items = [self.value(r, f) for r, f in zip(raw, forwarded, strict=True)]
            inner = ", ".join(items) + ("," if len(items) == 1 and isinstance(raw, tuple) else "")
            return f"({inner})" if isinstance(raw, tuple) else f"[{inner}]"
        return literal(raw, self.procs)

    def cursor(self, raw: Cursor, forwarded: Any) -> str:
        held = self.held(raw.proc().version, raw.loc)
        if held is None and isinstance(raw.loc, GapLoc):
            loc = raw.loc
            anchor = self.held(raw.proc().version, NodeLoc(loc.anchor))
            how = f"start({loc.attr!r})" if loc.side == "start" else f"{loc.side}()"
            held = f"{anchor}.{how}" if anchor is not None else None
        if held is not None:
            return held
        assert isinstance(forwarded, Cursor)
        return locator(forwarded.loc)

    def held(self, version: int, loc: Loc | tuple[Loc, ...]) -> str | None:
        """The variable (or ``var[k]``) holding ``loc`` of ``version``, if one still does."""
        for key, held in self.vars.items():
            if key[0] != version:
                continue
            if held == loc:
                return self.use(key)
            if isinstance(held, tuple) and loc in held:
                return f"{self.use(key)}[{held.index(loc)}]"
        return None

    def use(self, key: tuple[int, str]) -> str:
        self.last_use[key] = self.current
        return _placeholder(key)

    def step(self, q: Proc, step: StepRecord) -> None:
        self.current = q.version
        args = [self.value(r, f) for r, f in zip(step.args, step.inputs, strict=True)]
        args += [
            f"{k}={self.value(r, f)}"
            for (k, r), (_, f) in zip(step.kwargs, step.kw_inputs, strict=True)
        ]
        names = [_placeholder((q.version, name)) for name, _ in step.results]
        comma = "," if len(names) == 1 else ""
        lhs = f"p, ({', '.join(names)}{comma})" if names else "p, _"
        self.lines.append(f"{lhs} = {step.primitive}({', '.join(['p', *args])})")
        for name, locs in step.results:
            self.vars[(q.version, name)] = locs

    def names(self) -> dict[tuple[int, str], str]:
        """A variable name per result: the field's name, suffixed (``outer_1``) only when an
        earlier result of the same name is still used after this one is bound, and never a
        name the script needs for a primitive or the proc.
        """
        taken: dict[str, list[tuple[int, str]]] = {}
        out: dict[tuple[int, str], str] = {}
        for key in sorted({_key for line in self.lines for _key in _placeholders(line)}):
            version, field = key
            base = f"{field}_" if field in self.reserved else field
            k = 0
            while True:
                name = base if k == 0 else f"{base}_{k}"
                holders = taken.get(name, [])
                if all(self.last_use.get(h, h[0]) <= version for h in holders):
                    break
                k += 1
            taken.setdefault(name, []).append(key)
            out[key] = name
        return out

    def text(self) -> list[str]:
        """The script's lines with every placeholder replaced by its variable name."""
        names = self.names()
        lines = []
        for line in self.lines:
            for key in _placeholders(line):
                line = line.replace(_placeholder(key), names[key])
            lines.append(line)
        return lines


def _placeholder(key: tuple[int, str]) -> str:
    return f"\x00{key[0]}:{key[1]}\x00"


def _placeholders(line: str) -> list[tuple[int, str]]:
    parts = line.split("\x00")
    keys = []
    for part in parts[1::2]:
        version, field = part.split(":", 1)
        keys.append((int(version), field))
    return keys


def literal(v: Any, procs: set[str] | None = None) -> str:
    """Python text for a plain argument value (numbers, strings, memories, types, procs).

    Args:
        v: the value.
        procs: collects the names of the procs mentioned (the script expects them in scope).
    """
    from cursched.proc import Proc

    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!r})"
    if v is None or isinstance(v, bool | int | float | str):
        return repr(v)
    if isinstance(v, tuple | list):
        inner = ", ".join(literal(x, procs) for x in v) + ("," if len(v) == 1 else "")
        return f"({inner})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, Proc):
        if procs is not None:
            procs.add(v.name())
        return v.name()
    if isinstance(v, type):
        return v.__name__
    if isinstance(v, Tombstone):
        return repr(repr(v))
    name = getattr(v, "name", None)
    return str(name) if isinstance(name, str) else repr(v)


def history_script(p: Proc, var: str | None = None) -> str:
    """The schedule that made ``p`` from its original, as a runnable script.

    Args:
        p: the final version.
        var: the name the original proc has where the script runs (default: its name).
    """
    chain: list[Proc] = []
    q: Proc | None = p
    while q is not None:
        chain.append(q)
        q = q.parent()
    chain.reverse()
    root = chain[0]
    reserved = {"p", root.name()}
    for q in chain[1:]:
        step = q.step()
        assert step is not None
        reserved.add(step.primitive)
    script = _Script(reserved)
    for q in chain[1:]:
        step = q.step()
        assert step is not None
        script.step(q, step)
    head = [f"# schedule of {root.name()}: {len(chain) - 1} step(s), v0 -> v{p.version}"]
    if script.procs:
        head.append(f"# other procs it uses (bind them first): {', '.join(sorted(script.procs))}")
    head += ["from cursched import *  # noqa: F403", "", f"p = {var or root.name()}"]
    return "\n".join([*head, *script.text()]) + "\n"
