"""sched/parallel_scan.py: runs as a file; the split prefix sum, discounted scan and the
selective scan match float64 numpy at lengths that are not multiples of the chunk (compiled,
OpenMP), the split procs are equivalent to the plain ones in the interpreter, the history
replays, and the final procs have golden printouts."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "parallel_scan.py"


def test_runs_as_a_file() -> None:
    assert "ok: prefix sum, discounted scan and selective scan" in run_file(SCRIPT)


@pytest.mark.parametrize(("n", "chunk"), [(1, 4), (999, 16), (5000, 64), (70_001, 4160)])
def test_compiled_matches_numpy(script: ModuleType, n: int, chunk: int) -> None:
    assert script.check(n, chunk=chunk, seed=n) == []


@pytest.mark.parametrize(("n", "chunk"), [(999, 16), (70_001, 4160)])
def test_unblocked_matches_numpy(script: ModuleType, n: int, chunk: int) -> None:
    # without the cache blocks: the whole scan one split_scan
    assert script.check(n, chunk=chunk, seed=n, blocks=0) == []


@pytest.mark.parametrize("fixup", ["combine", "products"])
@pytest.mark.parametrize(("n", "chunk"), [(3, 8), (999, 16), (4165, 64)])
def test_vector_fixups_match_numpy(script: ModuleType, n: int, chunk: int, fixup: str) -> None:
    # the lane-independent fix-ups, AVX2 instructions where the CPU has them
    assert script.check(n, chunk=chunk, seed=n, fixup=fixup) == []


def test_vector_fixup_is_avx2(script: ModuleType) -> None:
    from cursched.platforms.x86 import isa

    if isa() is None:
        pytest.skip("no AVX2 on this CPU")
    # in the cache blocks' scans and in the tail's
    text = str(script.schedule(script.discounted, 64, fixup="products"))
    assert text.count("mm256_fmadd_scalar_ps(y_v") == 2
    text = str(script.schedule(script.prefix_sum, 64, fixup="combine"))
    assert text.count("mm256_add_scalar_ps(y_v") == 2 and "s_carry[ieo])" in text


@pytest.mark.parametrize("name", ["prefix_sum", "discounted"])
def test_interpreter_and_history(script: ModuleType, name: str, golden) -> None:  # type: ignore[no-untyped-def]
    plain = getattr(script, name)
    p = script.schedule(plain, 4)
    golden.check(p)
    assert_equivalent(plain, p, trials=3, rtol=1e-4, atol=1e-4)
    assert_history_replays(p, **{name: plain})


def test_thread_count_does_not_change_the_result(script: ModuleType) -> None:
    from threadpoolctl import threadpool_limits

    n = 10_001
    rng = np.random.default_rng(2)
    d = rng.uniform(0.5, 1.0, n).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    for fixup in ("rescan", "products"):
        f = script.schedule(script.discounted, 256, fixup=fixup).compile()
        outs = []
        for threads in (1, 2):
            y = np.zeros(n, np.float32)
            with threadpool_limits(limits=threads, user_api="openmp"):
                f(n, d, x, y)
            outs.append(y)
        assert np.array_equal(outs[0], outs[1])
