"""Child side of sanitized calls (run as a script under LD_PRELOAD=libasan.so).

Reads ``(library, entry, items)`` from argv[1], calls the entry point with arrays rebuilt over
fresh buffers, writes its status (a shim's result, else 0) and each array's bytes (or None for
values) to argv[2]. It imports only
numpy and the standard library, so the child starts fast and nothing of cursched runs under
the sanitizer but the generated code.
"""

from __future__ import annotations

import ctypes
import pickle
import sys
from typing import Any

import numpy as np


def main() -> None:
    lib_path, entry, items = pickle.loads(open(sys.argv[1], "rb").read())  # noqa: SIM115
    fn = getattr(ctypes.CDLL(lib_path), entry)
    shim = "cs_entry_" in entry
    fn.restype = ctypes.c_int if shim else None  # a shim's status (see codegen/c/unit.py)
    args: list[Any] = []
    types: list[Any] = []
    bufs: list[Any] = []
    for it in items:
        if it[0] == "arr":
            _, data, off, shape, strides, dt = it
            buf = np.frombuffer(data, dtype=np.uint8).copy() if data else np.zeros(0, np.uint8)
            a = np.ndarray(shape, np.dtype(dt), buffer=buf, offset=off, strides=strides)
            bufs.append(buf)
            args.append(a)
            types.append(ctypes.py_object if "cs_entry_" in entry else ctypes.c_void_p)
            if "cs_entry_" not in entry:
                args[-1] = a.ctypes.data
        else:
            bufs.append(None)
            args.append(it[1])
            types.append(ctypes.c_bool if it[2] == "bool" else ctypes.c_int64)
    fn.argtypes = types
    status = fn(*args)
    out = [None if b is None else b.tobytes() for b in bufs]
    with open(sys.argv[2], "wb") as f:
        pickle.dump((status or 0, out), f)


if __name__ == "__main__":
    main()
