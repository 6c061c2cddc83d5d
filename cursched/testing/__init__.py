"""Testing helpers for cursched users and for cursched's own tests.

``assert_equivalent(p, q)`` checks two procs against each other in the reference interpreter
on random inputs; ``random_args(p, rng)`` draws inputs satisfying a proc's asserts. The pytest
plugin (the ``golden`` fixture) lives in ``cursched.testing.plugin``.
"""

from cursched.testing.equivalence import (
    UnsatisfiableAssertsError,
    assert_equivalent,
    random_args,
)

__all__ = ["UnsatisfiableAssertsError", "assert_equivalent", "random_args"]
