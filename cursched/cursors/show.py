"""Showing cursors: the proc printed with the cursor's place marked, as text and as HTML.

The printer (``cursched.ir.printer.print_proc(ir, marks=...)``) does the marking: ``# <--``
after a statement, ``# BLOCK START``/``# BLOCK END`` around a block, a ``[GAP]`` line, ``^``
under an expression or a parameter. HTML wraps that text and highlights the marked lines.
"""

from __future__ import annotations

import html
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


def html_text(text: str) -> str:
    """``text`` as an HTML ``<pre>`` block, marked lines highlighted."""
    lines = []
    for line in text.splitlines():
        esc = html.escape(line)
        marked = any(m in line for m in _MARKERS) or (line.strip() and set(line.strip()) <= {"^"})
        if marked:
            esc = f'<span style="background:#fff3a0;font-weight:bold">{esc}</span>'
        lines.append(esc)
    body = "\n".join(lines)
    return f'<pre style="font-family:monospace;line-height:1.25">{body}</pre>'


def html_cursor(c: Cursor) -> str:
    """``_repr_html_`` of a cursor: its proc with the place highlighted."""
    head = html.escape(repr(c))
    return f"<div><div><code>{head}</code></div>{html_text(str(c))}</div>"
