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
# # Benchmark results, plotted
#
# The benchmark scripts write what they print as JSON with `--json PATH`; this notebook plots
# those files. The committed ones in `benchmarks/results/` are a **sample**: measured once on
# the machine and at the date each file records (printed below), a shared 2-core VM under
# load, so read the ratios, not the absolute times. To plot your own machine, run (the
# `bench` extra installs the peers, exo-lang and torch):
#
# ```bash
# python benchmarks/schedule_speed.py --repeat 3 --json benchmarks/results/schedule_speed.json
# python benchmarks/online_softmax.py --quick --json benchmarks/results/online_softmax.json
# python benchmarks/flash_attention.py --quick --json benchmarks/results/flash_attention.json
# ```
#
# and run this notebook again.

# %%
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

RESULTS = Path.cwd().parent / "benchmarks" / "results"
if not RESULTS.is_dir():  # opened from the repository's root rather than notebooks/
    RESULTS = Path.cwd() / "benchmarks" / "results"
runs = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}
for name, run in runs.items():
    m = run["machine"]
    print(
        f"{name}: {run['date']}, {m['cpu']} ({m['cores']} cores, load {m['load_average']}),"
        f" {run['note']}"
    )

# %% [markdown]
# ## Scheduling time against Exo, per primitive
#
# `benchmarks/schedule_speed.py` replays the same schedules of sgemm in exo-lang and in
# cursched, in one process, and keeps each step's best replay. Bars: the time per primitive
# (summed over its calls in a schedule), log scale; the label is Exo's time over ours.

# %%
speed = runs["schedule_speed"]["rows"]
schedules = list(dict.fromkeys(r["schedule"] for r in speed))
fig, axes = plt.subplots(
    1, len(schedules), figsize=(5 * len(schedules), 4), squeeze=False, sharey=True
)
for ax, title in zip(axes[0], schedules, strict=True):
    rows = [r for r in speed if r["schedule"] == title]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["exo_ms"] for r in rows], 0.4, label="exo-lang 1.0")
    ax.bar([x + 0.2 for x in xs], [r["cursched_ms"] for r in rows], 0.4, label="cursched")
    for x, r in zip(xs, rows, strict=True):
        ax.annotate(f"{r['exo_ms'] / r['cursched_ms']:.0f}x", (x, r["exo_ms"]), ha="center")
    ax.set_xticks(list(xs), [r["primitive"] for r in rows], rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
axes[0][0].set_ylabel("ms (best replay)")
axes[0][0].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Kernels against numpy and torch, by size
#
# `benchmarks/online_softmax.py` and `benchmarks/flash_attention.py` time the kernels the
# schedules derive (checked against numpy first) and the peers, interleaved, at one thread and
# at all cores. Left: the time of each by problem size (solid: one thread, dashed: all cores);
# right: numpy's and torch's time over cursched's (above 1: cursched is faster).

# %%
kernels = [runs[k] for k in ("online_softmax", "flash_attention") if k in runs]
fig, axes = plt.subplots(len(kernels), 2, figsize=(11, 3.6 * len(kernels)), squeeze=False)
for (left, right), run in zip(axes, kernels, strict=True):
    rows = run["rows"]
    labels = list(dict.fromkeys(" x ".join(map(str, r["size"])) for r in rows))
    thread_counts = sorted({r.get("threads", 1) for r in rows})
    names = list(rows[0]["times_s"])
    for t in thread_counts:
        at = [r for r in rows if r.get("threads", 1) == t]
        style = "-" if t == thread_counts[0] else "--"
        for k, name in enumerate(names):
            ms = [r["times_s"][name] * 1e3 for r in at]
            left.plot(labels, ms, style, color=f"C{k}", marker="o", label=f"{name}, {t} thr")
        for k, peer in enumerate(p for p in ("numpy", "torch") if p in names):
            q = [r["times_s"][peer] / r["times_s"]["cursched"] for r in at]
            right.plot(labels, q, style, color=f"C{k + 1}", marker="o", label=f"{peer}, {t} thr")
    left.set_yscale("log")
    left.set_ylabel("ms")
    left.set_title(f"{rows[0]['kernel']}: time", fontsize=10)
    left.legend(fontsize=7)
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_yscale("log")
    right.set_title(f"{rows[0]['kernel']}: peer time / cursched time", fontsize=10)
    right.legend(fontsize=7)
fig.tight_layout()
plt.show()
