"""``Proc.history()``: the schedule as a script that replays to an alpha-equivalent proc."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import cursched
from cursched import DRAM, delete_pass, insert_pass, rename, reorder_stmts
from cursched.cursors import Editor, ExprCursor, GapCursor
from cursched.cursors.edits import Rewrite
from cursched.ir.alpha import alpha_equal
from cursched.primitives.registry import PrimCursors, prim_cursors, primitive
from cursched.proc import Proc
from cursched.testing.plugin import Golden

from .procs import nest, two_loops
from .test_forwarding import commute_expr, scope, set_hi, small, unroll_loop

EXTRA = {
    "unroll_loop": unroll_loop,
    "commute_expr": commute_expr,
    "scope": scope,
    "set_hi": set_hi,
}


def replay(p: Proc) -> Proc:
    root = p
    while root.parent() is not None:
        root = root.parent()  # type: ignore[assignment]
    ns: dict[str, Any] = {root.name(): root, **EXTRA}
    exec(p.history(), ns)
    out = ns["p"]
    assert isinstance(out, Proc)
    return out


def s1() -> Proc:
    p, (stmt,) = insert_pass(two_loops, two_loops.find("x[_] = _").after())
    p, _ = delete_pass(p, stmt)
    return p


def s2() -> Proc:
    p, r = insert_pass(two_loops, two_loops.find_loop("j").before())
    p, r2 = insert_pass(p, r.stmt.after())
    p, _ = reorder_stmts(p, r2.stmt.expand(0, 1))
    p, _ = rename(p, "two_loops_v2")
    return p


def s3() -> Proc:
    p, r = reorder_stmts(two_loops, "x[_] = _; y[_] = _")
    p, _ = reorder_stmts(p, r.first.expand(0, 1))
    return p


def s4() -> Proc:
    p = two_loops
    for k in range(3):
        p, _ = rename(p, f"name{k}")
    return p


def s5() -> Proc:
    p, _r = insert_pass(nest, nest.find("s += t[0]").after())
    p, _ = insert_pass(p, nest.find_loop("i #1").body()[0].after())  # a v0 cursor, forwarded
    p, _ = delete_pass(p, nest.find("pass"))  # an older cursor again
    return p


def s6() -> Proc:
    p, r = unroll_loop(small, "i")
    p, r2 = reorder_stmts(p, r.copies[1], unsafe_skip_checks=True)
    p, _ = insert_pass(p, r2.second.after())
    return p


def s7() -> Proc:
    p, _r = commute_expr(small, "x[_] * _")
    p, r2 = scope(p, "x[3] = _", "tail")
    p, _ = insert_pass(p, r2.body[0].before())
    return p


def s8() -> Proc:
    p, r = set_hi(small, "i", 3)
    p, r2 = scope(p, r.loop.body(), "inner")
    p, r3 = insert_pass(p, r2.scope.after())  # type: ignore[attr-defined]
    p, _ = delete_pass(p, r3.stmt)
    return p


def s9() -> Proc:
    p, r = insert_pass(two_loops, two_loops.find("y[_] += _").before())
    p, r = insert_pass(p, r.stmt.before())
    p, _ = delete_pass(p, r.stmt)
    p, _ = reorder_stmts(p, p.find_loop("j").body())
    return p


def s10() -> Proc:
    p, r = scope(nest, nest.find_loop("j"), "copy")
    p, _ = insert_pass(p, r.scope.before())  # type: ignore[attr-defined]
    p, _ = rename(p, "nest2")
    return p


def s11() -> Proc:
    p, r = unroll_loop(small, small.find_loop("i"))
    p, r2 = scope(p, r.copies[0], "first")
    p, _r3 = scope(p, r.copies[1], "second")
    p, _ = insert_pass(p, r2.body.after())  # type: ignore[attr-defined]
    return p


SCHEDULES: list[Callable[[], Proc]] = [s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
def test_history_replays(schedule: Callable[[], Proc]) -> None:
    p = schedule()
    assert p.version >= 2
    q = replay(p)
    assert q.version == p.version
    assert alpha_equal(q.ir(), p.ir()), p.history()
    assert q.history() == p.history()


def test_history_text(golden: Golden) -> None:
    golden.check(s6().history(), name="s6")
    golden.check(s2().history(), name="s2")


def test_history_uses_result_variables_until_overwritten() -> None:
    text = s9().history()
    # `stmt` of step 2 is passed to delete_pass by name ...
    assert "p, _ = delete_pass(p, stmt)" in text
    text = s1().history()
    assert text.splitlines()[-1] == "p, _ = delete_pass(p, stmt)"


def test_history_of_original_is_empty_schedule() -> None:
    text = two_loops.history()
    assert text.splitlines()[-1] == "p = two_loops"
    ns: dict[str, Any] = {"two_loops": two_loops}
    exec(text, ns)
    assert ns["p"] is two_loops


def test_primitives_are_exported() -> None:
    for name in ("insert_pass", "delete_pass", "reorder_stmts", "rename"):
        assert getattr(cursched, name) is getattr(cursched.primitives, name)
        assert name in cursched.__all__


@prim_cursors
class NoteCursors(PrimCursors):
    exprs: tuple[ExprCursor, ...]


@primitive
def note(
    proc: Proc, exprs: tuple[ExprCursor, ...], other: object = None, at: GapCursor | None = None
) -> Rewrite[NoteCursors]:
    """A no-op taking a tuple of cursors, a plain value and an optional keyword cursor."""
    ed = Editor(proc.ir())
    return ed.done(NoteCursors, exprs=tuple(e.loc for e in exprs))


def test_history_tuples_keywords_and_other_values() -> None:
    p, r = note(small, ("x[_] * _", small.find("2.0")), other=float("inf"))
    p, _ = insert_pass(p, p.find("x[3] = _").before())
    p, _ = note(p, r.exprs, other=two_loops, at=small.find("x[3] = _").after())
    text = p.history()
    assert "note(p, ('x[_] * _', p.at('body[0].body[1].rhs.rhs')), other=float('inf'))" in text
    assert "note(p, exprs, other=two_loops, at=p.at('body[2]').after())" in text
    assert "# other procs it uses (bind them first): two_loops" in text
    ns: dict[str, Any] = {"small": small, "two_loops": two_loops, "note": note}
    exec(text, ns)
    assert alpha_equal(ns["p"].ir(), p.ir()) and ns["p"].history() == text


@cursched.proc
def grid(n: size, m: size, A: f32[n, m] @ DRAM):
    assert n % 2 == 0
    assert m % 4 == 0
    for i in seq(0, n):
        for j in seq(0, m):
            A[i, j] = 1.0


def test_history_keeps_a_result_that_a_later_step_would_shadow() -> None:
    from cursched import reorder_loops, split

    p, first = split(grid, grid.find_loop("i"), 2, ("io", "ii"), tail="perfect")
    p, _second = split(p, p.find_loop("j"), 4, ("jo", "ji"), tail="perfect")
    p, _ = reorder_loops(p, first.inner)  # the first split's `inner`, after the second's
    text = p.history()
    # the first `inner` stays reachable under its own name instead of a positional locator
    assert "reorder_loops(p, inner)" in text, text
    assert "inner_1" in text, text
    assert alpha_equal(replay(p).ir(), p.ir())
