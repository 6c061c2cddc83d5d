"""``tree_scan``: a constant-size scan loop into the work-efficient up-sweep/down-sweep form
(Brent-Kung), each level a loop of independent iterations, for a thread block or a vector
register (issue 18).

The scan writes its inclusive values in place: the operands are copied into the output, the
running value's initial value is folded into the first element, ``log2 N`` up-sweep levels
combine pairs at distance ``s = 1, 2, 4, ...`` into their right element, ``log2 N - 1``
down-sweep levels combine each block total into the middle of the next block, and the
running value ends as the last element.
"""

from __future__ import annotations

from cursched.analysis import affine as af
from cursched.cursors import Editor, ForCursor, NodeLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.ir.nodes import Assign, For, Read, Stmt
from cursched.ir.symbols import Sym
from cursched.ir.types import DataType
from cursched.primitives.loops.loop_common import expr_of, int_const
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.primitives.scans.split_scan import _combine
from cursched.primitives.scans.split_scan_checks import (
    ScanShape,
    TreeScanFormError,
    TreeScanSizeError,
    analyse,
)
from cursched.proc import Proc

__all__ = ["TreeScanCursors", "TreeScanFormError", "TreeScanSizeError", "tree_scan"]

PRIMITIVE = "tree_scan"


@prim_cursors
class TreeScanCursors(PrimCursors):
    """What ``tree_scan`` returns.

    Attributes:
        copy: the loop copying each step's operand into the output.
        up: the up-sweep levels' loops, innermost distance first.
        down: the down-sweep levels' loops, largest distance first.
        final: the statement setting the running value to the last element.
    """

    copy: ForCursor
    up: tuple[ForCursor, ...]
    down: tuple[ForCursor, ...]
    final: StmtCursor


def _check_size(loop: ForCursor) -> int:
    L = loop.loop()
    lo, hi = af.to_aff(L.lo), af.to_aff(L.hi)
    n = hi.const if hi is not None and hi.is_const() else 0
    if lo is None or not lo.is_const() or lo.const != 0 or n < 2 or n & (n - 1):
        msg = "the loop must run a constant power of two (>= 2) of iterations from 0"
        raise fail(TreeScanSizeError, PRIMITIVE, msg, loop)
    return n


def _check_form(loop: ForCursor, s: ScanShape) -> tuple[Assign, int]:
    ok = s.combine.op != "linear" and not s.before and len(s.after) == 1
    write = s.after[0] if ok else None
    if write is not None and len(write.idx) == 1:
        a = af.to_aff(write.idx[0])
        if a is not None and a.coeff(s.loop.iter) == 1 and a.syms() == {s.loop.iter}:
            return write, a.const
    msg = "the body must be an associative update then one write `y[i + c] = running value`"
    raise fail(TreeScanFormError, PRIMITIVE, msg, loop)


class _Levels:
    """The statements of the tree form, for ``n`` elements of ``y[c0 + ...]``."""

    def __init__(self, s: ScanShape, write: Assign, c0: int, n: int) -> None:
        self.s, self.write, self.c0, self.n = s, write, c0, n
        self.t: DataType = s.type

    def at(self, e: af.Aff) -> Read:
        return Read(self.write.sym, (expr_of(e + self.c0),), self.t)

    def level(self, count: int, dst: af.Aff, src: af.Aff, k: Sym) -> For:
        """``for k < count: y[dst] = y[src] (+) y[dst]``."""
        d = self.at(dst)
        body = Assign(self.write.sym, d.idx, _combine(self.s.combine, self.at(src), d, self.t))
        return For(k, int_const(0), int_const(count), (body,))

    def build(self) -> tuple[list[Stmt], int, int]:
        s, n = self.s, self.n
        i = s.loop.iter
        copy = Assign(self.write.sym, (expr_of(af.Aff.var(i) + self.c0),), s.combine.operand)
        out: list[Stmt] = [For(i, s.loop.lo, s.loop.hi, (copy,))]
        first = self.at(af.Aff.num(0))
        h = Read(s.running, (), self.t)
        out.append(Assign(self.write.sym, first.idx, _combine(s.combine, h, first, self.t)))
        dist = [1 << d for d in range(n.bit_length() - 1)]
        for step in dist:  # up-sweep: the right element of each pair at distance `step`
            k = Sym("k")
            kk = af.Aff.var(k).scale(2 * step)
            out.append(self.level(n // (2 * step), kk + (2 * step - 1), kk + (step - 1), k))
        for step in reversed(dist[:-1]):  # down-sweep: block totals into the next block
            k = Sym("k")
            kk = af.Aff.var(k).scale(2 * step)
            count = n // (2 * step) - 1
            out.append(self.level(count, kk + (3 * step - 1), kk + (2 * step - 1), k))
        last = self.at(af.Aff.num(n - 1))
        out.append(Assign(s.running, (), last))
        return out, len(dist), len(dist) - 1


@primitive
def tree_scan(proc: Proc, loop: ForCursor) -> Rewrite[TreeScanCursors]:
    """Rewrite a constant-size scan into the work-efficient up-sweep/down-sweep form.

    The loop ``for i in seq(0, N): h = h (+) x[i]; y[i + c] = h`` (``N`` a power of two,
    ``(+)`` one of ``+``, ``*``, ``fmax``, ``fmin``) becomes: a copy of the operands into ``y``,
    the initial ``h`` folded into the first element, ``log2 N`` up-sweep levels and
    ``log2 N - 1`` down-sweep levels (each a loop of independent iterations, ready for
    ``parallelize_loop`` or thread binding), and ``h = y[N - 1 + c]``. It does ``2N`` combines
    in ``2 log2 N`` parallel steps instead of ``N`` sequential ones; sums are regrouped (state
    a tolerance, as for any parallel reduction). The rewrite is exact in real arithmetic, but
    the rounding of the regrouped float sums is amplified by the proc around the scan: where
    its values grow and then cancel, the f32 results can differ far beyond the default
    tolerance while the f64 ones agree (compare in f64 then).

    Args:
        proc: the proc to rewrite.
        loop: the scan loop.

    Returns:
        The new proc and ``TreeScanCursors``: ``copy``, ``up``, ``down``, ``final``.

    Preconditions:
        1. the loop runs a constant power of two (>= 2) of iterations from 0
           (``TreeScanSizeError``).
        2. the body is an associative update of a scalar running value followed by one write
           ``y[i + c] = h`` (``TreeScanFormError``), and is a scan as ``split_scan`` requires
           (its error classes).

    Forwards/Kills:
        The loop forwards to ``copy``; its statements die ("rewritten by tree_scan").

    Example:
        ``tree_scan(p, "i")`` on ``for i in seq(0, 4): s += x[i]; y[i] = s``::

            for i in seq(0, 4):   ->  for i in seq(0, 4):
                s += x[i]                 y[i] = x[i]
                y[i] = s              y[0] = s + y[0]
                                      for k in seq(0, 2):
                                          y[2 * k + 1] = y[2 * k] + y[2 * k + 1]
                                      for k in seq(0, 1):
                                          y[4 * k + 3] = y[4 * k + 1] + y[4 * k + 3]
                                      for k in seq(0, 1):
                                          y[2 * k + 2] = y[2 * k + 1] + y[2 * k + 2]
                                      s = y[3]
    """
    n = _check_size(loop)
    shape = analyse(loop)
    write, c0 = _check_form(loop, shape)
    stmts, n_up, n_down = _Levels(shape, write, c0, n).build()
    ed = Editor(proc.ir())
    L = loop.loop()
    out = ed.replace(
        loop.as_block().block(),
        stmts,
        same=[(L, stmts[0])],
        hint="rewritten by tree_scan; use .copy",
    )
    paths = out.stmt_paths()
    return ed.done(
        TreeScanCursors,
        copy=NodeLoc(paths[0]),
        up=tuple(NodeLoc(p) for p in paths[2 : 2 + n_up]),
        down=tuple(NodeLoc(p) for p in paths[2 + n_up : 2 + n_up + n_down]),
        final=NodeLoc(paths[-1]),
    )
