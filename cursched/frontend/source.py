"""User source text: dedenting, parsing with ``ast`` and mapping AST positions back.

Every IR node the frontend makes carries a ``SrcInfo`` that points into the user's own file:
the real file name, the real line number (the function's first line is added to the AST's
line numbers) and the column in characters of the original, un-dedented line, plus that
line's text for the caret excerpt of error messages.
"""

from __future__ import annotations

import ast
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from cursched.errors import ParseError, SrcInfo


class Source:
    """A piece of user source: its file, where it starts and how much indentation was cut.

    Args:
        filename: the file the text comes from (``"<string>"`` for texts).
        lines: the original lines (with their indentation, without line ends).
        first_line: the 1-based line number of ``lines[0]`` in ``filename``.
    """

    def __init__(self, filename: str, lines: list[str], first_line: int = 1) -> None:
        self.filename = filename
        self.lines = lines
        self.first_line = first_line
        indent = _common_indent(lines)
        # How many characters were removed from each line; columns are shifted back by it.
        self.removed = [len(indent) if ln.startswith(indent) else 0 for ln in lines]
        self.text = "\n".join(ln[cut:] for ln, cut in zip(lines, self.removed, strict=True)) + (
            "\n" if lines else ""
        )

    def at(self, lineno: int, col: int, *, byte_col: bool = True) -> SrcInfo:
        """The ``SrcInfo`` of a position in the dedented text (1-based line, 0-based col).

        ``col`` is a UTF-8 byte offset (as in AST nodes) unless ``byte_col`` is false.
        """
        index = min(max(lineno - 1, 0), max(len(self.lines) - 1, 0))
        original = self.lines[index] if self.lines else ""
        cut = self.removed[index] if self.lines else 0
        dedented = original[cut:]
        if byte_col and not dedented.isascii():  # in ASCII, bytes are characters
            col = len(dedented.encode("utf-8")[: max(col, 0)].decode("utf-8", errors="ignore"))
        col = min(max(col, 0), len(dedented))
        return SrcInfo(self.filename, self.first_line + index, col + cut, original)

    def of(self, node: ast.AST) -> SrcInfo:
        """The ``SrcInfo`` of an AST node (the start of the function when it has none)."""
        lineno = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        if not isinstance(lineno, int) or not isinstance(col, int):
            return self.at(1, 0)
        return self.at(lineno, col)

    def parse(self) -> ast.Module:
        """Parse the dedented text; a syntax error becomes a ``ParseError``."""
        try:
            with warnings.catch_warnings():
                # Python already warned when it imported the user's file; and a warning
                # turned into an error by -W error must not change what parses.
                warnings.simplefilter("ignore", SyntaxWarning)
                return ast.parse(self.text, filename=self.filename)
        except SyntaxError as e:
            lineno = e.lineno if isinstance(e.lineno, int) else 1
            col = e.offset - 1 if isinstance(e.offset, int) else 0
            info = self.at(lineno, col, byte_col=False)
            raise ParseError(f"not valid Python: {e.msg}", info) from None
        except (ValueError, RecursionError, MemoryError) as e:
            # ValueError: NUL bytes; RecursionError/MemoryError: absurdly deep nesting.
            raise ParseError(f"cannot parse the source: {e}", self.at(1, 0)) from None


def _common_indent(lines: list[str]) -> str:
    for ln in lines:
        if ln.strip():
            return ln[: len(ln) - len(ln.lstrip())]
    return ""


def source_of_function(fn: Callable[..., Any]) -> Source:
    """The source of a Python function, from its file, as a ``Source``.

    Raises:
        ParseError: when Python cannot find the function's source (defined in a REPL or
            with ``exec``); use ``parse_source`` for those.
    """
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    line = code.co_firstlineno if code is not None else 1
    try:
        lines, first = inspect.getsourcelines(fn)
        source_file = inspect.getsourcefile(fn) or filename
    except (OSError, TypeError) as e:
        name = getattr(fn, "__name__", repr(fn))
        raise ParseError(
            f"cannot read the source of {name} ({e}); "
            "define procs in a file, or use cursched.frontend.parse_source",
            SrcInfo(filename, line),
        ) from None
    return Source(source_file, [ln.rstrip("\r\n") for ln in lines], max(first, 1))
