"""Autotuning schedules: search a schedule's parameters, every candidate a checked proc.

A schedule is a function of named parameters; a ``Space`` lists their values. ``search``
proposes candidates with an optuna sampler (TPE, grid or random), and for each one runs the
schedule (a refusal by a primitive makes it infeasible, recorded with the error's class),
compiles it, checks its outputs against the untuned proc's (a difference stops the search:
``WrongResultError``) and times it (warm-up, median of repeats, one thread by default). It
runs candidates in this process, in a pool of pinned worker processes, or as Ray tasks, and
keeps them in a SQLite record that later searches resume from.

Example:
    >>> space = tune.Space(tile=[8, 16, 32], unroll=[True, False])      # doctest: +SKIP
    >>> result = tune.search(tiled, sgemm, space, inputs=make_inputs, budget=6,
    ...                      db="tune.sqlite", workers=2)               # doctest: +SKIP
    >>> result.best_params, result.best_time                             # doctest: +SKIP
    >>> p = tune.best("tune.sqlite", sgemm)                             # doctest: +SKIP
"""

from cursched.tune.errors import SpaceError, TargetError, TuneError, WrongResultError
from cursched.tune.evaluate import Outcome, Timing, Tolerance
from cursched.tune.plots import plot_search
from cursched.tune.record import Record, Row, this_machine
from cursched.tune.search import SearchResult, best, best_rows, replay, search
from cursched.tune.space import Space
from cursched.tune.target import Tunable, load_file, tunables_of

__all__ = [
    "Outcome",
    "Record",
    "Row",
    "SearchResult",
    "Space",
    "SpaceError",
    "TargetError",
    "Timing",
    "Tolerance",
    "Tunable",
    "TuneError",
    "WrongResultError",
    "best",
    "best_rows",
    "load_file",
    "plot_search",
    "replay",
    "search",
    "this_machine",
    "tunables_of",
]
