"""Forwarding by identity, tombstones, and the cursor errors.

The primitives defined here exist only for the tests: they exercise the edit operations the
way later primitives (unroll_loop, commute_expr, scope, ...) will.
"""

from __future__ import annotations

import pytest

from cursched import (
    CursorError,
    ForeignCursorError,
    StaleCursorError,
    delete_pass,
    insert_pass,
    proc,
    rename,
    reorder_stmts,
)
from cursched.cursors import (
    BlockCursor,
    BlockLoc,
    Editor,
    ExprCursor,
    ForCursor,
    NodeLoc,
    StepRecord,
    Tombstone,
    edits,
)
from cursched.cursors.edits import Rewrite
from cursched.cursors.forwarding import Dead
from cursched.ir.nodes import BinOp, Const, For, Scope
from cursched.ir.symbols import Sym
from cursched.ir.traversal import subst_stmt
from cursched.ir.types import INT
from cursched.primitives.loops.loop_common import fresh_copy
from cursched.primitives.registry import PrimCursors, prim_cursors, primitive
from cursched.proc import Proc

from .procs import two_loops


@prim_cursors
class UnrollCursors(PrimCursors):
    copies: tuple[BlockCursor, ...]


@primitive
def unroll_loop(proc: Proc, loop: ForCursor) -> Rewrite[UnrollCursors]:
    node = loop.loop()
    assert isinstance(node.lo, Const) and isinstance(node.hi, Const)
    body = []
    for k in range(int(node.lo.value), int(node.hi.value)):
        body += [subst_stmt(s, {node.iter: Const(k, INT)}) for s in node.body]
    ed = Editor(proc.ir())
    new = ed.replace(loop.as_block().block(), body, hint="unrolled; use .copies[k]")
    n = len(node.body)
    copies = tuple(
        BlockLoc(new.parent, new.attr, new.lo + k * n, new.lo + (k + 1) * n)
        for k in range(len(body) // n)
    )
    return ed.done(UnrollCursors, copies=copies)


@prim_cursors
class CommuteCursors(PrimCursors):
    expr: ExprCursor


@primitive
def commute_expr(proc: Proc, expr: ExprCursor) -> Rewrite[CommuteCursors]:
    e = expr.node()
    assert isinstance(e, BinOp)
    ed = Editor(proc.ir())
    loc = ed.replace_node(expr.loc, BinOp(e.op, e.rhs, e.lhs, e.type), hint="commuted")  # type: ignore[arg-type]
    return ed.done(CommuteCursors, expr=loc)


@prim_cursors
class ScopeCursors(PrimCursors):
    scope: object
    body: BlockCursor


@primitive
def scope(proc: Proc, block: BlockCursor, name: str) -> Rewrite[ScopeCursors]:
    ed = Editor(proc.ir())
    loc = ed.wrap(block.block(), lambda stmts: Scope(name, stmts))
    return ed.done(ScopeCursors, scope=loc, body=BlockLoc(loc.path, "body", 0, len(block)))


@prim_cursors
class LoopCursors(PrimCursors):
    loop: ForCursor


@primitive
def set_hi(proc: Proc, loop: ForCursor, hi: int) -> Rewrite[LoopCursors]:
    ed = Editor(proc.ir())
    node = loop.loop()
    loc = ed.replace_node(loop.loc, node.replace(hi=Const(hi, INT)))  # type: ignore[arg-type]
    return ed.done(LoopCursors, loop=loc)


@proc
def small(x: f32[4] @ DRAM, s: f32 @ DRAM):
    for i in seq(0, 2):
        x[i] = 1.0
        s += x[i] * 2.0
    x[3] = 0.0


def test_unroll_kills_the_loop_with_a_hint() -> None:
    loop = small.find_loop("i")
    tail = small.find("x[3] = _")
    p, res = unroll_loop(small, loop)
    assert len(res.copies) == 2 and [len(c) for c in res.copies] == [2, 2]
    t = p.forward(loop)
    assert isinstance(t, Tombstone) and not t
    assert repr(t) == "<stale For 'i': killed by unroll_loop at v1; unrolled; use .copies[k]>"
    assert t.killer == "unroll_loop" and t.version == 1 and t.hint == "unrolled; use .copies[k]"
    assert t.origin == loop and t.proc is p
    # the body statements were rewritten (i -> k): they died too
    assert not p.forward(loop.body()[0])
    # what was outside shifted and lives on
    assert p.forward(tail) == p.at("body[4]")


def test_stale_cursor_as_argument_names_argument_and_killer() -> None:
    loop = small.find_loop("i")
    p, _ = unroll_loop(small, loop)
    with pytest.raises(StaleCursorError) as e:
        set_hi(p, loop, 3)
    msg = str(e.value)
    assert "argument 'loop' of set_hi" in msg
    assert "For 'i' was killed by unroll_loop at v1 (unrolled; use .copies[k])" in msg
    t = p.forward(loop)
    with pytest.raises(StaleCursorError, match="killed by unroll_loop"):
        set_hi(p, t, 3)
    with pytest.raises(StaleCursorError, match="killed by unroll_loop"):
        t.name()  # type: ignore[union-attr]


def test_commute_keeps_operands_by_identity() -> None:
    prod = small.find("x[_] * _")
    lhs, rhs = prod.lhs(), prod.rhs()
    p, res = commute_expr(small, prod)
    assert not p.forward(prod)  # the rewritten expression died
    assert "commuted" in repr(p.forward(prod))
    # the operands follow their nodes: no positional re-targeting
    assert p.forward(lhs) == res.expr.rhs()
    assert p.forward(rhs) == res.expr.lhs()
    assert p.forward(lhs).name() == "x"  # type: ignore[union-attr]
    # the statement holding it lives on
    assert p.forward(small.find("s += _")) == p.find("s += _")


def test_wrap_keeps_statements_and_block_forwards() -> None:
    body = small.find_loop("i").body()
    first = body[0]
    p, res = scope(small, body, "inner")
    assert p.forward(first) == res.body[0]
    assert p.forward(body) == res.body
    assert p.forward(first.after()) == res.body[0].after()
    assert p.forward(small.find_loop("i")) == p.find_loop("i")


def test_loop_keeps_identity_by_iteration_variable() -> None:
    loop = small.find_loop("i")
    inner = loop.body()[1]
    p, res = set_hi(small, loop, 3)
    assert p.forward(loop) == res.loop
    assert res.loop.hi().value() == 3
    assert p.forward(inner) == res.loop.body()[1]
    assert not p.forward(loop.hi())  # the replaced bound died


def test_reorder_keeps_identity() -> None:
    a = two_loops.find("x[_] = _")
    b = two_loops.find("y[_] = _")
    p, res = reorder_stmts(two_loops, a.expand(0, 1))
    assert p.forward(a) == res.second and p.forward(b) == res.first
    assert p.forward(a.rhs()) == res.second.rhs()
    assert p.forward(a.expand(0, 1)) == res.first.expand(0, 1)


def test_delete_pass_tombstone_and_gap() -> None:
    p1, r1 = insert_pass(two_loops, two_loops.find("x[_] = _").after())
    gap = r1.stmt.after()
    p2, _ = delete_pass(p1, r1.stmt)
    t = p2.forward(r1.stmt)
    assert repr(t) == "<stale Pass: killed by delete_pass at v2; deleted by delete_pass>"
    assert not p2.forward(gap)  # anchored to the pass
    with pytest.raises(StaleCursorError, match="argument 'stmt' of delete_pass: stale cursor"):
        delete_pass(p2, r1.stmt)


def test_block_forwarding_shrinks_and_splits() -> None:
    p1, r1 = insert_pass(two_loops, two_loops.find("x[_] = _").after())
    block = r1.stmt.expand(1, 1)
    assert len(block) == 3
    p2, _ = delete_pass(p1, r1.stmt)
    shrunk = p2.forward(block)
    assert isinstance(shrunk, BlockCursor) and len(shrunk) == 2
    p3, _res = scope(p1, r1.stmt.as_block(), "s")
    split = p3.forward(block)
    assert not split and "moved apart" in repr(split)


def test_forward_through_rename_and_chain() -> None:
    c = two_loops.find("y[_] += _")
    p = two_loops
    for k in range(5):
        p, _ = rename(p, f"v{k}")
    assert p.forward(c) == p.find("y[_] += _")
    assert p.forward(c) is p.forward(c)  # cached


def test_foreign_cursor_names_both_versions() -> None:
    _p1, r1 = insert_pass(two_loops, two_loops.find("x[_] = _").after())
    p2, _ = rename(two_loops, "other")
    with pytest.raises(ForeignCursorError) as e:
        p2.forward(r1.stmt)
    msg = str(e.value)
    assert "two_loops v1 (made by insert_pass)" in msg and "other v1 (made by rename)" in msg
    with pytest.raises(ForeignCursorError, match="argument 'stmt' of delete_pass"):
        delete_pass(p2, r1.stmt)
    # a later version's cursor is foreign to an earlier version
    with pytest.raises(ForeignCursorError, match="not an ancestor"):
        two_loops.forward(r1.stmt)


def test_wrong_kind_and_invalid_arguments() -> None:
    with pytest.raises(CursorError, match="argument 'loop' of set_hi wants a For cursor"):
        set_hi(small, small.find("x[3] = _"), 3)
    with pytest.raises(CursorError, match="invalid cursor"):
        delete_pass(small, small.find("x[3] = _").next())
    with pytest.raises(CursorError, match="wants a cursor or a pattern string"):
        delete_pass(small, 3)
    with pytest.raises(CursorError, match="wants a Proc"):
        delete_pass("small", "pass")


def test_strings_are_patterns() -> None:
    _, res = set_hi(small, "i", 3)
    assert res.loop.name() == "i"
    _, res2 = scope(small, "x[_] = _; s += _", "body")
    assert len(res2.body) == 2
    # a statement is accepted where a block is wanted
    _p, res3 = scope(small, small.find("x[3] = _"), "tail")
    assert len(res3.body) == 1


def test_editor_forwards_through_its_edits() -> None:
    ir = small.ir()
    ed = Editor(ir)
    tail = NodeLoc((("body", 1),))
    inner = NodeLoc((("body", 0), ("body", 1)))
    ed.insert(((), "body", 0), (small.find("x[3] = _").node(),))
    assert ed.forward(tail) == NodeLoc((("body", 2),))
    ed.move(BlockLoc((("body", 1),), "body", 1, 2), ((), "body", 0))
    assert ed.forward(inner) == NodeLoc((("body", 0),))
    assert ed.forward(tail) == NodeLoc((("body", 3),))
    assert ed.ir.body[0] is ir.body[0].body[1]  # type: ignore[attr-defined]


def test_shared_nodes_do_not_merge_identities() -> None:
    """Two positions holding one shared object are two nodes: keeping one object kills both
    (the map cannot tell which one lives on), it never merges them.
    """

    @proc
    def twice(x: f32[4] @ DRAM):
        for i in seq(0, 2):  # noqa: B007
            x[0] = 1.0

    p, res = unroll_loop(twice, twice.find_loop("i"))
    a, b = res.copies[0][0], res.copies[1][0]
    assert a.node() is b.node()  # the copies share the unchanged statement
    ed = Editor(p.ir())
    ed.replace(BlockLoc((), "body", 0, 2), (a.node(),))
    q = Proc(ed.ir, parent=p, step=_step("merge", ed))
    assert not q.forward(a) and not q.forward(b)


def _step(name: str, ed: Editor) -> StepRecord:
    return StepRecord(name, (), (), (), (), ed.map)


def test_tombstones_and_invalid_cursors_answer_protocol_probes() -> None:
    import copy

    loop = small.find_loop("i")
    p, _ = unroll_loop(small, loop)
    t = p.forward(loop)
    assert not hasattr(t, "_ipython_display_")
    assert "stale For" in t._repr_html_()
    assert copy.copy(small.find("x[3] = _").next()) is not None
    bad = small.find("x[3] = _").next()
    assert not hasattr(bad, "__array__")


def test_pure_edit_operations_return_ir_and_map() -> None:
    from cursched.cursors import edits
    from cursched.ir.nodes import Pass

    ir = small.ir()
    loop_body = (("body", 0),)
    new, m = edits.insert(ir, (loop_body, "body", 1), (Pass(),))
    assert new is not ir and ir.body[0].body[1] is not new.body[0].body[1]  # type: ignore[attr-defined]
    assert m((*loop_body, ("body", 1))) == (*loop_body, ("body", 2))
    new, m2 = edits.delete(new, BlockLoc(loop_body, "body", 1, 2), hint="gone")
    assert m2((*loop_body, ("body", 1))) == edits.Dead("gone")
    assert new.body == ir.body  # back to the same statements (shared, unchanged)
    moved, m3 = edits.move(ir, BlockLoc((), "body", 1, 2), (loop_body, "body", 0))
    assert moved.body[0].body[0] is ir.body[1]  # type: ignore[attr-defined]
    assert m3((("body", 1),)) == (*loop_body, ("body", 0))
    wrapped, m4 = edits.wrap(ir, BlockLoc((), "body", 0, 2), lambda ss: Scope("all", ss))
    assert m4((("body", 1), ("rhs", -1))) == (("body", 0), ("body", 1), ("rhs", -1))
    assert isinstance(wrapped.body[0], Scope)


def test_editor_delete_never_leaves_an_empty_body() -> None:
    """Deleting every statement of a body leaves a ``pass`` (whatever the primitive: the
    editor does it, not each of delete_config, delete_buffer, inline_assign); the deleted
    statements die; an ``else`` branch emptied is no ``else``."""

    @proc
    def branches(n: size, x: f32[n] @ DRAM):
        for i in seq(0, n):
            if i < 2:
                x[i] = 1.0
            else:
                x[i] = 2.0
                x[i] = 3.0

    ir = branches.ir()
    loop = NodeLoc((("body", 0),))
    cond = (("body", 0), ("body", 0))
    ed = Editor(ir)
    ed.delete(BlockLoc(cond, "body", 0, 1), hint="gone")
    ed.delete(BlockLoc(cond, "orelse", 0, 2), hint="gone")
    body = ed.ir.body[0].body[0]  # type: ignore[attr-defined]
    assert [type(s).__name__ for s in body.body] == ["Pass"]
    assert body.orelse == ()
    ed.delete(BlockLoc(loop.path, "body", 0, 1), hint="gone")
    assert [type(s).__name__ for s in ed.ir.body[0].body] == ["Pass"]  # type: ignore[attr-defined]
    dead = ed.forward(NodeLoc((*cond, ("body", 0))))
    assert isinstance(dead, Dead) and dead.hint == "gone"  # the deleted statement died
    # a part of a body is deleted as before, with no pass left
    ed2 = Editor(ir)
    ed2.delete(BlockLoc(cond, "orelse", 0, 1), hint="gone")
    assert len(ed2.ir.body[0].body[0].orelse) == 1  # type: ignore[attr-defined]


def test_a_false_claim_of_freshness_is_caught() -> None:
    """``replace(fresh=...)`` lets the survivor search skip statements built anew;
    the test suite checks each claim (``edit_settings.check_fresh``, on in conftest.py): a
    statement holding an old node, a loop over an old iteration variable, or a node named in
    ``same``, claimed fresh, raises. Unchecked, the first would forward an old cursor into
    a statement that also holds it (it should die: the node is found twice)."""
    assert edits.edit_settings.check_fresh
    ir = two_loops.ir()
    loop = ir.body[0]
    assert isinstance(loop, For)
    block = BlockLoc((), "body", 0, 1)
    fresh_one = For(Sym("k"), loop.lo, loop.hi, fresh_copy(loop.body), loop.mode)
    ok = For(Sym("k"), Const(0, INT), Const(4, INT), fresh_copy(loop.body), loop.mode)
    same_iter = For(loop.iter, Const(0, INT), Const(4, INT), fresh_copy(loop.body), loop.mode)
    holds_old = ok.replace(body=(loop.body[0],))
    # a true claim: the same forwarding as the full search
    full = edits.replace(ir, block, (loop, ok))[1]
    claimed = edits.replace(ir, block, (loop, ok), fresh=(ok,))[1]
    assert claimed == full
    for bad in (fresh_one, same_iter, holds_old):
        with pytest.raises(AssertionError, match="fresh"):
            edits.replace(ir, block, (loop, bad), fresh=(bad,))
    with pytest.raises(AssertionError, match="fresh"):  # the target of ``same``
        edits.replace(ir, block, (ok, holds_old), same=[(loop, holds_old)], fresh=(holds_old,))
    with pytest.raises(AssertionError, match="not one of the new"):
        edits.replace(ir, block, (loop,), fresh=(ok,))
    # unchecked, a false claim changes the forwarding: the old statement found in both new
    # loops dies (which copy is it?), but with the second claimed fresh it moves to the first
    again = For(Sym("m"), Const(0, INT), Const(4, INT), (loop.body[0],), loop.mode)
    first = (("body", 0), ("body", 0))
    right = edits.replace(ir, block, (holds_old, again))[1]
    try:
        edits.edit_settings.check_fresh = False
        wrong = edits.replace(ir, block, (holds_old, again), fresh=(again,))[1]
    finally:
        edits.edit_settings.check_fresh = True
    assert isinstance(right(first), Dead) and wrong(first) == first
