"""The ``cursched`` command: compile what a schedule file schedules to C, show a proc.

Usage::

    cursched compile FILE.py[:NAME] [-o DIR] [--proc NAME ...] [--name STEM] [--unscheduled]
                     [--target c|cuda]
    cursched show FILE.py:NAME [--history] [--unscheduled]
    cursched cache prune [--max-size SIZE] [--max-age DAYS]
    cursched tune FILE.py [--budget N] [--db FILE.sqlite] ...   (see ``cursched.tune.cli``)
    cursched --version

``compile`` and ``show`` run FILE.py (with ``runpy``; ``__name__`` is not ``"__main__"``, so
the file's ``if __name__ == "__main__":`` block does not run) and then work on its
**targets**.

The schedule-file convention (docs/cli.md): a file declares what it produces with a
module-level function ``scheduled()``, taking no arguments and returning the scheduled procs
(an iterable of ``Proc``, or one ``Proc``)::

    def scheduled() -> list[Proc]:
        return [schedule(sgemm)]

The targets are the procs ``scheduled()`` returns, keyed by their names, which shadow the
module-level procs of the same name (the unscheduled inputs); module-level procs that
``scheduled()`` does not return stay reachable by name. Without ``scheduled()`` the targets are
the module-level procs as written. ``compile`` with no name writes the procs ``scheduled()``
returns (else every module-level proc but the instructions). ``--unscheduled`` takes the
module-level procs as written instead.

Naming a proc with an empty history (an input nobody scheduled) from a file that has a schedule
(a ``scheduled()``, or module-level procs made by primitives) prints a warning naming the
targets to use instead. With ``--target cuda``, ``compile`` writes the ``.cu`` text of each
proc instead (``STEM.cu``, or ``STEM_PROC.cu`` for several). Errors print one line,
``cursched: error: ...``, and exit 1.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cursched.errors import CurschedError
from cursched.proc import Proc
from cursched.tune.cli import TuneCliError
from cursched.tune.cli import add_parser as add_tune_parser

#: The name of the function a schedule file defines to declare the procs it produces.
SCHEDULED = "scheduled"


class CliError(Exception):
    """A user error of the command line (printed as one line, exit status 1)."""


def version() -> str:
    """cursched's version, from the installed package's metadata (``cursched.__version__``;
    ``0+unknown`` when the package runs from a source tree that was never installed)."""
    from cursched import __version__

    return __version__


def _root(p: Proc) -> Proc:
    """The version ``@proc`` made, at the start of ``p``'s history."""
    while (parent := p.parent()) is not None:
        p = parent
    return p


@dataclass
class ScheduleFile:
    """A schedule file after running it: its module-level procs and its declared targets.

    Attributes:
        path: the file, as given.
        module: the module-level procs (public names) as the file defines them.
        scheduled: the procs ``scheduled()`` returned, by name; None when the file defines no
            ``scheduled()``.
    """

    path: str
    module: dict[str, Proc]
    scheduled: dict[str, Proc] | None
    warnings: list[str] = field(default_factory=list)

    def has_schedule(self) -> bool:
        """Whether the file schedules anything: a ``scheduled()``, or a module-level proc
        made by primitives."""
        return self.scheduled is not None or any(p.version > 0 for p in self.module.values())

    def targets(self, unscheduled: bool = False) -> dict[str, Proc]:
        """Every proc reachable by name: the scheduled ones over the module-level ones."""
        out = dict(self.module)
        if self.scheduled is not None and not unscheduled:
            out.update(self.scheduled)
        return out

    def defaults(self, unscheduled: bool = False) -> list[Proc]:
        """What ``compile`` writes when no proc is named."""
        if self.scheduled is not None and not unscheduled:
            return list(self.scheduled.values())
        return [p for p in self.module.values() if not p.is_instr()]

    def get(self, name: str, unscheduled: bool = False) -> Proc:
        """The target called ``name``; warns (in ``warnings``) when it is an unscheduled input
        of a file that has a schedule.

        Raises:
            CliError: the file has no proc of that name.
        """
        targets = self.targets(unscheduled)
        if name not in targets:
            raise CliError(
                f"{self.path} defines no proc {name}"
                f" (it defines {', '.join(sorted(targets)) or 'none'})"
            )
        p = targets[name]
        declared = self.scheduled is not None and name in self.scheduled
        if not unscheduled and not declared and p.version == 0 and not p.is_instr():
            hint = self._scheduled_from(p)
            if hint:
                use = " or ".join(f"{self.path}:{n}" for n in hint)
                self.warnings.append(
                    f"{name} in {self.path} has an empty history (the unscheduled input);"
                    f" the file's schedule produces {', '.join(hint)}: use {use}"
                    " (or pass --unscheduled to mean the input)"
                )
        return p

    def _scheduled_from(self, p: Proc) -> list[str]:
        """The names of the scheduled targets made from ``p`` (else all scheduled targets)."""
        if not self.has_schedule():
            return []
        made = {
            n: q for n, q in self.targets().items() if q.version > 0 or n in (self.scheduled or {})
        }
        mine = [n for n, q in made.items() if _root(q) is p and q is not p]
        return mine or sorted(made)


def _as_procs(value: object, path: str) -> list[Proc]:
    if isinstance(value, Proc):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        items = list(value)
        bad = [type(v).__name__ for v in items if not isinstance(v, Proc)]
        if not bad:
            return items
        raise CliError(f"{path}: {SCHEDULED}() returned a {', '.join(bad)} among its procs")
    raise CliError(f"{path}: {SCHEDULED}() must return Procs, not {type(value).__name__}")


def load(path: str) -> ScheduleFile:
    """Run the schedule file at ``path`` and its ``scheduled()``.

    Raises:
        CliError: the file is missing, raises, exits, or its ``scheduled()`` returns something
            other than procs of distinct names.
    """
    file = Path(path)
    if not file.is_file():
        raise CliError(f"no such file: {path}")
    try:
        ns: dict[str, Any] = runpy.run_path(str(file), run_name="<cursched>")
        fn = ns.get(SCHEDULED)
        produced = fn() if callable(fn) else None
    except CurschedError as e:
        raise CliError(str(e).splitlines()[0]) from None
    except SystemExit as e:
        raise CliError(f"{path} exited ({e.code}) while loading") from None
    except Exception as e:  # the user's file may raise anything; report it in one line
        raise CliError(f"{path}: {type(e).__name__}: {e}") from None
    module = {k: v for k, v in ns.items() if isinstance(v, Proc) and not k.startswith("_")}
    scheduled: dict[str, Proc] | None = None
    if callable(fn):
        scheduled = {}
        for p in _as_procs(produced, path):
            if p.name() in scheduled:
                raise CliError(f"{path}: {SCHEDULED}() returned two procs named {p.name()}")
            scheduled[p.name()] = p
    return ScheduleFile(path, module, scheduled)


def _split_target(target: str) -> tuple[str, str | None]:
    """``FILE.py:NAME`` -> (FILE.py, NAME); a plain existing file -> (file, None)."""
    file, sep, name = target.rpartition(":")
    if not sep or Path(target).is_file() or not file:
        return target, None
    return file, name


def _flush(sf: ScheduleFile) -> None:
    for w in sf.warnings:
        print(f"cursched: warning: {w}", file=sys.stderr)
    sf.warnings.clear()


def _compile(args: argparse.Namespace) -> int:
    from cursched.codegen.c import generate_unit
    from cursched.codegen.c.naming import sanitize

    file, name = _split_target(args.file)
    names = [*([name] if name else []), *(args.proc or [])]
    sf = load(file)
    try:
        chosen = (
            [sf.get(n, args.unscheduled) for n in names] if names else sf.defaults(args.unscheduled)
        )
    finally:
        _flush(sf)
    if not chosen:
        raise CliError(f"{file} defines no procs")
    stem = sanitize(args.name or Path(file).stem)
    if args.target == "cuda":
        return _compile_cuda(chosen, stem, Path(args.output))
    try:
        unit = generate_unit(stem, [p.ir() for p in chosen])
    except CurschedError as e:
        raise CliError(str(e).splitlines()[0]) from None
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.c").write_text(unit.c_source)
    (out / f"{stem}.h").write_text(unit.h_source)
    what = ", ".join(f"{p.name()} v{p.version}" for p in chosen)
    print(f"wrote {out / stem}.c and {out / stem}.h ({what})")
    return 0


def _compile_cuda(chosen: list[Proc], stem: str, out: Path) -> int:
    from cursched.codegen.cuda import generate_cuda

    texts: list[tuple[Path, str]] = []
    for p in chosen:
        try:
            src = generate_cuda(p.ir()).source
        except CurschedError as e:
            raise CliError(str(e).splitlines()[0]) from None
        name = f"{stem}.cu" if len(chosen) == 1 else f"{stem}_{p.name()}.cu"
        texts.append((out / name, src))
    out.mkdir(parents=True, exist_ok=True)
    for path, src in texts:
        path.write_text(src)
    print(f"wrote {', '.join(str(t[0]) for t in texts)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    file, name = _split_target(args.target)
    if name is None:
        raise CliError(f"expected FILE.py:NAME, got {args.target!r}")
    sf = load(file)
    try:
        p = sf.get(name, args.unscheduled)
    finally:
        _flush(sf)
    print(p.history() if args.history else str(p), end="" if args.history else "\n")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cursched`` command."""
    ap = argparse.ArgumentParser(
        prog="cursched",
        description="Compile cursched schedules to C; show procs and their schedules.",
        epilog="A schedule file declares what it produces with a module-level function"
        " scheduled() returning the scheduled procs (see docs/cli.md).",
    )
    ap.add_argument("--version", action="version", version=f"cursched {version()}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser(
        "compile",
        help="write the .c/.h of the procs a schedule file produces",
        description="Run a schedule file and write one .c/.h pair with the procs its"
        " scheduled() returns (without one: its module-level procs) and every proc they call.",
    )
    c.add_argument(
        "file", metavar="FILE.py[:NAME]", help="the schedule file (and one proc to compile)"
    )
    c.add_argument("-o", "--output", default=".", metavar="DIR", help="output directory")
    c.add_argument(
        "--proc",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="compile only these procs (and what they call); may be repeated",
    )
    c.add_argument("--name", metavar="STEM", help="file stem of the outputs (default: FILE)")
    c.add_argument(
        "--target",
        choices=("c", "cuda"),
        default="c",
        help="c: a .c/.h pair (default); cuda: the .cu text of each proc's kernels",
    )
    s = sub.add_parser(
        "show",
        help="print a proc or its schedule",
        description="Run a schedule file and print one of its procs (the scheduled one).",
    )
    s.add_argument("target", metavar="FILE.py:NAME", help="the file and the proc's name")
    s.add_argument(
        "--history",
        action="store_true",
        help="print the schedule that made the proc, as a script that replays it",
    )
    for p in (c, s):
        p.add_argument(
            "--unscheduled",
            action="store_true",
            help="the module-level procs as the file writes them, not what scheduled() returns",
        )
    c.set_defaults(run=_compile)
    s.set_defaults(run=_show)
    _add_cache_command(sub)
    add_tune_parser(sub)
    return ap


def _add_cache_command(sub: Any) -> None:
    """``cursched cache prune [--max-size SIZE] [--max-age DAYS]`` (the build cache)."""
    cache = sub.add_parser(
        "cache", help="manage the build cache", description="Manage the C build cache."
    )
    actions = cache.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    pr = actions.add_parser(
        "prune",
        help="remove old or least recently used libraries",
        description="Remove cached libraries older than --max-age, then the least recently"
        " used until the cache takes at most --max-size (default: the size cap,"
        " CURSCHED_CACHE_MAX_BYTES or 1G).",
    )
    pr.add_argument("--max-size", metavar="SIZE", help="e.g. 200M, 1G, 0 (empty the cache)")
    pr.add_argument("--max-age", type=float, metavar="DAYS", help="remove entries older")
    pr.set_defaults(run=_cache_prune)


def _cache_prune(args: argparse.Namespace) -> int:
    from cursched.codegen.build import cache_dir
    from cursched.codegen.cache import max_bytes_setting, parse_bytes, prune

    try:
        size = max_bytes_setting() if args.max_size is None else parse_bytes(args.max_size)
    except ValueError:
        raise CliError(f"--max-size: not a size: {args.max_size!r}") from None
    if args.max_age is not None and args.max_age < 0:
        raise CliError("--max-age: days cannot be negative")
    age = None if args.max_age is None else args.max_age * 86400.0
    d = cache_dir()
    r = prune(d, max_bytes=size, max_age_seconds=age)
    print(
        f"{d}: removed {len(r.removed)} libraries ({r.freed} bytes), kept {r.kept}"
        f" ({r.kept_bytes} bytes)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cursched`` console script; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except (CliError, TuneCliError) as e:
        print(f"cursched: error: {e}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
