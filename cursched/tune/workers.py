"""Where candidates run: this process, a pool of pinned worker processes, or Ray tasks.

Each executor turns a candidate's parameters into a ``concurrent.futures.Future`` of its
``Outcome``. The pool pins worker ``k`` to core ``k mod cores`` and gives it that core's lock,
held while it times (compiling runs unlocked), so timings on a shared core never overlap; a
Ray task asks for one CPU (or one GPU) and Ray places it.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
from collections.abc import Mapping
from typing import Any, Protocol

from cursched.tune import evaluate as ev
from cursched.tune.errors import TargetError
from cursched.tune.evaluate import Evaluator, Outcome, Timing, Tolerance
from cursched.tune.target import Inputs, TargetRef


class Executor(Protocol):
    """Runs candidates."""

    #: How many candidates may run at once.
    width: int

    def submit(self, params: dict[str, Any]) -> cf.Future[Outcome]: ...

    def shutdown(self) -> None: ...


class InProcess:
    """Candidates one at a time in the search's own process."""

    width = 1

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def submit(self, params: dict[str, Any]) -> cf.Future[Outcome]:
        fut: cf.Future[Outcome] = cf.Future()
        fut.set_result(self.evaluator.evaluate(params))
        return fut

    def shutdown(self) -> None:
        pass


class _Job:
    """The per-candidate arguments that travel with every submission."""

    def __init__(
        self,
        ref: TargetRef,
        inputs: Inputs | None,
        timing: Timing,
        tolerance: Tolerance,
        compile_options: Mapping[str, Any],
    ) -> None:
        self.args = (ref, inputs, timing, tolerance, dict(compile_options))

    def call(self, params: dict[str, Any]) -> tuple[Any, ...]:
        ref, inputs, timing, tolerance, options = self.args
        return (ref, params, inputs, timing, tolerance, options)


class ProcessPool:
    """Candidates in ``width`` worker processes, each pinned to one core."""

    def __init__(self, job: _Job, width: int, threads: int) -> None:
        ctx = mp.get_context("spawn")
        cores = _cores()
        locks = [ctx.Lock() for _ in cores]
        counter = ctx.Value("i", 0)
        self.width = width
        self.job = job
        self.pool = cf.ProcessPoolExecutor(
            max_workers=width,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(cores, locks, counter, threads),
        )

    def submit(self, params: dict[str, Any]) -> cf.Future[Outcome]:
        return self.pool.submit(ev.evaluate_ref, *self.job.call(params))

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _cores() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _init_worker(cores: list[int], locks: list[Any], counter: Any, threads: int) -> None:
    with counter.get_lock():
        k = counter.value
        counter.value += 1
    core = cores[k % len(cores)]
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    os.environ["OMP_NUM_THREADS"] = str(threads)
    ev.timing_lock = locks[k % len(cores)]


class RayTasks:
    """Candidates as Ray tasks of one CPU each (one GPU each with ``gpus=True``).

    Uses the Ray instance the caller started (``ray.init``), or connects to ``cluster``.
    Workers must be able to import cursched and read the schedule file at the same path
    (on a remote cluster: a shared file system, or Ray's ``runtime_env`` working_dir).
    """

    def __init__(self, job: _Job, cluster: str | None, gpus: bool, threads: int) -> None:
        try:
            import ray
        except ImportError:
            raise TargetError("tuning on Ray needs ray: pip install 'cursched[tune]'") from None
        if not ray.is_initialized():
            ray.init(address=cluster, log_to_driver=False)
        self.ray = ray
        self.job = job
        resources = ray.cluster_resources()  # type: ignore[no-untyped-call]
        self.width = max(1, int(resources.get("GPU" if gpus else "CPU", 1)))
        env = {"env_vars": {"OMP_NUM_THREADS": str(threads)}}
        self.remote = ray.remote(num_cpus=1, num_gpus=1 if gpus else 0, runtime_env=env)(
            ev.evaluate_ref
        )

    def submit(self, params: dict[str, Any]) -> cf.Future[Outcome]:
        fut: cf.Future[Outcome] = self.remote.remote(*self.job.call(params)).future()
        return fut

    def shutdown(self) -> None:
        pass
