"""One cuda scope as one ``extern "C" __global__`` kernel.

The kernel takes every argument of its proc, with the C backend's ABI (``statements``):
sizes by value, tensors as pointers to their first element (here in device memory), data
scalars by pointer. Its body is the scope's body, printed by the C backend's statement
printer with these differences:

- a block loop ``for b in par(lo, hi, axis="blockIdx.x")`` is ``b = lo + blockIdx.x`` (the
  grid has ``hi - lo`` blocks on x); a thread loop is ``t = lo + threadIdx.x`` under a guard
  ``if (threadIdx.x < trip)`` when it is narrower than the block; a statement of a thread
  loop that binds no ``threadIdx.y`` in a block that has one runs on ``threadIdx.y == 0``;
- other loops are plain ``for`` loops (``par`` too: the parallelism is in the bound loops),
  with ``#pragma unroll`` when they sit in a thread loop, have a small constant trip count
  and unroll to at most ``UNROLL_BUDGET`` statements (register tiles are indexed by them:
  unrolled, the indices are constants and the tile stays in registers); a loop past the
  budget is left rolled, the loops inside it still unrolled (a 32-row loop around four
  64-column register loops, unrolled, took ptxas minutes and spilled);
- ``SHARED`` allocations are static ``__shared__`` arrays, ``REGISTER`` allocations local
  arrays; a ``REGISTER`` buffer allocated outside the thread loops holds one element per
  thread in its leading dimensions (``acc[ty, tx, i, j]``): each thread keeps its own
  ``acc[i, j]``, so those dimensions are dropped;
- ``sync_threads()`` is ``__syncthreads();`` (a barrier is a statement of the IR: none is
  added here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from cursched.analysis.kernels import (
    THREAD_AXES,
    KernelLayout,
    const_trip,
    is_thread_loop,
    kernel_layout,
)
from cursched.codegen.c.expressions import Buffer, ExprGen, row_major
from cursched.codegen.c.helpers import Helpers
from cursched.codegen.c.naming import Namer
from cursched.codegen.c.statements import IND, CParam, FunctionGen, _const_bytes
from cursched.errors import CodegenError
from cursched.ir.barrier import is_barrier
from cursched.ir.memory import GLOBAL, REGISTER, SHARED
from cursched.ir.nodes import Alloc, Call, Expr, FnArg, For, If, ProcDef, Read, Scope, Stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_expr, walk_exprs, walk_stmts
from cursched.ir.types import F16, INDEX, ControlType, DataType, TensorType


class KernelMemoryError(CodegenError):
    """A kernel's argument is not in GLOBAL, or it allocates outside SHARED and REGISTER."""


class SharedPlacementError(CodegenError):
    """A SHARED buffer is allocated inside a thread loop, or with a shape not constant."""


class RegisterThreadIndexError(CodegenError):
    """A REGISTER buffer allocated in a thread loop is indexed by a thread variable."""


class RegisterNotPerThreadError(CodegenError):
    """A REGISTER buffer allocated outside the thread loops and written in them has no
    leading per-thread dimensions indexed by the thread variables."""


#: Constant-trip loops inside thread loops up to this many iterations get ``#pragma unroll``.
UNROLL_LIMIT = 64
#: ... and unroll to at most this many statements (``unrolled_size``).
UNROLL_BUDGET = 2048


@dataclass(frozen=True, slots=True)
class Kernel:
    """One generated kernel and what its launch needs.

    Attributes:
        name: the kernel's C name (``extern "C"``, so also its symbol).
        scope: the scope it was made from.
        text: its C++ text.
        grid: per ``blockIdx`` axis x, y, z, the ``(lo, hi)`` bounds of its block loop
            (None: one block on that axis); the bounds read only the proc's arguments.
        block: the block's extent on ``threadIdx.x``, ``.y``, ``.z``.
        params: the C parameters (the proc's arguments, in order, then ``host_vars``).
        host_vars: the variables of the host loops around the kernel's launch, outermost
            first: the last parameters, passed by value at each launch.
    """

    name: str
    scope: Scope
    text: str
    grid: tuple[tuple[Expr, Expr] | None, ...]
    block: tuple[int, int, int]
    params: tuple[CParam, ...]
    host_vars: tuple[Sym, ...] = ()

    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


def cuda_params(p: ProcDef, names: Namer) -> tuple[CParam, ...]:
    """The kernel parameters of ``p``'s arguments (tensors must be ``GLOBAL``)."""
    for a in p.args:
        names.bind(a.sym)
    out: list[CParam] = []
    for a in p.args:
        n = names.name(a.sym)
        t = a.type
        match t:
            case ControlType():
                ct = "bool" if t.name == "bool" else "int_fast64_t"
                out.append(CParam(a, (n,), f"{ct} {n}"))
            case DataType():
                _check_global(p, a.sym, a.mem, t)
                out.append(CParam(a, (n,), f"{t.c_name} *{n}"))
            case TensorType():
                _check_global(p, a.sym, a.mem, t.elem)
                if t.window:
                    raise CodegenError(f"{p.name}: window argument '{a.sym}' in a CUDA proc")
                out.append(CParam(a, (n,), f"{t.elem.c_name} *__restrict__ {n}"))
            case _:
                assert_never(t)
    return tuple(out)


def _check_global(p: ProcDef, sym: Sym, mem: object, t: DataType) -> None:
    if mem is not GLOBAL:
        name = getattr(mem, "__name__", mem)
        raise KernelMemoryError(f"{p.name}: argument '{sym}' is in {name}; a kernel's is in GLOBAL")
    if t == F16:
        raise CodegenError(f"{p.name}: argument '{sym}' is f16, not supported by the CUDA target")


class KernelGen(FunctionGen):
    """Prints one cuda scope of ``p`` as a kernel."""

    def __init__(
        self,
        p: ProcDef,
        scope: Scope,
        cname: str,
        taken: set[str],
        helpers: Helpers,
        callee_name: Callable[[ProcDef], str],
        host_loops: tuple[For, ...] = (),
    ) -> None:
        # FunctionGen's own __init__ refuses memories of other targets: the same set-up
        # with the kernel's parameters instead.
        self.p = p
        self.host_loops = host_loops
        self.scope = scope
        self.cname = cname
        self.names = Namer(taken)
        self.ex = ExprGen(self.names, helpers)
        self.callee_name = callee_name
        self.params = cuda_params(p, self.names) + self._host_params()
        self.par_depth = 0
        self.open_blocks: list[tuple[list[str], bool]] = []
        for cp in self.params:
            self._bind_arg(cp)
        self.layout: KernelLayout = kernel_layout(scope)
        self.thread_depth = 0  # thread loops around the statement being printed
        self.bound: list[str] = []  # thread axes bound around it
        self._check_registers()

    def _host_params(self) -> tuple[CParam, ...]:
        """One ``int_fast64_t`` parameter per host loop variable around the launch."""
        out: list[CParam] = []
        for loop in self.host_loops:
            self.names.bind(loop.iter)
            n = self.names.name(loop.iter)
            out.append(CParam(FnArg(loop.iter, INDEX), (n,), f"int_fast64_t {n}"))
            if self.ex.is_nonneg(loop.lo):
                self.ex.nonneg.add(loop.iter)
        return tuple(out)

    # -- the kernel ------------------------------------------------------------------------
    def block_dims(self) -> tuple[int, int, int]:
        d = self.layout.block_dims
        x, y, z = (d.get(a, 1) for a in THREAD_AXES)
        return x, y, z

    def grid(self) -> tuple[tuple[Expr, Expr] | None, ...]:
        out: dict[str, tuple[Expr, Expr]] = {}
        for loop in self.layout.grid_loops:
            assert loop.axis is not None
            out[loop.axis] = (loop.lo, loop.hi)
        return tuple(out.get(f"blockIdx.{c}") for c in "xyz")

    def text(self) -> str:
        params = ", ".join(p.decl for p in self.params) or "void"
        threads = max(self.layout.threads(), 1)
        lines = [
            f'extern "C" __global__ void __launch_bounds__({threads}) {self.cname}({params}) {{'
        ]
        for pred in self.p.preds:
            lines.append(f"{IND}if (!({self.ex.ctrl(pred)})) __builtin_unreachable();")
        lines += self.block(self.scope.body, IND)
        lines.append("}")
        return "\n".join(lines)

    def kernel(self) -> Kernel:
        text = self.text()
        host_vars = tuple(lp.iter for lp in self.host_loops)
        return Kernel(
            self.cname, self.scope, text, self.grid(), self.block_dims(), self.params, host_vars
        )

    # -- statements ------------------------------------------------------------------------
    def stmt(self, s: Stmt, ind: str, frees: list[str]) -> list[str]:
        missing = self._missing_axes(s)
        if missing:
            cond = " && ".join(f"{a} == 0" for a in missing)
            self.bound += missing  # decided for everything inside
            body = self._stmt(s, ind + IND, frees)
            del self.bound[-len(missing) :]
            return [f"{ind}if ({cond}) {{", *body, ind + "}"]
        return self._stmt(s, ind, frees)

    def _missing_axes(self, s: Stmt) -> list[str]:
        """Thread axes of the block a per-thread leaf statement does not bind: it runs on
        index 0 of those (otherwise every thread along them would repeat it)."""
        if self.thread_depth == 0 or is_thread_loop(s):
            return []
        if any(is_thread_loop(x) for x in walk_stmts((s,))):
            return []
        return [a for a in THREAD_AXES if a in self.layout.block_dims and a not in self.bound]

    def _stmt(self, s: Stmt, ind: str, frees: list[str]) -> list[str]:
        match s:
            case For():
                return self._for(s, ind)
            case Alloc():
                return self._alloc(s, ind, frees)
            case Call():
                return self._kcall(s, ind)
            case Scope():
                return [
                    f"{ind}/* scope {s.name} */",
                    ind + "{",
                    *self.block(s.body, ind + IND),
                    ind + "}",
                ]
            case _:
                return super().stmt(s, ind, frees)

    def _for(self, s: For, ind: str) -> list[str]:
        lo, hi = self.ex.ctrl(s.lo), self.ex.ctrl(s.hi)
        head: list[str] = []
        inner = ind + IND
        axis = s.axis
        if axis is None:
            n = const_trip(s)
            unroll = (
                self.thread_depth > 0
                and n is not None
                and n <= UNROLL_LIMIT
                and unrolled_size(s) <= UNROLL_BUDGET
            )

            def bind_iter() -> None:
                i = self.names.bind(s.iter)
                if self.ex.is_nonneg(s.lo):
                    self.ex.nonneg.add(s.iter)
                if unroll:
                    head.append(f"{ind}#pragma unroll")
                head.append(f"{ind}for (int_fast64_t {i} = {lo}; {i} < {hi}; {i}++) {{")

            body = self.block(s.body, inner, pre=bind_iter)
            return [*head, *body, ind + "}"]
        thread = axis.startswith("threadIdx")

        def bind_axis() -> None:
            i = self.names.bind(s.iter)
            if self.ex.is_nonneg(s.lo):
                self.ex.nonneg.add(s.iter)
            start = "" if lo == "0" else f"{lo} + "
            head.append(f"{inner}const int_fast64_t {i} = {start}(int_fast64_t){axis};")

        guard: str | None = None
        if thread:
            n = const_trip(s)
            if n is None:
                raise CodegenError(f"thread loop {s.iter.name} needs constant bounds")
            if n < self.layout.block_dims[axis]:
                guard = f"{axis} < {n}"
            self.thread_depth += 1
            self.bound.append(axis)
        body = self.block(s.body, inner if guard is None else inner + IND, pre=bind_axis)
        if thread:
            self.thread_depth -= 1
            self.bound.pop()
        if guard is not None:
            return [ind + "{", *head, f"{inner}if ({guard}) {{", *body, inner + "}", ind + "}"]
        return [ind + "{", *head, *body, ind + "}"]

    def _alloc(self, s: Alloc, ind: str, frees: list[str]) -> list[str]:
        mem = s.mem
        t = s.type
        elem = t if isinstance(t, DataType) else t.elem
        if elem == F16:
            raise CodegenError(f"allocation of '{s.sym}': f16 is not supported by the CUDA target")
        if mem is not SHARED and mem is not REGISTER:
            raise KernelMemoryError(
                f"allocation of '{s.sym}' in {mem.name()} inside kernel {self.scope.name}:"
                " a kernel allocates in SHARED or REGISTER"
            )
        if mem is SHARED and self.thread_depth:
            raise SharedPlacementError(
                f"SHARED allocation of '{s.sym}' inside a thread loop: allocate it outside them"
            )
        name = self.names.bind(s.sym)
        ct = elem.c_name
        qual = "__shared__ " if mem is SHARED else ""
        if isinstance(t, DataType):
            self.ex.bufs[s.sym] = Buffer(t, f"&{name}", (), name)
            return [f"{ind}{qual}{ct} {name};"]
        if _const_bytes(t) is None:
            raise SharedPlacementError(
                f"{mem.name()} allocation of '{s.sym}' needs a constant shape"
            )
        shape = tuple(self.ex.ctrl(e) for e in t.shape)
        strides = row_major(shape)
        drop = len(self.layout.thread_regs.get(s.sym, ()))
        if drop:
            # one element per thread along those dimensions: each thread holds its own
            shape = shape[drop:]
            strides = ("0",) * drop + row_major(shape)
        self.ex.bufs[s.sym] = Buffer(t.elem, name, strides)
        count = 1
        for e in t.shape[drop:]:
            count *= int(e.value)  # type: ignore[union-attr]
        # (every dimension dropped: one element per thread, an array of one)
        return [f"{ind}{qual}{ct} {name}[{count}];"]

    def _kcall(self, s: Call, ind: str) -> list[str]:
        if is_barrier(s):
            return [f"{ind}__syncthreads();"]
        if s.proc.instr is not None:
            return self._instr(s, ind)
        raise CodegenError(
            f"call of proc {s.proc.name} inside kernel {self.scope.name}: inline it first"
            " (device functions are not generated)"
        )

    # -- rules -----------------------------------------------------------------------------
    def _check_registers(self) -> None:
        """A REGISTER buffer is private to a thread: allocated outside the thread loops and
        written in them, it must carry one element per thread in leading dimensions indexed by
        the thread variables (``thread_regs``); inside one it must not be indexed by a thread
        variable. One written only outside the thread loops is uniform: every thread runs
        those writes itself, on the same values (the barrier checker orders what they read),
        so each holds the same copy and the thread loops may read it."""
        regs = {
            s.sym: s
            for s in walk_stmts(self.scope.body)
            if isinstance(s, Alloc) and s.mem is REGISTER
        }

        def go(body: tuple[Stmt, ...], threads: set[Sym], depth: int) -> None:
            for s in body:
                if isinstance(s, Alloc) and s.sym in regs and depth == 0:
                    written = _written_in_thread_loops(self.scope.body, s.sym)
                    if written and s.sym not in self.layout.thread_regs:
                        raise RegisterNotPerThreadError(
                            f"REGISTER buffer '{s.sym}' of kernel {self.scope.name} is allocated"
                            " outside the thread loops and written in them but has no"
                            " per-thread leading dimensions indexed by the thread variables"
                            " (expand_dim, then lift_alloc)"
                        )
                inner, d = threads, depth
                if is_thread_loop(s):
                    assert isinstance(s, For)
                    inner, d = threads | {s.iter}, depth + 1
                if isinstance(s, Alloc) and s.sym in regs and depth > 0:
                    for e in walk_exprs(self.scope.body):
                        if isinstance(e, Read) and e.sym is s.sym:
                            used = {
                                x.sym for i in e.idx for x in walk_expr(i) if isinstance(x, Read)
                            }
                            if used & inner:
                                raise RegisterThreadIndexError(
                                    f"REGISTER buffer '{s.sym}' is indexed by a thread variable:"
                                    " registers are private to a thread"
                                )
                for _, blk in _blocks(s):
                    go(blk, inner, d)

        go(self.scope.body, set(), 0)


def _blocks(s: Stmt) -> tuple[tuple[str, tuple[Stmt, ...]], ...]:
    from cursched.ir.traversal import stmt_blocks

    return stmt_blocks(s)


def unrolled_size(s: Stmt) -> int:
    """The statements ``s`` stands for with every constant-trip loop in it unrolled (a loop
    without constant bounds counts its body once)."""
    match s:
        case For():
            n = const_trip(s)
            return (1 if n is None else n) * sum(unrolled_size(x) for x in s.body)
        case If():
            return 1 + sum(unrolled_size(x) for x in (*s.body, *s.orelse))
        case Scope():
            return sum(unrolled_size(x) for x in s.body)
        case _:
            return 1


def _written_in_thread_loops(body: tuple[Stmt, ...], sym: Sym) -> bool:
    for s in walk_stmts(body):
        if is_thread_loop(s):
            assert isinstance(s, For)
            for x in walk_stmts(s.body):
                if getattr(x, "sym", None) is sym and not isinstance(x, Alloc):
                    return True
    return False
