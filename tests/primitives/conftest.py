"""Primitives verify their result after every step in these tests (whatever the env says)."""

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
