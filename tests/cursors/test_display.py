"""The HTML display: syntax colours, marked lines readable on light and dark themes (checked
on a screenshot from headless Chromium), left-aligned tables, and the history viewer."""

from __future__ import annotations

import html as html_mod
import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cursched import Proc, proc, reorder_loops, split
from cursched.cursors.history_view import HistoryView, history_steps
from cursched.cursors.show import MARK_BG, MARK_FG, highlight_line


@proc
def two_loops(n: size, m: size, x: f32[n, m]):
    assert n % 4 == 0
    for i in seq(0, n):
        for j in seq(0, m):
            x[i, j] = 2.0 * x[i, j]


def scheduled() -> tuple[Proc, object]:
    p, s = split(two_loops, two_loops.find_loop("i"), 4, ("io", "ii"), tail="perfect")
    return reorder_loops(p, s.inner)


def test_tokens_are_coloured() -> None:
    out = highlight_line("    for i in seq(0, n):  # note")
    assert out.count("<span") == 5  # for, in, seq, 0, the comment
    assert "jp-mirror-editor-keyword-color" in out and "jp-mirror-editor-number-color" in out
    assert "jp-mirror-editor-comment-color" in out
    assert html_mod.unescape(_strip_tags(out)) == "    for i in seq(0, n):  # note"
    # the names of the program are not coloured
    assert "<span" not in highlight_line("x")


def _strip_tags(s: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", s)


def test_proc_html_is_its_printout_coloured() -> None:
    out = two_loops._repr_html_()
    assert out.startswith('<pre class="cs-proc"') and "<span" in out
    assert html_mod.unescape(_strip_tags(out)) == str(two_loops)


def test_marked_line_has_its_own_text_colour() -> None:
    out = two_loops.find_loop("j")._repr_html_()
    (marked,) = [ln for ln in out.splitlines() if "cs-mark" in ln]
    assert f"background:{MARK_BG}" in marked and f"color:{MARK_FG}" in marked
    assert "for j in seq(0, m):  # &lt;--" in marked


def test_tables_are_left_aligned() -> None:
    _, cursors = scheduled()
    out = cursors._repr_html_()  # type: ignore[attr-defined]
    assert out.count("<td ") == out.count('<td style="text-align:left') > 0
    assert out.count("<th ") == out.count('<th style="text-align:left') == 4


def test_history_viewer_steps() -> None:
    p, _ = scheduled()
    steps = history_steps(p)
    assert [s.version for s in steps] == [0, 1, 2]
    assert steps[0].call == "" and steps[0].text == str(two_loops)
    assert steps[1].call.startswith("p, (outer, inner, tail, guard, body) = split(p, ")
    assert steps[2].call.startswith("p, (outer, inner) = reorder_loops(p, inner)")
    assert steps[2].fields == ("outer", "inner")
    # the cursors the step returned are marked in its proc: j (now outer) and ii (inner)
    marked = [ln.strip() for ln in steps[2].text.splitlines() if "# <--" in ln]
    assert marked == ["for j in seq(0, m):  # <--", "for ii in seq(0, 4):  # <--"]
    view = p.show_history()  # outside Jupyter: the static page
    assert isinstance(view, HistoryView)
    page = view._repr_html_()
    assert page.count("cs-proc") == 3 and "reorder_loops(p, inner)" in page


def test_history_viewer_widget() -> None:
    ipywidgets = pytest.importorskip("ipywidgets")
    p, _ = scheduled()
    box = HistoryView(p).widget()
    slider, out = box.children
    assert isinstance(slider, ipywidgets.IntSlider) and (slider.min, slider.max) == (0, 2)
    assert "reorder_loops" in out.value
    slider.value = 1
    assert "split(p, " in out.value and "reorder_loops" not in out.value
    slider.value = 0
    assert "no step" in out.value


# -- headless Chromium -------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# JupyterLab's dark theme, as far as these outputs see it: light text on a dark page, and the
# editor token colours of the dark theme.
DARK = (
    "background:#111111;color:#e0e0e0;--jp-content-font-color1:rgba(255,255,255,0.87);"
    "--jp-mirror-editor-keyword-color:#c792ea;--jp-mirror-editor-builtin-color:#82aaff;"
    "--jp-mirror-editor-number-color:#c3e88d;--jp-mirror-editor-comment-color:#8a8a8a;"
    "--jp-mirror-editor-string-color:#f07178"
)
LIGHT = "background:#ffffff;color:#000000"


def _page(fragments: list[str]) -> str:
    body = "".join(f"<div>{f}</div>" for f in fragments)
    panels = "".join(
        f'<div style="{theme};width:680px;padding:8px;flex:none">{body}</div>'
        for theme in (LIGHT, DARK)
    )
    return (
        '<!doctype html><html><body style="margin:0">'
        f'<div style="display:flex">{panels}</div></body></html>'
    )


def _luminance(rgb: tuple[int, ...]) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_display_in_headless_chromium(tmp_path: Path) -> None:
    from PIL import Image

    p, cursors = scheduled()
    cursor = p.find_loop("j")
    fragments = [cursor._repr_html_(), cursors._repr_html_(), p._repr_html_()]  # type: ignore[attr-defined]
    page = tmp_path / "display.html"
    page.write_text(_page(fragments), encoding="utf-8")
    shot = tmp_path / "display.png"
    assert CHROMIUM is not None
    r = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--screenshot={shot}",
            "--window-size=1400,800",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shot.is_file(), r.stderr
    img = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")).astype(int)
    mark_bg = np.array([int(MARK_BG[k : k + 2], 16) for k in (1, 3, 5)])
    for name, (x0, x1), page_bg in (
        ("light", (0, 696), (255, 255, 255)),
        ("dark", (696, 1392), (17, 17, 17)),
    ):
        panel = img[:, x0:x1]
        flat = panel.reshape(-1, 3)
        # not blank: text in several colours covers part of the panel
        assert len(np.unique(flat, axis=0)) > 50, name
        inked = float(np.mean(np.any(flat != page_bg, axis=1)))
        assert inked > 0.02, (name, inked)
        # the marked line: the highlight is there, and the text on it is in a colour of its
        # own that reads on the highlight (WCAG contrast >= 4.5)
        is_mark = np.all(panel == mark_bg, axis=2)
        rows = np.nonzero(is_mark.sum(axis=1) > 40)[0]
        assert len(rows), f"{name}: no marked line in the screenshot"
        text = []
        for y in rows:
            xs = np.nonzero(is_mark[y])[0]
            span = panel[y, xs.min() : xs.max() + 1]
            text += [tuple(px) for px in span if tuple(px) != tuple(mark_bg)]
        assert text, f"{name}: the marked line has no text"
        best = max(_contrast(px, tuple(mark_bg)) for px in set(text))
        assert best >= 4.5, f"{name}: the marked line's text barely differs from its background"
