"""The primitive framework: coercion, step records, verification, returned-cursor checks."""

from __future__ import annotations

import pytest

from cursched import CursorError, PatternError, delete_pass, insert_pass, proc, reorder_stmts
from cursched.cursors import (
    AllocCursor,
    ArgCursor,
    BlockCursor,
    Editor,
    ExprCursor,
    InvalidCursor,
    NodeLoc,
    NoLoc,
    StmtCursor,
)
from cursched.cursors.edits import Rewrite
from cursched.errors import IRVerificationError
from cursched.ir.nodes import Assign, Const
from cursched.ir.types import F32
from cursched.primitives import settings
from cursched.primitives.registry import Buffer, PrimCursors, prim_cursors, primitive
from cursched.proc import Proc


@proc
def f(n: size, x: f32[n] @ DRAM):
    t: f32
    for i in seq(0, n):
        t = x[i]
        x[i] = t * 2.0


@prim_cursors
class BufCursors(PrimCursors):
    buffer: Buffer
    exprs: tuple[ExprCursor, ...]
    nothing: InvalidCursor


@primitive
def touch(proc: Proc, buf: Buffer, exprs: tuple[ExprCursor, ...] = ()) -> Rewrite[BufCursors]:
    ed = Editor(proc.ir())
    return ed.done(
        BufCursors, buffer=buf.loc, exprs=tuple(e.loc for e in exprs), nothing=NoLoc("n/a")
    )


@prim_cursors
class BadCursors(PrimCursors):
    stmt: object


@primitive
def bad_field(proc: Proc) -> Rewrite[BadCursors]:
    ed = Editor(proc.ir())
    return ed.done(BadCursors, stmt=NodeLoc((("body", 9),)))


@primitive
def break_ir(proc: Proc, block: BlockCursor) -> Rewrite[BadCursors]:
    """Writes an undefined symbol: the verifier must catch it."""
    from cursched.ir.symbols import Sym

    ed = Editor(proc.ir())
    out = ed.insert(block.before().gap(), (Assign(Sym("ghost"), (), Const(1.0, F32)),))
    return ed.done(BadCursors, stmt=NodeLoc(out.stmt_paths()[0]))


def test_buffer_strings_and_tuples() -> None:
    p, res = touch(f, "t", exprs=("t * _", f.find("x[_]")))
    assert isinstance(res.buffer, AllocCursor) and res.buffer.name() == "t"
    assert len(res.exprs) == 2 and all(isinstance(e, ExprCursor) for e in res.exprs)
    assert not res.nothing and "n/a" in repr(res.nothing)
    _p2, res2 = touch(p, "x", exprs="t * _")
    assert isinstance(res2.buffer, ArgCursor) and len(res2.exprs) == 1
    with pytest.raises(PatternError):
        touch(f, "nope")


def test_cursors_dataclass_iterates_and_shows() -> None:
    _p, res = touch(f, "t", exprs=("t * _",))
    buffer, exprs, nothing = res
    assert buffer == res.buffer and exprs == res.exprs and nothing is res.nothing
    assert len(res) == 3
    text = repr(res)
    assert text.splitlines()[0] == "BufCursors"
    assert "field" in text and "kind" in text and "source" in text and "line" in text
    assert "buffer    Alloc" in text and "exprs[0]" in text and "nothing   invalid" in text
    html = res._repr_html_()
    # the table's cells are left-aligned (Jupyter right-aligns them otherwise)
    cell = '<td style="text-align:left;padding:1px 10px 1px 0">'
    assert "<table" in html and f"{cell}<code>buffer</code></td>" in html
    with pytest.raises(AttributeError):
        res.buffer = None  # type: ignore[misc]  # frozen


def test_step_record() -> None:
    c = f.find("x[_] = _")
    p, _res = insert_pass(f, c.before())
    step = p.step()
    assert step is not None and step.primitive == "insert_pass"
    assert step.args == (c.before(),)
    assert step.results[0][0] == "stmt"
    assert f.step() is None


@primitive
def old_cursor_field(proc: Proc, stmt: StmtCursor) -> Rewrite[BadCursors]:
    return Editor(proc.ir()).done(BadCursors, stmt=stmt)


def test_returned_fields_must_point_into_the_result() -> None:
    with pytest.raises(AssertionError, match="bad_field returned field 'stmt' at body\\[9\\]"):
        bad_field(f)
    with pytest.raises(AssertionError, match="as a cursor of another version"):
        old_cursor_field(f, "t = _")


def test_verification_runs_and_can_be_switched_off() -> None:
    with pytest.raises(IRVerificationError, match="break_ir made v1 of f: "):
        break_ir(f, f.find_loop("i"))
    settings.verify = False
    p, _ = break_ir(f, f.find_loop("i"))
    assert p.version == 1


def test_bad_call_signature() -> None:
    with pytest.raises(CursorError, match="insert_pass: missing a required argument"):
        insert_pass(f)
    with pytest.raises(CursorError, match="reorder_stmts"):
        reorder_stmts(f, "t = _; x[_] = _", 1, 2)


def test_primitive_keeps_docstring() -> None:
    assert insert_pass.__name__ == "insert_pass"
    assert insert_pass.__doc__ is not None and "Preconditions:" in insert_pass.__doc__


@prim_cursors
class Kinds(PrimCursors):
    block: BlockCursor
    gap: object
    stmt: object


def test_cursors_table_lines_are_those_of_the_printed_proc() -> None:
    loop = f.find_loop("i")
    table = repr(Kinds(loop.body(), loop.body()[1].before(), loop.body()[1]))
    assert table.splitlines()[2:] == [
        "  block  Block   t = x[i] ...                   4",
        "  gap    Gap     [GAP] before `x[i] = t * 2.0`  5",
        "  stmt   Assign  x[i] = t * 2.0                 5",
    ]
    lines = str(f).splitlines()
    assert lines[3].strip() == "t = x[i]" and lines[4].strip() == "x[i] = t * 2.0"


def test_arguments_bind_by_position_keyword_and_default() -> None:
    e = f.find("t * 2.0")
    p, c = touch(f, "t")
    assert p.step().args == ("t",) and p.step().kwargs == () and c.exprs == ()  # type: ignore[union-attr]
    p, c = touch(f, buf="t", exprs=[e])
    step = p.step()
    assert step is not None and step.args == () and step.kwargs == (("buf", "t"), ("exprs", [e]))
    assert step.kw_inputs[1] == ("exprs", (e,)) and c.exprs[0].loc == e.loc
    p, _ = touch(f, "t", exprs=())
    assert p.step().kwargs == (("exprs", ()),)  # type: ignore[union-attr]
    with pytest.raises(CursorError, match="touch: multiple values for argument 'buf'"):
        touch(f, "t", buf="t")
    with pytest.raises(CursorError, match="touch: got an unexpected keyword argument 'bogus'"):
        touch(f, "t", bogus=1)
    with pytest.raises(CursorError, match="touch: too many positional arguments"):
        touch(f, "t", (), 3)


_RECEIVED: list[object] = []


@primitive
def receive(proc: Proc, buf: Buffer) -> Rewrite[BufCursors]:
    _RECEIVED.append(buf)
    return Editor(proc.ir()).done(BufCursors, buffer=buf.loc, exprs=(), nothing=NoLoc("n/a"))


def test_a_cursor_of_this_version_is_used_as_it_is() -> None:
    c = f.find_alloc_or_arg("t")
    _RECEIVED.clear()
    receive(f, c)
    assert _RECEIVED[0] is c  # nothing to find or forward
    p, _ = insert_pass(f, f.find("t = _").before())
    receive(p, c)  # from the parent version: forwarded
    got = _RECEIVED[1]
    assert isinstance(got, AllocCursor) and got.proc() is p and got.node() is c.node()
    with pytest.raises(CursorError, match="wants a Alloc or Arg cursor"):
        receive(f, f.find("t = _"))


def test_a_pass_inserted_needs_no_walk_in_the_default_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from cursched.ir import verify as verify_mod
    from cursched.ir import verify_step as step_mod

    walks: list[str] = []
    real_step, real_full = step_mod.verify_step, verify_mod.verify_proc
    monkeypatch.setattr(step_mod, "verify_step", lambda *a: walks.append("step") or real_step(*a))
    monkeypatch.setattr(
        verify_mod,
        "verify_proc",
        lambda p, memo=True: walks.append("full") or real_full(p, memo=memo),
    )
    p, c = insert_pass(f, f.find("t = _").before())
    assert walks == [] and verify_mod.known_valid(p.ir()) and c.stmt.kind() == "Pass"
    delete_pass(p, c.stmt)  # any other edit is verified
    assert walks == ["step"]
    with pytest.raises(IRVerificationError, match="break_ir made v1 of f: "):
        break_ir(f, f.find_loop("i"))  # an inserted statement that is not `pass`
    saved = settings.verify_mode
    settings.verify_mode = "full"
    try:
        insert_pass(f, f.find("t = _").before())
    finally:
        settings.verify_mode = saved
    assert walks == ["step", "step", "full"]


@proc
def three(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        x[i] = 1.0
    for j in seq(0, n):
        y[j] = 2.0
    for k in seq(0, n):
        z[k] = 3.0


def test_top_shared_reads_where_the_step_edited(monkeypatch: pytest.MonkeyPatch) -> None:
    from cursched import parallelize_loop, reorder_stmts
    from cursched.ir import verify_step as step_mod
    from cursched.primitives.registry import top_shared

    def top(p: Proc) -> tuple[int, int] | None:
        step, parent = p.step(), p.parent()
        assert step is not None and parent is not None
        return top_shared(step.fmap, p.ir(), parent.ir())

    assert top(insert_pass(three, three.find_loop("j").after())[0]) == (2, 1)  # a splice
    assert top(parallelize_loop(three, "j")[0]) == (1, 1)  # in place (retag)
    assert top(insert_pass(three, three.find("y[j] = _").after())[0]) == (1, 1)  # below j
    assert top(reorder_stmts(three, three.find_loop("i").expand(0, 1))[0]) is None  # a move
    # the top block is not scanned where the map says what it keeps; below it, it is
    scanned: list[int] = []
    real = step_mod._shared
    monkeypatch.setattr(step_mod, "_shared", lambda a, b: scanned.append(len(a)) or real(a, b))
    p, _ = parallelize_loop(three, "k")
    assert scanned == [] and p.ir().body[2].mode == "par"
    insert_pass(three, three.find("y[j] = _").after())  # only pass: no walk at all
    delete_pass(insert_pass(three, three.find("y[j] = _").after())[0], "pass")
    assert scanned == [1]  # j's body (one statement again), not the top block of 3


@proc
def nested_alloc(n: size, x: f32[n, 4] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = 0.0
    for i in seq(0, n):
        for j in seq(0, 4):
            t: f32 @ DRAM
            t = x[i, j]
            x[i, j] = t * 2.0
    for i in seq(0, n):
        y[i] = 1.0


def test_top_shared_of_a_move_inside_one_statement() -> None:
    from cursched import lift_alloc
    from cursched.primitives.registry import top_shared

    p, _ = lift_alloc(nested_alloc, "t")  # out of j, still inside the second loop
    step, parent = p.step(), p.parent()
    assert step is not None and parent is not None
    assert top_shared(step.fmap, p.ir(), parent.ir()) == (1, 1)
    q, _ = lift_alloc(p, "t")  # out of i: to the top block, which changes
    step = q.step()
    assert step is not None and top_shared(step.fmap, q.ir(), p.ir()) is None


def test_top_shared_of_several_edits_below_one_statement() -> None:
    from cursched import bind_expr
    from cursched.cursors.forwarding import ComposedMap, NodeMap
    from cursched.primitives.registry import top_shared

    p, _ = bind_expr(three, three.find("2.0"), "t")  # insert the binding, replace the use
    step, parent = p.step(), p.parent()
    assert step is not None and parent is not None and isinstance(step.fmap, ComposedMap)
    assert top_shared(step.fmap, p.ir(), parent.ir()) == (1, 1)
    # the same kinds of edits under two top-level statements: the map says nothing
    old = parent.ir()
    apart = ComposedMap((NodeMap((("body", 0),)), NodeMap((("body", 2),))))
    assert top_shared(apart, old, old) is None
