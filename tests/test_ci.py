""".ci/run's control flow, with ``python`` replaced by a stub that logs and fails on demand."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CI = Path(__file__).parent.parent / ".ci" / "run"

STUB = """#!/usr/bin/env bash
echo "$*" >> "$CI_LOG"
case "$*" in
  *"$CI_FAIL_ON"*) exit "$CI_FAIL_STATUS" ;;
esac
exit 0
"""


def _run_ci(tmp_path: Path, fail_on: str = "<never>", status: int = 1) -> tuple[int, str, list]:
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(CI, repo / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    # a chromium on the PATH, so the run never reaches apt-get
    (bin_dir / "chromium").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "chromium").chmod(0o755)
    log = tmp_path / "log"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        CURSCHED_CI_NO_VENV="1",
        CI_LOG=str(log),
        CI_FAIL_ON=fail_on,
        CI_FAIL_STATUS=str(status),
    )
    r = subprocess.run(
        ["bash", str(repo / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return r.returncode, r.stdout + r.stderr, calls


def test_ci_runs_every_step_in_order(tmp_path: Path) -> None:
    rc, out, calls = _run_ci(tmp_path)
    assert rc == 0, out
    assert calls == [
        "-m pip install -e .",
        "sched/tiled_matmul.py",
        "-m pip install -e .[dev,tune]",
        "-m ruff check .",
        "-m ruff format --check .",
        "-m mypy",
        "-m pytest -q -W error",
    ]


def test_ci_fails_when_no_tests_are_collected(tmp_path: Path) -> None:
    rc, out, _ = _run_ci(tmp_path, fail_on="pytest", status=5)
    assert rc == 1
    assert "collected no tests" in out


def test_ci_fails_on_test_failures(tmp_path: Path) -> None:
    rc, out, _ = _run_ci(tmp_path, fail_on="pytest", status=1)
    assert rc == 1
    assert "tests failed" in out


@pytest.mark.parametrize(
    "step", ["pip install -e .", "tiled_matmul", "[dev,tune]", "ruff check", "ruff format", "mypy"]
)
def test_ci_stops_at_the_first_failing_step(tmp_path: Path, step: str) -> None:
    rc, out, calls = _run_ci(tmp_path, fail_on=step, status=3)
    assert rc == 3, out
    assert step in calls[-1]
    assert not any("pytest" in c for c in calls)
