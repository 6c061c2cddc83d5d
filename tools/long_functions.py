"""List the functions of ``cursched/primitives`` longer than a limit, in lines of code.

Lines of code: lines of the function that are neither blank, nor comments, nor its docstring.
The house rule (docs, STYLE): no primitive function longer than about 80; each precondition is
a ``_check_*`` function of its own. ``tests/test_function_length.py`` runs this.

Usage: ``python tools/long_functions.py [LIMIT] [ROOT]`` (defaults: 80, cursched/primitives);
prints ``lines file:line name`` per function over the limit and exits 1 when there is one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def code_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    """The function's lines that are not blank, comments or its docstring."""
    doc: set[int] = set()
    first = fn.body[0] if fn.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        doc = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    end = fn.end_lineno or fn.lineno
    return sum(
        1
        for i in range(fn.lineno, end + 1)
        if i not in doc and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#")
    )


def long_functions(root: Path, limit: int) -> list[tuple[int, str, int, str]]:
    """(lines, file, line, name) of every function under ``root`` longer than ``limit``."""
    out = []
    for f in sorted(root.rglob("*.py")):
        src = f.read_text()
        lines = src.splitlines()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = code_lines(node, lines)
                if n > limit:
                    out.append((n, str(f), node.lineno, node.name))
    return sorted(out, reverse=True)


def main(argv: list[str]) -> int:
    limit = int(argv[1]) if len(argv) > 1 else 80
    root = Path(argv[2]) if len(argv) > 2 else Path(__file__).parent.parent / "cursched/primitives"
    found = long_functions(root, limit)
    for n, f, line, name in found:
        print(f"{n:4d} {f}:{line} {name}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
