"""The frontend: Python source in the cursched language -> a typed ``ProcDef``.

``parse_function`` is what ``@proc`` and ``@instr`` call; ``parse_source`` parses a text (the
printer's output, for one) with names resolved in a given mapping. Every problem with the
input is a ``ParseError`` (Python outside the language) or a ``TypeCheckError`` (in the
language but wrong), located at file:line:col with the source line.

Free names of a proc resolve in its defining scope: the function's globals and its closure
cells (no stack inspection). Names that appear *only* in annotations (``f32[N] @ MyMem``) are
not closure cells, because ``from __future__ import annotations`` makes annotations strings
that Python never compiles; such names must be module globals (or be passed through
``parse_source``'s ``env``).

Where the language is stricter or looser than Python or Exo (each rule is tested in
tests/frontend, and the module that applies it says why):

- ``exprs``: control values (sizes, indices, bools, strides) are never data and data is never
  control (only literals cross over); ``not`` is not in the language; data literals must be
  values of the destination type; a comparison chain is an ``and``.
- ``annotations``: a shape names only sizes declared before it, and constants > 0.
- ``calls``: scalar parameters take a scalar buffer or an element ``A[i, j]``; tensor
  parameters take only whole contiguous tensors; memories must be identical.
- ``scope``: ``seq``, ``par``, ``stride``, ``scope``, ``inf`` and ``instr`` are not variable
  names; a block may not declare a name twice, a nested block may shadow it.
- ``parser``: asserts stand at the top level; a parameter may not be named like a memory,
  proc or extern the proc uses.
"""

from __future__ import annotations

import ast
import re
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from cursched.errors import ParseError, SrcInfo
from cursched.frontend.parser import ProcParser
from cursched.frontend.source import Source, source_of_function
from cursched.ir.nodes import InstrInfo, ProcDef

__all__ = ["parse_function", "parse_source"]


def parse_function(fn: Callable[..., Any], instr: tuple[str, str] | None = None) -> ProcDef:
    """Parse a Python function written in the cursched language (it is never executed).

    Args:
        fn: the function; its source is read from its file.
        instr: ``(c_template, c_global)`` to make the proc an instruction (``@instr``).

    Returns:
        The typed IR of the proc.

    Raises:
        ParseError: the source uses Python outside the language.
        TypeCheckError: the source is in the language but ill-typed.
    """
    if getattr(fn, "__name__", None) == "<lambda>":
        code = getattr(fn, "__code__", None)
        where = SrcInfo(code.co_filename, code.co_firstlineno) if code is not None else None
        raise ParseError("a proc must be defined with def, not lambda", where)
    src = source_of_function(fn)
    module = src.parse()
    fdef = module.body[0] if module.body else None
    if not isinstance(fdef, ast.FunctionDef):
        code = getattr(fn, "__code__", None)
        where = SrcInfo(src.filename, code.co_firstlineno) if code is not None else None
        raise ParseError("a proc must be defined with def", where)
    info = InstrInfo(instr[0], instr[1]) if instr is not None else None
    return ProcParser(src, _scope_of(fn)).proc(fdef, info)


def parse_source(text: str, env: Mapping[str, object], filename: str = "<string>") -> ProcDef:
    """Parse the text of one proc definition, resolving free names in ``env``.

    The text may start with decorator lines: ``@proc`` is ignored and
    ``@instr("template")`` (optionally with a second, ``c_global`` string) makes the proc an
    instruction, as the printer prints instructions.

    Raises:
        ParseError: the text is not one proc definition in the language.
        TypeCheckError: it is, but ill-typed.
    """
    src = Source(filename, re.split(r"\r\n|\r|\n", text), 1)
    module = src.parse()
    defs = [s for s in module.body if not _is_future_import(s)]
    if len(defs) != 1 or not isinstance(defs[0], ast.FunctionDef):
        where = src.of(defs[1] if len(defs) > 1 else defs[0]) if defs else src.at(1, 0)
        raise ParseError("expected exactly one proc definition (def name(...): ...)", where)
    fdef = defs[0]
    info: InstrInfo | None = None
    for deco in fdef.decorator_list:
        info = _decorator(src, deco) or info
    return ProcParser(src, env).proc(fdef, info)


def _is_future_import(s: ast.stmt) -> bool:
    return isinstance(s, ast.ImportFrom) and s.module == "__future__"


def _decorator(src: Source, deco: ast.expr) -> InstrInfo | None:
    if _dotted_tail(deco) == "proc":
        return None
    if isinstance(deco, ast.Call) and _dotted_tail(deco.func) == "instr":
        strings = [str(a.value) for a in deco.args if _is_str(a)]
        kw = {k.arg: str(k.value.value) for k in deco.keywords if k.arg and _is_str(k.value)}
        ok = len(strings) == len(deco.args) and len(kw) == len(deco.keywords)
        if (
            ok
            and 1 <= len(strings) <= 2
            and set(kw) <= {"c_global"}
            and len(strings) + len(kw) <= 2
        ):
            glob = strings[1] if len(strings) == 2 else kw.get("c_global", "")
            return InstrInfo(strings[0], glob)
        raise ParseError(
            'write @instr("C template") or @instr("C template", "C global")', src.of(deco)
        )
    raise ParseError("only @proc and @instr(...) decorators are understood", src.of(deco))


def _dotted_tail(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_str(node: ast.expr) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _scope_of(fn: Callable[..., Any]) -> Mapping[str, object]:
    """The names visible to ``fn``: its closure cells over its globals."""
    closure: dict[str, object] = {}
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, cells, strict=False):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # a cell not yet assigned in the enclosing function
                continue
    globs = getattr(fn, "__globals__", None)
    return ChainMap(closure, globs) if isinstance(globs, dict) else closure
