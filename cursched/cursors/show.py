"""Showing cursors: the proc printed with the cursor's place marked, as text and as HTML.

The printer (``cursched.ir.printer.print_proc(ir, marks=...)``) does the marking: ``# <--``
after a statement, ``# BLOCK START``/``# BLOCK END`` around a block, a ``[GAP]`` line, ``^``
under an expression or a parameter. HTML wraps that text and highlights the marked lines.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, assert_never

from cursched.cursors.locs import ArgLoc, BlockLoc, GapLoc, Loc, NodeLoc, NoLoc, format_path
from cursched.ir.nodes import EXPR_TYPES
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import BlockMark, Mark, print_proc

if TYPE_CHECKING:
    from cursched.cursors.kinds import Cursor
    from cursched.ir.nodes import ProcDef


def loc_text(loc: Loc) -> str:
    """A short text for a location: ``body[0].rhs``, ``body[1:3]``, ``after body[0]``."""
    match loc:
        case NodeLoc():
            return format_path(loc.path) or "the proc"
        case BlockLoc():
            head = format_path(loc.parent)
            return f"{head + '.' if head else ''}{loc.attr}[{loc.lo}:{loc.hi}]"
        case GapLoc() if loc.side == "start":
            return f"start of {format_path(loc.anchor)}.{loc.attr}"
        case GapLoc():
            return f"{loc.side} {format_path(loc.anchor)}"
        case ArgLoc():
            return f"args[{loc.index}]"
        case NoLoc():
            return "nowhere"
        case _:
            assert_never(loc)


def marks_for(ir: ProcDef, loc: Loc) -> dict[Path, Mark]:
    """The printer marks that show ``loc``."""
    match loc:
        case NodeLoc():
            if not loc.path:
                return {}
            node = get_at(ir, loc.path)
            return {loc.path: "expr" if isinstance(node, EXPR_TYPES) else "stmt"}
        case BlockLoc():
            return {(*loc.parent, (loc.attr, loc.lo)): BlockMark(loc.hi - loc.lo)}
        case GapLoc():
            parent, attr, pos = loc.position()
            return {(*parent, (attr, pos)): "gap"}
        case ArgLoc():
            return {(("args", loc.index),): "expr"}
        case NoLoc():
            return {}
        case _:
            assert_never(loc)


def show_loc(ir: ProcDef, loc: Loc) -> str:
    """``ir`` printed with ``loc`` marked."""
    return print_proc(ir, marks=marks_for(ir, loc))


def show_cursor(c: Cursor) -> str:
    """The cursor's proc printed with the cursor's place marked."""
    return show_loc(c.proc().ir(), c.loc)


_MARKERS = ("# <--", "[GAP]", "# BLOCK START", "# BLOCK END")

# Token colours: JupyterLab's editor colours, which follow its light or dark theme, with
# fallbacks readable on a white page (outside Jupyter). Inline styles, not a <style> block,
# since Jupyter's sanitizer may drop style elements of untrusted outputs.
_COLOURS = {
    "kw": "var(--jp-mirror-editor-keyword-color, #7a1fa2)",
    "type": "var(--jp-mirror-editor-builtin-color, #00638a)",
    "num": "var(--jp-mirror-editor-number-color, #08750c)",
    "str": "var(--jp-mirror-editor-string-color, #a31515)",
    "com": "var(--jp-mirror-editor-comment-color, #5c6670)",
}
_KEYWORDS = frozenset(
    [
        "def",
        "for",
        "in",
        "if",
        "elif",
        "else",
        "assert",
        "pass",
        "with",
        "and",
        "or",
        "not",
        "return",
        "True",
        "False",
    ]
)
_TYPES = frozenset(
    [
        "size",
        "index",
        "bool",
        "R",
        "f16",
        "f32",
        "f64",
        "i8",
        "ui8",
        "ui16",
        "i32",
        "seq",
        "par",
        "stride",
        "scope",
        "instr",
        "proc",
    ]
)
_TOKEN = re.compile(
    r"(?P<com>#.*$)|(?P<str>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
    r"|(?P<num>\b\d+(?:\.\d*)?(?:[eE][-+]?\d+)?\b)|(?P<name>[A-Za-z_]\w*)",
    re.M,
)
# The marked line: a fixed dark text on a fixed pale background, so that it reads the same in
# every theme (a theme's light text on the pale highlight would not).
MARK_BG = "#ffe58a"
MARK_FG = "#1b1b1b"
_PRE = (
    "font-family:var(--jp-code-font-family, monospace);line-height:1.3;text-align:left;"
    "color:var(--jp-content-font-color1, inherit);background:transparent;padding:4px 0"
)


def _span(kind: str, text: str) -> str:
    return f'<span style="color:{_COLOURS[kind]}">{html.escape(text)}</span>'


def highlight_line(line: str) -> str:
    """One line of printed source as HTML, its tokens coloured (keywords, types and loop
    forms, numbers, strings, comments)."""
    out, pos = [], 0
    for m in _TOKEN.finditer(line):
        out.append(html.escape(line[pos : m.start()]))
        kind = m.lastgroup
        text = m.group()
        if kind == "name":
            kind = "kw" if text in _KEYWORDS else "type" if text in _TYPES else None
        out.append(_span(kind, text) if kind else html.escape(text))
        pos = m.end()
    out.append(html.escape(line[pos:]))
    return "".join(out)


def is_marked(line: str) -> bool:
    """Whether a printed line is one of the printer's marks (a cursor's place)."""
    stripped = line.strip()
    return any(m in line for m in _MARKERS) or bool(stripped and set(stripped) <= {"^"})


def html_text(text: str) -> str:
    """``text`` (printed source) as an HTML ``<pre>`` block: tokens coloured, marked lines
    highlighted in colours readable on light and dark themes."""
    lines = []
    for line in text.splitlines():
        if is_marked(line):
            style = f"background:{MARK_BG};color:{MARK_FG};font-weight:bold"
            lines.append(f'<span class="cs-mark" style="{style}">{html.escape(line)}</span>')
        else:
            lines.append(highlight_line(line))
    body = "\n".join(lines)
    return f'<pre class="cs-proc" style="{_PRE}">{body}</pre>'


def html_cursor(c: Cursor) -> str:
    """``_repr_html_`` of a cursor: its proc with the place highlighted."""
    head = html.escape(repr(c))
    return f'<div style="text-align:left"><div><code>{head}</code></div>{html_text(str(c))}</div>'


def html_table(title: str, head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A left-aligned HTML table (Jupyter right-aligns table cells unless told otherwise)."""
    cell = "text-align:left;padding:1px 10px 1px 0"
    ths = "".join(f'<th style="{cell}">{html.escape(h)}</th>' for h in head)
    trs = "".join(
        "<tr>"
        + "".join(f'<td style="{cell}"><code>{html.escape(c)}</code></td>' for c in r)
        + "</tr>"
        for r in rows
    )
    return (
        f'<div style="text-align:left"><b>{html.escape(title)}</b>'
        f'<table style="margin-left:0"><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody>'
        "</table></div>"
    )
