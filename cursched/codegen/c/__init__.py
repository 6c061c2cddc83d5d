"""The C backend: C source generation, building, and the numpy-facing runtime.

Public functions:
    compile_proc(p, **options): a callable running ``p`` compiled (``Proc.compile`` uses it).
    generate_unit(name, procs): the ``.c``/``.h`` text of a compile unit.

See ``statements`` for the C ABI of generated functions and the instruction template
placeholders, ``expressions`` for how precision and floor division are handled, ``build``
(one level up) for the cache, and ``runtime`` for argument checking.
"""

from cursched.codegen.c.runtime import compile_proc
from cursched.codegen.c.unit import CUnit, generate_unit

__all__ = ["CUnit", "compile_proc", "generate_unit"]
