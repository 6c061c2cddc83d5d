"""``Proc.show_history()``: step through the schedule that made a proc.

Each step shows the primitive call (the line ``history()`` writes for it), the fields of the
cursors it returned, and the proc it made with those cursors' places highlighted. In Jupyter
(with ipywidgets) ``show_history()`` returns a slider over the steps; elsewhere a
``HistoryView`` whose ``_repr_html_`` / ``html()`` is a static page of every step, one after
the other.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cursched.cursors.history import history_script
from cursched.cursors.locs import Loc
from cursched.cursors.show import html_text, marks_for
from cursched.ir.printer import Mark, print_proc

if TYPE_CHECKING:
    from cursched.ir.paths import Path
    from cursched.proc import Proc


@dataclass(frozen=True)
class HistoryStep:
    """One version of the schedule.

    Attributes:
        version: the version number (0: the proc ``@proc`` made).
        call: the primitive call that made it, as ``history()`` writes it ("" for version 0).
        fields: the names of the cursors the call returned that point somewhere.
        text: the proc printed with those cursors' places marked.
    """

    version: int
    call: str
    fields: tuple[str, ...]
    text: str

    def html(self) -> str:
        """This step as HTML: the call, the returned fields, the marked proc."""
        call = html.escape(self.call) if self.call else "the proc as written (no step)"
        fields = ", ".join(self.fields) or "none that point into the proc"
        return (
            f'<div style="text-align:left"><div><b>v{self.version}</b> <code>{call}</code></div>'
            f"<div>returned cursors, highlighted: {html.escape(fields)}</div>"
            f"{html_text(self.text)}</div>"
        )


def _locs(value: Any) -> list[Loc]:
    if isinstance(value, Loc):
        return [value]
    if isinstance(value, tuple):
        return [loc for v in value for loc in _locs(v)]
    return []


def history_steps(p: Proc) -> list[HistoryStep]:
    """Every version from the original to ``p``, with what each step returned."""
    chain: list[Proc] = []
    q: Proc | None = p
    while q is not None:
        chain.append(q)
        q = q.parent()
    chain.reverse()
    # history() writes a header, then ``p = <name>``, then one line per step
    lines = history_script(p).splitlines()
    calls = lines[lines.index(f"p = {chain[0].name()}") + 1 :]
    assert len(calls) == len(chain) - 1, (calls, len(chain))
    steps = [HistoryStep(0, "", (), str(chain[0]))]
    for version, (q, call) in enumerate(zip(chain[1:], calls, strict=True), start=1):
        step = q.step()
        assert step is not None
        marks: dict[Path, Mark] = {}
        shown: list[str] = []
        for name, value in step.results:
            found = {}
            for loc in _locs(value):
                try:
                    found.update(marks_for(q.ir(), loc))
                except LookupError:  # a place that is no longer printed
                    continue
            if found:
                # a gap's mark sits at the path of the statement after it: the statement's
                # own mark (an earlier field) wins
                for path, mark in found.items():
                    marks.setdefault(path, mark)
                shown.append(name)
        try:
            text = print_proc(q.ir(), marks=marks)
        except LookupError:
            text = str(q)
        steps.append(HistoryStep(version, call, tuple(shown), text))
    return steps


class HistoryView:
    """The schedule of a proc, step by step (static HTML; ``widget()`` for Jupyter)."""

    def __init__(self, p: Proc) -> None:
        self.proc = p
        self.steps = history_steps(p)

    def html(self) -> str:
        """Every step, one after the other, as one HTML fragment."""
        head = html.escape(f"schedule of {self.proc.name()}: {len(self.steps) - 1} step(s)")
        parts = [f'<div style="text-align:left"><b>{head}</b>']
        for s in self.steps:
            parts.append(f'<div style="margin-top:0.8em">{s.html()}</div>')
        return "".join(parts) + "</div>"

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return f"<HistoryView of {self.proc.name()}: {len(self.steps) - 1} step(s)>"

    def widget(self) -> Any:
        """An ipywidgets box: a slider over the versions and the chosen step's HTML."""
        import ipywidgets

        out = ipywidgets.HTML(self.steps[-1].html())
        slider = ipywidgets.IntSlider(
            value=len(self.steps) - 1,
            min=0,
            max=len(self.steps) - 1,
            description="version",
            continuous_update=True,
        )

        def show(change: dict[str, Any]) -> None:
            out.value = self.steps[int(change["new"])].html()

        slider.observe(show, names="value")
        return ipywidgets.VBox([slider, out])


def in_jupyter() -> bool:
    """Whether this runs in a Jupyter kernel (an IPython kernel app is running)."""
    import sys

    ipython: Any = sys.modules.get("IPython")  # never imported here: only where it runs
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def show_history(p: Proc) -> Any:
    """The slider over ``p``'s schedule in Jupyter (ipywidgets installed), else the static
    ``HistoryView``."""
    view = HistoryView(p)
    if in_jupyter():
        try:
            return view.widget()
        except ImportError:  # no ipywidgets: the static page
            return view
    return view
