"""The shape of a CUDA kernel: which code runs once per block and which once per thread.

A ``with scope(name, target="cuda")`` is one kernel. Inside it, statements are at one of two
levels:

- **uniform** (every thread of a block runs them, with the same values): the scope's body,
  the bodies of loops bound to ``blockIdx.*`` (block loops), of unbound loops and of ``if``s
  at this level. Barriers, ``SHARED`` allocations and per-thread ``REGISTER`` state live here.
- **per-thread**: the body of a loop bound to ``threadIdx.*`` (a thread loop) and everything
  inside it. Each thread runs its own iteration; sibling thread loops of a block share the
  thread space (the block is as wide, on each axis, as its widest thread loop; a narrower loop
  runs on the first threads only, and a loop that binds no ``threadIdx.y`` runs on
  ``threadIdx.y == 0``).

``kernel_layout`` describes a kernel for the code generators and the race checker;
``scope_of`` and ``loop_chain`` answer the questions ``bind_loop`` asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from cursched.ir.memory import REGISTER
from cursched.ir.nodes import Alloc, Const, Expr, For, ProcDef, Read, Scope, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.symbols import Sym
from cursched.ir.traversal import stmt_blocks

#: The most threads one block may have (every CUDA architecture cursched targets).
MAX_THREADS = 1024
THREAD_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
BLOCK_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


def is_thread_loop(s: Stmt) -> bool:
    return isinstance(s, For) and s.axis is not None and s.axis.startswith("threadIdx")


def is_block_loop(s: Stmt) -> bool:
    return isinstance(s, For) and s.axis is not None and s.axis.startswith("blockIdx")


def const_trip(loop: For) -> int | None:
    """The trip count of ``loop`` when both bounds are integer constants."""
    lo, hi = loop.lo, loop.hi
    if not (isinstance(lo, Const) and isinstance(hi, Const)):
        return None
    if isinstance(lo.value, bool) or isinstance(hi.value, bool):
        return None
    if isinstance(lo.value, int) and isinstance(hi.value, int):
        return max(hi.value - lo.value, 0)
    return None


def ancestors(p: ProcDef, path: Path) -> list[tuple[Path, Stmt]]:
    """The statements enclosing ``path`` (outermost first), with their paths."""
    out: list[tuple[Path, Stmt]] = []
    for k in range(1, len(path)):
        node = get_at(p, path[:k])
        out.append((path[:k], node))
    return out


def scope_of(p: ProcDef, path: Path) -> tuple[Path, Scope] | None:
    """The innermost ``target="cuda"`` scope enclosing the statement at ``path``."""
    for apath, node in reversed(ancestors(p, path)):
        if isinstance(node, Scope) and node.target == "cuda":
            return apath, node
    return None


def kernels(p: ProcDef) -> Iterator[tuple[Path, Scope]]:
    """Every ``target="cuda"`` scope of ``p`` (outermost ones; they do not nest)."""

    def go(body: tuple[Stmt, ...], prefix: Path, attr: str) -> Iterator[tuple[Path, Scope]]:
        for k, s in enumerate(body):
            path = (*prefix, (attr, k))
            if isinstance(s, Scope) and s.target == "cuda":
                yield path, s
                continue
            for a, block in stmt_blocks(s):
                yield from go(block, path, a)

    yield from go(p.body, (), "body")


@dataclass
class KernelLayout:
    """What the code generator and the race checker need to know about one kernel.

    Attributes:
        block_dims: per ``threadIdx`` axis, the block's extent (the widest thread loop).
        grid_loops: the block loops, outermost first (their bounds give the grid).
        thread_regs: ``REGISTER`` buffers allocated at the uniform level, each with the
            thread axes its leading dimensions stand for (one element per thread: the code
            generator drops those dimensions).
    """

    block_dims: dict[str, int] = field(default_factory=dict)
    grid_loops: list[For] = field(default_factory=list)
    thread_regs: dict[Sym, tuple[str, ...]] = field(default_factory=dict)

    def threads(self) -> int:
        n = 1
        for d in self.block_dims.values():
            n *= d
        return n


def kernel_layout(scope: Scope) -> KernelLayout:
    """The block dimensions, block loops and per-thread registers of a kernel.

    It reads the structure only; the rules (``kernel_problems``) say whether it is valid.
    """
    lay = KernelLayout()

    def go(body: tuple[Stmt, ...], in_thread: bool) -> None:
        for s in body:
            if isinstance(s, For) and s.axis is not None:
                if s.axis.startswith("threadIdx"):
                    n = const_trip(s)
                    if n is not None:
                        lay.block_dims[s.axis] = max(lay.block_dims.get(s.axis, 0), n)
                    go(s.body, True)
                    continue
                lay.grid_loops.append(s)
            if isinstance(s, Alloc) and s.mem is REGISTER and not in_thread:
                axes = _thread_dims(scope, s)
                if axes:
                    lay.thread_regs[s.sym] = axes
            for _, block in stmt_blocks(s):
                go(block, in_thread)

    go(scope.body, False)
    return lay


def _thread_dims(scope: Scope, alloc: Alloc) -> tuple[str, ...]:
    """The thread axes indexing the leading dimensions of a uniform-level REGISTER buffer.

    Every access must index those dimensions with the variables of enclosing thread loops
    starting at 0, the same axes in the same order; otherwise the answer is ``()`` (and
    ``kernel_problems`` reports the buffer).
    """
    found: set[tuple[str, ...]] = set()

    def go(body: tuple[Stmt, ...], threads: dict[Sym, str]) -> None:
        for s in body:
            inner = dict(threads)
            if is_thread_loop(s):
                assert isinstance(s, For) and s.axis is not None
                if isinstance(s.lo, Const) and s.lo.value == 0:
                    inner[s.iter] = s.axis
            for idx in _accesses_of(s, alloc.sym):
                axes: list[str] = []
                for e in idx:
                    if isinstance(e, Read) and e.sym in threads:
                        axes.append(threads[e.sym])
                    else:
                        break
                found.add(tuple(axes))
            for _, block in stmt_blocks(s):
                go(block, inner)

    go(scope.body, {})
    if len(found) == 1:
        (axes,) = found
        if axes and len(set(axes)) == len(axes):
            return axes
    return ()


def _accesses_of(s: Stmt, sym: Sym) -> Iterator[tuple[Expr, ...]]:
    """The index tuples of ``s``'s own accesses of ``sym`` (not those of nested statements)."""
    from cursched.ir.nodes import Assign, Reduce
    from cursched.ir.traversal import stmt_exprs, walk_expr

    if isinstance(s, Assign | Reduce) and s.sym is sym:
        yield s.idx
    for e in stmt_exprs(s):
        for x in walk_expr(e):
            if isinstance(x, Read) and x.sym is sym and x.idx:
                yield x.idx
