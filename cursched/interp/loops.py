"""The loops of the reference interpreter's compiled source: versioning and fast paths.

``LoopCompiler`` is the part of ``cursched.interp.compile.Compiler`` that emits ``for``
loops (the module docstring of ``compile`` describes the versioning): a loop nest whose
accesses are affine in its loop variables is checked at the corners of the box of its ranges
on entry and runs unchecked when in bounds, an innermost loop the same way on its own; the
unchecked copies walk their offsets (``w + i * dw``), hold an element written at one place in
a local, run integer dot products in C (``sum(map(mul, ...))``) and unroll short loops known
when compiling; in ``_run``'s body a dot-product nest proved in bounds runs by numpy when big
enough (``cursched.interp.dot_nest``). The statements inside loops are emitted by
``Compiler.block``.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from cursched.interp import dot_nest as dn
from cursched.interp import nest_analysis as na
from cursched.interp.exprs import ExprCompiler, Hoisted, fits, wrap_text
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Expr,
    For,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import stmt_blocks, stmt_exprs, walk_expr, walk_stmts
from cursched.ir.types import ControlType, DataType, TensorType

__all__ = ["LoopCompiler"]

#: Loops of at most this many iterations are not versioned (see ``compile``'s docstring).
_SHORT = 3

#: Innermost loops of at most this many iterations, known when compiling, are unrolled in
#: ``_run``'s body (``LoopCompiler._emit_unrolled``).
_UNROLL = 4


class LoopCompiler(ExprCompiler, ABC):
    """Emits loops; the statements of their bodies through ``block`` (``Compiler``)."""

    def __init__(self, pd: ProcDef) -> None:
        super().__init__(pd)
        #: emitting the copy of a loop nest whose checks were moved to its entry
        self.in_nest = False
        #: emitting the checked copy of a versioned nest
        self.checked_copy = False
        #: integer accumulators held unwrapped through a loop (wrapped when stored), by type
        self.unwrapped: dict[str, np.dtype[Any]] = {}
        #: compiling ``_run``'s body (``RunCompiler._fast_run``): its arrays are distinct objects
        self.fast = False
        #: the walked offsets of an innermost loop's accesses, by node: (w, dw), the offset
        #: at loop value v being ``w + v * dw``
        self.walk_of: dict[int, tuple[str, str]] = {}
        #: the strides of ``_run``'s arrays but the innermost (products of sizes: positive
        #: where an access in bounds ran)
        self.fast_strides: set[str] = set()
        #: emitting the loops a dot-product nest falls back to (``_emit_dot``)
        self.in_dot_fallback = False
        #: ``_run``'s read-only arrays read only in dot-product nests: the lines making
        #: their lists (``RunCompiler._run_check``), emitted where the nests' loops run
        self.deferred: dict[Sym, list[str]] = {}
        #: the deferred arrays each dot-product nest reads, by the nest's ``For`` (identity)
        self.dot_lists: dict[int, list[Sym]] = {}
        #: the size arguments' names (in ``_run``'s body they are known positive)
        self.positive = frozenset(
            self.name(a.sym)
            for a in pd.args
            if isinstance(a.type, ControlType) and a.type.name == "size"
        )

    @abstractmethod
    def block(self, body: tuple[Stmt, ...]) -> None:
        """Emit the statements of ``body`` in order (``Compiler.block``)."""

    def nested(self, body: tuple[Stmt, ...]) -> None:
        """Emit ``body`` one level deeper."""
        self.depth += 1
        self.block(body)
        self.depth -= 1

    # -- loops ---------------------------------------------------------------------------
    def _stmt_for(self, s: For) -> None:
        """A loop; a nest whose accesses are affine in its loop variables is versioned on
        entry (see ``_nest_conditions``), an innermost loop on its own (``_emit_for``)."""
        plan = None if self.in_nest or na.innermost(s.body) else self._nest_conditions(s)
        if plan is None:
            self._emit_for(s)
            return
        conds, ids = plan
        if conds == ["True"]:
            # in bounds whatever the arguments: only the unchecked copy
            self.in_nest, saved = True, self.unchecked
            self.unchecked = saved | ids
            self._emit_for(s)
            self.unchecked = saved
            self.in_nest = False
            return
        self.line(f"if {' and '.join(conds)}:")
        self.in_nest, saved = True, self.unchecked
        self.unchecked = saved | ids
        self.depth += 1
        self._emit_for(s)
        self.depth -= 1
        self.unchecked = saved
        self.line("else:")
        # the checked copy: nothing in it is versioned again (the copies would double with
        # each level, and compiling the source is most of what a proc run once costs)
        self.depth += 1
        self.checked_copy = True
        self._emit_for(s)
        self.checked_copy = False
        self.depth -= 1
        self.in_nest = False

    def _nest_conditions(self, s: For) -> tuple[list[str], frozenset[int]] | None:
        """The bounds checks of loop nest ``s``, moved to its entry: conditions that hold iff
        every access of the nest into a buffer defined outside it, with indices affine in the
        nest's loop variables, is in bounds over the whole box of the loop ranges (an affine
        index takes its extremes at the box's corners), and those accesses; None when the
        inner loops' ranges depend on the nest or no access qualifies.

        An empty range makes the box meaningless, but then the accesses inside that loop
        never run, and the others are checked over the loops enclosing them; when the
        conditions fail, the checked copy runs and raises at the very access that fails.
        """
        loops = [s, *(st for st in walk_stmts(s.body) if isinstance(st, For))]
        nest = frozenset(lp.iter for lp in loops)
        defined = {st.sym for st in walk_stmts(s.body) if isinstance(st, Alloc | WindowStmt)}
        inside = defined | nest
        for lp in loops:
            for e in (lp.lo, lp.hi):
                if not na.affine_in(e, frozenset(), inside) or not na.invariant(e, inside):
                    return None
        ranges = {lp.iter: (self.ctrl(lp.lo), f"({self.ctrl(lp.hi)} - 1)") for lp in loops}
        conds: dict[str, None] = {}
        ids: set[int] = set()
        for node, sym, idx in self._accesses((s,)):
            b = self.bufs.get(sym)
            if sym in inside or b is None or b.local:
                continue
            if not all(na.affine_in(e, nest, defined) for e in idx):
                continue
            ids.add(id(node))
            for e, n in zip(idx, b.dims, strict=True):
                low, high = na.corners(e, ranges)
                for sub in low:
                    t = self.ctrl(e, sub)
                    if not (na.is_int_literal(t) and int(t) >= 0):
                        conds[f"0 <= {t}"] = None
                for sub in high:
                    conds[f"{self.ctrl(e, sub)} < {n}"] = None
        if not ids or any(na.holds(c) is False for c in conds):
            return None
        return [c for c in conds if not self._true(c)] or ["True"], frozenset(ids)

    def _true(self, cond: str) -> bool:
        """Condition ``cond`` holds whatever the arguments: it is literal, or (in ``_run``'s
        body, where sizes were checked positive) proved from the sizes being positive."""
        if na.holds(cond):
            return True
        return self.fast and na.proved(cond, self.positive)

    def _emit_for(self, s: For) -> None:
        if self.fast and not self.checked_copy and not self.in_dot_fallback:
            plan = dn.dot_nest(s, self._numpy_arrays())
            if plan is not None and all(n in self.unchecked for n in plan.nodes):
                self._emit_dot(s, plan)
                return
        for sym in self.dot_lists.get(id(s), ()):
            # the loops read the list of an array only dot-product nests read (once made,
            # it stays: the array is read only)
            for text in self.deferred[sym]:
                self.line(text)
        # lo and hi are evaluated once, on entry; par loops run like seq loops
        lo, hi = self.ctrl(s.lo), self.ctrl(s.hi)
        if not na.is_name(lo):
            t = self.tmp("lo")
            self.line(f"{t} = {lo}")
            lo = t
        if not na.is_name(hi):
            t = self.tmp("hi")
            self.line(f"{t} = {hi}")
            hi = t
        v = self.name(s.iter)
        head = f"for {v} in range({lo}, {hi}):"
        short = na.is_int_literal(lo) and na.is_int_literal(hi) and int(hi) - int(lo) <= _SHORT
        hoist = self._hoistable(s) if na.innermost(s.body) and not self.checked_copy else []
        if short:
            # a short loop does not repay checks on entry, only offsets computed there
            hoist = [h for h in hoist if id(h[0]) in self.unchecked]
        if not hoist:
            self.line(head)
            self.nested(s.body)
            return
        self.inner_var = s.iter
        conds, bases, walks, hoisted = self._plan_offsets(s, hoist, lo, hi)
        scalars, distinct = self._scalar_replace(s, hoisted, set(bases.values()))
        # a short loop does not repay the checks on entry: it runs checked
        if any(na.holds(c) is False for c in conds):
            # an access fails at an end of the loop whatever the arguments: only checked
            self.inner_var = None
            self.line(head)
            self.nested(s.body)
            return
        conds = {c: None for c in conds if not self._true(c)}
        tests = [f"{hi} - {lo} > {_SHORT}", *conds] if conds else []
        tests += distinct
        if tests:
            self.line(f"if {' and '.join(tests)}:")
            self.depth += 1
        self._emit_unchecked(s, (head, lo, hi), bases, walks, hoisted, scalars)
        if not tests:
            return
        self.depth -= 1
        self.line("else:")
        self.depth += 1
        self.line(head)
        self.nested(s.body)
        self.depth -= 1

    def _plan_dot_lists(self, written: frozenset[int]) -> None:
        """Which of ``_run``'s read-only arrays only dot-product nests read (``deferred``:
        their lists are made only where the nests' loops run) and which each nest reads
        (``dot_lists``): the array is read nowhere outside the nests (walked occurrence by
        occurrence: the IR may share a node between places)."""
        arrays = self._numpy_arrays()
        operands: dict[int, list[Sym]] = {}
        outside: set[Sym] = set()

        def scan(body: tuple[Stmt, ...]) -> None:
            for st in body:
                plan = dn.dot_nest(st, arrays) if isinstance(st, For) else None
                if plan is not None:  # its only data reads are the two operands
                    operands[id(st)] = [plan.lhs[0], plan.rhs[0]]
                    continue
                for root in stmt_exprs(st):
                    outside.update(
                        e.sym for e in walk_expr(root) if isinstance(e, Read | WindowExpr)
                    )
                for _, block in stmt_blocks(st):
                    scan(block)

        scan(self.pd.body)
        read = {x for syms in operands.values() for x in syms}
        for k, a in enumerate(self.pd.args):
            if a.sym in read and a.sym not in outside and k not in written:
                self.deferred[a.sym] = []
        for key, syms in operands.items():
            self.dot_lists[key] = [x for x in dict.fromkeys(syms) if x in self.deferred]

    def _numpy_arrays(self) -> dict[Sym, TensorType]:
        """``_run``'s tensor arguments whose numpy arrays its body works on in place (its
        locals of their names; f16 goes through lists)."""
        return {
            a.sym: a.type
            for a in self.pd.args
            if isinstance(a.type, TensorType) and a.type.elem.np_dtype.char in "fdbBhHiIlLqQ"
        }

    def _emit_dot(self, s: For, plan: dn.DotNest) -> None:
        """Dot-product nest ``s`` (``plan``) by numpy when its ranges are not empty and it
        does enough work (``dn.MIN_WORK``), else as loops; its accesses were proved in
        bounds on entry, so the slices numpy takes are the elements the loops visit."""
        texts = [(self.ctrl(lp.lo), self.ctrl(lp.hi)) for lp in plan.loops]
        if any("_div" in x for r in texts for x in r):
            # a division that may fail: evaluated only where the loops evaluate it
            self._emit_for_loops(s)
            return
        ranges = []
        for lo, hi in texts:  # (pure integer arithmetic: evaluating it early changes nothing)
            pair = []
            for x in (lo, hi):
                if not na.is_name(x):
                    t = self.tmp("r")
                    self.line(f"{t} = {x}")
                    x = t
                pair.append(x)
            ranges.append((pair[0], pair[1]))
        fn = self.const(dn.runner(plan), "dot")
        work = " * ".join(f"({hi} - {lo})" for lo, hi in ranges)
        tests = [f"{lo} < {hi}" for lo, hi in ranges] + [f"{work} >= {dn.MIN_WORK}"]
        operands = [self.name(plan.dst), self.name(plan.lhs[0]), self.name(plan.rhs[0])]
        pairs = ", ".join(f"_slice({lo}, {hi})" for lo, hi in ranges)
        self.ns["_slice"] = slice
        # (it returns False, having written nothing, when the loops must run: a NaN)
        tests.append(f"{fn}({', '.join(operands)}, ({pairs},))")
        self.line(f"if not ({' and '.join(tests)}):")
        self.depth += 1
        self._emit_for_loops(s)
        self.depth -= 1

    def _emit_for_loops(self, s: For) -> None:
        self.in_dot_fallback, saved = True, self.in_dot_fallback
        try:
            self._emit_for(s)
        finally:
            self.in_dot_fallback = saved

    def _plan_offsets(
        self, s: For, hoist: list[tuple[Any, Sym, tuple[Expr, ...]]], lo: str, hi: str
    ) -> tuple[
        dict[str, None], dict[str, str], dict[tuple[str, str], tuple[str, str]], dict[int, Hoisted]
    ]:
        """The checks on entry of innermost loop ``s`` for the accesses ``hoist`` (those its
        nest did not check), and their offsets: invariant ones (``bases``, text -> name) and
        affine ones (``walks``, (start, step) -> (w, dw): ``w + v * dw``), by node."""
        v = self.name(s.iter)
        conds: dict[str, None] = {}
        bases: dict[str, str] = {}
        walks: dict[tuple[str, str], tuple[str, str]] = {}
        hoisted: dict[int, Hoisted] = {}
        first, second = {s.iter: lo}, {s.iter: f"({lo} + 1)"}
        last = {s.iter: f"({hi} - 1)"}
        for node, sym, idx in hoist:
            buf = self.buf(sym)
            start = [] if buf.off == "0" else [buf.off]
            step = []
            checked = id(node) not in self.unchecked  # else the nest checked it on entry
            for e, n, st in zip(idx, buf.dims, buf.strides, strict=True):
                if self.varies(e):
                    a, b = self.ctrl(e, first), self.ctrl(e, last)
                    if checked:
                        conds[f"0 <= {a} < {n}"] = None
                        conds[f"0 <= {b} < {n}"] = None
                    start.append(self._scaled(a, st))
                    c = na.coef(e, s.iter)
                    if c is None:
                        step.append(self._scaled(f"({self.ctrl(e, second)} - {a})", st))
                    elif c:
                        step.append(self._scaled(str(c), st))
                else:
                    if checked:
                        conds[f"0 <= {self.ctrl(e)} < {n}"] = None
                    start.append(self._scaled(self.ctrl(e), st))
            text = " + ".join(t for t in start if t != "0") or "0"
            if step:
                # the offset is affine in the loop variable: w + v * dw, with w and dw
                # computed on entry
                key = (text, " + ".join(step))
                if key not in walks:
                    dw = key[1] if na.is_name(key[1]) else self.tmp("dw")
                    w = "0" if text == "0" and lo == "0" else self.tmp("w")
                    walks[key] = (w, dw)
                w, dw = walks[key]
                moved = self._scaled(v, dw)
                hoisted[id(node)] = Hoisted(moved if w == "0" else f"{w} + {moved}")
                self.walk_of[id(node)] = (w, dw)
                continue
            if text not in bases:
                bases[text] = text if na.is_name(text) else self.tmp("b")
            hoisted[id(node)] = Hoisted(bases[text])
        return conds, bases, walks, hoisted

    def _emit_unchecked(
        self,
        s: For,
        range_: tuple[str, str, str],
        bases: dict[str, str],
        walks: dict[tuple[str, str], tuple[str, str]],
        hoisted: dict[int, Hoisted],
        scalars: list[tuple[str, str, str]],
    ) -> None:
        """The copy of innermost loop ``s`` (``range_``: its ``for`` line, lo and hi) whose
        accesses ``hoisted`` are not checked: their offsets computed on entry, the elements
        ``scalars`` held in locals; an integer dot product is one sum (``_int_dot``)."""
        head, lo, hi = range_
        for text, name in bases.items():
            if name != text:
                self.line(f"{name} = {text}")
        for (a, b), (w, dw) in walks.items():
            if dw != b:
                self.line(f"{dw} = {b}")
            if w != "0":
                self.line(f"{w} = {a}" if lo == "0" else f"{w} = {a} - {lo} * {dw}")
        for data, off, local in scalars:
            self.line(f"{local} = {data}[{off}]")
        dot = self._int_dot(s, hi, hoisted)
        if dot is not None:
            # the loop as one sum computed by Python's C code; nothing in it can fail
            acc = hoisted[id(s.body[0])].scalar
            self.line(f"{acc} = {acc} + {dot}")
            for data, off, local in scalars:
                dt = self.unwrapped.get(local)
                value = local if dt is None else wrap_text(local, dt)
                self.line(f"{data}[{off}] = {value}")
            self.inner_var = None
            return
        if scalars:
            # the element goes back to its list also when the loop stops with an error
            self.line("try:")
            self.depth += 1
        saved = self.hoisted
        trip = na.literal_value(f"{hi} - {lo}") if na.is_int_literal(lo) else None
        # (an f32 dot product's products from C, array('f', map(mul, slices)), was tried:
        # at the corpus's lengths it costs more than it saves, 1.06M against 0.88M
        # instructions for sgemm, attention_row, gemv and conv1d)
        if self.fast and trip is not None and 0 < trip <= _UNROLL:
            self._emit_unrolled(s, int(lo), trip, hoisted)
        else:
            self.line(head)
            self.hoisted = hoisted
            self.nested(s.body)
        self.hoisted = saved
        self.inner_var = None
        if scalars:
            self.depth -= 1
            self.line("finally:")
            for data, off, local in scalars:
                dt = self.unwrapped.get(local)
                value = local if dt is None else wrap_text(local, dt)
                self.line(f"    {data}[{off}] = {value}")

    def _emit_unrolled(self, s: For, lo: int, trip: int, hoisted: dict[int, Hoisted]) -> None:
        """The body of innermost loop ``s`` (``trip`` iterations from literal ``lo``) once
        per iteration, the loop variable a literal: walked offsets ``w + v * dw`` become
        ``w + k * dw`` (``w + k`` for a unit step), and no loop runs."""
        sym = s.iter
        name = self.names[sym]
        try:
            for k in range(lo, lo + trip):
                self.names[sym] = str(k)  # every use of the variable reads the literal
                self.hoisted = dict(hoisted)
                for key, h in hoisted.items():
                    if h.scalar is None and key in self.walk_of:
                        w, dw = self.walk_of[key]
                        moved = self._scaled(str(k), dw)
                        base = moved if w == "0" else w if moved == "0" else f"{w} + {moved}"
                        self.hoisted[key] = Hoisted(base)
                self.block(s.body)
        finally:
            self.names[sym] = name

    def _reduction(
        self, s: For, hoisted: dict[int, Hoisted]
    ) -> tuple[str, np.dtype[Any], list[Read]] | None:
        """When innermost loop ``s`` is ``acc += x[..] * y[..]`` (or ``acc += x[..]``) into
        an accumulator held in a local: the local, its type and the reads; else None."""
        if not self.fast or len(s.body) != 1 or not isinstance(s.body[0], Reduce):
            return None
        red = s.body[0]
        h = hoisted.get(id(red))
        if h is None or h.scalar is None:
            return None
        rhs = red.rhs
        reads: list[Expr] = [rhs] if isinstance(rhs, Read) else []
        if isinstance(rhs, BinOp) and rhs.op == "*":
            reads = [rhs.lhs, rhs.rhs]
        if not reads or not all(isinstance(r, Read) for r in reads):
            return None
        return h.scalar, self.elem_type(red.sym).np_dtype, [r for r in reads if isinstance(r, Read)]

    def _slices(
        self, s: For, hi: str, hoisted: dict[int, Hoisted], reads: list[Read]
    ) -> list[str] | None:
        """Slices of the lists that innermost loop ``s`` reads through ``reads``, in the
        loop's order: only in ``_run``'s body, where the strides are positive (an access in
        bounds over the range ran from a non-empty array) and for walks of positive step,
        so that a slice with the walk's step visits the loop's elements; else None."""
        out = []
        lo = self.ctrl(s.lo)
        for r in reads:
            if id(r) not in self.walk_of or hoisted[id(r)].scalar is not None:
                return None
            w, dw = self.walk_of[id(r)]
            if not (dw in self.fast_strides or (na.is_int_literal(dw) and int(dw) > 0)):
                return None  # a step that may be negative (a reversed walk) or zero
            start = f"{w} + {self._scaled(lo, dw)}"
            stop = f"{w} + {self._scaled(hi, dw)}"
            step = "" if dw == "1" else f":{dw}"
            out.append(f"{self.buf(r.sym).data}[{start}:{stop}{step}]")
        return out

    def _read_type(self, r: Read) -> np.dtype[Any] | None:
        src = self.types.get(r.sym)
        src_dt = src.elem if isinstance(src, TensorType) else src
        return src_dt.np_dtype if isinstance(src_dt, DataType) else None

    def _int_dot(self, s: For, hi: str, hoisted: dict[int, Hoisted]) -> str | None:
        """Source of the sum that innermost loop ``s`` adds to its accumulator, when the loop
        is ``acc += x[..] * y[..]`` (or ``acc += x[..]``) in integers held unwrapped: the
        sum of products over slices of the lists (``_slices``; exact integers: wrapping
        once, when the accumulator is stored, gives the per-operation result); else None."""
        red = self._reduction(s, hoisted)
        if red is None or red[0] not in self.unwrapped:
            return None
        _, dt, reads = red
        for r in reads:
            src = self._read_type(r)
            if src is None or src.kind not in "iu" or not fits(src, dt):
                return None
        slices = self._slices(s, hi, hoisted, reads)
        if slices is None:
            return None
        # (an empty range may come with a stride 0, which a slice refuses)
        lo = self.ctrl(s.lo)
        if len(slices) == 1:
            return f"(sum({slices[0]}) if {lo} < {hi} else 0)"
        self.ns["_mul"] = operator.mul
        return f"(sum(map(_mul, {', '.join(slices)})) if {lo} < {hi} else 0)"

    def _hoistable(self, s: For) -> list[tuple[Any, Sym, tuple[Expr, ...]]]:
        """The accesses in the body of innermost loop ``s`` whose checks can move to entry:
        into a buffer defined outside the loop, with indices affine in the loop variable."""
        inside = {st.sym for st in walk_stmts(s.body) if isinstance(st, Alloc | WindowStmt)}
        out: list[tuple[Any, Sym, tuple[Expr, ...]]] = []
        for node, sym, idx in self._accesses(s.body):
            out.append((node, sym, idx))
        return [
            (node, sym, idx)
            for node, sym, idx in out
            if sym not in inside
            and sym in self.bufs
            and not self.bufs[sym].local
            and all(na.affine_in(e, s.iter, inside) for e in idx)
        ]

    def _accesses(self, body: tuple[Stmt, ...]) -> list[tuple[Any, Sym, tuple[Expr, ...]]]:
        """Every element access in ``body``: (node, buffer, indices); data scalars too."""
        out: list[tuple[Any, Sym, tuple[Expr, ...]]] = []

        def data(sym: Sym) -> bool:
            return sym in self.types

        for st in walk_stmts(body):
            if isinstance(st, Assign | Reduce) and data(st.sym):
                out.append((st, st.sym, st.idx))
            for root in stmt_exprs(st):
                for e in walk_expr(root):
                    if isinstance(e, Read) and data(e.sym) and isinstance(e.type, DataType):
                        out.append((e, e.sym, e.idx))
        return out

    def _scalar_replace(
        self, s: For, hoisted: dict[int, Hoisted], invariant: set[str]
    ) -> tuple[list[tuple[str, str, str]], list[str]]:
        """Elements of the loop's body written at one loop-invariant place of a list that no
        other access of the body may touch: held in a local through the loop.

        Returns (list, offset, local) per element, and the runtime conditions that the other
        lists of the body are other lists (views of one array share a list).
        """
        if any(isinstance(st, Call) for st in walk_stmts(s.body)):
            return [], []  # a callee may read or write any list
        places: dict[str, set[str]] = {}
        dts: dict[str, np.dtype[Any]] = {}
        written: set[str] = set()
        for node, sym, _ in self._accesses(s.body):
            b = self.bufs.get(sym)
            if b is None:
                # a buffer defined in the body: a window of it may share any list
                return [], []
            if b.local:
                continue
            h = hoisted.get(id(node))
            places.setdefault(b.data, set()).add(h.base if h is not None else "?")
            dts[b.data] = b.dt.np_dtype
            if isinstance(node, Assign | Reduce):
                written.add(b.data)
        chosen = []
        for data, where in places.items():
            (only,) = where if len(where) == 1 else ("?",)
            if data in written and only in invariant:
                chosen.append((data, only, self.tmp("s")))
        if not chosen:
            return [], []
        read: set[str] = set()
        for node, sym, _ in self._accesses(s.body):
            h = hoisted.get(id(node))
            b = self.bufs[sym]
            for data, off, local in chosen:
                if h is not None and b.data == data and h.base == off:
                    hoisted[id(node)] = Hoisted(off, local)
                    if not isinstance(node, Assign | Reduce):
                        read.add(local)
        for data, _, local in chosen:
            if local not in read and dts[data].kind in "iu":
                self.unwrapped[local] = dts[data]
        if self.fast:
            # ``_run``'s lists are distinct objects (one per array, allocation or field)
            return chosen, []
        conds = [f"{d} is not {o}" for d, _, _ in chosen for o in places if o != d]
        return chosen, conds
