"""A compile unit: one or more root procs and every proc they call, as one ``.c``/``.h`` pair.

Procs are emitted callees first, so no prototypes are needed inside the ``.c``; the ``.h``
declares every generated function. Instruction procs are not functions: their calls are
expanded in place through their C templates, and their ``c_global`` text appears once near
the top of the ``.c``, after the ``c_global`` text of every memory the unit uses.

With ``entry=True`` (the runtime's builds) each root also gets ``cs_entry_<name>``, a shim
taking numpy array objects instead of data pointers (``CS_NP_DATA`` reads the data pointer
out of the array object; the runtime checks the layout before using it), so that the Python
wrapper never calls the slow ``ndarray.ctypes`` per call. The shim also refuses overlapping
arrays and reports failed allocations (``_entry_text``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cursched.analysis.aliasing import check_unit_aliasing
from cursched.codegen.c.helpers import Helpers
from cursched.codegen.c.naming import RESERVED, sanitize
from cursched.codegen.c.statements import CParam, FunctionGen, signature
from cursched.ir.config import ConfigDef, ConfigField
from cursched.ir.memory import Memory
from cursched.ir.nodes import Alloc, Assign, Call, ProcDef, Reduce
from cursched.ir.traversal import free_syms_expr, proc_exprs, walk_stmts, written_args
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
    return [t.strip("\n") for t in [*texts, *instr_globals, *_config_structs(procs)] if t.strip()]


def _config_structs(procs: list[ProcDef]) -> list[str]:
    """One global struct per configuration the procs use (``cursched.ir.config``): a field's
    value is what the last write left there, shared by every function of the unit."""
    used: dict[int, ConfigDef] = {}
    for p in procs:
        for e in proc_exprs(p):
            for sym in free_syms_expr(e):
                if isinstance(sym, ConfigField):
                    used.setdefault(id(sym.config), sym.config)
        for s in walk_stmts(p.body):
            if isinstance(s, Assign | Reduce) and isinstance(s.sym, ConfigField):
                used.setdefault(id(s.sym.config), s.sym.config)
    out = []
    for c in used.values():
        members = " ".join(f"{f.type.c_name} {f.field};" for f in c)
        out.append(f"static struct {{ {members} }} {c.c_struct()};")
    return out


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
        CodegenAliasError: a call passes overlapping arguments to a callee that may access
            them out of its body's order (``cursched.analysis.aliasing``).
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
    # Callers first, so that a parameter that may alias is known before its proc is visited.
    aliased = check_unit_aliasing([*reversed(procs)])
    helpers = Helpers()
    if entry:
        helpers.need("cs_alloc")  # the shims read its failure count
    funcs: dict[int, CFunction] = {}
    bodies: list[str] = []
    for p in procs:
        own = frozenset(aliased.get(id(p), ()))
        gen = FunctionGen(p, cnames[id(p)], taken, helpers, lambda q: cnames[id(q)], own)
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


_ENTRY_HEAD = """\
/* Runtime shims: numpy array objects in, data pointers out, after an overlap check. */
#ifndef CS_NP_DATA_OFFSET
#define CS_NP_DATA_OFFSET 16
#endif
#define CS_NP_DATA(o) (*(char **)((char *)(o) + CS_NP_DATA_OFFSET))
#define CS_NP_ND(o) (*(int *)((char *)(o) + CS_NP_DATA_OFFSET + 8))
#define CS_NP_DIMS(o) (*(intptr_t **)((char *)(o) + CS_NP_DATA_OFFSET + 16))
#define CS_NP_STRIDES(o) (*(intptr_t **)((char *)(o) + CS_NP_DATA_OFFSET + 24))

/* The bytes [lo, hi) an array spans (empty when it has no element). */
typedef struct { char *lo, *hi; } cs_span;

static cs_span cs_np_span(void *o, intptr_t itemsize) {
    char *p = CS_NP_DATA(o);
    cs_span r = {p, p + itemsize};
    int nd = CS_NP_ND(o);
    for (int d = 0; d < nd; d++) {
        intptr_t n = CS_NP_DIMS(o)[d], s = CS_NP_STRIDES(o)[d];
        if (n == 0) return (cs_span){p, p};
        if (s < 0) r.lo += s * (n - 1); else r.hi += s * (n - 1);
    }
    return r;
}

static int cs_spans_meet(cs_span a, cs_span b) {
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

/* Whether distinct indices of the array may reach one element (a sufficient test: each
   dimension, by increasing |stride|, must step over all the dimensions before it). */
static int cs_np_self_overlaps(void *o, intptr_t itemsize) {
    int nd = CS_NP_ND(o);
    intptr_t n[32], s[32], reach = itemsize;
    int k = 0;
    if (nd > 32) return 1;
    for (int d = 0; d < nd; d++) {
        intptr_t nn = CS_NP_DIMS(o)[d], ss = CS_NP_STRIDES(o)[d];
        if (nn == 0) return 0;
        if (nn == 1) continue;
        ss = ss < 0 ? -ss : ss;
        int j = k++;
        while (j > 0 && s[j - 1] > ss) { n[j] = n[j - 1]; s[j] = s[j - 1]; j--; }
        n[j] = nn; s[j] = ss;
    }
    for (int d = 0; d < k; d++) {
        if (s[d] < reach) return 1;
        reach = s[d] * (n[d] - 1) + reach;
    }
    return 0;
}
"""


def _entry_text(roots: tuple[CFunction, ...]) -> str:
    """The ``cs_entry_<name>`` shims of the roots.

    A shim takes the root's parameters with numpy array objects in place of pointers. It
    first looks for overlapping arrays: any two whose spans meet while the root writes one,
    and a written window whose strides may make it overlap itself; it then returns
    ``1 + i * N + j`` (``N`` parameters, ``i <= j`` their positions) without calling the
    root, and the wrapper decides exactly (numpy's ``shares_memory``) and calls
    ``cs_entry_unchecked_<name>`` if they do not share memory. Both return ``-1`` when an
    allocation failed during the call, else 0.
    """
    shims: list[str] = []
    for f in roots:
        written = written_args(f.proc)
        decls: list[str] = []
        args: list[str] = []
        arrays: list[tuple[int, str, str, bool]] = []  # (position, name, ctype, window)
        for k, cp in enumerate(f.params):
            t = cp.arg.type
            n = cp.names[0]
            if isinstance(t, ControlType):
                decls.append(cp.decl)
                args.append(n)
                continue
            ct = t.c_name if isinstance(t, DataType) else t.elem.c_name
            decls.append(f"void *{n}")
            args.append(f"({ct} *)CS_NP_DATA({n})")
            arrays.append((k, n, ct, isinstance(t, TensorType) and t.window))
            if isinstance(t, TensorType):
                for s in cp.names[1:]:
                    decls.append(f"int_fast64_t {s}")
                    args.append(s)
        count = len(f.params)
        checks: list[str] = []
        spans = {k: f"sp{k}" for k, *_ in arrays}
        used: set[int] = set()
        for x, (i, _, _, _) in enumerate(arrays):
            for j, _, _, _ in arrays[x + 1 :]:
                if i in written or j in written:
                    used |= {i, j}
                    checks.append(
                        f"        if (cs_spans_meet({spans[i]}, {spans[j]}))"
                        f" return {1 + i * count + j};"
                    )
        for k, n, ct, window in arrays:
            if window and k in written:
                checks.append(
                    f"        if (cs_np_self_overlaps({n}, sizeof({ct})))"
                    f" return {1 + k * count + k};"
                )
        head = [
            f"        cs_span {spans[k]} = cs_np_span({n}, sizeof({ct}));"
            for k, n, ct, _ in arrays
            if k in used
        ]
        names = [d.rsplit(" ", 1)[1].lstrip("*") for d in decls]
        shims.append(
            "\n".join(
                [
                    f"int cs_entry_unchecked_{f.cname}({', '.join(decls) or 'void'}) {{",
                    "    unsigned before = __atomic_load_n(&cs_alloc_failures, __ATOMIC_RELAXED);",
                    f"    {f.cname}({', '.join(args)});",
                    "    return __atomic_load_n(&cs_alloc_failures, __ATOMIC_RELAXED) != before"
                    " ? -1 : 0;",
                    "}",
                    "",
                    f"int cs_entry_{f.cname}({', '.join(decls) or 'void'}) {{",
                    *[line.removeprefix("    ") for line in head + checks],
                    f"    return cs_entry_unchecked_{f.cname}({', '.join(names)});",
                    "}",
                ]
            )
        )
    # Calls that cannot use the shims (another array layout) read the count through this.
    shims.append(
        f"unsigned cs_alloc_failures_{roots[0].cname}(void) {{\n"
        "    return __atomic_load_n(&cs_alloc_failures, __ATOMIC_RELAXED);\n}"
    )
    return _ENTRY_HEAD + "\n" + "\n\n".join(shims)
