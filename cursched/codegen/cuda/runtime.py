"""Callables for CUDA procs: on the CPU through the emulation, or on the GPU through cupy.

``compile_cuda(p, target="cuda-emulated")`` builds the proc's ``.cu`` text with the host C++
compiler after ``cuda_emu.h`` (cached by content hash, like the C backend) and returns a
callable taking numpy arrays; ``target="cuda"`` builds the same text with cupy's NVRTC
(``cupy.RawModule``, cached in-process by content hash and on disk by cupy) and returns a
callable taking cupy arrays. Both check every argument (``ArgumentError``) before any launch,
evaluate the asserts and the grid on the host, and run the launch program in order.

With ``check_races=True`` (emulation only) each launch runs twice from the same inputs, the
threads of each block resumed in forward and then in reverse order; outputs that differ raise
``ThreadOrderError`` naming the kernel and the first differing element (a missing barrier).
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any, assert_never

import numpy as np

from cursched.codegen.build import build_library
from cursched.codegen.cuda.kernel import Kernel
from cursched.codegen.cuda.unit import (
    CudaUnit,
    HostFor,
    HostIf,
    HostStep,
    Launch,
    generate_cuda,
)
from cursched.errors import ArgumentError, BuildError, CodegenError, CurschedError
from cursched.ir.nodes import (
    BinOp,
    Const,
    Expr,
    Extern,
    ProcDef,
    Read,
    StrideExpr,
    USub,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import written_args
from cursched.ir.types import ControlType, DataType, TensorType

EMU_CFLAGS: tuple[str, ...] = (
    "-x",
    "c++",
    "-O2",
    "-fPIC",
    "-shared",
    "-fno-exceptions",
    "-fno-rtti",
    "-w",
    # a kernel is an extern "C" function named after its scope; without this a name that
    # libc also exports (``step``, ``index``, ``time``) binds the launcher's call to libc's
    "-Wl,-Bsymbolic",
)


class ThreadOrderError(CurschedError):
    """A kernel's result depends on the order its threads run in (a missing barrier)."""


class BarrierDivergenceError(CurschedError):
    """A barrier was reached by some threads of a block while others had finished, or the
    threads of a block wait at different barriers."""


def emulation_header() -> str:
    """The text of ``cuda_emu.h``."""
    return resources.files("cursched.codegen.cuda").joinpath("cuda_emu.h").read_text()


# ------------------------------------------------------------------------- host values


def eval_ctrl(e: Expr, env: Mapping[Sym, int | bool]) -> int | bool:
    """The value of a control expression over the arguments (floor ``/`` and ``%``)."""
    match e:
        case Const():
            assert not isinstance(e.value, float)
            return e.value
        case Read():
            if e.idx or e.sym not in env:
                raise CodegenError(f"'{e.sym}' cannot be evaluated on the host")
            return env[e.sym]
        case BinOp():
            a, b = eval_ctrl(e.lhs, env), eval_ctrl(e.rhs, env)
            ops: dict[str, Callable[[Any, Any], Any]] = {
                "+": operator.add,
                "-": operator.sub,
                "*": operator.mul,
                "/": operator.floordiv,
                "%": operator.mod,
                "<": operator.lt,
                ">": operator.gt,
                "<=": operator.le,
                ">=": operator.ge,
                "==": operator.eq,
                "!=": operator.ne,
                "and": lambda x, y: bool(x and y),
                "or": lambda x, y: bool(x or y),
            }
            out: int | bool = ops[e.op](a, b)
            return out
        case USub():
            return -eval_ctrl(e.arg, env)
        case StrideExpr() | Extern() | WindowExpr():
            raise CodegenError(f"{type(e).__name__} cannot be evaluated on the host")
        case _:
            assert_never(e)


class _Args:
    """Binds and checks the arguments of one call (numpy or cupy arrays)."""

    def __init__(self, p: ProcDef, array_type: type, module: str, hint: str) -> None:
        self.p = p
        self.names = tuple(a.sym.name for a in p.args)
        self.array_type = array_type
        self.module = module
        self.hint = hint
        self.written = written_args(p)

    def _err(self, k: int, msg: str) -> ArgumentError:
        return ArgumentError(f"{self.p.name}: argument '{self.names[k]}': {msg}")

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        n = len(self.names)
        if len(args) > n:
            raise ArgumentError(f"{self.p.name} takes {n} arguments, {len(args)} given")
        values = dict(zip(self.names, args, strict=False))
        for k, v in kwargs.items():
            if k not in self.names:
                raise ArgumentError(f"{self.p.name} has no argument {k!r}")
            if k in values:
                raise ArgumentError(f"{self.p.name}: argument {k!r} given twice")
            values[k] = v
        missing = [x for x in self.names if x not in values]
        if missing:
            raise ArgumentError(f"{self.p.name}: missing argument(s) {', '.join(missing)}")
        return tuple(values[x] for x in self.names)

    def check(self, values: tuple[Any, ...]) -> dict[Sym, int | bool]:
        env: dict[Sym, int | bool] = {}
        for k, (a, v) in enumerate(zip(self.p.args, values, strict=True)):
            t = a.type
            if isinstance(t, ControlType):
                if t.name == "bool":
                    if not isinstance(v, bool | np.bool_):
                        raise self._err(k, f"expected a bool, got {type(v).__name__}")
                    env[a.sym] = bool(v)
                    continue
                if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
                    raise self._err(k, f"expected an int ({t.name}), got {type(v).__name__}")
                if t.name == "size" and int(v) <= 0:
                    raise self._err(k, f"sizes are positive, got {int(v)}")
                if abs(int(v)) > 2**62:
                    raise self._err(k, f"{int(v)} is out of range")
                env[a.sym] = int(v)
        for pred in self.p.preds:
            if not eval_ctrl(pred, env):
                from cursched.ir.printer import print_expr

                raise ArgumentError(f"{self.p.name}: assert {print_expr(pred)} does not hold")
        for k, (a, v) in enumerate(zip(self.p.args, values, strict=True)):
            t = a.type
            if isinstance(t, ControlType):
                continue
            elem = t if isinstance(t, DataType) else t.elem
            shape: tuple[int, ...] = ()
            if isinstance(t, TensorType):
                shape = tuple(int(eval_ctrl(d, env)) for d in t.shape)
            self.array(k, v, elem, shape, a.sym in self.written, isinstance(t, DataType))
        return env

    def array(
        self, k: int, v: Any, elem: DataType, shape: tuple[int, ...], written: bool, scalar: bool
    ) -> None:
        want = f"a {self.module} {elem.np_dtype} array of shape {shape}"
        if not isinstance(v, self.array_type):  # numpy.ndarray or cupy.ndarray
            msg = f"expected {want}, got {type(v).__module__}.{type(v).__name__}"
            if isinstance(v, np.ndarray) or type(v).__module__.startswith("cupy"):
                msg += f"; {self.hint}"
            raise self._err(k, msg)
        arr: Any = v  # isinstance against a type held in a variable narrows to object
        if arr.dtype != elem.np_dtype:
            raise self._err(k, f"expected {want}, got dtype {arr.dtype}")
        ok = arr.shape in ((), (1,)) if scalar else tuple(arr.shape) == shape
        if not ok:
            raise self._err(k, f"expected {want}, got shape {tuple(arr.shape)}")
        if not arr.flags.c_contiguous:
            raise self._err(k, "a tensor argument must be C-contiguous")
        if written and not getattr(arr.flags, "writeable", True):
            raise self._err(k, "the proc writes it but the array is read-only")


def _grid(k: Kernel, env: Mapping[Sym, int | bool]) -> tuple[int, int, int]:
    out: list[int] = []
    for b in k.grid:
        if b is None:
            out.append(1)
        else:
            lo, hi = b
            out.append(max(int(eval_ctrl(hi, env)) - int(eval_ctrl(lo, env)), 0))
    return out[0], out[1], out[2]


def _launches(
    steps: tuple[HostStep, ...], env: Mapping[Sym, int | bool]
) -> Iterator[tuple[Kernel, Mapping[Sym, int | bool]]]:
    """The launches of the host program, in order, each with the values it sees (the
    arguments and the host loops' variables)."""
    for s in steps:
        match s:
            case Launch():
                yield s.kernel, env
            case HostIf():
                yield from _launches(s.then if eval_ctrl(s.cond, env) else s.orelse, env)
            case HostFor():
                lo, hi = int(eval_ctrl(s.lo, env)), int(eval_ctrl(s.hi, env))
                for i in range(lo, hi):
                    yield from _launches(s.body, {**env, s.iter: i})
            case _:
                assert_never(s)


def _kernel_values(
    k: Kernel, values: tuple[Any, ...], env: Mapping[Sym, int | bool]
) -> tuple[Any, ...]:
    """The values of ``k``'s parameters: the arguments, then its host loops' variables."""
    return (*values, *(env[v] for v in k.host_vars))


# ---------------------------------------------------------------------------- emulation


def _launcher(k: Kernel) -> str:
    decls = ["unsigned cs_gx", "unsigned cs_gy", "unsigned cs_gz", "int cs_reverse"]
    decls += [p.decl for p in k.params]
    names = ", ".join(p.names[0] for p in k.params)
    bx, by, bz = k.block
    return (
        f'extern "C" int cs_launch_{k.name}({", ".join(decls)}) {{\n'
        f"    auto body = [&]() {{ {k.name}({names}); }};\n"
        f"    cs_dim3 grid = {{cs_gx, cs_gy, cs_gz}}, block = {{{bx}u, {by}u, {bz}u}};\n"
        "    return cs_emu_launch(grid, block, cs_reverse, "
        "&cs_trampoline<decltype(body)>, &body);\n}"
    )


def emulation_source(unit: CudaUnit) -> str:
    """The C++ the emulation builds: the header, the ``.cu`` text, one launcher per kernel."""
    # the barriers' __LINE__ (their identity in the emulation) counts the .cu text's lines
    text = f'#line 1 "{unit.proc.name}.cu"\n' + unit.source
    parts = [emulation_header(), text, *(_launcher(k) for k in unit.kernels)]
    return "\n\n".join(parts) + "\n"


class _Emulated:
    """The callable of ``target="cuda-emulated"``."""

    def __init__(self, unit: CudaUnit, check_races: bool) -> None:
        self.unit = unit
        self.check_races = check_races
        try:
            built = build_library(f"{unit.proc.name}_cuemu", emulation_source(unit), EMU_CFLAGS)
        except BuildError as e:
            raise BuildError(
                f"the CUDA emulation of {unit.proc.name} does not compile: {e}",
                output=getattr(e, "output", ""),
                source_path=getattr(e, "source_path", ""),
            ) from None
        self.lib = ctypes.CDLL(str(built.lib_path))
        self.source_path = built.source_path
        self.fns: dict[str, Any] = {}
        for k in unit.kernels:
            fn = getattr(self.lib, f"cs_launch_{k.name}")
            types: list[Any] = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_int]
            for prm in k.params:
                t = prm.arg.type
                if isinstance(t, ControlType):
                    types.append(ctypes.c_bool if t.name == "bool" else ctypes.c_int64)
                else:
                    types.append(ctypes.c_void_p)
            fn.argtypes = types
            fn.restype = ctypes.c_int
            self.fns[k.name] = fn
        self.info = self.lib.cs_emu_error_info
        self.info.argtypes = [ctypes.c_int]
        self.info.restype = ctypes.c_long
        self.args = _Args(unit.proc, np.ndarray, "numpy", "the emulation takes numpy arrays")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        values = self.args.bind(args, kwargs)
        env = self.args.check(values)
        arrays = [
            (k, v)
            for k, v in enumerate(values)
            if not isinstance(self.unit.proc.args[k].type, ControlType)
        ]
        for kern, at in _launches(self.unit.program, env):
            grid = _grid(kern, at)
            if 0 in grid:
                continue
            if not self.check_races:
                self._launch(kern, grid, _kernel_values(kern, values, at), 0)
                continue
            saved = [v.copy() for _, v in arrays]
            self._launch(kern, grid, _kernel_values(kern, values, at), 0)
            other = list(values)
            for (k, _), s in zip(arrays, saved, strict=True):
                other[k] = s
            self._launch(kern, grid, _kernel_values(kern, tuple(other), at), 1)
            for (k, v), s in zip(arrays, saved, strict=True):
                diff = np.flatnonzero(~((v == s) | (np.isnan(v) & np.isnan(s))).reshape(-1))
                if diff.size:
                    where = np.unravel_index(int(diff[0]), v.shape) if v.shape else ()
                    name = self.unit.proc.args[k].sym.name
                    raise ThreadOrderError(
                        f"kernel {kern.name}: the result depends on the order of its threads"
                        f" (a missing barrier?): {name}{list(map(int, where))} is"
                        f" {v.reshape(-1)[diff[0]]} with threads in order and"
                        f" {s.reshape(-1)[diff[0]]} in reverse ({diff.size} elements differ)"
                    )

    def _launch(
        self, k: Kernel, grid: tuple[int, int, int], values: tuple[Any, ...], rev: int
    ) -> None:
        cargs: list[Any] = [*grid, rev]
        for prm, v in zip(k.params, values, strict=True):
            if isinstance(prm.arg.type, ControlType):
                cargs.append(v)
            else:
                cargs.append(v.ctypes.data)
        rc = self.fns[k.name](*cargs)
        if rc == 1:
            b = [self.info(i) for i in range(3)]
            raise BarrierDivergenceError(
                f"kernel {k.name}: in block {tuple(b)}, {self.info(3)} thread(s) wait at a"
                " barrier that the others finished without reaching"
            )
        if rc == 3:
            b = [self.info(i) for i in range(3)]
            t0, t1, l0, l1 = (self.info(4 + i) for i in range(4))
            raise BarrierDivergenceError(
                f"kernel {k.name}: in block {tuple(b)}, threads {t0} and {t1} wait at different"
                f" barriers at once (lines {l0} and {l1} of the .cu): no barrier is reached by"
                " every thread"
            )
        if rc != 0:
            raise CurschedError(f"kernel {k.name}: the emulation could not allocate its stacks")


# ---------------------------------------------------------------------------------- cupy

_MODULES: dict[str, Any] = {}


class _OnGpu:
    """The callable of ``target="cuda"``: the same text through NVRTC, on cupy arrays."""

    def __init__(self, unit: CudaUnit) -> None:
        try:
            import cupy
        except ImportError:
            raise BuildError(
                "target='cuda' needs cupy (pip install cursched[cuda]); without a GPU use"
                " target='cuda-emulated'"
            ) from None
        self.cupy = cupy
        self.unit = unit
        key = hashlib.sha256(unit.source.encode()).hexdigest()
        mod = _MODULES.get(key)
        if mod is None:
            mod = cupy.RawModule(code=unit.source, options=("--std=c++17",))
            _MODULES[key] = mod
        self.fns = {k.name: mod.get_function(k.name) for k in unit.kernels}
        self.args = _Args(
            unit.proc, cupy.ndarray, "cupy", "move it to the GPU with cupy.asarray(x)"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        values = self.args.bind(args, kwargs)
        env = self.args.check(values)
        device = self.cupy.cuda.Device()
        for v in values:
            if isinstance(v, self.cupy.ndarray) and v.device != device:
                raise ArgumentError(
                    f"{self.unit.proc.name}: an array is on {v.device}, not {device}"
                )
        for kern, at in _launches(self.unit.program, env):
            grid = _grid(kern, at)
            if 0 in grid:
                continue
            cargs: list[Any] = []
            for prm, v in zip(kern.params, _kernel_values(kern, values, at), strict=True):
                t = prm.arg.type
                if isinstance(t, ControlType):
                    cargs.append(np.bool_(v) if t.name == "bool" else np.int64(v))
                else:
                    cargs.append(v)
            self.fns[kern.name](grid, kern.block, tuple(cargs))


def compile_cuda(
    p: ProcDef,
    target: str = "cuda-emulated",
    *,
    check_races: bool = False,
    unsafe_skip_checks: bool = False,
) -> Callable[..., None]:
    """A callable running ``p``'s kernels.

    Args:
        p: a proc made of cuda scopes (``cursched.codegen.cuda.unit``).
        target: ``"cuda-emulated"`` (numpy arrays, on the CPU) or ``"cuda"`` (cupy arrays).
        check_races: (emulation) run every launch in forward and reverse thread order and
            raise ``ThreadOrderError`` when the results differ.
        unsafe_skip_checks: skip the compile-time barrier checker.

    Raises:
        CodegenError, KernelRaceError, BuildError: as the code generator and builds do.
    """
    unit = generate_cuda(p, unsafe_skip_checks=unsafe_skip_checks)
    if target == "cuda-emulated":
        return _Emulated(unit, check_races)
    if target == "cuda":
        if check_races:
            raise CodegenError("check_races=True is a feature of target='cuda-emulated'")
        return _OnGpu(unit)
    raise CodegenError(f"unknown CUDA target {target!r} (cuda, cuda-emulated)")
