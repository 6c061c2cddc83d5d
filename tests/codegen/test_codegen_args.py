"""Bad calls of compiled procs raise ArgumentError before any C runs.

The calls run in a child process (bad_calls.py), so that a call reaching C with a bad argument
and crashing fails these tests instead of killing the test run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bad_calls import BAD_CALLS

from cursched import DRAM, ArgumentError, proc

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    r = subprocess.run(
        [sys.executable, str(HERE / "bad_calls.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, f"child crashed or failed (exit {r.returncode}):\n{r.stderr}"
    return {o["name"]: o for o in map(json.loads, r.stdout.splitlines())}


def test_enough_bad_calls() -> None:
    assert len(BAD_CALLS) >= 20


@pytest.mark.parametrize("name", BAD_CALLS)
def test_bad_call_raises_argument_error(name: str, outcomes: dict[str, dict[str, Any]]) -> None:
    o = outcomes[name]
    assert o["error"] == "ArgumentError", o
    assert o["message"].startswith(("scale_add", "win_copy", "acc_scalar")), o


def test_good_calls_after_bad_ones(outcomes: dict[str, dict[str, Any]]) -> None:
    assert outcomes["good_calls"]["error"] == "none"


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("wrong_dtype", "argument 'x'"),
        ("inconsistent_sizes", "shape (n, m) = (4, 8)"),
        ("read_only_output", "read-only"),
        ("violated_assert", "assert m % 4 == 0"),
        ("missing_argument", "missing argument(s) y"),
        ("non_contiguous", "C-contiguous"),
        ("aliased_output", "same array"),
    ],
)
def test_messages_name_the_problem(
    name: str, needle: str, outcomes: dict[str, dict[str, Any]]
) -> None:
    assert needle in outcomes[name]["message"]


@proc
def fill(n: size, y: f32[n] @ DRAM):
    assert n % 2 == 0
    for i in seq(0, n):
        y[i] = 1.0


def test_nothing_runs_on_a_failed_check() -> None:
    f = fill.compile()
    y = np.zeros(3, np.float32)
    with pytest.raises(ArgumentError):
        f(3, y)
    assert (y == 0).all()
    y4 = np.zeros(4, np.float32)
    f(n=4, y=y4)
    assert (y4 == 1).all()


def test_fuzzed_arguments_never_crash() -> None:
    r = subprocess.run(
        [sys.executable, str(HERE / "bad_calls.py"), "--fuzz", "400"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, f"child crashed or raised (exit {r.returncode}):\n{r.stderr}"
    counts = json.loads(json.loads(r.stdout.splitlines()[-1])["message"])
    assert counts["ArgumentError"] > 100 and counts["ran"] > 20
