"""The ``cursched`` command: compile a schedule file to C, show a proc.

Usage::

    cursched compile FILE.py [-o DIR] [--proc NAME ...] [--name STEM] [--target c|cuda]
    cursched show FILE.py:NAME
    cursched cache prune [--max-size SIZE] [--max-age DAYS]

``compile`` runs FILE.py (with ``runpy``, as ``__main__`` is not set: the file's
``if __name__ == "__main__":`` block does not run) and writes one ``.c``/``.h`` pair holding
every module-level proc (or those named by ``--proc``) and the procs they call. Instruction
procs are left out unless named. With ``--target cuda`` it writes the ``.cu`` text of each
proc instead (``STEM.cu``, or ``STEM_PROC.cu`` for several). Errors print one line,
``cursched: error: ...``, and exit 1.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Any

from cursched.errors import CurschedError
from cursched.proc import Proc


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
    print(f"wrote {out / stem}.c and {out / stem}.h ({', '.join(p.name() for p in chosen)})")
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
    c.add_argument(
        "--target",
        choices=("c", "cuda"),
        default="c",
        help="c: a .c/.h pair (default); cuda: the .cu text of each proc's kernels",
    )
    c.set_defaults(run=_compile)
    s = sub.add_parser(
        "show", help="print a proc", description="Run a schedule file and print one of its procs."
    )
    s.add_argument("target", metavar="FILE.py:NAME", help="the file and the proc's name")
    s.set_defaults(run=_show)
    _add_cache_command(sub)
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
    except CliError as e:
        print(f"cursched: error: {e}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
