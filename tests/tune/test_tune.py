"""The autotuner: spaces, a search in this process, in worker processes and on a local Ray
instance, the record and resuming, infeasible and wrong candidates, plots and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cursched import tune
from cursched.ir.alpha import alpha_equal

from . import tunable_gemm as g

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "at least one parameter"),
        ({"a": []}, "no values"),
        ({"a": [1, 1]}, "repeats"),
        ({"a": [[1]]}, "not an int"),
        ({"a": "xy"}, "give a list"),
    ],
)
def test_bad_spaces_are_refused(params: dict[str, object], message: str) -> None:
    with pytest.raises(tune.SpaceError, match=message):
        tune.Space(**params)  # type: ignore[arg-type]


def test_space_grid_and_check() -> None:
    space = tune.Space(a=[1, 2], b=["x", "y", "z"])
    assert space.size == 6
    assert len(list(space.grid())) == 6
    assert space.default() == {"a": 1, "b": "x"}
    with pytest.raises(tune.SpaceError, match="not one of"):
        space.check({"a": 3, "b": "x"})


def test_search_in_process_records_resumes_and_replays(tmp_path: Path) -> None:
    db = tmp_path / "tune.sqlite"
    first = tune.search(g.tunable, budget=16, db=db, sampler="grid", progress=False)
    assert first.measured == 16 and first.reused == 0
    rows = tune.Record(db).rows()
    assert len(rows) == 16
    # 12 and 32 tiles are unprovable: split refuses them, and the record says why
    infeasible = [r for r in rows if r.status == "infeasible"]
    assert {r.params["ti"] for r in infeasible} == {12, 32}
    assert {r.error_class for r in infeasible} == {"SplitNotPerfectError"}
    assert all(r.time_s is not None and r.history for r in rows if r.status == "ok")
    again = tune.search(g.tunable, budget=16, db=db, sampler="grid", progress=False)
    assert again.measured == 0 and again.reused == 16
    assert len(tune.Record(db).rows()) == 16
    # the best proc replays from its recorded history to the schedule of its parameters
    best = tune.best(db, g.gemm)
    assert first.best_params is not None
    assert alpha_equal(best.ir(), g.tiled(g.gemm, **first.best_params).ir())


def test_wrong_candidate_stops_the_search(tmp_path: Path) -> None:
    space = tune.Space(first=[True, False])
    with pytest.raises(tune.WrongResultError, match="wrong result") as info:
        tune.search(
            g.wrong_schedule,
            g.gemm,
            space,
            inputs=g.inputs,
            db=tmp_path / "w.sqlite",
            progress=False,
        )
    assert "reorder_stmts" in info.value.history


def test_tpe_search_in_worker_processes(tmp_path: Path) -> None:
    db = tmp_path / "pool.sqlite"
    result = tune.search(g.tunable, budget=8, db=db, workers=2, progress=False)
    assert result.measured == 8
    assert len({tune.space.params_key(o.params) for o in result.outcomes}) == 8
    assert len(tune.Record(db).rows()) == 8


def test_search_on_a_local_ray_instance(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason="the tune extra (ray) is not installed")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        db = tmp_path / "ray.sqlite"
        result = tune.search(g.tunable, budget=8, db=db, progress=False)
        assert result.measured == 8
        assert len(tune.Record(db).rows()) == 8
        resumed = tune.search(g.tunable, budget=8, db=db, progress=False)
        assert resumed.measured == 0 and resumed.reused == 8
        best = tune.best(db, g.gemm)
        assert best.version > 0
        assert alpha_equal(best.ir(), tune.replay(best.history(), g.gemm).ir())
    finally:
        ray.shutdown()


def test_plot_is_written(tmp_path: Path) -> None:
    result = tune.search(g.tunable, budget=4, progress=False, sampler="random", seed=1)
    path = tmp_path / "search.png"
    tune.plot_search(result.outcomes, path)
    assert path.stat().st_size > 10_000


def test_cli_tunes_a_schedule_file(tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite"
    cmd = [
        sys.executable,
        "-m",
        "cursched.cli",
        "tune",
        str(Path(g.__file__)),
        "--budget",
        "4",
        "--db",
        str(db),
        "--quiet",
        "--sampler",
        "grid",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "4 candidates: 4 measured" in out.stdout
    assert "best: {'ti': " in out.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False, timeout=300)
    assert "4 candidates: 0 measured, 4 from the record" in again.stdout


def test_cli_refuses_a_file_without_tunable(tmp_path: Path) -> None:
    empty = tmp_path / "none.py"
    empty.write_text("x = 1\n")
    out = subprocess.run(
        [sys.executable, "-m", "cursched.cli", "tune", str(empty)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert out.returncode == 1
    assert "declares 0 Tunables" in out.stderr
