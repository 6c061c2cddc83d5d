"""Readable, unique, keyword-safe C names for procs and variables.

Generated C keeps the user's names: a loop variable ``i`` stays ``i``. A name is changed only
when it would clash: with a C keyword or a name the generated code itself uses (``cs_``
helpers, ``math.h`` functions), or with another variable visible at the same point. Clashes
get a numeric suffix (``i_1``). Names are scoped: a name freed at the end of a block can be
reused by a later sibling block, so two sibling loops over ``i`` both print as ``i``.
"""

from __future__ import annotations

import re

from cursched.ir.symbols import Sym

C_KEYWORDS: frozenset[str] = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Bool",
        "_Complex",
        "_Imaginary",
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_Generic",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
        "_Float16",
        "bool",
        "true",
        "false",
        "asm",
        "typeof",
    ]
)

#: Names of the C library and of the prelude that generated code refers to.
RESERVED: frozenset[str] = frozenset(
    [
        "malloc",
        "free",
        "abort",
        "NULL",
        "INFINITY",
        "NAN",
        "main",
        "int8_t",
        "uint8_t",
        "int16_t",
        "uint16_t",
        "int32_t",
        "uint32_t",
        "int64_t",
        "uint64_t",
        "int_fast64_t",
        "sin",
        "sinf",
        "sqrt",
        "sqrtf",
        "exp",
        "expf",
        "exp2",
        "exp2f",
        "log",
        "logf",
        "fmax",
        "fmaxf",
        "fmin",
        "fminf",
        "fmod",
        "fmodf",
    ]
)

_IDENT = re.compile(r"[^A-Za-z0-9_]")


def sanitize(name: str) -> str:
    """``name`` as a C identifier: odd characters become ``_``; never a keyword."""
    out = _IDENT.sub("_", name) or "v"
    if out[0].isdigit():
        out = "v" + out
    if out in C_KEYWORDS or out in RESERVED or out.startswith("cs_"):
        out += "_"
    return out


class Namer:
    """Assigns C names to symbols, unique among the names visible at each point.

    ``taken`` starts with names that are global to the compile unit (functions); ``push`` and
    ``pop`` bracket C blocks so that names can be reused by sibling blocks.
    """

    def __init__(self, taken: set[str] | frozenset[str] = frozenset()) -> None:
        self._taken: set[str] = set(taken)
        self._names: dict[Sym, str] = {}
        self._scopes: list[list[str]] = [[]]

    def fresh(self, base: str) -> str:
        """A new name based on ``base`` that is not visible yet (reserved until its scope ends)."""
        base = sanitize(base)
        name = base
        k = 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        self._scopes[-1].append(name)
        return name

    def bind(self, sym: Sym, suffix: str = "") -> str:
        """Give ``sym`` a name (its own name when free) and remember it."""
        name = self.fresh(sym.name + suffix)
        self._names[sym] = name
        return name

    def name(self, sym: Sym) -> str:
        """The name given to ``sym`` (``KeyError`` for an unbound symbol is a codegen bug)."""
        return self._names[sym]

    def push(self) -> None:
        self._scopes.append([])

    def pop(self) -> None:
        for n in self._scopes.pop():
            self._taken.discard(n)
