"""Shared fixtures of the cursched test suite, and the ``gpu`` marker's skip logic.

Tests marked ``@pytest.mark.gpu`` need cupy and a CUDA device: they are skipped, with the
reason, when cupy is not installed or ``cupy.is_available()`` is false. cupy is imported only
when such a test was collected, so a CPU-only run never pays for it.

The edit operations check every claim of freshness in the tests (``edit_settings``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from cursched.cursors.edits import edit_settings

# tests/ on sys.path, whatever pytest's import mode: other test directories import the corpus
# registry as `corpus` (tests/corpus/__init__.py) to run it through their own backends.
_TESTS_DIR = str(Path(__file__).parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

# every claim of a primitive that new statements are fresh (``Editor.replace(fresh=...)``,
# which lets the survivor search skip them) is checked in the tests: a false one fails there
edit_settings.check_fresh = True


def gpu_skip_reason() -> str | None:
    """Why ``gpu`` tests cannot run here, or None when cupy sees a CUDA device."""
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as e:
        return f"cupy is not installed ({e})"
    try:
        available = bool(cupy.is_available())
    except Exception as e:  # a broken CUDA install must skip, not error, the GPU tests
        return f"cupy.is_available() failed: {type(e).__name__}: {e}"
    return None if available else "cupy.is_available() is false (no CUDA device)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = gpu_skip_reason()
    if reason is None:
        return
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


@pytest.fixture
def rng() -> np.random.Generator:
    """A numpy random generator with a fixed seed (tests are reproducible)."""
    return np.random.default_rng(20261129)
