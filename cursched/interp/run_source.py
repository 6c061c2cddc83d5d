"""The reference interpreter's ``_run``: the source of the function that binds and checks
the common case of a top-level call's arguments and runs the proc's body specialised to it.

``RunCompiler`` is the part of ``cursched.interp.compile.Compiler`` that writes ``_run``
(see ``CompiledProc.run``): the header binding the arguments by position or by name, one
check per argument (type, dtype, ownership, shape, layout, writeability; any that fails
returns False and ``interpret`` takes the general binding, which names the problem), each
array's flat data (a memoryview of its memory when written, a list of its elements when
only read), the asserts, and the body compiled for those buffers. ``read_rounder_directly``
is a peephole pass over the body's lines. The statements themselves are ``Compiler``'s.
"""

from __future__ import annotations

import builtins
import re
from abc import abstractmethod
from collections import Counter
from typing import assert_never

import numpy as np

from cursched.interp import nest_analysis as na
from cursched.interp.exprs import Buf, reset_config_state
from cursched.interp.loops import LoopCompiler
from cursched.interp.values import quiet_numpy, restore_numpy
from cursched.ir.nodes import FnArg, ProcDef, Stmt
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["MEMORYVIEW_FORMATS", "RunCompiler", "read_rounder_directly"]

#: Arrays of at most this many elements that a run only reads are copied into a list (see
#: ``RunCompiler._fast_run``); bigger ones, of which the proc may read a little, are not.
_LIST_MAX = 1 << 16

#: The value of a parameter of ``_run`` not given.
_MISSING = object()

#: Element types (``dtype.char``) a memoryview can index: the generated code reads and
#: writes such arrays in place; others (f16) go through a list copied back after the run.
MEMORYVIEW_FORMATS = frozenset("fdbBhHiIlLqQ")


class RunCompiler(LoopCompiler):
    """Writes ``_run``; the statements of its body through ``block`` (``Compiler``)."""

    def __init__(self, pd: ProcDef) -> None:
        super().__init__(pd)
        #: lists that are f32 memoryviews: a store into one rounds (``_fast_buf``)
        self.direct: set[str] = set()

    @abstractmethod
    def block(self, body: tuple[Stmt, ...]) -> None:
        """Emit the statements of ``body`` in order (``Compiler.block``)."""

    @abstractmethod
    def _pred_checks(self, where: str) -> list[str]:
        """The lines checking the proc's asserts (``Compiler._pred_checks``)."""

    def _fast_run(self, written: frozenset[int]) -> list[str]:
        """Source of ``_run`` (see ``CompiledProc.run``): the arguments' common case (plain
        ints and bools, C-contiguous arrays that own their memory, of the exact dtype and
        shape, all given by position or all by name) bound, checked and run in one call,
        the body inlined and specialised to that case.

        Arrays the proc writes are passed to the body as flat memoryviews of their own
        memory (reads give the element as a Python number, stores of the exact values the
        code computes write it through; an f32 memoryview rounds what it stores, so a store
        into one needs no rounding of its own); arrays it only reads as lists of their
        elements (a list is read several times faster than a memoryview, and an array that
        owns its memory cannot change while the run does not write it), unless big; f16,
        which memoryview cannot index, goes through a list written back at the end, as the
        general binding does. Distinct arrays that own their memory cannot overlap, so the
        body's tests that two lists are not one are decided when compiling."""
        pd = self.pd
        self.fast = True
        names = [self.name(a.sym) for a in pd.args]
        self.ns.update(_MISS=_MISSING, _nd=np.ndarray, _mv=memoryview)
        out = self._run_binding(names, [a.sym.name for a in pd.args])
        self._plan_dot_lists(written)
        arrays: list[tuple[str, bool]] = []
        back: list[str] = []
        for i, (a, n) in enumerate(zip(pd.args, names, strict=True)):
            out += self._run_check(a, n, i in written, back)
            self._fast_buf(a, n, i in written)
            if not isinstance(a.type, ControlType):
                arrays.append((n, i in written))
        # distinct arrays that own their memory cannot overlap; the same one twice shares
        # (one array passed for two parameters the run only reads is two equal lists, or
        # read in place twice: the same reads)
        same = [
            f"{p} is {q}"
            for x, (p, wp) in enumerate(arrays)
            for q, wq in arrays[x + 1 :]
            if wp or wq
        ]
        if same:
            out.append(f"    if {' or '.join(same)}: return False")
        return out + self._run_body(back)

    def _fast_buf(self, a: FnArg, n: str, written: bool) -> None:
        """The buffer of argument ``a`` (local ``n``) in ``_run``'s body: offset 0, unit
        innermost stride; an f32 memoryview written in place is stored into directly."""
        t = a.type
        match t:
            case ControlType():
                return
            case DataType():
                self.bufs[a.sym] = Buf(f"{n}_d", "0", (), (), t)
                elem = t
            case TensorType():
                r = t.rank()
                strides = tuple(f"{n}_s{k}" for k in range(r - 1)) + (("1",) if r else ())
                self.fast_strides.update(strides[:-1])
                self.bufs[a.sym] = Buf(f"{n}_d", "0", strides, self._fast_dims(t, n), t.elem)
                elem = t.elem
            case _:
                assert_never(t)
        if written and elem.np_dtype.char == "f":
            self.direct.add(f"{n}_d")

    def _fast_dims(self, t: TensorType, n: str) -> tuple[str, ...]:
        """The sizes of tensor argument ``t`` (local ``n``) in ``_run``'s body: ``_run``
        checked that they are the declared shape, so a literal or a size argument of the
        shape stands for its size (bounds checks against a literal are decided when
        compiling); a compound one is the local ``{n}_n{k}``."""
        dims = []
        for k, e in enumerate(t.shape):
            text = self.ctrl(e)
            dims.append(text if na.is_name(text) else f"{n}_n{k}")
        return tuple(dims)

    @staticmethod
    def _run_binding(names: list[str], given: list[str]) -> list[str]:
        """``_run``'s header: the arguments bound by Python itself (by position or by name;
        a missing one is ``_MISS``, which fails its type test), else False."""
        plain = all(not g.startswith("_") and not hasattr(builtins, g) for g in given)
        if given and plain and len(set(given)) == len(given):
            # (a name given twice, an unknown one or too many arguments raise TypeError
            # at the call: ``interpret`` then leaves it to the general binding, which
            # names the argument)
            params = ", ".join(f"{g}=_MISS" for g in given)
            return [f"def _run({params}):", f"    {', '.join(names)}, = {', '.join(given)},"]
        head = "def _run(*_a, **_kw):"
        if given:
            return [
                head,
                f"    if _kw or len(_a) != {len(given)}: return False",
                f"    {', '.join(names)}, = _a",
            ]
        return [head, "    if _a or _kw: return False"]

    def _run_check(self, a: FnArg, n: str, written: bool, back: list[str]) -> list[str]:
        """``_run``'s check of argument ``a`` (local ``n``) and, for an array, its flat data
        ``{n}_d`` and sizes ``{n}_n{k}``; an f16 array written goes into ``back``."""
        t = a.type
        match t:
            case ControlType():
                if t.name == "bool":
                    return [f"    if type({n}) is not bool: return False"]
                if t.name == "size":
                    return [f"    if type({n}) is not int or {n} <= 0: return False"]
                return [f"    if type({n}) is not int: return False"]
            case DataType():
                dt, shape_bad, rank = t.np_dtype, f"{n}.ndim > 1 or {n}.size != 1", 0
            case TensorType():
                dt, rank = t.elem.np_dtype, t.rank()
                shape_bad = f"_s != ({', '.join(self.ctrl(e) for e in t.shape)},)"
            case _:
                assert_never(t)
        dname = self.const(dt, "dt")
        out = [
            f"    if type({n}) is not _nd or {n}.dtype is not {dname} or {n}.base is not None:"
            " return False"
        ]
        dims = self._fast_dims(t, n) if isinstance(t, TensorType) else ()
        if any(d == f"{n}_n{k}" for k, d in enumerate(dims)):
            # a compound size is the local ``{n}_n{k}`` (``_fast_dims``); a literal or a
            # size argument stands for itself, checked by the comparison
            out.append(f"    _s = {n}.shape")
            out.append(f"    if {shape_bad}: return False")
            out.append(f"    {', '.join(f'{n}_n{k}' for k in range(rank))}, = _s")
        elif rank:
            out.append(f"    if {n}.shape {shape_bad.removeprefix('_s ')}: return False")
        else:
            out.append(f"    if {shape_bad}: return False")
        if dt.char not in MEMORYVIEW_FORMATS:
            # memoryview cannot index it (f16): a list, written back after the run
            out.append(f"    if not (_fl := {n}.flags).c_contiguous: return False")
            if written:
                out.append("    if not _fl.writeable: return False")
                back.append(n)
            return [*out, f"    {n}_f = {n}.reshape(-1)", f"    {n}_d = {n}_f.tolist()"]
        if isinstance(t, DataType) and not written:
            # read only: its value in a list (the array owns its memory: nothing the run
            # writes can change it)
            return [*out, f"    {n}_d = [{n}.item()]"]
        return out + self._run_view(a, n, (rank, dt.char), written, dims)

    def _run_view(
        self, a: FnArg, n: str, kind: tuple[int, str], written: bool, dims: tuple[str, ...]
    ) -> list[str]:
        """``_run``'s flat data ``{n}_d`` of array argument ``a`` (local ``n``, ``kind`` its
        rank and element type's ``dtype.char``, one a memoryview indexes), and its check of
        the layout and, written, of writeability.

        An array of rank 2 or more is flattened by ``ravel``, which returns a view of it (a
        new array whose base is it) exactly when it is C-contiguous (it owns its memory:
        ``_run_check``), else a copy: one test for both, and a one-dimensional memoryview
        of the view needs no casts (an empty one is never indexed)."""
        rank, char = kind
        out: list[str] = []
        src = n
        if rank >= 2:
            src = f"{n}_r"
            out += [f"    {src} = {n}.ravel()", f"    if {src}.base is not {n}: return False"]
        if not written:
            # read only: a list of its elements (the same Python numbers a memoryview's
            # reads give), which is read faster; a big one, of which the proc may read a
            # little, stays a memoryview
            # (its size from the shape's ints: numpy's .size costs as much as a check)
            size = " * ".join(dims) or "1"
            listed, viewed = f"{n}_d = {src}.tolist()", f"{n}_d = _mv({src})"
            known = na.literal_value(size)
            if known is None:
                made = [f"if {size} <= {_LIST_MAX}: {listed}", f"else: {viewed}"]
            else:  # a shape of literals: decided here
                made = [listed if known <= _LIST_MAX else viewed]
            if rank < 2:
                out.append(f"    if not {n}.flags.c_contiguous: return False")
            if a.sym in self.deferred:
                # read only by dot-product nests, which numpy may run on the array itself:
                # made where their loops run, if they do (``LoopCompiler.dot_lists``)
                self.deferred[a.sym] = [f"if {n}_d is None:", *(f"    {m}" for m in made)]
                return [*out, f"    {n}_d = None"]
            return [*out, *(f"    {m}" for m in made)]
        # (a memoryview of a 0-d array, a data scalar's (), cannot be indexed: cast, unless
        # empty, which is never indexed and cannot be cast)
        flat = "_m" if rank else f"_m.cast('B').cast({char!r}) if _m.nbytes else []"
        bad = "not _m.c_contiguous or _m.readonly"
        return [*out, f"    _m = _mv({src})", f"    if {bad}: return False", f"    {n}_d = {flat}"]

    def _run_body(self, back: list[str]) -> list[str]:
        """``_run``'s end: strides, the asserts, the configuration reset, the body (the
        statements compiled for ``_run``'s buffers), the write-back of f16 lists and numpy's
        error state restored."""
        out: list[str] = []
        for a in self.pd.args:
            t = a.type
            if isinstance(t, TensorType):
                # named, since the asserts and the body may read them (stride(x, 0))
                b = self.bufs[a.sym]
                for k in range(t.rank() - 2, -1, -1):
                    out.append(f"    {b.strides[k]} = {b.dims[k + 1]} * {b.strides[k + 1]}")
        out += self._pred_checks("on entry to")
        cleanup = [f"{n}_f[:] = {n}_d" for n in back]
        self.lines, self.depth = [], 2
        self.block(self.pd.body)
        body = read_rounder_directly(self.lines)
        if any("_R[0]" in ln for ln in body):
            out.append("    _R = _rounder()")
        out += [f"    {c}" for c in self.cells()]
        if self.uses_config:
            self.ns["_reset_config"] = reset_config_state
            out.append("    _reset_config()")
        if self.uses_numpy:
            # numpy externs report overflow and NaN as floating-point errors, which tests
            # running with -W error would turn into exceptions; they are the defined
            # semantics here, so they are silenced for the run, and only there
            self.ns.update(_quiet=quiet_numpy, _loud=restore_numpy)
            out.append("    _tok = _quiet()")
            cleanup.append("_loud(_tok)")
        if cleanup:
            # what the run wrote goes back also when it stops with an error
            out += ["    try:", *body, "        pass", "    finally:"]
            out += [f"        {c}" for c in cleanup]
        else:
            out += ["    if True:", *body, "        pass"]
        out.append("    return True")
        return out


_TEMP_FROM_ROUNDER = re.compile(r"(\s*)(_t\d+) = _R\[0\]")
_CALL = re.compile(r"\w\s*\(")
#: A store's target: a name or an element (no keyword: ``else: x = y`` has a colon)
_TARGET = re.compile(r"[\w\[\]+\-* ]+")


def read_rounder_directly(lines: list[str]) -> list[str]:
    """``lines`` with each temporary loaded from the rounder (``_t = _R[0]``) whose one use
    is in the next line read there from the rounder itself: ``_R[0] = _t + x`` becomes
    ``_R[0] = _R[0] + x`` (one store and load of a local fewer, a tenth of such a line).

    Taken only where nothing can write the rounder in between: the next line, at the same
    depth, is an assignment whose right-hand side calls nothing (a call could round through
    it), and each definition of the temporary (a copy of a loop repeats its lines) is
    followed by its one use, so the temporary occurs nowhere else."""
    uses = Counter(name for ln in lines for name in re.findall(r"\b_t\d+\b", ln))
    copies = Counter(ln for ln in lines if "= _R[0]" in ln)
    out: list[str] = []
    k = 0
    while k < len(lines):
        m = _TEMP_FROM_ROUNDER.fullmatch(lines[k])
        if (
            m is not None
            and k + 1 < len(lines)
            and uses[m[2]] == 2 * copies[lines[k]]
            and _inlinable(m[1], m[2], lines[k + 1])
        ):
            out.append(re.sub(rf"\b{m[2]}\b", "_R[0]", lines[k + 1]))
            k += 2
            continue
        out.append(lines[k])
        k += 1
    return out


def _inlinable(indent: str, name: str, nxt: str) -> bool:
    """Whether ``name``, loaded from the rounder on the line before, can be read from it in
    ``nxt`` instead (``read_rounder_directly``)."""
    if not nxt.startswith(indent) or nxt[len(indent) : len(indent) + 1].isspace():
        return False
    target, eq, rhs = nxt[len(indent) :].partition(" = ")
    if not eq or name in target or not _TARGET.fullmatch(target) or _CALL.search(rhs):
        return False
    return len(re.findall(rf"\b{name}\b", rhs)) == 1
