"""The ``cursched`` command: compile a schedule file to C, show a proc.

Usage::

    cursched compile FILE.py [-o DIR] [--proc NAME ...] [--name STEM]
    cursched show FILE.py:NAME
    cursched tune FILE.py [--budget N] [--db FILE.sqlite] ...   (see ``cursched.tune.cli``)

``compile`` runs FILE.py (with ``runpy``, as ``__main__`` is not set: the file's
``if __name__ == "__main__":`` block does not run) and writes one ``.c``/``.h`` pair holding
every module-level proc (or those named by ``--proc``) and the procs they call. Instruction
procs are left out unless named. Errors print one line, ``cursched: error: ...``, and exit 1.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Any

from cursched.errors import CurschedError
from cursched.proc import Proc
from cursched.tune.cli import TuneCliError
from cursched.tune.cli import add_parser as add_tune_parser


class CliError(Exception):
    """A user error of the command line (printed as one line, exit status 1)."""


def _load(path: str) -> dict[str, Proc]:
    file = Path(path)
    if not file.is_file():
        raise CliError(f"no such file: {path}")
    try:
        ns: dict[str, Any] = runpy.run_path(str(file), run_name="<cursched>")
    except CurschedError as e:
        raise CliError(str(e).splitlines()[0]) from None
    except SystemExit as e:
        raise CliError(f"{path} exited ({e.code}) while loading") from None
    except Exception as e:  # the user's file may raise anything; report it in one line
        raise CliError(f"{path}: {type(e).__name__}: {e}") from None
    return {k: v for k, v in ns.items() if isinstance(v, Proc) and not k.startswith("_")}


def _compile(args: argparse.Namespace) -> int:
    from cursched.codegen.c import generate_unit
    from cursched.codegen.c.naming import sanitize

    procs = _load(args.file)
    if args.proc:
        missing = [n for n in args.proc if n not in procs]
        if missing:
            raise CliError(
                f"{args.file} defines no proc {', '.join(missing)}"
                f" (it defines {', '.join(sorted(procs)) or 'none'})"
            )
        chosen = [procs[n] for n in args.proc]
    else:
        chosen = [p for p in procs.values() if not p.is_instr()]
    if not chosen:
        raise CliError(f"{args.file} defines no procs")
    stem = sanitize(args.name or Path(args.file).stem)
    try:
        unit = generate_unit(stem, [p.ir() for p in chosen])
    except CurschedError as e:
        raise CliError(str(e).splitlines()[0]) from None
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.c").write_text(unit.c_source)
    (out / f"{stem}.h").write_text(unit.h_source)
    print(f"wrote {out / stem}.c and {out / stem}.h ({', '.join(p.name() for p in chosen)})")
    return 0


def _show(args: argparse.Namespace) -> int:
    file, sep, name = args.target.rpartition(":")
    if not sep or not file or not name:
        raise CliError(f"expected FILE.py:NAME, got {args.target!r}")
    procs = _load(file)
    if name not in procs:
        raise CliError(f"{file} defines no proc {name} (it defines {', '.join(sorted(procs))})")
    print(str(procs[name]))
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cursched`` command."""
    ap = argparse.ArgumentParser(
        prog="cursched", description="Compile cursched schedules to C; show procs."
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser(
        "compile",
        help="write the .c/.h of the procs a schedule file defines",
        description="Run a schedule file and write one .c/.h pair with its procs"
        " (module-level Proc values) and every proc they call.",
    )
    c.add_argument("file", metavar="FILE.py", help="the schedule file")
    c.add_argument("-o", "--output", default=".", metavar="DIR", help="output directory")
    c.add_argument(
        "--proc",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="compile only these procs (and what they call); may be repeated",
    )
    c.add_argument("--name", metavar="STEM", help="file stem of the outputs (default: FILE)")
    c.set_defaults(run=_compile)
    s = sub.add_parser(
        "show", help="print a proc", description="Run a schedule file and print one of its procs."
    )
    s.add_argument("target", metavar="FILE.py:NAME", help="the file and the proc's name")
    s.set_defaults(run=_show)
    _add_tune(sub)
    return ap


def _add_tune(sub: Any) -> None:
    add_tune_parser(sub)


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
