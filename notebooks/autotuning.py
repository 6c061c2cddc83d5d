# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Autotuning a schedule
#
# A schedule with free parameters (tile sizes, loop orders) is a Python function of them.
# `cursched.tune` searches their values: every candidate is built by the checked primitives
# (a refused step makes it *infeasible*, recorded with the error's class), compiled, checked
# against the untuned proc's output and timed. Results go to a SQLite record; a second search
# resumes from it, and `tune.best` replays the fastest schedule from its history.

# %%
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from cursched import Proc, fission, proc, reorder_loops, split, tune


@proc
def gemm(M: size, N: size, K: size, A: f32[M, K], B: f32[K, N], C: f32[M, N]):
    assert M % 16 == 0
    assert N % 16 == 0
    assert K % 16 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def tiled(p: Proc, ti: int, tj: int, tk: int) -> Proc:
    """Tile the product ti x tj x tk (tile loops outside); the zeroing nest stays as it is."""
    p, nests = fission(p, p.find("C[_] = 0.0").after(), n_lifts=2)
    p, si = split(p, nests.second, ti, ("io", "ii"), tail="perfect")
    p, sj = split(p, si.body[0], tj, ("jo", "ji"), tail="perfect")
    p, _ = reorder_loops(p, si.inner)
    p, _ = split(p, sj.body[0], tk, ("ko", "ki"), tail="perfect")
    p, _ = reorder_loops(p, sj.inner)
    p, _ = reorder_loops(p, si.inner)
    return p


rng = np.random.default_rng(0)
n = 128
inputs = (
    n,
    n,
    n,
    rng.standard_normal((n, n)).astype(np.float32),
    rng.standard_normal((n, n)).astype(np.float32),
    np.zeros((n, n), np.float32),
)
# 24 is not provably a divisor of M (only 16 is): those candidates are infeasible
space = tune.Space(ti=[4, 8, 16, 24], tj=[8, 16, 32], tk=[4, 8, 16])
print(f"{space.size} candidates in the space")

# %% [markdown]
# A search of 10 candidates with optuna's TPE sampler, in this process (`workers=2` uses two
# pinned worker processes; `ray.init(...)` first runs them as Ray tasks).

# %%
db = Path(tempfile.mkdtemp()) / "gemm.sqlite"
result = tune.search(tiled, gemm, space, inputs=inputs, budget=10, db=db, progress=False)
print(f"measured {result.measured}, infeasible {len(result.infeasible)}")
print("best:", result.best_params, f"{result.best_time * 1e3:.3f} ms")
for o in result.infeasible:
    print("infeasible:", o.params, o.error_class)

# %%
fig = tune.plot_search(result.outcomes)

# %% [markdown]
# The same search again measures nothing: the record already holds every candidate it visits.

# %%
again = tune.search(tiled, gemm, space, inputs=inputs, budget=10, db=db, progress=False)
print(f"measured {again.measured}, reused {again.reused}")
assert again.measured == 0

# %% [markdown]
# The fastest schedule, replayed from the record (its history is a script of checked steps).

# %%
best = tune.best(db, gemm)
print(best)
print(best.history())
