"""The autouse fixture that makes primitives verify their result after every step (whatever
the env says), for the conftest.py of each test directory that wants it (they import it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cursched.primitives import settings


@pytest.fixture(autouse=True)
def _verify_every_step() -> Iterator[None]:
    old = settings.verify
    settings.verify = True
    yield
    settings.verify = old
