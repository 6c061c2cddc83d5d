"""The ``gpu`` marker's skip logic of tests/conftest.py, run in throwaway sessions."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


# Sessions load only what they test: hypothesis's plugin (and syrupy's, where installed) cost seconds.
_QUIET = ("-p", "no:hypothesispytest", "-p", "no:syrupy", "-p", "no:cacheprovider")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*_QUIET, *args)


CONFTEST = Path(__file__).parent.parent / "conftest.py"

_TESTS = """
import pytest

@pytest.mark.gpu
def test_on_gpu():
    pass

def test_on_cpu():
    pass
"""


def _session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_cupy: str | None
) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    gpu: needs a GPU\naddopts = --strict-markers -ra\n")
    pytester.makepyfile(test_mod=_TESTS)
    if fake_cupy is None:
        monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    else:
        module = types.ModuleType("cupy")
        exec(fake_cupy, module.__dict__)
        monkeypatch.setitem(sys.modules, "cupy", module)
    return _run(pytester)


def test_gpu_tests_skip_without_cupy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _session(pytester, monkeypatch, None)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*gpu test: cupy is not installed*"])


def test_gpu_tests_skip_when_no_device(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _session(pytester, monkeypatch, "def is_available():\n    return False\n")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*cupy.is_available() is false*"])


def test_gpu_tests_skip_when_cuda_is_broken(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _session(
        pytester, monkeypatch, "def is_available():\n    raise RuntimeError('no driver')\n"
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*RuntimeError: no driver*"])


def test_gpu_tests_run_with_a_device(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(pytester, monkeypatch, "def is_available():\n    return True\n").assert_outcomes(
        passed=2
    )
