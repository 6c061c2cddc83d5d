"""Load an Exo-spelled schedule file under cursched (``cursched.compat.exo``) or under Exo
itself (exo-lang, where installed), and run the C each system generates on numpy arrays.

A schedule file here imports with the single line ``from cursched.compat.exo import *``;
under Exo that line becomes ``from exo import *`` and ``from exo.stdlib.scheduling import *``
(the only change an Exo user makes, in reverse). A file may name its platform import with a
``# exo: <line>`` comment on the line after, which replaces it under Exo.
"""

from __future__ import annotations

import ctypes
import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).parent
_COMPAT = "from cursched.compat.exo import *"
_EXO = "from exo import *\nfrom exo.stdlib.scheduling import *"
# the formatter may put a blank line between the import and its comment
_PLATFORM = re.compile(r"^(from cursched\S* import .*)\n(?:[ \t]*\n)*# exo: (.*)$", re.M)


def exo_available() -> bool:
    return importlib.util.find_spec("exo") is not None


def load(name: str, system: str) -> types.ModuleType:
    """The schedule file ``name`` executed as a module under ``system`` ("cursched" or "exo")."""
    src = (HERE / f"{name}.py").read_text()
    if system == "exo":
        src = _PLATFORM.sub(lambda m: m.group(2), src).replace(_COMPAT, _EXO)
    else:
        src = _PLATFORM.sub(lambda m: m.group(1), src)
    mod_name = f"_compat_{name}_{system}"
    path = HERE / f"{name}.py"
    mod = types.ModuleType(mod_name)
    mod.__file__ = str(path)
    sys.modules[mod_name] = mod
    # procs are parsed from their source: it must be the text that runs, so the module is
    # written next to the original for the parsers to read (and removed afterwards)
    tmp = HERE / f"_{name}_{system}_run.py"
    tmp.write_text(src)
    try:
        mod.__file__ = str(tmp)
        exec(compile(src, str(tmp), "exec"), mod.__dict__)
    finally:
        tmp.unlink()
    return mod


def run_exo_c(p: Any, args: list[Any], tmp: Path) -> None:
    """Compile Exo's C for proc ``p`` and call it on ``args`` (ints for sizes, numpy arrays for
    tensors and data scalars; written in place)."""
    from exo import compile_procs_to_strings

    name = p.name()
    c, h = compile_procs_to_strings([p], f"{name}.h")
    (tmp / f"{name}.h").write_text(h)
    (tmp / f"{name}.c").write_text(c)
    so = tmp / f"lib{name}.so"
    cmd = ["cc", "-O2", "-march=native", "-fPIC", "-shared", "-o", str(so), str(tmp / f"{name}.c")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    lib = ctypes.CDLL(str(so))
    ctxt = ctypes.create_string_buffer(4096)  # Exo's configuration context
    cargs: list[Any] = [ctypes.cast(ctxt, ctypes.c_void_p)]
    for a in args:
        if isinstance(a, np.ndarray):
            cargs.append(ctypes.c_void_p(a.ctypes.data))
        elif isinstance(a, bool):
            cargs.append(ctypes.c_bool(a))
        else:
            cargs.append(ctypes.c_long(a))  # int_fast32_t is a long on x86-64 Linux
    getattr(lib, name)(*cargs)
