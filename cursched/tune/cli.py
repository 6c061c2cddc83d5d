"""``cursched tune FILE.py``: tune the ``Tunable`` a schedule file declares.

Usage::

    cursched tune FILE.py [--name TUNABLE] [--budget N] [--db FILE.sqlite] [--workers N]
                          [--sampler tpe|grid|random] [--ray ADDRESS] [--plot FILE.png]

The file is loaded as a module (its ``if __name__ == "__main__":`` block does not run) and
must define a module-level ``cursched.tune.Tunable`` (``--name`` picks one of several).
"""

from __future__ import annotations

import argparse
from typing import Any

from cursched.errors import CurschedError


class TuneCliError(Exception):
    """A user error of ``cursched tune`` (printed as one line by the ``cursched`` command)."""


def add_parser(sub: Any) -> None:
    """Add the ``tune`` subcommand to the ``cursched`` command's subparsers."""
    t = sub.add_parser(
        "tune",
        help="search a schedule file's parameters for the fastest schedule",
        description="Load FILE.py, tune the Tunable it declares (every candidate checked"
        " against the untuned proc and timed) and print the best candidates.",
    )
    t.add_argument("file", metavar="FILE.py", help="a schedule file declaring a tune.Tunable")
    t.add_argument("--name", metavar="TUNABLE", help="which Tunable (when it declares several)")
    t.add_argument("--budget", type=int, default=32, help="candidates to visit (default 32)")
    t.add_argument("--db", metavar="FILE.sqlite", help="the record to resume from and add to")
    t.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    t.add_argument("--sampler", choices=("tpe", "grid", "random"), default="tpe")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--ray", metavar="ADDRESS", help="run candidates on this Ray cluster")
    t.add_argument("--plot", metavar="FILE.png", help="save the search's plot here")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cursched import tune

    try:
        module = tune.load_file(args.file)
    except CurschedError as e:
        raise TuneCliError(str(e).splitlines()[0]) from None
    found = tune.tunables_of(module)
    if args.name is not None:
        if args.name not in found:
            raise TuneCliError(f"{args.file} declares no Tunable {args.name} ({sorted(found)})")
        tunable = found[args.name]
    elif len(found) == 1:
        tunable = next(iter(found.values()))
    else:
        raise TuneCliError(
            f"{args.file} declares {len(found)} Tunables: pick one with --name"
            f" ({', '.join(sorted(found)) or 'none'})"
        )
    try:
        result = tune.search(
            tunable,
            budget=args.budget,
            db=args.db,
            workers=args.workers,
            cluster=args.ray,
            sampler=args.sampler,
            seed=args.seed,
            progress=not args.quiet,
        )
    except CurschedError as e:
        raise TuneCliError(str(e)) from None
    _print_summary(result)
    if args.plot:
        tune.plot_search(result.outcomes, args.plot)
        print(f"plot: {args.plot}")
    return 0


def _print_summary(result: Any) -> None:
    ok = sorted((o for o in result.outcomes if o.time_s is not None), key=lambda o: o.time_s)
    print(
        f"{len(result.outcomes)} candidates: {result.measured} measured, {result.reused} from"
        f" the record, {len(result.infeasible)} infeasible, in {result.elapsed_s:.1f} s"
    )
    for o in ok[:5]:
        print(f"  {o.time_s * 1e3:10.4f} ms  {o.params}")
    for o in result.infeasible[:5]:
        print(f"  {'infeasible':>13}  {o.params}: {o.error_class}")
    if result.best_params is not None:
        print(f"best: {result.best_params} ({result.best_time * 1e3:.4f} ms)")
