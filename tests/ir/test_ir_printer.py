"""The printer on hand-built IR: every node kind, precedence, names, instructions and marks."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from ir_builders import (
    BOOL,
    F32,
    INDEX,
    INT,
    SIZE,
    alloc,
    arg,
    assign,
    c,
    iv,
    ld,
    loop,
    mkproc,
    op,
    pt,
    reduce,
    tensor,
    v,
    win,
)

from cursched.ir.memory import DRAM_STACK, SHARED
from cursched.ir.nodes import (
    STMT_TYPES,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    If,
    InstrInfo,
    Pass,
    ProcDef,
    Read,
    Scope,
    StrideExpr,
    USub,
    WindowStmt,
)
from cursched.ir.printer import BlockMark, print_expr, print_proc, print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_stmts
from cursched.ir.types import F64, I8, I32, UI8, UI16, R, Type

a, b, cc, d = Sym("a"), Sym("b"), Sym("c"), Sym("d")
A, B = v(a), v(b)
C = v(cc)
D = v(d)


def dedent(s: str) -> str:
    return textwrap.dedent(s).strip("\n")


# ------------------------------------------------------------------------------ precedence


@pytest.mark.parametrize(
    ("e", "text"),
    [
        (op("-", A, op("-", B, C)), "a - (b - c)"),
        (op("-", op("-", A, B), C), "a - b - c"),
        (op("+", A, op("+", B, C)), "a + (b + c)"),
        (op("+", op("+", A, B), C), "a + b + c"),
        (op("+", op("*", c(4), A), B), "4 * a + b"),
        (op("*", op("+", A, B), c(2)), "(a + b) * 2"),
        (op("*", c(2), op("-", A, B)), "2 * (a - b)"),
        (op("%", op("/", A, c(2)), c(3)), "a / 2 % 3"),
        (op("/", A, op("*", c(2), c(3))), "a / (2 * 3)"),
        (op("-", op("*", A, c(2)), op("/", B, c(4))), "a * 2 - b / 4"),
        (op("<", op("+", A, c(1)), B), "a + 1 < b"),
        (op("==", op("<", A, B), op("<", C, D)), "(a < b) == (c < d)"),
        (USub(op("+", A, B), INDEX), "-(a + b)"),
        (op("*", USub(A, INDEX), B), "-a * b"),
        (op("*", A, USub(B, INDEX)), "a * -b"),
        (USub(USub(A, INDEX), INDEX), "-(-a)"),
        (USub(c(-1), INT), "-(-1)"),
        (op("-", A, c(-1)), "a - -1"),
        (op("*", c(-1), A), "-1 * a"),
        (op("%", op("-", A, c(-3)), c(4)), "(a - -3) % 4"),
    ],
)
def test_precedence_and_associativity(e: Expr, text: str) -> None:
    assert print_expr(e) == text


def test_boolean_precedence_exactly() -> None:
    lt = op("<", A, B)
    assert print_expr(op("and", op("or", lt, lt), lt)) == "(a < b or a < b) and a < b"
    assert print_expr(op("or", lt, op("and", lt, lt))) == "a < b or a < b and a < b"
    assert print_expr(op("and", lt, op("and", lt, lt))) == "a < b and (a < b and a < b)"
    assert print_expr(op("and", op("and", lt, lt), lt)) == "a < b and a < b and a < b"


# ------------------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("value", "t", "text"),
    [
        (3, INT, "3"),
        (-7, INT, "-7"),
        (True, BOOL, "True"),
        (False, BOOL, "False"),
        (1.0, F32, "1.0"),
        (0.1, F64, "0.1"),
        (1e-05, F32, "1e-05"),
        (1.0000000000000002, F64, "1.0000000000000002"),
        (1e300, F64, "1e+300"),
        (float("inf"), F32, "inf"),
        (float("-inf"), F32, "-inf"),
        (-0.0, F32, "-0.0"),
        (2, F32, "2"),
    ],
)
def test_literals(value: int | float | bool, t: Type, text: str) -> None:
    e = Const(value, t)
    assert print_expr(e) == text
    if isinstance(value, float) and text not in ("inf", "-inf"):
        assert float(text) == value  # repr precision: the text reads back to the same float


def test_numpy_integers_print_as_integers() -> None:
    assert print_expr(Const(np.int64(7), INT)) == "7"  # type: ignore[arg-type]


def test_reads_windows_strides_externs() -> None:
    i, j = Sym("i"), Sym("j")
    assert print_expr(ld(a, v(i), op("+", v(j), c(1)))) == "a[i, j + 1]"
    w = win(a, F32, pt(v(i)), iv(c(0), c(8)), shape=(c(8),))
    assert print_expr(w) == "a[i, 0:8]"
    assert print_expr(StrideExpr(a, 1, INDEX)) == "stride(a, 1)"
    sel = Extern("select", (ld(a, v(i)), c(0.0), c(float("inf")), USub(ld(a, v(i)), F32)), F32)
    assert print_expr(sel) == "select(a[i], 0.0, inf, -a[i])"
    assert print_expr(Extern("relu", (op("+", ld(a, v(i)), c(1.0)),), F32)) == "relu(a[i] + 1.0)"


# -------------------------------------------------------------------------------- a proc


def _sample() -> tuple[ProcDef, ProcDef]:
    n, m, A_, x, t, s, i, j, w = (Sym(s) for s in ["n", "m", "A", "x", "t", "s", "i", "j", "w"])
    dst, src = Sym("dst"), Sym("src")
    wt = tensor(F32, c(8), window=True)
    callee = ProcDef(
        "copy8",
        (arg(dst, wt), arg(src, wt)),
        (),
        (loop(i, c(0), c(8), assign(dst, (v(i),), ld(src, v(i)))),),
        InstrInfo('{dst_data} = "{src_data}";\n', "#include <x.h>"),
    )
    body = [
        alloc(t, tensor(F32, c(4), c(16))),
        alloc(s, F32, DRAM_STACK),
        loop(
            i,
            c(0),
            v(n, SIZE),
            loop(
                j,
                c(0),
                v(m, SIZE),
                If(
                    op("<", v(i), c(2)),
                    (assign(x, (), op("*", USub(ld(A_, v(i), v(j)), F32), c(2.5))),),
                    (
                        If(
                            op("<", v(i), c(3)),
                            (
                                reduce(
                                    x, (), op("-", ld(A_, v(i), v(j)), op("-", v(x, F32), c(1.0)))
                                ),
                            ),
                            (Pass(),),
                        ),
                    ),
                ),
                mode="par",
            ),
            WindowStmt(w, win(A_, F32, pt(v(i)), iv(c(0), c(8)), shape=(c(8),))),
            Call(callee, (win(t, F32, pt(c(1)), iv(c(0), c(8)), shape=(c(8),)), Read(w, (), wt))),
            Scope(
                "kern",
                (
                    assign(
                        A_,
                        (op("+", op("*", c(4), v(i)), c(1)), StrideExpr(A_, 1, INDEX)),
                        Extern("expf", (v(s, F32),), F32),
                    ),
                ),
                target="cuda",
            ),
            Scope("plain", (Pass(),)),
        ),
    ]
    args = [
        arg(n, SIZE),
        arg(m, SIZE),
        arg(A_, tensor(F32, v(n, SIZE), v(m, SIZE))),
        arg(x, F32),
    ]
    preds = (op("and", op(">", v(n, SIZE), c(2)), op("==", op("%", v(m, SIZE), c(4)), c(0))),)
    return mkproc("foo", args, body, preds), callee


SAMPLE = dedent(
    """
    def foo(n: size, m: size, A: f32[n, m] @ DRAM, x: f32 @ DRAM):
        assert n > 2 and m % 4 == 0
        t: f32[4, 16] @ DRAM
        s: f32 @ DRAM_STACK
        for i in seq(0, n):
            for j in par(0, m):
                if i < 2:
                    x = -A[i, j] * 2.5
                elif i < 3:
                    x += A[i, j] - (x - 1.0)
                else:
                    pass
            w = A[i, 0:8]
            copy8(t[1, 0:8], w)
            with scope("kern", target="cuda"):
                A[4 * i + 1, stride(A, 1)] = expf(s)
            with scope("plain"):
                pass
    """
)


def test_every_statement_kind() -> None:
    p, _ = _sample()
    assert print_proc(p) == SAMPLE


def test_instruction_proc_prints_decorator_with_escaped_template() -> None:
    _, callee = _sample()
    assert print_proc(callee) == dedent(
        r"""
        @instr("{dst_data} = \"{src_data}\";\n", c_global="#include <x.h>")
        def copy8(dst: [f32][8] @ DRAM, src: [f32][8] @ DRAM):
            for i in seq(0, 8):
                dst[i] = src[i]
        """
    )
    plain = callee.replace(instr=InstrInfo("nop();"))
    assert print_proc(plain).splitlines()[0] == '@instr("nop();")'


def test_types_and_memories_of_arguments() -> None:
    syms = [Sym(n) for n in ("k", "f", "r", "q", "u", "h", "z", "g")]
    args = [
        arg(syms[0], INDEX),
        arg(syms[1], BOOL),
        arg(syms[2], R),
        arg(syms[3], tensor(I8, c(4))),
        arg(syms[4], tensor(UI8, c(2), c(3), window=True), SHARED),
        arg(syms[5], tensor(UI16, c(1))),
        arg(syms[6], I32),
        arg(syms[7], F64),
    ]
    text = print_proc(mkproc("types", args, [Pass()]))
    assert text.splitlines()[0] == (
        "def types(k: index, f: bool, r: R @ DRAM, q: i8[4] @ DRAM, u: [ui8][2, 3] @ SHARED, "
        "h: ui16[1] @ DRAM, z: i32 @ DRAM, g: f64 @ DRAM):"
    )


def test_empty_bodies_print_pass_except_after_asserts() -> None:
    n = Sym("n")
    assert print_proc(mkproc("e", [arg(n, SIZE)], [])) == "def e(n: size):\n    pass"
    p = mkproc("e", [arg(n, SIZE)], [], (op(">", v(n, SIZE), c(1)),))
    assert print_proc(p) == "def e(n: size):\n    assert n > 1"
    i = Sym("i")
    assert print_stmt(loop(i, c(0), c(4))) == "for i in seq(0, 4):\n    pass"
    assert print_stmt(If(op("<", v(i), c(2)), (), ())) == "if i < 2:\n    pass"


def test_print_stmt_indents_and_keeps_free_names() -> None:
    x, i = Sym("x"), Sym("i")
    s = loop(i, c(0), c(4), reduce(x, (v(i),), c(1.0)))
    assert print_stmt(s, indent=1) == "    for i in seq(0, 4):\n        x[i] += 1.0"


# --------------------------------------------------------------------------------- names


def test_same_named_arguments_are_made_unique() -> None:
    n1, n2 = Sym("n"), Sym("n")
    p = mkproc("f", [arg(n1, SIZE), arg(n2, SIZE)], [Pass()])
    assert print_proc(p).splitlines()[0] == "def f(n: size, n_1: size):"


def test_nested_loops_with_one_name_are_renamed_siblings_are_not() -> None:
    x, i1, i2, i3, i4 = Sym("x"), Sym("i"), Sym("i"), Sym("i"), Sym("i")
    inner = loop(i2, c(0), v(i1), reduce(x, (v(i1),), ld(x, v(i2))))
    body = [
        loop(i1, c(0), c(4), inner),
        loop(i3, c(0), c(4), assign(x, (v(i3),), c(0.0))),
        loop(i4, c(0), c(4), assign(x, (v(i4),), c(1.0))),
    ]
    p = mkproc("f", [arg(x, tensor(F32, c(4)))], body)
    assert print_proc(p) == dedent(
        """
        def f(x: f32[4] @ DRAM):
            for i in seq(0, 4):
                for i_1 in seq(0, i):
                    x[i] += x[i_1]
            for i in seq(0, 4):
                x[i] = 0.0
            for i in seq(0, 4):
                x[i] = 1.0
        """
    )


def test_renaming_skips_names_taken_by_visible_symbols() -> None:
    x, i1, i2, j = Sym("x"), Sym("i"), Sym("i"), Sym("i_1")
    body = [
        loop(
            i1,
            c(0),
            c(4),
            loop(i2, c(0), c(4), loop(j, c(0), c(4), reduce(x, (), op("+", v(i1), v(i2))))),
        )
    ]
    p = mkproc("f", [arg(x, INDEX)], [])
    text = print_proc(p.replace(body=tuple(body)))
    assert "for i_1 in seq(0, 4):" in text
    assert "for i_1_1 in seq(0, 4):" in text
    assert "x += i + i_1" in text


def test_allocation_shadowing_an_argument_is_renamed() -> None:
    t1, t2, i = Sym("t"), Sym("t"), Sym("i")
    body = [loop(i, c(0), c(2), alloc(t2, F32), assign(t2, (), ld(t1, v(i))))]
    p = mkproc("f", [arg(t1, tensor(F32, c(2)))], body)
    assert "        t_1: f32 @ DRAM\n        t_1 = t[i]" in print_proc(p)


def test_window_statement_name_is_bound_after_its_rhs() -> None:
    w1, w2 = Sym("w"), Sym("w")
    body = [WindowStmt(w2, win(w1, F32, iv(c(0), c(4)), shape=(c(4),)))]
    p = mkproc("f", [arg(w1, tensor(F32, c(8), window=True))], body)
    assert print_proc(p).splitlines()[1] == "    w_1 = w[0:4]"


def test_variables_named_like_used_externs_or_callees_are_renamed() -> None:
    relu_var, x = Sym("relu"), Sym("x")
    body = [
        alloc(relu_var, F32),
        assign(relu_var, (), Extern("relu", (v(x, F32),), F32)),
        assign(x, (), v(relu_var, F32)),
    ]
    p = mkproc("f", [arg(x, F32)], body)
    assert print_proc(p).splitlines()[1:] == [
        "    relu_1: f32 @ DRAM",
        "    relu_1 = relu(x)",
        "    x = relu_1",
    ]


def test_names_are_deterministic() -> None:
    p, _ = _sample()
    assert print_proc(p) == print_proc(p)


# --------------------------------------------------------------------------------- marks


def test_statement_mark() -> None:
    p, _ = _sample()
    text = print_proc(p, marks={(("body", 2), ("body", 0)): "stmt"})
    assert "        for j in par(0, m):  # <--" in text.splitlines()


def test_elif_statement_mark_goes_on_the_elif_line() -> None:
    p, _ = _sample()
    path = (("body", 2), ("body", 0), ("body", 0), ("orelse", 0))
    lines = print_proc(p, marks={path: "stmt"}).splitlines()
    assert "            elif i < 3:  # <--" in lines


def test_block_mark_frames_statements() -> None:
    p, _ = _sample()
    lines = print_proc(p, marks={(("body", 2), ("body", 1)): BlockMark(2)}).splitlines()
    k = lines.index("        # BLOCK START")
    assert lines[k + 1 : k + 4] == [
        "        w = A[i, 0:8]",
        "        copy8(t[1, 0:8], w)",
        "        # BLOCK END",
    ]


def test_block_mark_over_a_compound_statement_ends_after_its_body() -> None:
    p, _ = _sample()
    lines = print_proc(p, marks={(("body", 2), ("body", 3)): BlockMark(1)}).splitlines()
    k = lines.index("        # BLOCK START")
    assert lines[k + 1 : k + 4] == [
        '        with scope("kern", target="cuda"):',
        "            A[4 * i + 1, stride(A, 1)] = expf(s)",
        "        # BLOCK END",
    ]


def test_gap_marks_before_a_statement_and_at_the_end_of_a_block() -> None:
    p, _ = _sample()
    text = print_proc(p, marks={(("body", 0),): "gap", (("body", 2), ("body", 5)): "gap"})
    lines = text.splitlines()
    assert lines[2:4] == ["    [GAP]", "    t: f32[4, 16] @ DRAM"]
    assert lines[-1] == "        [GAP]"


def test_gap_in_an_elif_chain_prints_else_with_a_nested_if() -> None:
    p, _ = _sample()
    path = (("body", 2), ("body", 0), ("body", 0), ("orelse", 0))
    lines = print_proc(p, marks={path: "gap"}).splitlines()
    k = lines.index("            else:")
    assert lines[k + 1 : k + 3] == ["                [GAP]", "                if i < 3:"]


def test_gap_in_an_empty_else_branch() -> None:
    i = Sym("i")
    s = If(op("<", v(i), c(2)), (Pass(),), ())
    text = print_stmt(s, marks={(("orelse", 0),): "gap"})
    assert text == "if i < 2:\n    pass\nelse:\n    [GAP]\n    pass"


def test_expression_marks_are_underlined() -> None:
    p, _ = _sample()
    s = (("body", 2), ("body", 3), ("body", 0))
    marks = {
        (*s, ("idx", 0), ("lhs", -1)): "expr",
        (*s, ("rhs", -1)): "expr",
    }
    lines = print_proc(p, marks=marks).splitlines()
    k = lines.index("            A[4 * i + 1, stride(A, 1)] = expf(s)")
    assert lines[k + 1] == "              ^^^^^" + " " * 22 + "^^^^^^^"


def test_argument_and_window_marks() -> None:
    p, _ = _sample()
    call = (("body", 2), ("body", 2))
    marks = {
        (("args", 2),): "expr",
        (*call, ("args", 0), ("idx", 1)): "expr",
    }
    lines = print_proc(p, marks=marks).splitlines()
    assert lines[1] == "                          ^^^^^^^^^^^^^^^^^^^"
    k = lines.index("        copy8(t[1, 0:8], w)")
    assert lines[k + 1] == "                   ^^^"


def test_mark_on_a_window_statement_rhs_and_loop_bound() -> None:
    p, _ = _sample()
    marks = {
        (("body", 2), ("body", 1), ("rhs", -1), ("idx", 0)): "expr",
        (("body", 2), ("hi", -1)): "expr",
    }
    lines = print_proc(p, marks=marks).splitlines()
    assert lines[lines.index("    for i in seq(0, n):") + 1] == "                    ^"
    assert lines[lines.index("        w = A[i, 0:8]") + 1] == "              ^"


def test_a_mark_that_addresses_nothing_is_an_error() -> None:
    p, _ = _sample()
    with pytest.raises(LookupError):
        print_proc(p, marks={(("body", 9),): "stmt"})
    with pytest.raises(LookupError):
        print_proc(p, marks={(("body", 0),): "expr"})


def test_expression_printer_does_not_take_srcinfo_or_types_into_account() -> None:
    e1 = BinOp("+", Read(a, (), INDEX), Const(1, INT), INDEX)
    e2 = BinOp("+", Read(a, (), SIZE), Const(1, INT), SIZE)
    assert print_expr(e1) == print_expr(e2) == "a + 1"


def test_sample_covers_every_statement_kind() -> None:
    p, _ = _sample()
    kinds = {type(s) for s in walk_stmts(p.body)}
    assert kinds == set(STMT_TYPES)


def test_variables_named_like_a_callee_are_renamed() -> None:
    p, _ = _sample()
    clash = Sym("copy8")
    q = p.replace(body=(alloc(clash, F32), *p.body))
    assert print_proc(q).splitlines()[2] == "    copy8_1: f32 @ DRAM"
