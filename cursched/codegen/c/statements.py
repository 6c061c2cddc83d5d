"""One proc as one C function: signature (the ABI), asserts as assumptions, statements.

ABI of a generated function ``void name(...)``, one or more C parameters per proc argument,
in argument order:

* ``size`` / ``index`` argument ``n``: ``int_fast64_t n`` (by value).
* ``bool`` argument ``b``: ``bool b``.
* data scalar ``x: f32``: ``float *x`` (one element, by reference).
* tensor ``A: f32[n, m]``: ``float *restrict A``, row-major and contiguous; its strides are
  implied by the shape. ``restrict`` only where no call of the unit may pass it memory that
  overlaps another argument (``cursched.analysis.aliasing``), else a plain pointer.
* window ``A: [f32][n, m]``: ``float *restrict A, int_fast64_t A_stride_0,
  int_fast64_t A_stride_1``: a pointer to element ``[0, 0]`` and one element stride per
  dimension (any value, including 0 or negative).

Asserts become ``if (!(cond)) __builtin_unreachable();`` (the Python wrapper checks them before
any C runs). Allocations in ``DRAM`` live on the stack when their shape is constant and they
take at most ``STACK_LIMIT`` bytes, on the heap otherwise, freed at the end of their block;
a heap allocation's size is computed without overflow and its result checked for NULL (a
failure skips the rest of the enclosing loop body or function, see
``FunctionGen._alloc_failed``); other memories use their ``c_alloc``/``c_free`` hooks. ``par``
loops are ``#pragma omp parallel for`` loops.

Instruction procs are expanded through their C template. Placeholders, for a parameter ``x``:
``{x}`` is the C expression of a control argument, the lvalue of a data scalar argument, and
the element pointer of a tensor or window argument; ``{x_data}`` is the address of the first
element (data scalars, tensors, windows); ``{x_stride_k}`` is the element stride of dimension
``k`` of a tensor or window argument. Other braces are left alone; an unknown placeholder is
a ``CodegenError``. A tensor argument that views an allocation in a memory with a
``c_window`` hook (``cursched.ir.memory``) is that hook's text instead of a pointer: for an
``AVX2`` register tile, ``{dst}`` is the register lvalue ``Ct[i]``. Such views exist only as
instruction arguments: a window statement of one prints no C, and passing one to an ordinary
proc is a ``CodegenError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from cursched.codegen.c.expressions import (
    Buffer,
    ExprGen,
    Root,
    fits_int,
    has_window_hook,
    mul,
    paren,
    row_major,
)
from cursched.codegen.c.helpers import Helpers
from cursched.codegen.c.naming import Namer
from cursched.errors import CodegenError
from cursched.ir.memory import DRAM, DRAM_KEPT, Memory
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Call,
    Const,
    Expr,
    FnArg,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.types import F16, ControlType, DataType, TensorType

#: Largest constant-size DRAM allocation (bytes) placed on the stack.
STACK_LIMIT = 4096
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
IND = "    "


@dataclass(frozen=True, slots=True)
class CParam:
    """The C parameters of one proc argument: its own name, then strides for a window."""

    arg: FnArg
    names: tuple[str, ...]
    decl: str


def _opaque(mem: type[Memory] | None) -> str | None:
    return None if mem is None or mem.addressable else mem.name()


def c_params(p: ProcDef, names: Namer, aliased: frozenset[int] = frozenset()) -> tuple[CParam, ...]:
    """Bind every argument of ``p`` in ``names`` and return the C parameters (the ABI).

    ``aliased`` holds the positions of tensor parameters that some call of the unit may pass
    overlapping memory (``cursched.analysis.aliasing``): they are plain pointers, every
    other tensor pointer is ``restrict``.
    """
    for a in p.args:
        if a.mem is not None and a.mem.target != "c":
            raise CodegenError(
                f"{p.name}: argument '{a.sym}' is in {a.mem.name()}, not a memory of the C target"
            )
    for a in p.args:
        if a.mem is not None and has_window_hook(a.mem) and isinstance(a.type, TensorType):
            raise CodegenError(
                f"{p.name}: argument '{a.sym}' is in {a.mem.name()}, whose buffers are not"
                " pointers (its c_window hook): only instructions, expanded in place, take"
                " them"
            )
    for a in p.args:
        names.bind(a.sym)
    out: list[CParam] = []
    for k, a in enumerate(p.args):
        n = names.name(a.sym)
        t = a.type
        match t:
            case ControlType():
                ct = "bool" if t.name == "bool" else "int_fast64_t"
                out.append(CParam(a, (n,), f"{ct} {n}"))
            case DataType():
                out.append(CParam(a, (n,), f"{t.c_name} *{n}"))
            case TensorType():
                qual = "" if k in aliased else "restrict "
                decls = [f"{t.elem.c_name} *{qual}{n}"]
                strides: list[str] = []
                if t.window:
                    for k in range(t.rank()):
                        s = names.fresh(f"{n}_stride_{k}")
                        strides.append(s)
                        decls.append(f"int_fast64_t {s}")
                out.append(CParam(a, (n, *strides), ", ".join(decls)))
            case _:
                assert_never(t)
    return tuple(out)


def signature(cname: str, params: tuple[CParam, ...]) -> str:
    return f"void {cname}({', '.join(p.decl for p in params) or 'void'})"


class FunctionGen:
    """Prints one proc's C function. ``callee_name`` gives the C name of a called proc."""

    def __init__(
        self,
        p: ProcDef,
        cname: str,
        taken: set[str],
        helpers: Helpers,
        callee_name: Callable[[ProcDef], str],
        aliased: frozenset[int] = frozenset(),
    ) -> None:
        self.p = p
        self.cname = cname
        self.names = Namer(taken)
        self.ex = ExprGen(self.names, helpers)
        self.callee_name = callee_name
        self.params = c_params(p, self.names, aliased)
        self.par_depth = 0  # inside a par loop: nested par loops run sequentially
        # The blocks being printed, innermost last: the buffers each has allocated so far
        # (their ``free`` text) and whether it is a loop body (see ``_alloc_failed``).
        self.open_blocks: list[tuple[list[str], bool]] = []
        for cp in self.params:
            self._bind_arg(cp)

    def _bind_arg(self, cp: CParam) -> None:
        a, n = cp.arg, cp.names[0]
        t = a.type
        match t:
            case ControlType():
                if t.name == "size":
                    self.ex.nonneg.add(a.sym)
            case DataType():
                self.ex.bufs[a.sym] = Buffer(t, n, (), f"*{n}", _opaque(a.mem))
            case TensorType():
                if t.window:
                    strides = cp.names[1:]
                else:
                    strides = row_major(tuple(self.ex.ctrl(s) for s in t.shape))
                self.ex.bufs[a.sym] = Buffer(t.elem, n, strides, memory=_opaque(a.mem))
            case _:
                assert_never(t)

    def text(self) -> str:
        lines = [signature(self.cname, self.params) + " {"]
        for pred in self.p.preds:
            lines.append(f"{IND}if (!({self.ex.ctrl(pred)})) __builtin_unreachable();")
        if self.p.instr is not None:
            own = tuple(Read(a.sym, (), a.type) for a in self.p.args)
            lines += self._instr(Call(self.p, own), IND)
        else:
            lines += self.block(self.p.body, IND)
        lines.append("}")
        return "\n".join(lines)

    # -- statements ------------------------------------------------------------------------
    def block(
        self,
        body: tuple[Stmt, ...],
        ind: str,
        pre: Callable[[], None] | None = None,
        loop_body: bool = False,
    ) -> list[str]:
        self.names.push()
        if pre is not None:
            pre()
        frees: list[str] = []
        self.open_blocks.append((frees, loop_body))
        lines: list[str] = []
        for s in body:
            lines += self.stmt(s, ind, frees)
        for f in reversed(frees):
            lines += _indent(f, ind)
        self.open_blocks.pop()
        self.names.pop()
        return lines

    def stmt(self, s: Stmt, ind: str, frees: list[str]) -> list[str]:
        ex = self.ex
        match s:
            case Assign() | Reduce():
                return [ind + self._update(s)]
            case Pass():
                return [ind + "/* pass */"]
            case If():
                out = [f"{ind}if ({ex.ctrl(s.cond)}) {{"]
                out += self.block(s.body, ind + IND)
                if s.orelse:
                    out.append(f"{ind}}} else {{")
                    out += self.block(s.orelse, ind + IND)
                return [*out, ind + "}"]
            case For():
                return self._for(s, ind)
            case Alloc():
                return self._alloc(s, ind, frees)
            case Call():
                return self._call(s, ind)
            case WindowStmt():
                b = ex.window(s.rhs)
                name = self.names.bind(s.sym)
                if b.hooked:
                    # views of this memory are not pointers: the alias is resolved where an
                    # instruction takes it (ExprGen.view)
                    ex.bufs[s.sym] = b
                    return [f"{ind}/* {name}: a view of {b.root.name if b.root else '?'} */"]
                ex.bufs[s.sym] = Buffer(b.elem, name, b.strides, memory=b.memory, root=b.root)
                return [f"{ind}{b.elem.c_name} *{name} = {b.base};"]
            case Scope():
                return [
                    f"{ind}/* scope {s.name} */",
                    ind + "{",
                    *self.block(s.body, ind + IND),
                    ind + "}",
                ]
            case _:
                assert_never(s)

    def _update(self, s: Assign | Reduce) -> str:
        b = self.ex.buf(s.sym)
        t = b.elem
        lhs = self.ex.access(s.sym, s.idx)
        rhs = self.ex.data(s.rhs, t)
        if isinstance(s, Assign):
            return f"{lhs} = {strip(rhs)};"
        if t == F16:
            return f"{lhs} = (_Float16)((float){paren(lhs)} + (float){paren(rhs)});"
        if t.is_float() or fits_int(t, "+"):
            # narrow integers: ``+=`` adds in int (no overflow) and wraps on the way back
            return f"{lhs} += {strip(rhs)};"
        return f"{lhs} = ({t.c_name})((uint32_t){paren(lhs)} + (uint32_t){paren(rhs)});"

    def _for(self, s: For, ind: str) -> list[str]:
        lo, hi = self.ex.ctrl(s.lo), self.ex.ctrl(s.hi)
        head: list[str] = []
        parallel = s.mode == "par" and self.par_depth == 0

        def bind_iter() -> None:
            i = self.names.bind(s.iter)
            if self.ex.is_nonneg(s.lo):
                self.ex.nonneg.add(s.iter)
            if parallel:
                head.append(f"{ind}#pragma omp parallel for")
            head.append(f"{ind}for (int_fast64_t {i} = {lo}; {i} < {hi}; {i}++) {{")

        # One parallel region per outermost par loop: nested ones would each start a team
        # of one thread (OpenMP disables nested parallelism by default) for nothing.
        self.par_depth += s.mode == "par"
        body = self.block(s.body, ind + IND, pre=bind_iter, loop_body=True)
        self.par_depth -= s.mode == "par"
        return [*head, *body, ind + "}"]

    def _alloc(self, s: Alloc, ind: str, frees: list[str]) -> list[str]:
        mem: type[Memory] = s.mem
        if mem.target != "c":
            raise CodegenError(f"allocation of '{s.sym}' in {mem.name()}: not a C memory")
        name = self.names.bind(s.sym)
        t = s.type
        if isinstance(t, DataType):
            self.ex.bufs[s.sym] = Buffer(t, f"&{name}", (), name, _opaque(mem))
            return _indent(mem.c_alloc(name, t.c_name, ()), ind)
        shape = tuple(self.ex.ctrl(e) for e in t.shape)
        ct = t.elem.c_name
        root = Root(mem, name, ct, shape, ("0",) * len(shape), tuple(range(len(shape))))
        hooked = has_window_hook(mem)
        self.ex.bufs[s.sym] = Buffer(
            t.elem, name, row_major(shape), None, _opaque(mem), root, hooked
        )
        nbytes = _const_bytes(t)
        if mem is DRAM and nbytes is not None and nbytes <= STACK_LIMIT:
            count = shape[0]
            for d in shape[1:]:
                count = mul(count, d)
            return [f"{ind}{ct} {name}[{count}];"]
        if mem is not DRAM_KEPT and not _uses_malloc(mem):
            frees.append(mem.c_free(name, ct, shape))
            return _indent(mem.c_alloc(name, ct, shape), ind)
        # The default heap allocation, checked: see ``_alloc_failed``.
        self.ex.helpers.need("cs_alloc")
        nbytes_c = f"sizeof({ct})"
        for d in shape:
            nbytes_c = f"cs_mul_sz({nbytes_c}, {strip(d)})"
        if mem is DRAM_KEPT:  # the site's block of this thread, never freed (its docstring)
            self.ex.helpers.need("cs_keep")
            kept = f"cs_kept_{name}"
            out = [
                f"{ind}static _Thread_local cs_keep_site {kept};",
                f"{ind}{ct} *restrict {name} = ({ct} *)cs_keep(&{kept}, {nbytes_c});",
            ]
        else:
            out = [f"{ind}{ct} *{name} = ({ct} *)cs_malloc({nbytes_c});"]
        out += [f"{ind}if ({name} == NULL) {{", *self._alloc_failed(ind + IND), f"{ind}}}"]
        if mem is not DRAM_KEPT:  # after the failure path, which must not free it
            frees.append(mem.c_free(name, ct, shape))
        return out

    def _alloc_failed(self, ind: str) -> list[str]:
        """What follows a failed heap allocation (``cs_malloc`` has counted it).

        The rest of the innermost enclosing loop body of this function is skipped
        (``continue``), or the rest of the function when there is none (``return``), after
        freeing what the skipped blocks allocated so far. Control flow and indices never
        depend on data, so running on with some outputs unwritten stays in bounds; the entry
        shim sees the count change and the Python wrapper raises ``AllocationError``.
        """
        out: list[str] = []
        for frees, loop_body in reversed(self.open_blocks):
            for f in reversed(frees):
                out += _indent(f, ind)
            if loop_body:
                return [*out, ind + "continue;"]
        return [*out, ind + "return;"]

    # -- calls -----------------------------------------------------------------------------
    def _buffer_arg(self, e: Expr) -> Buffer:
        if isinstance(e, WindowExpr):
            return self.ex.window(e)
        if isinstance(e, Read) and not e.idx:
            return self.ex.buf(e.sym)
        raise CodegenError(f"tensor parameter given {type(e).__name__}")

    def _scalar_address(self, e: Expr) -> tuple[str, str]:
        """Address and lvalue of a data scalar argument (a scalar or one tensor element)."""
        if isinstance(e, Read):
            return self.ex.address(e.sym, e.idx), self.ex.access(e.sym, e.idx)
        raise CodegenError(f"data scalar parameter given {type(e).__name__}")

    def _call(self, s: Call, ind: str) -> list[str]:
        callee = s.proc
        if len(callee.args) != len(s.args):
            raise CodegenError(f"call of {callee.name} with {len(s.args)} arguments")
        if callee.instr is not None:
            return self._instr(s, ind)
        cargs: list[str] = []
        for prm, arg in zip(callee.args, s.args, strict=True):
            t = prm.type
            match t:
                case ControlType():
                    cargs.append(strip(self.ex.ctrl(arg)))
                case DataType():
                    cargs.append(self._scalar_address(arg)[0])
                case TensorType():
                    b = self._buffer_arg(arg)
                    if b.hooked:
                        raise CodegenError(
                            f"call of {callee.name}: argument {prm.sym.name} is a view of"
                            f" {b.root.mem.name() if b.root else 'a register'}, which only"
                            " instructions can take (inline the callee)"
                        )
                    cargs.append(b.base)
                    if t.window:
                        cargs += b.strides
                case _:
                    assert_never(t)
        return [f"{ind}{self.callee_name(callee)}({', '.join(cargs)});"]

    def _instr(self, s: Call, ind: str) -> list[str]:
        callee = s.proc
        assert callee.instr is not None
        subst: dict[str, str] = {}
        for prm, arg in zip(callee.args, s.args, strict=True):
            n = prm.sym.name
            t = prm.type
            match t:
                case ControlType():
                    subst[n] = self.ex.ctrl(arg)
                case DataType():
                    subst[f"{n}_data"], subst[n] = self._scalar_address(arg)
                case TensorType():
                    b = self._buffer_arg(arg)
                    subst[n] = subst[f"{n}_data"] = self.ex.view(b)
                    for k, st in enumerate(b.strides):
                        subst[f"{n}_stride_{k}"] = st
                case _:
                    assert_never(t)

        def repl(m: re.Match[str]) -> str:
            key = m.group(1)
            if key not in subst:
                raise CodegenError(
                    f"instruction {callee.name}: unknown placeholder {{{key}}} in its C template"
                    f" (known: {', '.join(sorted(subst))})"
                )
            # Parenthesised so that ``*{x_data}`` or ``{n} * 4`` keep their meaning.
            return paren(subst[key])

        return _indent(_PLACEHOLDER.sub(repl, callee.instr.c_template), ind)


def strip(s: str) -> str:
    """``s`` without one pair of parentheses enclosing all of it."""
    if s.startswith("(") and s.endswith(")"):
        depth = 0
        for k, ch in enumerate(s):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and k != len(s) - 1:
                return s
        return s[1:-1]
    return s


def _uses_malloc(mem: type[Memory]) -> bool:
    """Whether ``mem`` allocates with ``Memory``'s own ``malloc`` (its ``c_alloc`` hook is not
    overridden): those allocations get the checked ``cs_malloc`` instead."""
    return getattr(mem.c_alloc, "__func__", None) is getattr(Memory.c_alloc, "__func__", None)


def _const_bytes(t: TensorType) -> int | None:
    n = t.elem.np_dtype.itemsize
    for e in t.shape:
        if not isinstance(e, Const) or isinstance(e.value, bool) or not isinstance(e.value, int):
            return None
        n *= e.value
    return n


def _indent(text: str, ind: str) -> list[str]:
    return [ind + line for line in text.splitlines() if line.strip()]
