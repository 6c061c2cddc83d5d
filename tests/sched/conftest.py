"""The ``script`` fixture: the ``SCRIPT`` file a test module of tests/sched names, loaded once
per module."""

from __future__ import annotations

from types import ModuleType

import pytest

from .scripts import load_module


@pytest.fixture(scope="module")
def script(request: pytest.FixtureRequest) -> ModuleType:
    path = request.module.SCRIPT
    return load_module(path, f"{path.stem}_script")
