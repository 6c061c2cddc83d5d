"""The sharded campaign (``fuzzcampaign``, ``benchmarks/fuzz_campaign.py``) and its random
driver (``fuzzrandom``): schedules are a function of (seed, index), shards sum to the run
they split, merging refuses what would make a campaign's count dishonest."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest
from hypothesis import strategies as st

from cursched import make_instr
from tests.primitives import fuzzcampaign as fc
from tests.primitives.fuzzcompile import compilable
from tests.primitives.fuzzgen import Names, Scope, proc_text, shaped
from tests.primitives.fuzzrandom import RandomData, schedule_random
from tests.primitives.fuzzsteps import STEPS, NoTarget
from tests.primitives.test_soundness_fuzz import make


def _counts(s: fc.Shard) -> tuple[object, ...]:
    return (s.done, s.steps, s.invalid, s.accepted, s.refused, s.no_target, s.findings)


def test_shards_sum_to_the_run_they_split() -> None:
    whole = fc.run_shard(11, 0, 6, compile_every=0)
    a = fc.run_shard(11, 0, 2, compile_every=0)
    b = fc.run_shard(11, 2, 4, compile_every=0)
    assert whole.steps > 0 and not whole.findings and not whole.mismatches
    merged = fc.merge([b, a], counts=False)
    assert not merged.problems and merged.done == 6
    assert merged.accepted == whole.accepted
    assert sum(a.accepted.values()) + sum(b.accepted.values()) == sum(whole.accepted.values())
    assert a.steps + b.steps == whole.steps
    # and one schedule again alone is the same schedule
    again = fc.run_shard(11, 2, 4, compile_every=0)
    assert _counts(again) == _counts(b)
    assert fc.ranges_text([b, a]) == "[0, 6)"


def test_a_schedule_is_a_function_of_seed_and_index() -> None:
    def text(seed: int, index: int) -> str:
        return str(RandomData(schedule_random(seed, index)).draw(proc_text()))

    assert text(3, 5) == text(3, 5)
    assert len({text(3, i) for i in range(5)} | {text(4, 0)}) == 6


def test_merge_refuses_what_would_miscount(tmp_path: Path) -> None:
    base = fc.Shard(seed=1, start=0, count=10, done=10, accepted=dict.fromkeys(STEPS, 1))
    later = dataclasses.replace(base, start=10)
    assert not fc.merge([base, later]).problems  # 1 per 10 schedules: far above 50 per 5,000

    overlap = dataclasses.replace(base, start=5)
    assert any("overlap" in p for p in fc.merge([base, overlap]).problems)
    other_seed = dataclasses.replace(later, seed=2)
    assert any("seeds" in p for p in fc.merge([base, other_seed]).problems)
    other_fuzzer = dataclasses.replace(later, fuzzer="0123")
    assert any("fuzzer" in p for p in fc.merge([base, other_fuzzer]).problems)
    restricted = dataclasses.replace(later, only="split")
    assert any("restricted" in p for p in fc.merge([base, restricted]).problems)

    rare = dataclasses.replace(later, accepted={**later.accepted, "split": 0})
    rare = dataclasses.replace(rare, done=10_000)  # split: 1 in 10,010 schedules
    problems = fc.merge([base, rare]).problems
    assert any("split" in p and "fewer" in p for p in problems)
    assert not fc.merge([base, rare], counts=False).problems

    detail = {"text": "", "log": [], "notes": [], "traceback": ""}
    finding = {"split | AssertionError | x": {"count": 1, "index": 3, **detail}}
    bad = dataclasses.replace(later, findings=finding, mismatches=["schedule 4: differs"])
    problems = fc.merge([base, bad], counts=False).problems
    assert any("findings" in p for p in problems) and any("mismatch" in p for p in problems)

    path = tmp_path / "shard.json"
    fc.write_shard(bad, path)
    assert fc.read_shard(path) == bad
    assert "FAILED" in fc.table(fc.merge([fc.read_shard(path)]))


def test_random_data_draws_the_strategies_the_generators_use() -> None:
    data = RandomData(schedule_random(0, 0))
    assert data.draw(st.integers(2, 2)) == 2
    assert data.draw(st.sampled_from(["a"])) == "a"
    assert isinstance(data.draw(st.booleans()), bool)
    assert sorted(data.draw(st.permutations([0, 1, 2]))) == [0, 1, 2]
    assert 1 <= len(data.draw(st.lists(st.sampled_from([0]), min_size=1, max_size=2))) <= 2
    with pytest.raises(TypeError, match="cannot draw"):
        data.draw(st.floats())
    with pytest.raises(TypeError, match="transformed"):
        data.draw(st.sampled_from([1, 2]).map(str))


SAME_NAME = """
def fz(n: size, m: size, x: f32[n + 8] @ DRAM, y: f32[n + 8] @ DRAM, z: f32[4, n + 8] @ DRAM, s: f32 @ DRAM):
    assert n >= 1
    assert m <= n
    if n > 2:
        t: f32[4, 4] @ DRAM
        t[1, 2] = x[0]
        y[0] = t[1, 2]
    else:
        t: f32[n + 1, 4, 4] @ DRAM
        t[1, 1, 2] = x[0]
        y[0] = t[1, 1, 2]
"""


def test_stage_mem_step_takes_the_shape_of_the_accessed_buffer() -> None:
    """Campaign finding (seed 2026, schedule 526): after specialize copied a block and
    expand_dim reshaped one copy's buffer, two buffers shared a name and the step took the
    shape of the first: an untyped ValueError in the fuzzer, not in stage_mem."""
    p = make(SAME_NAME)

    def call(prim: object, q: object, *args: object, **kw: object) -> tuple[object, object]:
        return q, ()

    for i in range(40):
        with contextlib.suppress(NoTarget):
            STEPS["stage_mem"](call, p, RandomData(schedule_random(526, i)))


def test_instructions_are_not_compared_with_their_body() -> None:
    """Campaign false mismatch (seed 2026, schedule 480): a proc make_instr turned into an
    instruction compiles to its template (``/* fz */``), which does not compute its body."""
    p = make(SAME_NAME)
    assert compilable(p.ir())
    q, _ = make_instr(p, "/* fz */", "")
    assert not compilable(q.ir())


def test_constant_index_buffer_is_written_before_it_is_read() -> None:
    """Campaign false mismatch (seed 2026, schedule 51590): the ``const`` shape put its
    buffer in scope before drawing its two values, so ``c2[0] = c2[0]`` read uninitialised
    memory (NaN in the interpreter, garbage in C) and the compiled comparison differed."""
    for i in range(300):
        data = RandomData(schedule_random(51590, i))
        sc = Scope(bufs=[], scalars=[])
        alloc, first, second = data.draw(shaped(sc, Names(), "const"))
        name = alloc.split(":")[0]
        assert name not in first.split("=", 1)[1] and name not in second.split("=", 1)[1]
