"""Regression tests for the findings of the soundness fuzzer (``test_soundness_fuzz.py``).

Each test is the minimised finding as written in the bug list (its id in the test name): the
proc, the primitive call, and the property that failed (a crash, an ill-formed result, a
printout that does not parse back).
"""

from __future__ import annotations

import pytest

from cursched import (
    SchedulingError,
    extract_subproc,
    remove_loop,
    rewrite_expr,
    set_window,
    split,
    stage_mem,
    unroll_loop,
)
from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_equal
from cursched.ir.nodes import For, Pass
from cursched.primitives.buffers.buffer_attrs import SetWindowCallError
from cursched.primitives.buffers.dims_split import DivideDimNotDivisibleError, divide_dim
from cursched.primitives.exprs.binds import inline_assign
from cursched.testing import assert_equivalent
from tests.primitives.fuzzgen import ENV
from tests.primitives.test_soundness_fuzz import check_cursors, check_roundtrip, make

HEAD = (
    "def fz(n: size, x: f32[n + 8] @ DRAM, y: f32[n + 8] @ DRAM, z: f32[4, n + 8] @ DRAM, "
    "s: f32 @ DRAM):\n"
)


def test_f2_inline_assign_leaves_a_pass_in_a_body_it_empties() -> None:
    p = make(
        HEAD + "    assert n >= 1\n"
        "    for i in seq(0, n):\n"
        "        t: f32[4] @ DRAM\n"
        "        for a in seq(0, 4):\n"
        "            t[a] = 1.0\n"
    )
    q, _ = inline_assign(p, p.find("t[_] = _"))
    inner = q.find_loop("a").loop()
    assert isinstance(inner, For) and len(inner.body) == 1 and isinstance(inner.body[0], Pass)
    check_roundtrip(q)
    # the primitives that crashed on the empty body it used to leave
    for step in (
        lambda: unroll_loop(q, q.find_loop("a")),
        lambda: split(q, q.find_loop("a"), 2, ("ao", "ai"), tail="cut"),
        lambda: remove_loop(q, q.find_loop("a")),
    ):
        try:
            r, cursors = step()
        except SchedulingError:
            continue
        check_cursors(r, cursors)
        check_roundtrip(r)
        assert_equivalent(p, r, trials=2)


def test_f5_divide_dim_of_a_constant_size_is_refused_in_code_that_never_runs() -> None:
    p = make(
        "def fz(n: size, x: f32[n + 8] @ DRAM):\n"
        "    assert n >= 1\n"
        "    for i in seq(n, n):\n"
        "        c: f32[2] @ DRAM\n"
        "        c[0] = 1.0\n"
        "        x[i] = c[0]\n"
    )
    with pytest.raises(DivideDimNotDivisibleError):
        divide_dim(p, p.find("c: _"), 0, 4)


def test_f1_stage_mem_of_a_point_refuses_a_block_passing_a_window_of_it() -> None:
    p = make(HEAD + "    assert n >= 1\n    for i in seq(0, n):\n        addone(1, x[i:i + 1])\n")
    with pytest.raises(SchedulingError):
        stage_mem(p, p.find_loop("i").body(), "x[i]", "stg")


def test_f6_set_window_refuses_a_parameter_passed_whole_to_a_contiguous_one() -> None:
    p = make("def fz(n: size, x: f32[n + 8] @ DRAM):\n    assert n >= 1\n    x[0] = 1.0\n")
    q, c = extract_subproc(p, p.body()[0], "sub")
    with pytest.raises(SetWindowCallError):
        set_window(q, q.args()[1], True)
    r, _ = set_window(c.subproc, c.subproc.args()[1], True)  # the callee itself may change
    check_roundtrip(r)


def test_f4_rewrite_expr_types_a_new_control_expression_as_the_frontend_does() -> None:
    p = make(
        "def fz(n: size, x: f32[n + 8] @ DRAM):\n    for i in seq(0, n):\n        x[i] = 1.0\n"
    )
    q, _ = rewrite_expr(p, p.find_loop("i").hi(), "0 + n")
    assert alpha_equal(parse_source(str(q), ENV), q.ir())  # strictly, types included


def test_f3_set_precision_retypes_the_literals_and_operations_of_its_writes() -> None:
    from cursched import set_precision
    from cursched.ir.nodes import Assign, Const, Extern, Reduce

    p = make(
        "def fz(n: size, x: f64[n + 8] @ DRAM, y: f32[n] @ DRAM):\n"
        "    t: f32 @ DRAM\n"
        "    t = 0.1\n"
        "    for i in seq(0, n):\n"
        "        t += expf(y[i] * 2.0)\n"
        "    x[0] = t\n"
    )
    q, _ = set_precision(p, p.find("t: _"), "f64")
    init, loop = q.ir().body[1], q.ir().body[2]
    assert isinstance(init, Assign) and isinstance(init.rhs, Const)
    assert init.rhs.type.name == "f64"  # type: ignore[union-attr]
    assert isinstance(loop, For) and isinstance(loop.body[0], Reduce)
    assert isinstance(loop.body[0].rhs, Extern)
    assert loop.body[0].rhs.type.name == "f64"  # type: ignore[union-attr]
    # exact round trip: the printout computes in the precision the IR computes in
    assert alpha_equal(parse_source(str(q), dict(ENV)), q.ir())
