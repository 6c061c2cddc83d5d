"""A compile unit: one or more root procs and every proc they call, as one ``.c``/``.h`` pair.

Procs are emitted callees first, so no prototypes are needed inside the ``.c``; the ``.h``
declares every generated function. Instruction procs are not functions: their calls are
expanded in place through their C templates, and their ``c_global`` text appears once near
the top of the ``.c``, after the ``c_global`` text of every memory the unit uses.

With ``entry=True`` (the runtime's builds) each root also gets ``cs_entry_<name>``, a shim
taking numpy array objects instead of data pointers (``CS_NP_DATA`` reads the data pointer
out of the array object; the runtime checks the offset before using it), so that the Python
wrapper never calls the slow ``ndarray.ctypes`` per call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cursched.codegen.c.helpers import Helpers
from cursched.codegen.c.naming import RESERVED, sanitize
from cursched.codegen.c.statements import CParam, FunctionGen, signature
from cursched.ir.memory import Memory
from cursched.ir.nodes import Alloc, Call, ProcDef
from cursched.ir.traversal import walk_stmts
from cursched.ir.types import ControlType, DataType, TensorType

_INCLUDES = "#include <stdbool.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <math.h>\n"


@dataclass(frozen=True, slots=True)
class CFunction:
    """One generated function: its proc, C name and C parameters."""

    proc: ProcDef
    cname: str
    params: tuple[CParam, ...]


@dataclass(frozen=True, slots=True)
class CUnit:
    """The generated text of a unit and what the runtime needs to call its roots."""

    name: str
    c_source: str
    h_source: str
    roots: tuple[CFunction, ...]
    #: ``(feature, memory)`` pairs: CPU features the unit's memories need (``Memory.requires``).
    requires: tuple[tuple[str, str], ...] = ()


def _procs_post_order(roots: Iterable[ProcDef]) -> list[ProcDef]:
    seen: set[int] = set()
    out: list[ProcDef] = []

    def visit(p: ProcDef) -> None:
        if id(p) in seen:
            return
        seen.add(id(p))
        # An instruction's body only states its meaning: the C comes from its template.
        for s in walk_stmts(p.body if p.instr is None else ()):
            if isinstance(s, Call):
                visit(s.proc)
        out.append(p)

    for r in roots:
        visit(r)
    return out


def _memories(procs: list[ProcDef]) -> list[type[Memory]]:
    mems: list[type[Memory]] = []
    for p in procs:
        found = [a.mem for a in p.args if a.mem is not None]
        if p.instr is None:
            found += [s.mem for s in walk_stmts(p.body) if isinstance(s, Alloc)]
        mems += [m for m in found if m not in mems]
    return mems


def _globals(procs: list[ProcDef]) -> list[str]:
    mems: list[type[Memory]] = []
    instr_globals: list[str] = []
    for p in procs:
        found: list[type[Memory]] = []
        for a in p.args:
            if a.mem is not None:
                found.append(a.mem)
        if p.instr is not None:
            if p.instr.c_global and p.instr.c_global not in instr_globals:
                instr_globals.append(p.instr.c_global)
        else:
            found += [s.mem for s in walk_stmts(p.body) if isinstance(s, Alloc)]
        for m in found:
            if m not in mems:
                mems.append(m)
    texts = [m.c_global() for m in mems]
    return [t.strip("\n") for t in [*texts, *instr_globals] if t.strip()]


def generate_unit(name: str, roots: Iterable[ProcDef], entry: bool = False) -> CUnit:
    """Generate the C text of ``roots`` and their callees.

    Args:
        name: the unit's name (the header guard and the file stem).
        roots: the procs whose functions the unit exports. An instruction proc among them
            becomes a function whose body is its template (calls of it are still expanded).
        entry: also emit the ``cs_entry_*`` shims the Python runtime calls.

    Returns:
        The ``.c`` and ``.h`` text and the C signatures of the roots.

    Raises:
        CodegenError: a construct with no C translation.
    """
    root_list = list(roots)
    root_ids = {id(r) for r in root_list}
    reached = _procs_post_order(root_list)
    procs = [p for p in reached if p.instr is None or id(p) in root_ids]
    taken: set[str] = set(RESERVED)
    cnames: dict[int, str] = {}
    for p in procs:
        base = sanitize(p.name)
        cname, k = base, 0
        while cname in taken:
            k += 1
            cname = f"{base}_{k}"
        taken.add(cname)
        cnames[id(p)] = cname
    helpers = Helpers()
    funcs: dict[int, CFunction] = {}
    bodies: list[str] = []
    for p in procs:
        gen = FunctionGen(p, cnames[id(p)], taken, helpers, lambda q: cnames[id(q)])
        bodies.append(gen.text())
        funcs[id(p)] = CFunction(p, cnames[id(p)], gen.params)
    root_funcs = tuple(funcs[id(r)] for r in root_list)
    guard = f"CURSCHED_{sanitize(name).upper()}_H"
    protos = [signature(f.cname, f.params) + ";" for f in funcs.values()]
    h = "\n".join(
        [
            f"/* {name}.h: generated by cursched; do not edit. */",
            f"#ifndef {guard}",
            f"#define {guard}",
            "",
            "#include <stdbool.h>",
            "#include <stdint.h>",
            "",
            *protos,
            "",
            f"#endif /* {guard} */",
            "",
        ]
    )
    parts = [f"/* {name}.c: generated by cursched; do not edit. */\n{_INCLUDES.rstrip()}"]
    parts += _globals(reached)
    if helpers.text():
        parts.append(helpers.text())
    parts += bodies
    if entry:
        parts.append(_entry_text(root_funcs))
    c = "\n\n".join(parts) + "\n"
    requires = tuple((f, f"memory {m.name()}") for m in _memories(reached) for f in m.requires)
    return CUnit(name, c, h, root_funcs, requires)


def _entry_text(roots: tuple[CFunction, ...]) -> str:
    out = [
        "/* Runtime shims: numpy array objects in, data pointers out. */",
        "#ifndef CS_NP_DATA_OFFSET",
        "#define CS_NP_DATA_OFFSET 16",
        "#endif",
        "#define CS_NP_DATA(o) (*(void **)((char *)(o) + CS_NP_DATA_OFFSET))",
    ]
    shims: list[str] = []
    for f in roots:
        decls: list[str] = []
        args: list[str] = []
        for cp in f.params:
            t = cp.arg.type
            n = cp.names[0]
            if isinstance(t, ControlType):
                decls.append(cp.decl)
                args.append(n)
                continue
            ct = t.c_name if isinstance(t, DataType) else t.elem.c_name
            decls.append(f"void *{n}")
            args.append(f"({ct} *)CS_NP_DATA({n})")
            if isinstance(t, TensorType):
                for s in cp.names[1:]:
                    decls.append(f"int_fast64_t {s}")
                    args.append(s)
        shims.append(
            f"void cs_entry_{f.cname}({', '.join(decls) or 'void'}) {{\n"
            f"    {f.cname}({', '.join(args)});\n}}"
        )
    return "\n".join(out) + "\n\n" + "\n\n".join(shims)
