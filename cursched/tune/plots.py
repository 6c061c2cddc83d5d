"""Pictures of a search (matplotlib): time against each parameter, and the search's progress."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cursched.tune.evaluate import OK, Outcome


def plot_search(outcomes: Sequence[Outcome], path: str | Path | None = None) -> Any:
    """One figure: a panel of time against each parameter (infeasible candidates marked at
    the top of the panel), and a panel of each candidate's time and the best so far.

    Args:
        outcomes: a search's outcomes in order (``SearchResult.outcomes``).
        path: where to save the figure (PNG, SVG, ... by suffix); None: not saved.

    Returns:
        The matplotlib ``Figure``.
    """
    import matplotlib

    if path is not None and matplotlib.get_backend().lower() not in (
        "agg",
        "module://matplotlib_inline.backend_inline",
    ):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({k for o in outcomes for k in o.params})
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(3.2 * (len(names) + 1), 3.0))
    ok = [o for o in outcomes if o.status == OK and o.time_s is not None]
    worst = max((o.time_s or 0.0 for o in ok), default=1.0) * 1e3
    for ax, name in zip(axes[:-1], names, strict=True):
        values = sorted({str(o.params.get(name)) for o in outcomes}, key=_natural)
        pos = {v: i for i, v in enumerate(values)}
        xs = [pos[str(o.params.get(name))] for o in ok]
        ax.scatter(xs, [(o.time_s or 0.0) * 1e3 for o in ok], s=18, alpha=0.7)
        bad = [pos[str(o.params.get(name))] for o in outcomes if o.status != OK]
        if bad:
            ax.scatter(
                bad, [worst * 1.1] * len(bad), marker="x", color="tab:red", s=18, label="infeasible"
            )
            ax.legend(fontsize=7, loc="best")
        ax.set_xticks(range(len(values)), values)
        ax.set_xlabel(name)
        ax.set_ylabel("time (ms)")
    ax = axes[-1]
    times = [(o.time_s or float("nan")) * 1e3 if o.status == OK else float("nan") for o in outcomes]
    best, so_far = float("inf"), []
    for t in times:
        if t == t:  # not NaN
            best = min(best, t)
        so_far.append(best if best != float("inf") else float("nan"))
    ax.plot(range(1, len(times) + 1), times, "o", ms=3, alpha=0.6, label="candidate")
    ax.plot(range(1, len(times) + 1), so_far, "-", label="best so far")
    ax.set_xlabel("candidate")
    ax.set_ylabel("time (ms)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _natural(v: str) -> tuple[int, float | str]:
    try:
        return (0, float(v))
    except ValueError:
        return (1, v)
