"""Running sanitized (ASan + UBSan) builds in a child process.

ASan's runtime must be the first library a process loads, which a running Python cannot
arrange. So a sanitized call validates its arguments in this process (the same wrapper as an
ordinary call), then ships them to a fresh child interpreter started with
``LD_PRELOAD=<libasan.so>``; the child rebuilds each array over a buffer of exactly the bytes
the array spans (its own ``malloc`` block, so ASan's redzones sit right at its ends), calls
the library, and sends the written bytes back. The caller's arrays receive the results, and
the child's stderr is kept in ``last_report``; an ASan or UBSan report (or a crash) raises
``CodegenError`` carrying it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from cursched.codegen.build import compiler
from cursched.errors import BuildError, CodegenError

_CHILD = Path(__file__).with_name("_sanitize_child.py")


@functools.cache
def asan_runtime() -> str:
    """Path of the compiler's ``libasan.so`` (what the child preloads)."""
    r = subprocess.run(
        [*compiler(), "-print-file-name=libasan.so"], capture_output=True, text=True, check=False
    )
    path = r.stdout.strip()
    if r.returncode != 0 or not os.path.isabs(path) or not os.path.exists(path):
        raise BuildError("the C compiler has no AddressSanitizer runtime (libasan.so)")
    return path


def _span(a: np.ndarray[Any, Any]) -> tuple[int, int]:
    """Byte offsets, relative to ``a``'s data pointer, of the memory ``a`` spans: [lo, hi)."""
    lo = hi = 0
    for n, s in zip(a.shape, a.strides, strict=True):
        if n == 0:
            return 0, 0
        ext = (n - 1) * s
        lo, hi = (lo + ext, hi) if ext < 0 else (lo, hi + ext)
    return lo, hi + a.itemsize


class SanitizedCall:
    """Calls one sanitized entry point in a child process; see the module docstring."""

    def __init__(self, lib: Path, entry: str, argtypes: list[Any]) -> None:
        self.lib = lib
        self.entry = entry
        self.argtypes = argtypes
        self.last_report = ""

    def __call__(self, *args: Any) -> int:
        """Run the entry in the child; returns its status (0 when it returns nothing)."""
        status = 0
        items: list[tuple[Any, ...]] = []
        for a, t in zip(args, self.argtypes, strict=True):
            if isinstance(a, np.ndarray):
                lo, hi = _span(a)
                base = a.ctypes.data + lo
                data = ctypes.string_at(base, hi - lo) if hi > lo else b""
                items.append(("arr", data, -lo, a.shape, a.strides, a.dtype.str))
            else:
                items.append(("val", a, "bool" if t is ctypes.c_bool else "int"))
        with tempfile.TemporaryDirectory(prefix="cursched-san-") as d:
            inp, out = Path(d) / "in.pkl", Path(d) / "out.pkl"
            inp.write_bytes(pickle.dumps((str(self.lib), self.entry, items)))
            env = dict(os.environ)
            env["LD_PRELOAD"] = asan_runtime()
            env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:exitcode=86"
            env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:exitcode=87"
            r = subprocess.run(
                [sys.executable, str(_CHILD), str(inp), str(out)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            self.last_report = r.stderr
            if out.exists():
                status, results = pickle.loads(out.read_bytes())
                for a, data in zip(args, results, strict=True):
                    if data is not None and isinstance(a, np.ndarray) and a.flags.writeable:
                        lo, _ = _span(a)
                        view = np.ndarray(
                            a.shape, a.dtype, buffer=bytearray(data), offset=-lo, strides=a.strides
                        )
                        a[...] = view
        bad = ("AddressSanitizer", "runtime error", "LeakSanitizer")
        if r.returncode != 0 or any(b in r.stderr for b in bad):
            raise CodegenError(
                f"sanitizer report from {self.entry} (exit {r.returncode}):\n{r.stderr}"
            )
        return int(status)
