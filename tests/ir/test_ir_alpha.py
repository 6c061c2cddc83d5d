"""alpha_equal / alpha_diff: equal up to renaming of bound symbols, srcinfo ignored."""

from __future__ import annotations

from ir_builders import (
    F32,
    INDEX,
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
    tensor,
    v,
    win,
)

from cursched.errors import SrcInfo
from cursched.ir.alpha import alpha_diff, alpha_equal
from cursched.ir.memory import DRAM, DRAM_STACK
from cursched.ir.nodes import (
    Alloc,
    Call,
    Const,
    Expr,
    Extern,
    InstrInfo,
    ProcDef,
    Read,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import subst_stmt
from cursched.ir.types import F64, I32


def _make(
    *,
    iter_name: str = "i",
    swap: bool = False,
    mem: type = DRAM,
    elem: object = F32,
    const: int | float = 1.0,
    mode: str = "seq",
    srcinfo: SrcInfo | None = None,
) -> ProcDef:
    """``f(n, x)``: ``t`` allocated, then a loop with two statements over ``x``."""
    n, x, t, i = Sym("n"), Sym("x"), Sym("t"), Sym(iter_name)
    assert elem in (F32, F64)
    e = F32 if elem is F32 else F64
    s1: Stmt = assign(x, (v(i),), Const(const, e, srcinfo=srcinfo))
    s2: Stmt = assign(t, (), ld(x, v(i), t=e))
    body = (s2, s1) if swap else (s1, s2)
    return mkproc(
        "f",
        [arg(n, SIZE), arg(x, tensor(e, v(n, SIZE)))],
        [alloc(t, e, mem), loop(i, c(0), v(n, SIZE), *body, mode=mode)],
    )


def test_a_proc_equals_itself_and_a_fresh_copy() -> None:
    p = _make()
    assert alpha_equal(p, p)
    assert alpha_equal(p, _make())
    assert alpha_diff(p, _make()) is None


def test_renamed_loop_variable_is_equal() -> None:
    assert alpha_equal(_make(iter_name="i"), _make(iter_name="k"))


def test_renamed_allocation_is_equal() -> None:
    p = _make()
    t2 = Sym("other")
    alloc_ = p.body[0]
    assert isinstance(alloc_, Alloc)
    q = p.replace(body=tuple(subst_stmt(s, {alloc_.sym: t2}) for s in p.body))
    assert q.body[0] is not p.body[0]
    assert alpha_equal(p, q)


def test_srcinfo_is_ignored() -> None:
    assert alpha_equal(_make(), _make(srcinfo=SrcInfo("x.py", 3, 4, "text")))


def test_swapped_statements_differ() -> None:
    diff = alpha_diff(_make(), _make(swap=True))
    assert diff is not None
    assert diff.startswith("body[1].body[0]")


def test_different_memory_differs() -> None:
    diff = alpha_diff(_make(), _make(mem=DRAM_STACK))
    assert diff is not None and "memory" in diff


def test_different_types_differ() -> None:
    diff = alpha_diff(_make(), _make(elem=F64))
    assert diff is not None and "args[1].type" in diff


def test_different_constants_differ() -> None:
    assert not alpha_equal(_make(const=1.0), _make(const=2.0))
    # int 1 and float 1.0 are different literals, and so are 0.0 and -0.0
    assert not alpha_equal(_make(const=1.0), _make(const=1))
    assert not alpha_equal(_make(const=0.0), _make(const=-0.0))
    assert alpha_equal(_make(const=float("nan")), _make(const=float("nan")))


def test_loop_mode_differs() -> None:
    diff = alpha_diff(_make(), _make(mode="par"))
    assert diff is not None and "loop mode" in diff


def test_argument_names_count() -> None:
    n1, n2 = Sym("n"), Sym("m")
    p = mkproc("f", [arg(n1, SIZE)], [])
    q = mkproc("f", [arg(n2, SIZE)], [])
    diff = alpha_diff(p, q)
    assert diff is not None and "args[0]" in diff


def test_proc_name_and_instr_count() -> None:
    p = _make()
    assert not alpha_equal(p, p.replace(name="g"))
    assert not alpha_equal(p, p.replace(instr=InstrInfo("x();")))
    assert alpha_equal(p.replace(instr=InstrInfo("x();")), p.replace(instr=InstrInfo("x();")))


def test_symbol_correspondence_is_one_to_one() -> None:
    """Two loops over distinct variables are not equal to two reads of one variable."""
    n, x, i, j = Sym("n"), Sym("x"), Sym("i"), Sym("j")
    args = [arg(n, SIZE), arg(x, tensor(F32, v(n, SIZE), v(n, SIZE)))]
    inner_ij = loop(j, c(0), v(n, SIZE), assign(x, (v(i), v(j)), c(0.0)))
    inner_ii = loop(j, c(0), v(n, SIZE), assign(x, (v(i), v(i)), c(0.0)))
    p = mkproc("f", args, [loop(i, c(0), v(n, SIZE), inner_ij)])
    q = mkproc("f", args, [loop(i, c(0), v(n, SIZE), inner_ii)])
    diff = alpha_diff(p, q)
    assert diff is not None and "symbol" in diff


def test_free_symbols_must_be_identical() -> None:
    n, x, g1, g2 = Sym("n"), Sym("x"), Sym("g"), Sym("g")
    args = [arg(n, SIZE), arg(x, tensor(F32, v(n, SIZE)))]
    p = mkproc("f", args, [assign(x, (v(g1),), c(0.0))])
    q = mkproc("f", args, [assign(x, (v(g2),), c(0.0))])
    assert alpha_equal(p, p.replace(body=p.body))
    assert not alpha_equal(p, q)


def test_callees_compared_up_to_alpha() -> None:
    def callee(loop_name: str, scale: float) -> ProcDef:
        y, i = Sym("y"), Sym(loop_name)
        return mkproc(
            "g",
            [arg(y, tensor(F32, c(4), window=True))],
            [loop(i, c(0), c(4), assign(y, (v(i),), op("*", ld(y, v(i)), c(scale))))],
        )

    def caller(g: ProcDef) -> ProcDef:
        x = Sym("x")
        wt = tensor(F32, c(4), window=True)
        return mkproc("f", [arg(x, wt)], [Call(g, (Read(x, (), wt),))])

    assert alpha_equal(caller(callee("i", 2.0)), caller(callee("k", 2.0)))
    diff = alpha_diff(caller(callee("i", 2.0)), caller(callee("i", 3.0)))
    assert diff is not None and diff.startswith("body[0].proc") and "callees differ" in diff


def test_statement_kinds_and_scopes_differ() -> None:
    n = Sym("n")
    p = mkproc("f", [arg(n, SIZE)], [Scope("a", ())])
    assert not alpha_equal(p, mkproc("f", [arg(n, SIZE)], [Scope("b", ())]))
    assert not alpha_equal(p, mkproc("f", [arg(n, SIZE)], [Scope("a", (), "cuda")]))
    diff = alpha_diff(p, mkproc("f", [arg(n, SIZE)], []))
    assert diff is not None and "1 statements vs 0" in diff


def test_read_types_count() -> None:
    n, x = Sym("n"), Sym("x")
    p = mkproc("f", [arg(n, SIZE), arg(x, I32)], [assign(x, (), c(1, I32))])
    q = mkproc("f", [arg(n, SIZE), arg(x, I32)], [assign(x, (), c(1, INDEX))])
    assert not alpha_equal(p, q)


def test_expression_kinds_and_their_fields_differ() -> None:
    n, x, i = Sym("n"), Sym("x"), Sym("i")
    args = [arg(n, SIZE), arg(x, tensor(F32, v(n, SIZE), v(n, SIZE)))]

    def with_rhs(idx1: Expr, rhs: Expr) -> ProcDef:
        body = loop(i, c(0), v(n, SIZE), assign(x, (v(i), idx1), rhs))
        return mkproc("f", args, [body])

    relu = Extern("relu", (ld(x, v(i), v(i)),), F32)
    sigm = Extern("sigmoid", (ld(x, v(i), v(i)),), F32)
    assert alpha_equal(with_rhs(v(i), relu), with_rhs(v(i), relu))
    assert "extern" in (alpha_diff(with_rhs(v(i), relu), with_rhs(v(i), sigm)) or "")
    s0, s1 = StrideExpr(x, 0, INDEX), StrideExpr(x, 1, INDEX)
    assert "stride dimension" in (alpha_diff(with_rhs(s0, relu), with_rhs(s1, relu)) or "")
    neg = USub(ld(x, v(i), v(i)), F32)
    assert "USub vs Extern" in (alpha_diff(with_rhs(v(i), neg), with_rhs(v(i), relu)) or "")
    plus = op("+", v(i), c(1))
    minus = op("-", v(i), c(1))
    assert "operator" in (alpha_diff(with_rhs(plus, relu), with_rhs(minus, relu)) or "")


def test_windows_differ_by_point_or_interval() -> None:
    n, x, w = Sym("n"), Sym("x"), Sym("w")
    args = [arg(n, SIZE), arg(x, tensor(F32, c(8), c(8)))]
    row = win(x, F32, pt(c(0)), iv(c(0), c(8)), shape=(c(8),))
    col = win(x, F32, iv(c(0), c(8)), pt(c(0)), shape=(c(8),))
    p = mkproc("f", args, [WindowStmt(w, row)])
    q = mkproc("f", args, [WindowStmt(w, col)])
    assert alpha_equal(p, mkproc("f", args, [WindowStmt(Sym("v"), row)]))
    diff = alpha_diff(p, q)
    assert diff is not None and "point vs interval" in diff
