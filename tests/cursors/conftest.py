"""Primitives verify their result after every step in these tests (whatever the env says)."""

from verify_steps import _verify_every_step

__all__ = ["_verify_every_step"]  # an autouse fixture: pytest finds it in this namespace
