"""The ``static inline`` helper functions generated code may need, emitted only when used.

Every helper name starts with ``cs_`` (a prefix ``naming.sanitize`` keeps away from user
names). Helpers are parameterised by C type name in their own name: ``cs_div_int8_t``.
"""

from __future__ import annotations

_FLOOR = {
    "cs_floordiv": (
        "static inline int_fast64_t cs_floordiv(int_fast64_t a, int_fast64_t b) {\n"
        "    /* floor division (the divisor is a positive constant) */\n"
        "    int_fast64_t q = a / b;\n"
        "    return (a % b != 0 && a < 0) ? q - 1 : q;\n"
        "}"
    ),
    "cs_floormod": (
        "static inline int_fast64_t cs_floormod(int_fast64_t a, int_fast64_t b) {\n"
        "    /* floor modulo: the result has the sign of the (positive) divisor */\n"
        "    int_fast64_t r = a % b;\n"
        "    return r < 0 ? r + b : r;\n"
        "}"
    ),
}


#: Heap allocation (``cs_alloc``): the byte count is computed without overflow (an overflow
#: or a negative extent asks for ``SIZE_MAX`` bytes, which ``malloc`` refuses), and a failure
#: is counted in ``cs_alloc_failures``, which the runtime's entry shims report to Python
#: (docs/semantics.md, "Sizes").
_ALLOC = {
    "cs_alloc": (
        "static unsigned cs_alloc_failures;\n"
        "\n"
        "static inline size_t cs_mul_sz(size_t a, int_fast64_t b) {\n"
        "    size_t r;\n"
        "    if (b < 0 || __builtin_mul_overflow(a, (size_t)b, &r)) return SIZE_MAX;\n"
        "    return r;\n"
        "}\n"
        "\n"
        "static inline void *cs_malloc(size_t bytes) {\n"
        "    /* malloc(0) may be NULL; an empty buffer still gets a distinct block */\n"
        "    void *p = bytes == SIZE_MAX ? NULL : malloc(bytes ? bytes : 1);\n"
        "    if (p == NULL) __atomic_fetch_add(&cs_alloc_failures, 1u, __ATOMIC_RELAXED);\n"
        "    return p;\n"
        "}"
    ),
    # a DRAM_KEPT allocation: this thread's block of the site, grown when too small; page
    # aligned (sgemm's packed panels: 1-3% faster than malloc's 16-byte alignment, measured).
    # A thread's sites are listed, and a pthread key's destructor frees their blocks when the
    # thread ends: a program that makes a thread per task would otherwise leak a block per
    # thread. Unloading the library deletes the key (no destructor left pointing into it)
    # and frees the unloading thread's blocks.
    "cs_keep": (
        "#include <pthread.h>\n"
        "\n"
        "typedef struct cs_keep_site {\n"
        "    void *block;\n"
        "    size_t cap;\n"
        "    struct cs_keep_site *next;\n"
        "    bool listed;\n"
        "} cs_keep_site;\n"
        "\n"
        "static pthread_key_t cs_keep_key;\n"
        "static pthread_once_t cs_keep_once = PTHREAD_ONCE_INIT;\n"
        "static bool cs_keep_key_made;\n"
        "static _Thread_local cs_keep_site *cs_keep_sites;\n"
        "\n"
        "static void cs_keep_release(void *sites) {\n"
        "    for (cs_keep_site *k = sites; k != NULL; k = k->next) {\n"
        "        free(k->block);\n"
        "        k->block = NULL;\n"
        "        k->cap = 0;\n"
        "        k->listed = false;\n"
        "    }\n"
        "    cs_keep_sites = NULL;\n"
        "}\n"
        "\n"
        "static void cs_keep_make_key(void) {\n"
        "    cs_keep_key_made = pthread_key_create(&cs_keep_key, cs_keep_release) == 0;\n"
        "}\n"
        "\n"
        "__attribute__((destructor)) static void cs_keep_unload(void) {\n"
        "    if (cs_keep_key_made) pthread_key_delete(cs_keep_key);\n"
        "    cs_keep_release(cs_keep_sites);\n"
        "}\n"
        "\n"
        "static inline void *cs_keep(cs_keep_site *k, size_t bytes) {\n"
        "    if (k->block == NULL || bytes > k->cap) {\n"
        "        if (!k->listed) {\n"
        "            pthread_once(&cs_keep_once, cs_keep_make_key);\n"
        "            k->next = cs_keep_sites;\n"
        "            cs_keep_sites = k;\n"
        "            k->listed = true;\n"
        "            if (cs_keep_key_made) pthread_setspecific(cs_keep_key, cs_keep_sites);\n"
        "        }\n"
        "        free(k->block);\n"
        "        bool failed = bytes == SIZE_MAX;\n"
        "        if (failed || posix_memalign(&k->block, 4096, bytes ? bytes : 1) != 0) {\n"
        "            k->block = NULL;\n"
        "            __atomic_fetch_add(&cs_alloc_failures, 1u, __ATOMIC_RELAXED);\n"
        "        }\n"
        "        k->cap = k->block != NULL ? bytes : 0;\n"
        "    }\n"
        "    return k->block;\n"
        "}"
    ),
}


def _typed(name: str) -> str:
    """C text of a per-type helper ``cs_<kind>_<ctype>``."""
    _, kind, ct = name.split("_", 2)
    if kind == "div":
        return (
            f"static inline {ct} cs_div_{ct}({ct} a, {ct} b) {{\n"
            "    /* C truncating division; no trap on 0 or on INT_MIN / -1 */\n"
            f"    return b == 0 ? 0 : (b == -1 ? ({ct})(0u - (uint32_t)a) : ({ct})(a / b));\n"
            "}"
        )
    if kind == "mod":
        return (
            f"static inline {ct} cs_mod_{ct}({ct} a, {ct} b) {{\n"
            f"    return (b == 0 || b == -1) ? 0 : ({ct})(a % b);\n"
            "}"
        )
    if kind == "relu":
        # ``x < 0 ? 0 : x`` keeps NaN and -0.0 like numpy's maximum(x, 0).
        return f"static inline {ct} cs_relu_{ct}({ct} x) {{ return x < 0 ? ({ct})0 : x; }}"
    if kind in ("max", "min"):
        op = ">" if kind == "max" else "<"
        return f"static inline {ct} cs_{kind}_{ct}({ct} a, {ct} b) {{ return a {op} b ? a : b; }}"
    if kind in ("fmax", "fmin"):
        # C's fmax/fmin (a NaN operand is ignored, docs/semantics.md) with the result glibc's
        # x86-64 functions give: past the NaN test, ``a > b ? a : b`` is one maxss, which
        # also picks ``b`` from equal operands (+0.0 and -0.0) as glibc's does
        op = ">" if kind == "fmax" else "<"
        return (
            f"static inline {ct} cs_{kind}_{ct}({ct} a, {ct} b) {{\n"
            f"    return b != b ? a : (a {op} b ? a : b);\n"
            "}"
        )
    if kind == "sigmoid":
        if ct == "_Float16":
            return (
                "static inline _Float16 cs_sigmoid__Float16(_Float16 x) {\n"
                "    _Float16 e = (_Float16)expf(-(float)x);\n"
                "    _Float16 d = (_Float16)(1.0f + (float)e);\n"
                "    return (_Float16)(1.0f / (float)d);\n"
                "}"
            )
        one, exp = ("1.0f", "expf") if ct == "float" else ("1.0", "exp")
        return (
            f"static inline {ct} cs_sigmoid_{ct}({ct} x) {{ return {one} / ({one} + {exp}(-x)); }}"
        )
    raise KeyError(name)


class Helpers:
    """The set of helpers one compile unit needs."""

    def __init__(self) -> None:
        self._needed: set[str] = set()

    def need(self, name: str) -> None:
        self._needed.add(name)

    def text(self) -> str:
        """C definitions of every needed helper, in a stable order."""
        out = []
        for name in sorted(self._needed):
            fixed = _FLOOR.get(name) or _ALLOC.get(name)
            out.append(fixed if fixed is not None else _typed(name))
        return "\n\n".join(out)
