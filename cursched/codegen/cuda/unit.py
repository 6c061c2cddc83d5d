"""A proc made of cuda scopes as one ``.cu`` text and a host-side launch program.

The proc's body is host code: ``target="cuda"`` scopes (each one kernel launch), ``pass``,
plain scopes, ``if``s over control values and sequential ``for`` loops around them (a host
loop launches its kernels once per iteration, in order; its variable is passed to each kernel
inside it as a trailing ``int_fast64_t`` parameter). Anything else outside a kernel (data
code, allocations, parallel loops) has no place to run and is a ``CodegenError`` naming it.

The text is the same for the GPU (NVRTC or nvcc) and for the CPU emulation
(``cursched.codegen.cuda.emulate``, which includes its header first): it starts with a small
preamble that defines ``int_fast64_t`` where NVRTC has no ``<stdint.h>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cursched.analysis.races import check_kernels
from cursched.codegen.c.helpers import Helpers
from cursched.codegen.c.naming import RESERVED, sanitize
from cursched.codegen.cuda.kernel import Kernel, KernelGen
from cursched.errors import CodegenError
from cursched.ir.nodes import Expr, For, If, Pass, ProcDef, Scope, Stmt
from cursched.ir.printer import print_stmt
from cursched.ir.symbols import Sym

#: Names a kernel may not use for its own (CUDA built-ins and the emulation's).
CUDA_RESERVED = frozenset(
    ["threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "__syncthreads"]
)

PREAMBLE = """\
#if defined(__CUDACC_RTC__)
typedef long long int_fast64_t;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#else
#include <stdint.h>
#include <math.h>
#endif
#if !defined(__CUDACC__) && !defined(CURSCHED_CUDA_EMULATION)
#error "compile with nvcc, NVRTC, or the cursched emulation header"
#endif"""


@dataclass(frozen=True, slots=True)
class Launch:
    """Host step: launch ``kernel``."""

    kernel: Kernel


@dataclass(frozen=True, slots=True)
class HostIf:
    """Host step: run ``then`` or ``orelse`` by a control condition on the arguments."""

    cond: Expr
    then: tuple[HostStep, ...]
    orelse: tuple[HostStep, ...]


@dataclass(frozen=True, slots=True)
class HostFor:
    """Host step: run ``body`` for ``iter`` from ``lo`` to ``hi`` (control expressions over the
    arguments and the enclosing host loops' variables), one iteration after another."""

    iter: Sym
    lo: Expr
    hi: Expr
    body: tuple[HostStep, ...]


HostStep = Launch | HostIf | HostFor


@dataclass(frozen=True, slots=True)
class CudaUnit:
    """The ``.cu`` text of a proc and its launch program.

    Attributes:
        proc: the proc.
        source: the complete ``.cu`` text.
        kernels: the kernels, in program order.
        program: the host steps (launches and conditions), in order.
    """

    proc: ProcDef
    source: str
    kernels: tuple[Kernel, ...]
    program: tuple[HostStep, ...]


def _where(s: Stmt) -> str:
    return print_stmt(s).splitlines()[0].strip()


def generate_cuda(p: ProcDef, *, unsafe_skip_checks: bool = False) -> CudaUnit:
    """The ``.cu`` text and launch program of ``p``.

    Args:
        p: a proc whose body is made of cuda scopes and host control between them.
        unsafe_skip_checks: skip the barrier checker (``cursched.analysis.races``).

    Raises:
        CodegenError: data code outside a kernel, or a construct with no CUDA translation.
        KernelRaceError: (a ``SchedulingError``) a kernel is not proven race-free.
    """
    if not unsafe_skip_checks:
        check_kernels(p)
    taken: set[str] = set(RESERVED) | set(CUDA_RESERVED)
    helpers = Helpers()
    kernels: list[Kernel] = []

    def host(body: tuple[Stmt, ...], loops: tuple[For, ...] = ()) -> tuple[HostStep, ...]:
        steps: list[HostStep] = []
        for s in body:
            match s:
                case Scope(target="cuda"):
                    base = sanitize(s.name)
                    name, k = base, 0
                    while name in taken:
                        k += 1
                        name = f"{base}_{k}"
                    taken.add(name)
                    gen = KernelGen(p, s, name, set(taken), helpers, lambda q: q.name, loops)
                    kern = gen.kernel()
                    kernels.append(kern)
                    steps.append(Launch(kern))
                case Scope():
                    steps.extend(host(s.body, loops))
                case Pass():
                    pass
                case If():
                    steps.append(HostIf(s.cond, host(s.body, loops), host(s.orelse, loops)))
                case For(mode="seq", axis=None):
                    steps.append(HostFor(s.iter, s.lo, s.hi, host(s.body, (*loops, s))))
                case _:
                    raise CodegenError(
                        f"{p.name}: `{_where(s)}` is outside every cuda scope: on the CUDA"
                        " target only kernels (with scope(..., target='cuda')) and host"
                        " conditions around them run"
                    )
        return tuple(steps)

    program = host(p.body)
    if not kernels:
        raise CodegenError(f"{p.name} has no scope with target='cuda': nothing to launch")
    parts = [f"/* {p.name}.cu: generated by cursched; do not edit. */", PREAMBLE]
    if helpers.text():
        parts.append(helpers.text().replace("static inline", "static __device__ __forceinline__"))
    parts += [k.text for k in kernels]
    return CudaUnit(p, "\n\n".join(parts) + "\n", tuple(kernels), program)
