"""The search: a sampler proposes candidates, executors measure them, the record keeps them.

The strategy is optuna's (TPE by default; grid and random as options) through its ask-and-tell
interface: the search asks for up to as many candidates as the executor runs at once, tells
each outcome back as it arrives (an infeasible candidate as a failed trial), and skips, with
their recorded value, the candidates measured earlier for the same target on this machine.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cursched.proc import Proc
from cursched.tune.errors import SpaceError, TargetError, TuneError, WrongResultError
from cursched.tune.evaluate import INFEASIBLE, OK, WRONG, Evaluator, Outcome, Timing, Tolerance
from cursched.tune.record import Record, Row, this_machine
from cursched.tune.space import Space, params_key
from cursched.tune.target import (
    Inputs,
    ScheduleFn,
    Tunable,
    reference,
    resolve_inputs,
    target_key,
)
from cursched.tune.workers import Executor, InProcess, ProcessPool, RayTasks, _Job

SAMPLERS = ("tpe", "grid", "random")


@dataclass
class SearchResult:
    """What a search found.

    Attributes:
        best_params: the fastest candidate's parameters (None when none was feasible).
        best_time: its median time in seconds.
        best: its proc (replayed from the record's history when it was measured earlier).
        outcomes: every candidate of this search, measured or taken from the record, in order.
        measured: how many were measured in this search.
        reused: how many were taken from the record.
        elapsed_s: the search's wall time.
    """

    best_params: dict[str, Any] | None
    best_time: float | None
    best: Proc | None
    outcomes: list[Outcome] = field(default_factory=list)
    measured: int = 0
    reused: int = 0
    elapsed_s: float = 0.0

    @property
    def infeasible(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status != OK]


def search(
    schedule: ScheduleFn | Tunable,
    proc: Proc | None = None,
    space: Space | None = None,
    *,
    inputs: Callable[[], Inputs] | Inputs | None = None,
    budget: int = 32,
    db: str | Path | None = None,
    workers: int = 1,
    cluster: str | None = None,
    use_ray: bool | None = None,
    gpus: bool = False,
    sampler: str = "tpe",
    seed: int = 0,
    timing: Timing | None = None,
    tolerance: Tolerance | None = None,
    threads: int = 1,
    compile_options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> SearchResult:
    """Search ``space`` for the fastest schedule of ``proc``.

    Args:
        schedule: ``schedule(proc, **params) -> Proc``, or a ``Tunable`` (then ``proc``,
            ``space`` and ``inputs`` come from it).
        proc: the untuned proc (its compiled result is the reference).
        space: the parameters' values.
        inputs: the timed call's arguments, or a module-level function returning them.
        budget: how many candidates the search visits, counting those reused from the record
            (fewer when the space runs out): a second search with the same budget and record
            measures nothing again.
        db: the SQLite record; candidates recorded there for this target on this machine are
            reused, not measured again. None: nothing is recorded.
        workers: worker processes on this machine (1: the search's own process).
        cluster: a Ray address (``ray://host:port``) to run candidates as Ray tasks.
        use_ray: run on Ray; default: when ``cluster`` is given or ``ray.init`` was called.
        gpus: with Ray, give each task one GPU (CUDA schedules).
        sampler: ``"tpe"``, ``"grid"`` or ``"random"`` (optuna's samplers).
        seed: the sampler's seed.
        timing: warm-up calls and repeats (median) per candidate.
        tolerance: how close outputs must be to the reference's.
        threads: OpenMP threads of each worker (``par`` loops); 1 by default.
        compile_options: passed to ``Proc.compile``.
        progress: show a progress bar with the best time so far.

    Returns:
        The best candidate and every outcome.

    Raises:
        WrongResultError: a candidate computed a different result (the search stops).
        SpaceError: the sampler is unknown or the space is malformed.
        TargetError: the schedule or inputs cannot be loaded by worker processes.
    """
    t = _tunable(schedule, proc, space, inputs)
    if sampler not in SAMPLERS:
        raise SpaceError(f"unknown sampler {sampler!r}: use one of {SAMPLERS}")
    timing = timing or Timing()
    tolerance = tolerance or Tolerance()
    options = dict(compile_options or {})
    started = time.perf_counter()
    executor = _executor(t, workers, cluster, use_ray, gpus, threads, timing, tolerance, options)
    record = Record(db) if db is not None else None
    try:
        loop = _Loop(t, executor, record, sampler, seed, budget, progress)
        loop.run()
    finally:
        executor.shutdown()
    result = loop.result()
    result.elapsed_s = time.perf_counter() - started
    return result


def _tunable(
    schedule: ScheduleFn | Tunable,
    proc: Proc | None,
    space: Space | None,
    inputs: Callable[[], Inputs] | Inputs | None,
) -> Tunable:
    if isinstance(schedule, Tunable):
        return schedule
    if proc is None or space is None or inputs is None:
        raise SpaceError("search(schedule, proc, space, inputs=...) needs all four")
    return Tunable(proc, schedule, space, inputs)


def _executor(
    t: Tunable,
    workers: int,
    cluster: str | None,
    use_ray: bool | None,
    gpus: bool,
    threads: int,
    timing: Timing,
    tolerance: Tolerance,
    options: dict[str, Any],
) -> Executor:
    if use_ray is None:
        use_ray = cluster is not None or _ray_running()
    if not use_ray and workers <= 1:
        return InProcess(Evaluator(t.proc, t.schedule, t.inputs, timing, tolerance, options))
    ref = reference(t)
    inputs = None if ref.inputs is not None else resolve_inputs(t.inputs)
    job = _Job(ref, inputs, timing, tolerance, options)
    if use_ray:
        return RayTasks(job, cluster, gpus, threads)
    return ProcessPool(job, workers, threads)


def _ray_running() -> bool:
    try:
        import ray
    except ImportError:
        return False
    return bool(ray.is_initialized())


class _Loop:
    """One search's ask-measure-tell loop."""

    def __init__(
        self,
        t: Tunable,
        executor: Executor,
        record: Record | None,
        sampler: str,
        seed: int,
        budget: int,
        progress: bool,
    ) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.t = t
        self.executor = executor
        self.record = record
        self.budget = min(budget, t.space.size)
        self.target = target_key(t)
        self.search_id = uuid.uuid4().hex[:12]
        self.study = optuna.create_study(
            direction="minimize", sampler=_sampler(t.space, sampler, seed)
        )
        self.dists: dict[str, Any] = {
            name: optuna.distributions.CategoricalDistribution(list(values))
            for name, values in t.space.params.items()
        }
        if sampler == "grid":
            # every grid point queued in order; optuna's GridSampler stops the study from
            # inside tell(), which only works under study.optimize
            for params in t.space.grid():
                self.study.enqueue_trial(params)
        self.known: dict[str, Outcome] = self._recorded()
        self.seen: set[str] = set()
        self.outcomes: list[Outcome] = []
        self.measured = 0
        self.reused = 0
        self.bar = _bar(self.budget) if progress else None

    def _recorded(self) -> dict[str, Outcome]:
        if self.record is None:
            return {}
        rows = self.record.rows(self.target, this_machine().key)
        return {params_key(r.params): _outcome(r) for r in rows if r.status != WRONG}

    def run(self) -> None:
        pending: dict[cf.Future[Outcome], Any] = {}
        stale_asks = 0
        while True:
            while (
                len(pending) < self.executor.width
                and len(self.seen) < self.budget
                and stale_asks < 20 * self.t.space.size
            ):
                trial = self.study.ask(self.dists)
                key = params_key(trial.params)
                if key in self.seen:
                    # the sampler proposed a point again: tell it the value it already has
                    self._tell(trial, self._known_outcome(key))
                    stale_asks += 1
                    continue
                self.seen.add(key)
                if key in self.known:
                    self.reused += 1
                    self.outcomes.append(self.known[key])
                    self._tell(trial, self.known[key])
                    continue
                pending[self.executor.submit(dict(trial.params))] = trial
            if not pending:
                return
            done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                trial = pending.pop(fut)
                self._finish(trial, _result(fut, trial.params))

    def _known_outcome(self, key: str) -> Outcome | None:
        for o in self.outcomes:
            if params_key(o.params) == key:
                return o
        return self.known.get(key)

    def _finish(self, trial: Any, outcome: Outcome) -> None:
        if outcome.status == WRONG:
            if self.record is not None:
                self.record.add(self.target, outcome, self.search_id)
            raise WrongResultError(
                f"candidate {outcome.params} computed a wrong result: {outcome.error_message}."
                " Every candidate is built by checked primitives, so this is a bug (or a step"
                " taken with unsafe_skip_checks=True); its schedule is on this error's"
                " .history",
                outcome.params,
                outcome.history,
            )
        self.measured += 1
        self.outcomes.append(outcome)
        if self.record is not None:
            self.record.add(self.target, outcome, self.search_id)
        self._tell(trial, outcome)
        if self.bar is not None:
            self.bar.update(1)
            best = self._best()
            if best is not None and best.time_s is not None:
                self.bar.set_postfix(best=f"{best.time_s * 1e3:.3g} ms", **_short(best.params))

    def _tell(self, trial: Any, outcome: Outcome | None) -> None:
        if outcome is None or outcome.status != OK or outcome.time_s is None:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, outcome.time_s)

    def _best(self) -> Outcome | None:
        ok = [o for o in self.outcomes if o.status == OK and o.time_s is not None]
        return min(ok, key=lambda o: o.time_s or 0.0) if ok else None

    def result(self) -> SearchResult:
        if self.bar is not None:
            self.bar.close()
        best = self._best()
        # the schedule re-run with the best parameters: exact, and unlike replaying the
        # history it needs no procs the schedule made on the way (instructions, kernels)
        best_proc = self.t.schedule(self.t.proc, **best.params) if best is not None else None
        return SearchResult(
            best.params if best else None,
            best.time_s if best else None,
            best_proc,
            self.outcomes,
            self.measured,
            self.reused,
        )


def _result(fut: cf.Future[Outcome], params: dict[str, Any]) -> Outcome:
    try:
        return fut.result()
    except BrokenProcessPool:
        raise TuneError(
            f"a worker process died while evaluating {params} (a crash of compiled code?)"
        ) from None


def _sampler(space: Space, name: str, seed: int) -> Any:
    import optuna

    if name in ("grid", "random"):
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(8, space.size))


def _bar(total: int) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="tuning", unit="candidate")


def _short(params: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in params.items()}


def _outcome(r: Row) -> Outcome:
    return Outcome(r.params, r.status, r.time_s, r.times, r.error_class, r.error_message, r.history)


def replay(history: str, proc: Proc, names: dict[str, Any] | None = None) -> Proc:
    """The proc that ``history`` (a ``Proc.history()`` script) builds from ``proc``.

    Args:
        history: the script.
        proc: the untuned proc, bound to its name.
        names: other values the script names (procs the schedule made or imported).

    Raises:
        TargetError: the script names something ``names`` does not bind.
    """
    env: dict[str, Any] = {**(names or {}), proc.name(): proc}
    try:
        exec(compile(history, f"<history of {proc.name()}>", "exec"), env)
    except NameError as e:
        raise TargetError(
            f"the recorded schedule of {proc.name()} names {e.name!r}, which the replay does"
            " not bind: pass it in names=, or schedule= to best() to re-run the schedule"
        ) from None
    replayed = env["p"]
    assert isinstance(replayed, Proc)
    return replayed


def best(
    db: str | Path,
    proc: Proc,
    *,
    target: str | None = None,
    machine: str | None = None,
    schedule: ScheduleFn | None = None,
) -> Proc:
    """The fastest recorded schedule of ``proc``, replayed from its history.

    Args:
        db: the record.
        proc: the untuned proc (the history's starting point).
        target: the record's target name (default: the only target tuning ``proc``).
        machine: a machine key (``record.this_machine().key``, the default), or ``"any"``.
        schedule: the schedule function, re-run with the recorded parameters when the
            history names procs the schedule made on the way (and so cannot replay alone).

    Raises:
        SpaceError: no feasible candidate is recorded, or ``target`` is ambiguous.
        TargetError: the history does not replay and no ``schedule`` is given.
    """
    rows = best_rows(db, proc, target=target, machine=machine)
    try:
        return replay(rows[0].history, proc)
    except TargetError:
        if schedule is None:
            raise
        return schedule(proc, **rows[0].params)


def best_rows(
    db: str | Path, proc: Proc, *, target: str | None = None, machine: str | None = None
) -> list[Row]:
    """The recorded feasible candidates of ``proc``'s target, fastest first."""
    record = Record(db)
    if target is None:
        names = [t for t in record.targets() if t.split(":")[1:2] == [proc.name()]]
        if len(names) != 1:
            raise SpaceError(f"{db}: {len(names)} targets tune {proc.name()}: name one ({names})")
        target = names[0]
    key = None if machine == "any" else (machine or this_machine().key)
    rows = [r for r in record.rows(target, key) if r.status == OK and r.time_s is not None]
    if not rows:
        raise SpaceError(f"{db}: no feasible candidate of {target} on {key or 'any machine'}")
    return sorted(rows, key=lambda r: r.time_s or 0.0)


__all__ = ["INFEASIBLE", "SearchResult", "best", "best_rows", "replay", "search"]
