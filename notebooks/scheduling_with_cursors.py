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
# # Scheduling sgemm with cursors
#
# Every scheduling primitive returns the new proc **and a dataclass of cursors to what it
# made**. This notebook tiles a matrix product, stages a tile of `C` in a local buffer and
# unrolls the innermost loop, using one pattern string at the start and after that only the
# cursors the primitives hand back. Along the way: what a stale cursor looks like, what a
# refused rewrite says, the schedule as a replayable script, an equivalence check, and the
# compiled kernel against numpy.

# %%
from __future__ import annotations

import numpy as np
from IPython.display import display

from cursched import (
    DRAM,
    SchedulingError,
    StaleCursorError,
    fission,
    proc,
    reorder_loops,
    simplify,
    split,
    stage_mem,
    unroll_loop,
)
from cursched.primitives.loops.loop_nests import ReorderDependenceError
from cursched.testing import assert_equivalent


@proc
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM):
    assert M % 16 == 0
    assert N % 16 == 0
    assert K % 4 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


print(sgemm)

# %% [markdown]
# ## One pattern, then cursors
#
# The only search of the schedule: the statement that zeroes `C`. `fission` at the gap after it
# splits the `i`/`j` nest in two (`n_lifts=2` lifts the cut through both loops) and returns
# both new nests and the gap between them. The dataclass shows as a table: field, cursor kind,
# the source it points at, and its line in `print(p)`.

# %%
init = sgemm.find("C[_] = 0.0")
p, nests = fission(sgemm, init.after(), n_lifts=2)
display(nests)

# %% [markdown]
# Tile `i` by 16. `tail="perfect"` asks the checker to prove from the asserts that 16 divides
# `M`, so there is no tail loop and no guard: those fields hold *invalid* cursors, which are
# falsy and say why they are empty.

# %%
p, si = split(p, nests.second, 16, ("io", "ii"), tail="perfect")
print(si)
assert not si.tail and not si.guard

# %% [markdown]
# `si.body` is the block inside the new inner loop: its first statement is the `j` loop, the
# next one to tile. Printing a cursor shows the proc with the place marked.

# %%
print(si.body[0])
p, sj = split(p, si.body[0], 16, ("jo", "ji"), tail="perfect")
p, swap = reorder_loops(p, si.inner)  # io, ii, jo, ji -> io, jo, ii, ji
display(swap)

# %% [markdown]
# Loops keep their identity through rewrites (by their iteration variable), so the cursors of
# earlier steps still work: `si.inner` is the `ii` loop wherever it went. Split `k` by 4 and
# hoist `ko` above `ii` and `ji`, giving the order `io, jo, ko, ii, ji, ki`.

# %%
p, sk = split(p, sj.body[0], 4, ("ko", "ki"), tail="perfect")
p, _ = reorder_loops(p, sj.inner)
p, _ = reorder_loops(p, si.inner)
print(p)

# %% [markdown]
# A cursor of an older version is forwarded automatically when passed to a primitive, and by
# hand with `p.forward`: the product nest that `fission` returned is now the `io` loop.

# %%
print(p.forward(nests.second).name())

# %% [markdown]
# ## Stage a tile of `C`, unroll `ki`
#
# `stage_mem` with `accum=True` accumulates the `ko` loop's updates of one 16 x 16 tile of `C`
# in a new buffer and adds it back once: its cursors are the allocation, the zeroing nest, the
# staged block and the add-back nest.

# %%
p, staged = stage_mem(
    p, sk.outer, "C[16 * io:16 * io + 16, 16 * jo:16 * jo + 16]", "Ctile", accum=True
)
display(staged)

# %%
p, unrolled = unroll_loop(p, sk.inner)
display(unrolled)

# %% [markdown]
# `unroll_loop` already simplifies the indices it substitutes, so `simplify` finds nothing
# left to rewrite here: its `changed` field (the statements it rewrote) is empty.

# %%
p, simplified = simplify(p)
print(simplified)
print(p)

# %% [markdown]
# ## A stale cursor
#
# `unroll_loop` killed the `ki` loop: no single statement stands for it any more. Forwarding
# its cursor gives a tombstone, falsy and printable, that names the killer, the version and
# what to use instead; passing it to a primitive raises `StaleCursorError` with that story.

# %%
tomb = p.forward(sk.inner)
print(repr(tomb), "->", bool(tomb))
try:
    unroll_loop(p, sk.inner)
except StaleCursorError as e:
    print(f"{type(e).__name__}: {e}")

# %% [markdown]
# ## A refused rewrite
#
# Each precondition has its own `SchedulingError` subclass, defined in the primitive's module
# (`reorder_loops` raises `ReorderDependenceError` for this one). Interchanging the loops of this
# stencil would read `x[i - 1, j + 1]` before it is written: the checker refuses and gives a
# counterexample (two iterations whose order would flip).


# %%
@proc
def stencil(n: size, x: f32[n + 2, n + 2] @ DRAM):
    for i in seq(1, n + 1):
        for j in seq(1, n + 1):
            x[i, j] = x[i - 1, j + 1] + x[i, j]


try:
    reorder_loops(stencil, stencil.find_loop("i"))
    raise AssertionError("the reorder should have been refused")
except ReorderDependenceError as e:
    assert isinstance(e, SchedulingError)
    print(e)
    assert "counterexample" in str(e)

# %% [markdown]
# ## The schedule as a script
#
# `p.history()` writes the schedule as Python; run where `sgemm` is bound, it rebuilds the
# same proc.

# %%
script = p.history()
print(script)
replayed: dict[str, object] = {"sgemm": sgemm}
exec(script, replayed)
assert str(replayed["p"]) == str(p)

# %% [markdown]
# `p.show_history()` steps through the same schedule: move the slider to see each version,
# the call that made it, and the cursors that call returned highlighted in the proc. (Outside
# Jupyter it is a static page of every step.)

# %%
p.show_history()

# %% [markdown]
# ## Equivalence and the compiled kernel
#
# `assert_equivalent` runs both procs in the reference interpreter on random inputs that
# satisfy the asserts. Then the C backend compiles the scheduled proc and we compare with
# numpy (in float64).

# %%
assert_equivalent(sgemm, p, sizes={"M": 32, "N": 16, "K": 8})

rng = np.random.default_rng(0)
m, n, k = 64, 48, 40
a = rng.standard_normal((m, k)).astype(np.float32)
b = rng.standard_normal((k, n)).astype(np.float32)
c = np.full((m, n), np.nan, dtype=np.float32)
sgemm_tiled = p.compile()
sgemm_tiled(m, n, k, a, b, c)
expected = a.astype(np.float64) @ b.astype(np.float64)
print(f"max |C - numpy| = {float(np.abs(c - expected).max()):.1e}")
assert np.allclose(c, expected, rtol=1e-4, atol=1e-4)
