"""The CUDA block barrier as a statement of the IR: a call of the built-in ``sync_threads``.

A barrier is an ordinary ``Call`` of one instruction proc, ``SYNC_THREADS``, so that what runs
is what prints (``sync_threads()``) and every part of cursched that walks statements already
knows it: the interpreter runs its body (``pass``: one thread of a sequential program needs
no barrier), the effect analysis sees no access, the CUDA code generator expands its template
``__syncthreads();``. The frontend knows the name without an import, like the built-in
memories.
"""

from __future__ import annotations

from cursched.ir.nodes import Call, InstrInfo, Pass, ProcDef, Stmt

SYNC_THREADS = ProcDef("sync_threads", (), (), (Pass(),), InstrInfo("__syncthreads();"))
"""``sync_threads()``: every thread of the block waits here until all have arrived."""


def is_barrier(s: Stmt) -> bool:
    """Whether ``s`` is a barrier (a call of ``SYNC_THREADS``)."""
    return isinstance(s, Call) and s.proc is SYNC_THREADS


def barrier() -> Call:
    """A new barrier statement."""
    return Call(SYNC_THREADS, ())
