"""The fuzzer's second oracle: accepted schedules compiled with the C backend, run on the
interpreter's inputs and compared with the interpreter's results (issue 11, finding 5).

Many procs are compiled as the roots of one C unit (one compiler run), so that checking a
sample of a campaign's schedules stays cheap; ``compile_batch`` wraps each root with the same
argument checks as ``Proc.compile()``. Built without FMA contraction, so that a float
difference means a miscompilation, not a fused multiply-add.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cursched import Proc
from cursched.codegen.build import build_library, default_cflags
from cursched.codegen.c import compile_proc
from cursched.codegen.c import runtime as rt
from cursched.codegen.c.unit import generate_unit
from cursched.errors import ArgumentError, CurschedError
from cursched.interp import interpret
from cursched.ir.nodes import Call, ProcDef
from cursched.ir.traversal import walk_stmts
from cursched.testing import random_args

__all__ = ["Mismatch", "compare_compiled", "compilable", "compile_batch"]

FLAGS = ("-ffp-contract=off",)


@dataclass
class Mismatch:
    """A proc whose compiled result differs from the interpreter's."""

    proc: ProcDef
    argument: str
    detail: str

    def __str__(self) -> str:
        return f"compiled {self.proc.name} differs in {self.argument}: {self.detail}"


def compilable(p: ProcDef) -> bool:
    """Whether ``p`` has a C translation here to compare: the helper instructions (``vadd4``,
    ...) are templates naming C functions that no header defines, so procs calling them do
    not link; and a proc ``make_instr`` turned into an instruction compiles to its template
    (``/* fz */``), not to its body."""
    if p.instr is not None:
        return False

    def instrs(q: ProcDef, seen: set[int]) -> bool:
        for s in walk_stmts(q.body):
            if isinstance(s, Call) and id(s.proc) not in seen:
                seen.add(id(s.proc))
                if s.proc.instr is not None or instrs(s.proc, seen):
                    return True
        return False

    return not instrs(p, set())


def compile_batch(procs: list[ProcDef]) -> list[Callable[..., None]]:
    """``procs`` compiled as the roots of one C unit; a callable per proc, in order."""
    shim = rt.np_data_offset_ok()
    unit = generate_unit("cs_fuzz_batch", procs, entry=shim)
    built = build_library(unit.name, unit.c_source, (*default_cflags(), *FLAGS))
    lib = ctypes.CDLL(str(built.lib_path))
    out = []
    for p, root in zip(procs, unit.roots, strict=True):
        fn = getattr(lib, f"cs_entry_{root.cname}" if shim else root.cname)
        fn.argtypes = rt._ctypes_argtypes(root, shim)
        fn.restype = None
        specs = rt._specs(p)
        ns: dict[str, Any] = {
            "_c": rt.Checker(p, specs),
            "_fn": fn,
            "_nd": np.ndarray,
            "_sc": ((), (1,)),
        }
        for s in specs:
            if s.dtype is not None:
                ns[f"_dt{s.index}"] = s.dtype
        exec(compile(rt._wrapper_source(p, specs, shim), f"<fuzz {p.name}>", "exec"), ns)
        out.append(ns["call"])
    return out


def _compiled_each(procs: list[ProcDef]) -> list[Callable[..., None] | None]:
    """One unit per proc (after a batch failed): None where the backend refuses the proc with
    a typed error (a refusal, e.g. of overlapping windows, is not a wrong result)."""
    out: list[Callable[..., None] | None] = []
    for p in procs:
        try:
            out.append(compile_proc(p, extra_cflags=FLAGS))
        except CurschedError:
            out.append(None)
    return out


def compare_compiled(procs: list[Proc | ProcDef], seed: int = 0, trials: int = 2) -> list[Mismatch]:
    """Compile ``procs`` in one unit and compare each with the interpreter on ``trials``
    random inputs satisfying its asserts; the mismatches found (empty: all agree).

    Raises:
        whatever the compiled call raises other than ``ArgumentError`` on inputs the
        interpreter accepts (an untyped error is a finding, left to the caller).
    """
    pds = [p.ir() if isinstance(p, Proc) else p for p in procs]
    pds = [p for p in pds if compilable(p)]
    if not pds:
        return []
    try:
        calls: list[Callable[..., None] | None] = list(compile_batch(pds))
    except CurschedError:
        calls = _compiled_each(pds)
    rng = np.random.default_rng(seed)
    found: list[Mismatch] = []
    for pd, call in zip(pds, calls, strict=True):
        if call is None:
            continue
        for _ in range(trials):
            try:
                args = random_args(pd, rng)
            except ArgumentError:
                break  # no inputs satisfy the asserts
            mine = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
            theirs = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
            interpret(pd, **mine)
            call(**theirs)
            for k, v in mine.items():
                if not isinstance(v, np.ndarray):
                    continue
                w = theirs[k]
                ok = np.allclose(v, w, rtol=1e-5, atol=1e-5, equal_nan=True)
                if not ok:
                    bad = tuple(int(i) for i in np.argwhere(~np.isclose(v, w, 1e-5, 1e-5, True))[0])
                    found.append(
                        Mismatch(pd, k, f"at {bad}: interpreted {v[bad]!r}, compiled {w[bad]!r}")
                    )
                    break
    return found
