"""Each language feature parses to the expected IR."""

# Window annotations like [f32][n] index a list with a tuple, which ruff flags.
# ruff: noqa: RUF016

from __future__ import annotations

import math

import numpy as np
import pytest

from cursched import DRAM, DRAM_STACK, Memory, Proc, instr, proc
from cursched.externs import expf as my_exp
from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_equal
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Extern,
    For,
    If,
    Interval,
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.printer import print_proc
from cursched.ir.types import BOOL, F32, F64, I8, I32, INDEX, INT, SIZE, TensorType

TILE = 4
SCALE = 0.5
NP_TILE = np.int64(8)
NP_HALF = np.float32(1.5)


class Vec(Memory):
    """A memory defined by the tests."""


def ir_of(text: str, **env: object) -> ProcDef:
    return parse_source(text, {"Vec": Vec, "DRAM": DRAM, **env})


# ------------------------------------------------------------------------------ parameters


@proc
def params(n: size, A: f32[n, TILE] @ DRAM, i: index, b: bool, x: f64, W: [i8][n] @ Vec):
    pass


def test_parameters() -> None:
    p = params.ir()
    n, A, i, b, x, W = (a.sym for a in p.args)
    assert [a.sym.name for a in p.args] == ["n", "A", "i", "b", "x", "W"]
    assert [p.args[k].type for k in (0, 2, 3, 4)] == [SIZE, INDEX, BOOL, F64]
    assert [a.mem for a in p.args] == [None, DRAM, None, None, DRAM, Vec]
    a_type = p.args[1].type
    assert isinstance(a_type, TensorType) and not a_type.window and a_type.elem == F32
    # the shape names the size, and the global constant is inlined
    assert isinstance(a_type.shape[0], Read) and a_type.shape[0].sym is n
    assert a_type.shape[1] == Const(TILE, INT)
    w_type = p.args[5].type
    assert isinstance(w_type, TensorType) and w_type.window and w_type.elem == I8
    assert p.body == (Pass(),)
    assert len({n, i, b, x, A, W}) == 6


# ------------------------------------------------------------------------------- asserts


@proc
def asserts(n: size, m: size, A: [f32][n, m]):
    """A docstring is skipped."""
    assert n % 4 == 0 and m >= 2
    assert stride(A, 1) == 1
    assert 1 <= m < 64 or n == 8
    pass


def test_asserts() -> None:
    p = asserts.ir()
    n, m, A = (a.sym for a in p.args)
    first, second, third = p.preds
    assert isinstance(first, BinOp) and first.op == "and" and first.type == BOOL
    assert isinstance(first.lhs, BinOp) and first.lhs.op == "=="
    mod = first.lhs.lhs
    assert isinstance(mod, BinOp) and mod.op == "%" and mod.type == INDEX
    assert mod.lhs == Read(n, (), SIZE) and mod.rhs == Const(4, INT)
    assert second == BinOp("==", StrideExpr(A, 1, INDEX), Const(1, INT), BOOL)
    # a comparison chain is the `and` of its comparisons
    assert isinstance(third, BinOp) and third.op == "or"
    chain = third.lhs
    assert chain == BinOp(
        "and",
        BinOp("<=", Const(1, INT), Read(m, (), SIZE), BOOL),
        BinOp("<", Read(m, (), SIZE), Const(64, INT), BOOL),
        BOOL,
    )
    assert p.body == (Pass(),)


# ----------------------------------------------------------------------- loops and branches


@proc
def loops(n: size, A: f32[n]):
    for i in seq(0, n):
        A[i] = 0.0
    for i in par(1, n - 1):
        if i < 2:
            A[i] += 1.0
        elif i == 3:
            pass
        else:
            A[i] = -A[i]


def test_loops_and_branches() -> None:
    p = loops.ir()
    n, A = (a.sym for a in p.args)
    l1, l2 = p.body
    assert isinstance(l1, For) and isinstance(l2, For)
    assert (l1.mode, l2.mode) == ("seq", "par")
    assert l1.lo == Const(0, INT) and l1.hi == Read(n, (), SIZE)
    assert l2.hi == BinOp("-", Read(n, (), SIZE), Const(1, INT), INDEX)
    # the second loop's i is a different variable from the first's
    assert l1.iter is not l2.iter and l1.iter.name == l2.iter.name == "i"
    assert l1.body == (Assign(A, (Read(l1.iter, (), INDEX),), Const(0.0, F32)),)
    (branch,) = l2.body
    assert isinstance(branch, If)
    i = Read(l2.iter, (), INDEX)
    assert branch.cond == BinOp("<", i, Const(2, INT), BOOL)
    assert branch.body == (Reduce(A, (i,), Const(1.0, F32)),)
    (elif_,) = branch.orelse
    assert isinstance(elif_, If) and elif_.body == (Pass(),)
    assert elif_.orelse == (Assign(A, (i,), USub(Read(A, (i,), F32), F32)),)


def test_if_without_else() -> None:
    p = ir_of("def f(b: bool):\n    if b:\n        pass\n")
    (branch,) = p.body
    assert isinstance(branch, If) and branch.orelse == ()
    assert branch.cond == Read(p.args[0].sym, (), BOOL)


# --------------------------------------------------------------------- allocations and data


@proc
def data(n: size, x: f32, C: i32[n], D: i8[n]):
    t: f32[4, n] @ DRAM_STACK
    m: f32
    m = -inf
    m = x * 2 + SCALE  # noqa: F841 - procs are parsed, never run by Python
    t[0, 0] = inf
    for i in seq(0, n):
        C[i] += D[i] * D[i] % 3


def test_allocations_and_data_types() -> None:
    p = data.ir()
    n, x, C, D = (a.sym for a in p.args)
    t_alloc, m_alloc, a1, a2, a3, loop = p.body
    assert isinstance(t_alloc, Alloc) and t_alloc.mem is DRAM_STACK
    assert t_alloc.type == TensorType(F32, (Const(4, INT), Read(n, (), SIZE)))
    assert m_alloc == Alloc(m_alloc.sym, F32, DRAM)
    m = m_alloc.sym
    assert a1 == Assign(m, (), Const(-math.inf, F32))
    # literals and inlined Python floats take the destination's type
    assert a2 == Assign(
        m,
        (),
        BinOp("+", BinOp("*", Read(x, (), F32), Const(2, F32), F32), Const(SCALE, F32), F32),
    )
    assert isinstance(a3, Assign) and a3.rhs == Const(math.inf, F32)
    assert isinstance(loop, For)
    (red,) = loop.body
    assert isinstance(red, Reduce) and red.sym is C
    i = Read(loop.iter, (), INDEX)
    # reads keep their element type (i8); operations take the destination's (i32)
    d = Read(D, (i,), I8)
    assert red.rhs == BinOp("%", BinOp("*", d, d, I32), Const(3, I32), I32)


def test_sibling_allocations_are_distinct() -> None:
    p = ir_of(
        "def f(n: size):\n"
        "    for i in seq(0, n):\n        t: f32\n        t = 1.0\n"
        "    for j in seq(0, n):\n        t: f32\n        t = 2.0\n"
    )
    l1, l2 = p.body
    assert isinstance(l1, For) and isinstance(l2, For)
    a1, s1 = l1.body
    a2, s2 = l2.body
    assert isinstance(a1, Alloc) and isinstance(a2, Alloc) and a1.sym is not a2.sym
    assert isinstance(s1, Assign) and s1.sym is a1.sym
    assert isinstance(s2, Assign) and s2.sym is a2.sym


def test_shadowing_an_outer_name() -> None:
    p = ir_of("def f(x: f32):\n    for i in seq(0, 2):\n        x: f64\n        x = 1.0\n")
    (loop,) = p.body
    assert isinstance(loop, For)
    alloc, assign = loop.body
    assert isinstance(alloc, Alloc) and alloc.sym is not p.args[0].sym
    assert isinstance(assign, Assign) and assign.sym is alloc.sym and assign.rhs.type == F64


# ----------------------------------------------------------------------- windows and stride


@proc
def windows(n: size, A: f32[n, 16], k: index):
    assert k >= 0 and k < n and n > 1
    w = A[k, 2:10]
    v = A[:, 3]
    u = A[1:n, 4:]
    w[0] = v[1]
    u[0, k % 12] = 0.0
    assert stride(A, 0) == 16


def test_windows() -> None:
    p = windows.ir()
    n, A, k = (a.sym for a in p.args)
    ws, vs, us, write, write2 = p.body
    assert isinstance(ws, WindowStmt) and isinstance(vs, WindowStmt) and isinstance(us, WindowStmt)
    nr = Read(n, (), SIZE)
    assert ws.rhs == WindowExpr(
        A,
        (Point(Read(k, (), INDEX)), Interval(Const(2, INT), Const(10, INT))),
        TensorType(F32, (Const(8, INT),), window=True),
    )
    # A[:, 3] is A[0:n, 3]: the omitted bounds are 0 and the dimension's size
    assert vs.rhs == WindowExpr(
        A, (Interval(Const(0, INT), nr), Point(Const(3, INT))), TensorType(F32, (nr,), True)
    )
    assert us.rhs.type == TensorType(
        F32, (BinOp("-", nr, Const(1, INT), INDEX), Const(12, INT)), window=True
    )
    assert write == Assign(ws.sym, (Const(0, INT),), Read(vs.sym, (Const(1, INT),), F32))
    assert isinstance(write2, Assign) and write2.sym is us.sym
    assert p.preds[1] == BinOp("==", StrideExpr(A, 0, INDEX), Const(16, INT), BOOL)


# ------------------------------------------------------------------------- calls and scopes


@proc
def callee(n: size, src: [f32][n], dst: f32[n], s: f32, b: bool):
    pass


@proc
def caller(n: size, A: f32[n, 8], B: f32[8], s: f32):
    for i in seq(0, n):
        callee(8, A[i, :], B, A[i, 0], i < 2)
        callee(8, B, B, s, True)
    with scope("outer"):  # noqa: SIM117 - nested scopes are what is tested
        with scope("k", target="cuda"):
            pass


def test_calls() -> None:
    p = caller.ir()
    _n, A, B, s = (a.sym for a in p.args)
    loop, sc = p.body
    assert isinstance(loop, For)
    c1, c2 = loop.body
    assert isinstance(c1, Call) and isinstance(c2, Call)
    assert c1.proc is callee.ir() and c2.proc is callee.ir()
    i = Read(loop.iter, (), INDEX)
    size8, win, tensor, elem, cond = c1.args
    assert size8 == Const(8, INT)
    assert isinstance(win, WindowExpr) and win.sym is A and win.type.window
    assert tensor == Read(B, (), TensorType(F32, (Const(8, INT),)))
    assert elem == Read(A, (i, Const(0, INT)), F32)
    assert cond == BinOp("<", i, Const(2, INT), BOOL)
    # a whole tensor goes to a window parameter too; a scalar buffer by reference
    assert c2.args[1] == tensor and c2.args[3] == Read(s, (), F32)
    assert c2.args[4] == Const(True, BOOL)
    assert sc == Scope("outer", (Scope("k", (Pass(),), "cuda"),))


# ------------------------------------------------------------------------------- externs


@pytest.mark.parametrize("name", sorted(EXTERNS))
def test_every_extern(name: str) -> None:
    arity = EXTERNS[name].arity
    args = ", ".join(["x"] * arity)
    p = ir_of(f"def f(x: f32, y: f64):\n    y = {name}({args})\n")
    (assign,) = p.body
    assert isinstance(assign, Assign)
    x = Read(p.args[0].sym, (), F32)
    assert assign.rhs == Extern(name, (x,) * arity, F64)


@proc
def imported_extern(x: f32):
    x = my_exp(x) + NP_HALF


def test_imported_extern_alias_and_numpy_constant() -> None:
    (assign,) = imported_extern.ir().body
    x = Read(imported_extern.ir().args[0].sym, (), F32)
    assert isinstance(assign, Assign)
    assert assign.rhs == BinOp("+", Extern("expf", (x,), F32), Const(1.5, F32), F32)


def test_local_variable_named_like_an_extern() -> None:
    p = ir_of("def f(relu: f32):\n    relu = relu\n")
    (assign,) = p.body
    assert isinstance(assign, Assign) and isinstance(assign.rhs, Read)


# --------------------------------------------------------------------------- instructions


@instr("{dst_data}[0] = {src_data}[0];", "#include <x.h>")
def copy1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
    dst[0] = src[0]


def test_instr_decorator_and_source() -> None:
    info = copy1.ir().instr
    assert info is not None and info.c_template == "{dst_data}[0] = {src_data}[0];"
    assert info.c_global == "#include <x.h>"
    p = ir_of('@instr("f();")\ndef g(n: size):\n    pass\n')
    assert p.instr is not None and p.instr.c_template == "f();" and p.instr.c_global == ""
    q = ir_of("@proc\ndef g(n: size):\n    pass\n")
    assert q.instr is None
    r = ir_of('@instr("f();", c_global="int g;")\ndef g(n: size):\n    pass\n')
    assert r.instr is not None and r.instr.c_global == "int g;"


# -------------------------------------------------------------------------- control typing


def test_control_types() -> None:
    p = ir_of(
        "def f(n: size, k: index, A: f32[n]):\n"
        "    A[2 + 3 - 5] = 1.0\n"
        "    A[k * 2 - -1] = 1.0\n"
        "    A[(n - 1) / 2] = 1.0\n"
    )
    s1, s2, s3 = p.body
    assert isinstance(s1, Assign) and s1.idx[0].type == INT
    assert isinstance(s2, Assign) and s2.idx[0] == BinOp(
        "-", BinOp("*", Read(p.args[1].sym, (), INDEX), Const(2, INT), INDEX), Const(-1, INT), INDEX
    )
    assert isinstance(s3, Assign) and isinstance(s3.idx[0], BinOp) and s3.idx[0].op == "/"


def test_python_constants_of_closure_and_globals() -> None:
    width = 3

    @proc
    def f(A: f32[8]):
        A[width] = SCALE * NP_TILE

    (assign,) = f.ir().body
    assert isinstance(assign, Assign)
    assert assign.idx == (Const(3, INT),)
    assert assign.rhs == BinOp("*", Const(SCALE, F32), Const(8, F32), F32)


def test_memory_from_env_overrides_nothing_builtin() -> None:
    p = ir_of("def f(A: f32[4] @ Vec, B: f32[4] @ DRAM_STATIC):\n    pass\n")
    assert p.args[0].mem is Vec and p.args[1].mem.__name__ == "DRAM_STATIC"


# ------------------------------------------------------------------------------ round trip


@pytest.mark.parametrize(
    "p",
    [params, asserts, loops, data, windows, callee, imported_extern, copy1],
    ids=lambda p: p.name(),
)
def test_printout_parses_back(p: Proc) -> None:
    text = print_proc(p.ir())
    again = parse_source(text, {**globals(), "callee": callee})
    assert alpha_equal(p.ir(), again), text
    assert print_proc(again) == text


def test_docstring_only_body_is_pass() -> None:
    p = ir_of('def f(n: size):\n    """Nothing to do."""\n')
    assert p.body == (Pass(),)
    again = parse_source(print_proc(p), {})
    assert alpha_equal(p, again)
