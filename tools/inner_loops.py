"""The innermost loops of a built library that do fused multiply-adds, with what each
iteration executes: instructions, FMAs, broadcasts, memory reads, vector stores.

A register-tiled micro-kernel keeps its accumulators and its vector operand in registers: per
step of its reduction it reads one vector operand (``NR / 8`` loads) and ``MR`` broadcasts,
and stores nothing. gcc may instead fold a load into the memory operand of each FMA that uses
it (re-reading the vector once per use), or spill accumulators; this tool shows either from
the disassembly (``objdump -d``), which needs no hardware performance counters.

Usage: ``python tools/inner_loops.py LIB.so [-v]``: one line per loop (``-v``: its
instructions too). ``benchmarks/flash_attention.py --asm`` and ``tests/sched/test_attention.py``
use ``fma_loops``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from typing import NamedTuple

_INSN = re.compile(r"\s*([0-9a-f]+):\s+(.*)")
_JUMP = re.compile(r"j\w+\s+([0-9a-f]+)\b")
_STORE = re.compile(r"vmov\w*\s+%[xyz]mm\d+,.*\(")


class Loop(NamedTuple):
    """One innermost loop: its address range and per-iteration counts."""

    start: int
    end: int
    insns: tuple[str, ...]

    @property
    def fmas(self) -> int:
        return sum("vfmadd" in x or "vfnmadd" in x for x in self.insns)

    @property
    def broadcasts(self) -> int:
        """Broadcasts from memory (each a load)."""
        return sum(x.startswith("vbroadcastss") and "(" in x for x in self.insns)

    @property
    def reads(self) -> int:
        """Instructions that read memory (loads, broadcasts, memory operands), prefetches and
        address arithmetic excluded."""
        return sum(
            "(" in x and not _STORE.match(x) and not x.startswith(("lea", "prefetch", "nop"))
            for x in self.insns
        )

    @property
    def vector_loads(self) -> int:
        """Reads that are not broadcasts: full vectors (``vmovups`` or an FMA's operand)."""
        return self.reads - self.broadcasts

    @property
    def stores(self) -> int:
        return sum(bool(_STORE.match(x)) for x in self.insns)

    def summary(self) -> str:
        return (
            f"loop {self.start:x}-{self.end:x}: {len(self.insns)} insns, {self.fmas} FMAs,"
            f" {self.broadcasts} broadcasts, {self.vector_loads} vector loads,"
            f" {self.stores} vector stores"
        )


def disassemble(lib: str) -> list[tuple[int, str]]:
    """``(address, instruction)`` of every instruction of ``lib`` (``objdump -d``)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise FileNotFoundError("objdump (binutils) is not installed")
    out = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", lib], capture_output=True, text=True, check=True
    ).stdout
    return [(int(m[1], 16), m[2].strip()) for m in map(_INSN.match, out.splitlines()) if m]


def fma_loops(lib: str) -> list[Loop]:
    """The innermost loops (a backward jump with no other backward jump inside) of ``lib``
    that contain an FMA, in address order."""
    insns = disassemble(lib)
    index = {a: i for i, (a, _) in enumerate(insns)}
    loops = []
    for i, (addr, text) in enumerate(insns):
        m = _JUMP.match(text)
        target = int(m[1], 16) if m else -1
        if not 0 <= target < addr or target not in index:
            continue
        body = insns[index[target] : i + 1]
        inner = all(
            not (jm := _JUMP.match(x)) or not target <= int(jm[1], 16) < a for a, x in body[:-1]
        )
        loop = Loop(target, addr, tuple(x for _, x in body))
        if inner and loop.fmas:
            loops.append(loop)
    return loops


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for loop in fma_loops(argv[0]):
        print(loop.summary())
        if "-v" in argv[1:]:
            print("\n".join(f"    {x}" for x in loop.insns))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
