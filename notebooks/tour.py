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
# # A tour of cursched
#
# A proc is a Python function in the cursched language: it is parsed, never run by Python.
# The reference interpreter runs it on numpy arrays; the printer shows it back as source.

# %%
from __future__ import annotations

import numpy as np

from cursched import DRAM, proc


@proc
def softmax(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    m: f32 @ DRAM
    m = -inf
    for i in seq(0, n):
        m = fmaxf(m, x[i])
    s: f32 @ DRAM
    s = 0.0
    for i in seq(0, n):
        y[i] = expf(x[i] - m)
        s += y[i]
    for i in seq(0, n):
        y[i] = y[i] / s


print(softmax)

# %% [markdown]
# Run it with the interpreter (outputs are written in place) and compare with numpy.

# %%
rng = np.random.default_rng(0)
x = rng.standard_normal(37).astype(np.float32)
y = np.zeros_like(x)
softmax.interpret(37, x, y)
ref = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
assert np.allclose(y, ref, rtol=1e-5, atol=1e-6)
print("max abs error:", float(np.abs(y - ref).max()))
