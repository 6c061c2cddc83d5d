"""The fuzzer's strategies drawn from a plain ``random.Random``, without hypothesis's engine.

``fuzzgen`` and ``fuzzsteps`` are written with hypothesis strategies, so that the suite's
run shrinks a failure. A long campaign has no use for shrinking but pays for the engine on
every draw (its choice tree, mutation of earlier examples, and a scan of every imported
module's constants): profiled on a 100-schedule batch that was about half of the time.
:class:`RandomData` interprets the few strategies the generators use (composites, integers,
booleans, ``sampled_from``, lists, permutations) with a ``random.Random``, so that a campaign
draws the same kinds of procs and steps, and a schedule is a pure function of its seed
(``schedule_random(seed, index)``): any schedule of a campaign reruns alone, and a campaign
splits into shards that sum to the same run.

Any other strategy raises ``TypeError``: a generator using a new one must be taught here (the
suite's ``test_fuzz_campaign.py`` draws every step through this module).
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis.strategies import SearchStrategy
from hypothesis.strategies._internal.collections import ListStrategy
from hypothesis.strategies._internal.core import CompositeStrategy, PermutationStrategy
from hypothesis.strategies._internal.lazy import LazyStrategy
from hypothesis.strategies._internal.misc import BooleansStrategy
from hypothesis.strategies._internal.numbers import IntegersStrategy
from hypothesis.strategies._internal.strategies import SampledFromStrategy

__all__ = ["RandomData", "schedule_random"]


def schedule_random(seed: int, index: int) -> random.Random:
    """The random source of schedule ``index`` of the campaign seeded ``seed`` (string seeds
    hash with SHA-512: the same stream in every process, whatever ``PYTHONHASHSEED``)."""
    return random.Random(f"cursched-fuzz:{seed}:{index}")


class RandomData:
    """A stand-in for hypothesis's ``st.data()`` object: ``draw(strategy)`` at random."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def draw(self, strategy: SearchStrategy[Any], label: object = None) -> Any:
        """A value of ``strategy`` (``label`` is accepted as hypothesis's, and ignored)."""
        s = strategy
        while isinstance(s, LazyStrategy):
            s = s.wrapped_strategy
        rnd = self.rnd
        if isinstance(s, SampledFromStrategy):
            if s._transformations:  # a .map/.filter on it: not used by the generators
                raise TypeError(f"fuzzrandom cannot draw a transformed {strategy!r}")
            return s.elements[int(rnd.random() * len(s.elements))]
        if isinstance(s, IntegersStrategy):
            if s.start is None or s.end is None:
                raise TypeError(f"fuzzrandom draws bounded integers only, not {strategy!r}")
            return rnd.randint(s.start, s.end)
        if isinstance(s, BooleansStrategy):
            return rnd.random() < 0.5
        if isinstance(s, CompositeStrategy):
            return s.definition(self.draw, *s.args, **s.kwargs)
        if isinstance(s, ListStrategy):
            if s.max_size == float("inf"):
                raise TypeError(f"fuzzrandom draws bounded lists only, not {strategy!r}")
            n = rnd.randint(s.min_size, int(s.max_size))
            return [self.draw(s.element_strategy) for _ in range(n)]
        if isinstance(s, PermutationStrategy):
            values = list(s.values)
            rnd.shuffle(values)
            return values
        raise TypeError(f"fuzzrandom cannot draw {strategy!r} ({type(s).__name__})")
