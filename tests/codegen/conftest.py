"""Fixtures of the C backend tests: a private build cache for the whole session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def codegen_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point the build cache at a fresh directory, so that the tests build from scratch
    (cold-cache behaviour is what they check) and never touch the user's cache."""
    d = tmp_path_factory.mktemp("cursched-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CURSCHED_CACHE_DIR", str(d))
        yield d
