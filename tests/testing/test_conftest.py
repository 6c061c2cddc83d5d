"""The ``gpu`` marker's skip logic of tests/conftest.py, run in throwaway sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).parent.parent / "conftest.py"

_TESTS = """
import pytest

@pytest.mark.gpu
def test_on_gpu():
    pass

def test_on_cpu():
    pass
"""


def _session(pytester: pytest.Pytester, fake_cupy: str | None) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    gpu: needs a GPU\naddopts = --strict-markers -ra\n")
    pytester.makepyfile(test_mod=_TESTS)
    if fake_cupy is not None:
        pytester.makepyfile(cupy=fake_cupy)
        pytester.syspathinsert()
    # A subprocess, so that the fake cupy (or its absence) does not leak between sessions.
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_gpu_tests_skip_without_cupy(pytester: pytest.Pytester) -> None:
    result = _session(pytester, None)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*gpu test: cupy is not installed*"])


def test_gpu_tests_skip_when_no_device(pytester: pytest.Pytester) -> None:
    result = _session(pytester, "def is_available():\n    return False\n")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*cupy.is_available() is false*"])


def test_gpu_tests_skip_when_cuda_is_broken(pytester: pytest.Pytester) -> None:
    result = _session(pytester, "def is_available():\n    raise RuntimeError('no driver')\n")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*RuntimeError: no driver*"])


def test_gpu_tests_run_with_a_device(pytester: pytest.Pytester) -> None:
    _session(pytester, "def is_available():\n    return True\n").assert_outcomes(passed=2)
