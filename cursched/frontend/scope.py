"""Name resolution: the variables of a proc, block by block, and the defining Python scope.

Names are looked up first among the proc's own variables (parameters, allocations, loop
variables, windows; innermost block first), then in the Python scope the proc was defined in
(``env``: the function's globals and closure, or the mapping given to ``parse_source``), then
among the built-ins (externs, ``inf``, the built-in memories). Every distinct variable is a
fresh ``Sym``: a loop variable reusing the name of an earlier, finished loop is a new symbol.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NoReturn, TypeAlias

from cursched.errors import ParseError, SrcInfo, TypeCheckError
from cursched.frontend.source import Source
from cursched.ir.barrier import SYNC_THREADS
from cursched.ir.memory import BUILTIN_MEMORIES, Memory
from cursched.ir.nodes import ProcDef
from cursched.ir.symbols import Sym
from cursched.ir.types import Type

#: Names the language uses as syntax: no variable may take them (the printer could not print
#: such a variable under its own name).
RESERVED = frozenset({"seq", "par", "stride", "scope", "inf", "instr"})

MemClass: TypeAlias = type[Memory]
VarKind: TypeAlias = Literal["arg", "alloc", "loop", "window"]

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Var:
    """A variable of the proc being parsed: its symbol, type, memory and how it was made."""

    sym: Sym
    type: Type
    mem: MemClass | None
    kind: VarKind


class Ctx:
    """What the expression and statement parsers share: source, variables and scope.

    Args:
        src: the user source (for ``SrcInfo`` and error messages).
        env: the Python names visible where the proc was defined.
    """

    def __init__(self, src: Source, env: Mapping[str, object]) -> None:
        self.src = src
        self.env = env
        self.blocks: list[dict[str, Var]] = [{}]

    # -- locations and errors ---------------------------------------------------------------
    def loc(self, node: ast.AST) -> SrcInfo:
        """The source location of ``node``."""
        return self.src.of(node)

    def parse_error(self, node: ast.AST, message: str) -> NoReturn:
        """Raise a ``ParseError`` (Python outside the language) at ``node``."""
        raise ParseError(message, self.loc(node))

    def type_error(self, node: ast.AST, message: str) -> NoReturn:
        """Raise a ``TypeCheckError`` (in the language, but wrong) at ``node``."""
        raise TypeCheckError(message, self.loc(node))

    # -- the proc's variables -----------------------------------------------------------------
    def push(self) -> None:
        """Open a block (a loop, branch or scope body)."""
        self.blocks.append({})

    def pop(self) -> None:
        """Close the innermost block; its names are no longer visible."""
        self.blocks.pop()

    def lookup(self, name: str) -> Var | None:
        """The innermost variable called ``name``, or None."""
        for block in reversed(self.blocks):
            var = block.get(name)
            if var is not None:
                return var
        return None

    def declare(self, node: ast.AST, name: str, var: Var) -> None:
        """Bind ``name`` in the innermost block.

        A name may shadow one of an enclosing block but not one of the same block: two
        allocations of ``t`` side by side would make every later ``t`` ambiguous.
        """
        if name in RESERVED:
            self.type_error(node, f"'{name}' is a word of the language; choose another name")
        if name in self.blocks[-1]:
            self.type_error(node, f"'{name}' is already defined in this block")
        self.blocks[-1][name] = var

    # -- the defining Python scope --------------------------------------------------------------
    def env_get(self, name: str) -> object:
        """The Python value of ``name`` in the defining scope, or ``MISSING``."""
        try:
            return self.env.get(name, _MISSING)
        except Exception:  # a user Mapping may raise anything; treat it as absent
            return _MISSING

    def resolve_dotted(self, node: ast.expr) -> object:
        """The Python value of a name or dotted name (``lib.AVX2``), or ``MISSING``."""
        match node:
            case ast.Name(id=name):
                return self.env_get(name)
            case ast.Attribute(value=base, attr=attr):
                obj = self.resolve_dotted(base)
                if obj is _MISSING:
                    return _MISSING
                try:
                    return getattr(obj, attr)
                except Exception:  # user objects may raise anything from __getattr__
                    return _MISSING
            case _:
                return _MISSING

    def memory(self, node: ast.expr) -> type[Memory]:
        """Resolve the memory after ``@`` in an annotation.

        A memory is a subclass of ``Memory`` found in the defining scope; the built-in
        memories (``DRAM``, ``DRAM_STACK``, ...) need no import.
        """
        if not isinstance(node, ast.Name | ast.Attribute):
            self.parse_error(node, "a memory is a name, such as DRAM")
        obj = self.resolve_dotted(node)
        if obj is _MISSING and isinstance(node, ast.Name):
            obj = BUILTIN_MEMORIES.get(node.id, _MISSING)
        text = ast.unparse(node)
        if obj is _MISSING:
            self.type_error(node, f"unknown memory '{text}'")
        if not (isinstance(obj, type) and issubclass(obj, Memory)):
            self.type_error(node, f"'{text}' is not a memory (a subclass of Memory)")
        return obj

    def proc_def(self, node: ast.expr) -> ProcDef | None:
        """The ``ProcDef`` a (dotted) name refers to, or None when it is not a proc."""
        obj = self.resolve_dotted(node)
        if obj is _MISSING and isinstance(node, ast.Name) and node.id == SYNC_THREADS.name:
            return SYNC_THREADS  # the barrier needs no import, like the built-in memories
        if isinstance(obj, ProcDef):
            return obj
        try:
            ir = getattr(obj, "__cursched_ir__", None) if obj is not _MISSING else None
        except Exception:  # a user object's property may raise anything
            return None
        return ir if isinstance(ir, ProcDef) else None


def is_missing(obj: object) -> bool:
    """Whether a lookup found nothing."""
    return obj is _MISSING
