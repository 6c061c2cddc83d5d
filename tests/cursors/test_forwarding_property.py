"""Property: forwarding never re-targets a cursor to a different node.

Random procs (built as IR, every node labelled with a unique source line, which edits carry
along and which takes no part in equality) go through random sequences of edit operations.
Every cursor of the first version, forwarded to the last, must either be a tombstone or point
at a node with the same label and kind: the oracle is the labels, independent of the maps.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursched.cursors import BlockLoc, Editor, GapLoc, NodeLoc, StepRecord, Tombstone
from cursched.cursors.stmts import make_cursor
from cursched.cursors.tree import stmt_list, walk
from cursched.errors import SrcInfo
from cursched.ir.memory import DRAM
from cursched.ir.nodes import (
    Assign,
    BinOp,
    Const,
    FnArg,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL, F32, INT, SIZE
from cursched.proc import Proc


class Gen:
    """Draws labelled nodes and edits from hypothesis ``data``."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.labels = itertools.count(1)
        self.n = Sym("n")
        self.bufs = [Sym(f"a{k}") for k in range(3)]

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def loc(self) -> SrcInfo:
        return SrcInfo("gen", next(self.labels))

    def const(self, v: float) -> Const:
        return Const(v, F32, srcinfo=self.loc())

    def leaf(self) -> Stmt:
        kind = self.draw(st.sampled_from(["assign", "reduce", "pass"]))
        if kind == "pass":
            return Pass(srcinfo=self.loc())
        a, b = self.draw(st.sampled_from(self.bufs)), self.draw(st.sampled_from(self.bufs))
        rhs = BinOp(
            "+", Read(b, (), F32, srcinfo=self.loc()), self.const(1.0), F32, srcinfo=self.loc()
        )
        cls = Assign if kind == "assign" else Reduce
        return cls(a, (), rhs, srcinfo=self.loc())

    def wrapper(self, body: tuple[Stmt, ...]) -> Stmt:
        kind = self.draw(st.sampled_from(["for", "scope", "if"]))
        if kind == "for":
            return For(
                Sym("i"),
                Const(0, INT, srcinfo=self.loc()),
                Const(3, INT, srcinfo=self.loc()),
                body,
                srcinfo=self.loc(),
            )
        if kind == "scope":
            return Scope("s", body, srcinfo=self.loc())
        cond = BinOp(
            "<",
            Read(self.n, (), SIZE, srcinfo=self.loc()),
            Const(3, INT, srcinfo=self.loc()),
            BOOL,
            srcinfo=self.loc(),
        )
        return If(cond, body, (), srcinfo=self.loc())

    def stmts(self, depth: int) -> tuple[Stmt, ...]:
        out = []
        for _ in range(self.draw(st.integers(1, 3))):
            if depth > 0 and self.draw(st.booleans()):
                out.append(self.wrapper(self.stmts(depth - 1)))
            else:
                out.append(self.leaf())
        return tuple(out)

    def proc(self) -> ProcDef:
        args = (FnArg(self.n, SIZE), *(FnArg(b, F32, DRAM) for b in self.bufs))
        return ProcDef("rand", args, (), self.stmts(3))


def lists(ir: ProcDef) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = [((), "body")]
    for path, node in walk(ir):
        if isinstance(node, For | Scope | If) and path and path[-1][0] in ("body", "orelse"):
            out.append((path, "body"))
    return out


def stmt_paths(ir: ProcDef) -> list[Path]:
    return [p for p, n in walk(ir) if p and p[-1][0] in ("body", "orelse")]


def random_edit(g: Gen, ed: Editor) -> None:
    ir = ed.ir
    parent, attr = g.draw(st.sampled_from(lists(ir)))
    lst = stmt_list(ir, parent, attr)
    n = len(lst)
    lo = g.draw(st.integers(0, n - 1))
    hi = g.draw(st.integers(lo + 1, n))
    block = BlockLoc(parent, attr, lo, hi)
    op = g.draw(
        st.sampled_from(["insert", "delete", "wrap", "move", "unwrap", "expr", "loop", "replace"])
    )
    if op == "insert":
        pos = g.draw(st.integers(0, n))
        ed.insert((parent, attr, pos), (g.leaf(),))
    elif op == "delete" and hi - lo < n:
        ed.delete(block, hint="deleted")
    elif op == "wrap":
        ed.wrap(block, g.wrapper)
    elif op == "move" and hi - lo < n:  # moving a whole list out would empty it
        dests = [
            (p, a, k)
            for p, a in lists(ir)
            if not any(p[: len(s)] == s for s in block.stmt_paths())
            for k in range(len(stmt_list(ir, p, a)) + 1)
            if not (p == parent and a == attr and lo < k < hi)
        ]
        ed.move(block, g.draw(st.sampled_from(dests)))
    elif op == "unwrap":
        s = lst[lo]
        if isinstance(s, For | Scope) or (isinstance(s, If) and not s.orelse):
            ed.replace(BlockLoc(parent, attr, lo, lo + 1), s.body, hint="unwrapped")
    elif op == "expr":
        s = lst[lo]
        if isinstance(s, Assign | Reduce):
            ed.replace_node(NodeLoc((*parent, (attr, lo), ("rhs", -1))), g.const(2.0))
    elif op == "loop":
        s = lst[lo]
        if isinstance(s, For):
            new = s.replace(hi=Const(4, INT, srcinfo=g.loc()))
            ed.replace_node(NodeLoc((*parent, (attr, lo))), new)
    elif op == "replace":
        ed.replace(block, (g.leaf(),), hint="replaced")


def label(node: Any) -> tuple[type, int | None]:
    info = getattr(node, "srcinfo", None)
    return type(node), (info.line if info is not None else None)


# CURSCHED_FUZZ=5000 pytest tests/cursors/test_forwarding_property.py: a long fuzz run.
EXAMPLES = int(os.environ.get("CURSCHED_FUZZ", "80"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_forwarded_cursors_are_the_same_node_or_tombstones(data: st.DataObject) -> None:
    g = Gen(data)
    first = Proc(g.proc())
    p = first
    for _ in range(data.draw(st.integers(1, 8))):
        ed = Editor(p.ir())
        for _ in range(data.draw(st.integers(1, 2))):
            random_edit(g, ed)
        p = Proc(ed.ir, parent=p, step=StepRecord("edit", (), (), (), (), ed.map))
    ir0 = first.ir()
    for path, node in walk(ir0):
        if not path or path[-1][0] == "args":
            continue
        out = p.forward(make_cursor(first, NodeLoc(path)))
        if isinstance(out, Tombstone):
            assert out.killer == "edit"
            continue
        assert isinstance(out.loc, NodeLoc)
        assert label(get_at(p.ir(), out.loc.path)) == label(node), (path, out.loc.path)
    for path in stmt_paths(ir0):
        for side in ("before", "after"):
            gap = p.forward(make_cursor(first, GapLoc(path, side)))  # type: ignore[arg-type]
            if gap:
                assert isinstance(gap.loc, GapLoc) and gap.loc.side == side
                assert label(get_at(p.ir(), gap.loc.anchor)) == label(get_at(ir0, path))


def test_unchanged_nodes_survive() -> None:
    """A complement to the property: moved and wrapped nodes are not killed."""

    @given(st.data())
    @settings(max_examples=30, deadline=None)
    def run(data: st.DataObject) -> None:
        g = Gen(data)
        first = Proc(g.proc())
        ed = Editor(first.ir())
        n = len(first.ir().body)
        block = BlockLoc((), "body", 0, n)
        ed.wrap(block, g.wrapper)
        p = Proc(ed.ir, parent=first, step=StepRecord("wrap", (), (), (), (), ed.map))
        for path, node in walk(first.ir()):
            if path and path[-1][0] != "args":
                out = p.forward(make_cursor(first, NodeLoc(path)))
                assert out, path
                assert isinstance(out.loc, NodeLoc)
                assert get_at(p.ir(), out.loc.path) is node

    run()


@settings(
    max_examples=max(EXAMPLES // 2, 1), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_primitive_sequences_forward_by_identity(data: st.DataObject) -> None:
    """The same property end to end: random sequences of the real primitives on a parsed proc
    (whose statements each carry their own source position as the oracle's label).
    """
    from cursched import delete_pass, insert_pass, rename, reorder_stmts
    from cursched.primitives.loops.statements import StmtsDontCommuteError

    from .procs import nest

    first = nest.find_all("_")
    p = nest
    for k in range(data.draw(st.integers(1, 10))):
        stmts = p.find_all("_")
        op = data.draw(st.sampled_from(["insert", "delete", "reorder", "rename"]))
        if op == "insert":
            s = data.draw(st.sampled_from(stmts))
            p, _ = insert_pass(p, s.before() if data.draw(st.booleans()) else s.after())
        elif op == "delete":
            passes = [s for s in p.find_all("pass") if s.next() or s.prev()]
            if passes:
                p, _ = delete_pass(p, data.draw(st.sampled_from(passes)))
        elif op == "reorder":
            pairs = [s for s in stmts if s.next()]
            s = data.draw(st.sampled_from(pairs))
            with contextlib.suppress(StmtsDontCommuteError):  # a refused swap is fine
                p, _ = reorder_stmts(p, s.expand(0, 1))
        else:
            p, _ = rename(p, f"v{k}")
    for c in first:
        out = p.forward(c)
        if out:
            assert type(out.node()) is type(c.node())  # type: ignore[union-attr]
            assert out.node().srcinfo == c.node().srcinfo  # type: ignore[union-attr]
        else:
            assert isinstance(out, Tombstone) and out.killer == "delete_pass"
