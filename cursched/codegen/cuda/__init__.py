"""The CUDA backend: cuda scopes become kernels (``unit``, ``kernel``), built for the GPU with
cupy or run on the CPU through an emulation of the same text (``runtime``, ``cuda_emu.h``);
``nvcc`` reports a kernel's registers, spills and shared memory.

Public functions:
    generate_cuda(p): the ``.cu`` text and launch program of a proc.
    compile_cuda(p, target): a callable (``Proc.compile(target="cuda" | "cuda-emulated")``).
    kernel_resources(source): ptxas's per-kernel report for ``sm_90``.
"""

from cursched.codegen.cuda.nvcc import (
    KernelResources,
    gpu_available,
    kernel_resources,
    nvcc_available,
)
from cursched.codegen.cuda.runtime import (
    BarrierDivergenceError,
    ThreadOrderError,
    compile_cuda,
    emulation_source,
)
from cursched.codegen.cuda.unit import CudaUnit, generate_cuda

__all__ = [
    "BarrierDivergenceError",
    "CudaUnit",
    "KernelResources",
    "ThreadOrderError",
    "compile_cuda",
    "emulation_source",
    "generate_cuda",
    "gpu_available",
    "kernel_resources",
    "nvcc_available",
]
