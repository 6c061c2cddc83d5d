"""The context of a position in a proc: what is known to hold there.

A ``PathContext`` gathers the proc's asserts, the sizes (positive), the enclosing loops with
their ranges, the enclosing ``if`` conditions (negated on the ``else`` side) and the windows
and allocations visible at the position. Every check turns it into ``Prop`` facts for the SMT
layer; later primitives reuse it (``context_of``) to ask their own questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cursched.analysis import affine as af
from cursched.ir.memory import Memory
from cursched.ir.nodes import (
    Alloc,
    Expr,
    FnArg,
    For,
    If,
    ProcDef,
    Scope,
    Stmt,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.types import SIZE, TensorType


@dataclass(frozen=True, slots=True)
class PathContext:
    """What holds at a position of a proc.

    Attributes:
        proc: the proc.
        loops: enclosing loops, outermost first.
        conds: enclosing ``if`` conditions with the branch taken (True: ``body``).
        windows: window statements visible at the position, by symbol.
        allocs: allocations visible at the position, by symbol.
    """

    proc: ProcDef
    loops: tuple[For, ...] = ()
    conds: tuple[tuple[Expr, bool], ...] = ()
    windows: Mapping[Sym, WindowStmt] = field(default_factory=dict)
    allocs: Mapping[Sym, Alloc] = field(default_factory=dict)
    # ``ranges()`` of this context, computed once: ``simplify`` asks it for every expression
    _ranges: dict[Sym, af.Bound] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def enter_loop(self, loop: For) -> PathContext:
        return PathContext(self.proc, (*self.loops, loop), self.conds, self.windows, self.allocs)

    def enter_if(self, cond: Expr, taken: bool) -> PathContext:
        conds = (*self.conds, (cond, taken))
        return PathContext(self.proc, self.loops, conds, self.windows, self.allocs)

    def declare(self, s: Stmt) -> PathContext:
        """The context after statement ``s`` (which may bind a window or an allocation)."""
        if isinstance(s, WindowStmt):
            windows = {**self.windows, s.sym: s}
            return PathContext(self.proc, self.loops, self.conds, windows, self.allocs)
        if isinstance(s, Alloc):
            allocs = {**self.allocs, s.sym: s}
            return PathContext(self.proc, self.loops, self.conds, self.windows, allocs)
        return self

    def memory_of(self, sym: Sym) -> type[Memory] | None:
        """The memory of buffer ``sym`` here: a window's is its buffer's (None: not a buffer).

        Windows are followed at most 64 deep (a window never names itself, so a longer chain
        cannot come from a verified proc).
        """
        for _ in range(64):
            if sym not in self.windows:
                break
            sym = self.windows[sym].rhs.sym
        if sym in self.allocs:
            return self.allocs[sym].mem
        for a in self.proc.args:
            if a.sym is sym:
                return a.mem
        return None

    # -- facts ---------------------------------------------------------------------------
    def props(self) -> list[af.Prop]:
        """The facts: sizes positive, asserts, loop ranges, if conditions."""
        out = proc_props(self.proc)
        for loop in self.loops:
            out.extend(loop_props(loop))
        for cond, taken in self.conds:
            p = af.to_prop(cond)
            if p is not None:  # an unknown condition is dropped: the context only weakens
                out.append(p if taken else af.Not(p))
        return out

    def loop_bounds(self) -> list[af.SymBound]:
        """Symbolic inclusive bounds of the enclosing loops (for ``prove_nonneg``)."""
        out: list[af.SymBound] = []
        for loop in self.loops:
            lo, hi = af.to_aff(loop.lo), af.to_aff(loop.hi)
            if lo is not None and hi is not None:
                out.append(af.SymBound(loop.iter, lo, hi - 1))
        return out

    def ranges(self) -> dict[Sym, af.Bound]:
        """Constant inclusive ranges of the enclosing loop variables (where constant)."""
        if self._ranges or not self.loops:
            return dict(self._ranges)  # a copy: callers may extend theirs
        out = self._ranges
        for loop in self.loops:
            lo, hi = af.to_aff(loop.lo), af.to_aff(loop.hi)
            lo_r = af.aff_range(lo, out)[0] if lo is not None else None
            hi_r = af.aff_range(hi, out)[1] if hi is not None else None
            out[loop.iter] = (lo_r, None if hi_r is None else hi_r - 1)
        return dict(out)

    def shape(self, sym: Sym) -> tuple[Expr, ...] | None:
        """The shape of a buffer, window or tensor argument visible here (None: scalar)."""
        if sym in self.windows:
            return self.windows[sym].rhs.type.shape
        if sym in self.allocs:
            t = self.allocs[sym].type
            return t.shape if isinstance(t, TensorType) else None
        for a in self.proc.args:
            if a.sym is sym:
                return a.type.shape if isinstance(a.type, TensorType) else None
        return None


def proc_props(p: ProcDef) -> list[af.Prop]:
    """Sizes are positive and the asserts hold."""
    out: list[af.Prop] = []
    for a in p.args:
        if a.type == SIZE:
            out.append(af.Ge(af.Aff.var(a.sym, SIZE) - 1))
    for pred in p.preds:
        prop = af.to_prop(pred)
        if prop is not None:
            out.append(prop)
    return out


def loop_props(loop: For, env: af.Rename | None = None) -> list[af.Prop]:
    """``lo <= iter < hi`` (under the renaming ``env``)."""
    it = env.get(loop.iter, loop.iter) if env else loop.iter
    lo, hi = af.to_aff(loop.lo, env), af.to_aff(loop.hi, env)
    var = af.Aff.var(it)
    out: list[af.Prop] = []
    if lo is not None:
        out.append(af.le(lo, var))
    if hi is not None:
        out.append(af.lt(var, hi))
    return out


def proc_context(p: ProcDef) -> PathContext:
    """The context at the top of the proc's body."""
    return PathContext(p)


def context_of(p: ProcDef, path: Path) -> PathContext:
    """The context of the node that ``path`` addresses (or of the gap/statement it names).

    The statement addressed itself does not contribute (a loop's own variable is not in the
    context of the loop statement); statements before it in each enclosing block contribute
    their windows and allocations.
    """
    ctx = PathContext(p)
    node: object = p
    for attr, index in path:
        child = getattr(node, attr)
        if isinstance(node, For | If | Scope | ProcDef) and attr in ("body", "orelse"):
            if isinstance(node, For):
                ctx = ctx.enter_loop(node)
            elif isinstance(node, If):
                ctx = ctx.enter_if(node.cond, attr == "body")
            for k in block_binders(child):
                if k >= index:
                    break
                ctx = ctx.declare(child[k])
        if not isinstance(child, tuple):
            node = child
        elif 0 <= index < len(child):
            node = child[index]
        else:
            break  # a gap at the end of a block
    return ctx


# The positions of the statements that bind a symbol (windows, allocations) in a block, by
# the block tuple's identity (kept alive in the entry): versions of a proc share their
# unchanged blocks, and a context only needs these statements of the blocks around it, where
# a block of a big proc has thousands of others. Cleared when full.
_BINDERS: dict[int, tuple[tuple[Stmt, ...], tuple[int, ...]]] = {}
_BINDERS_LIMIT = 1 << 12
_BINDER_TYPES = frozenset((Alloc, WindowStmt))


def block_binders(block: tuple[Stmt, ...]) -> tuple[int, ...]:
    """The positions of the window statements and allocations of ``block``, in order."""
    hit = _BINDERS.get(id(block))
    if hit is not None and hit[0] is block:
        return hit[1]
    found: tuple[int, ...] = ()
    if not _BINDER_TYPES.isdisjoint(map(type, block)):  # at C speed: most blocks bind nothing
        found = tuple(k for k, s in enumerate(block) if type(s) in _BINDER_TYPES)
    if len(_BINDERS) >= _BINDERS_LIMIT:
        _BINDERS.clear()
    _BINDERS[id(block)] = (block, found)
    return found


def arg_of(p: ProcDef, sym: Sym) -> FnArg | None:
    """The parameter of ``p`` whose symbol is ``sym``."""
    for a in p.args:
        if a.sym is sym:
            return a
    return None
