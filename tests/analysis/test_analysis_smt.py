"""The SMT layer: validity, counterexamples, exact floor division, the query cache."""

from __future__ import annotations

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.ir.symbols import Sym
from cursched.ir.types import SIZE


def test_valid_and_counterexample() -> None:
    n, i = Sym("n"), Sym("i")
    N, I = af.Aff.var(n, SIZE), af.Aff.var(i)
    ctx = [af.Ge(N - 1), af.Ge(I), af.lt(I, N)]
    assert smt.valid(af.lt(I, N), ctx).ok
    res = smt.valid(af.lt(I + 1, N), ctx)
    assert not res.ok
    assert res.counterexample is not None
    assert res.counterexample[i] + 1 >= res.counterexample[n]
    assert "n = " in smt.format_model(res.counterexample)


def test_floor_division_and_modulo_are_exact() -> None:
    j = Sym("j")
    J = af.Aff.var(j)
    # floor semantics for negative numerators: (-1) / 4 == -1, (-1) % 4 == 3
    raw_div = af.Aff(((af.Div(J, 4), 1),))
    raw_mod = af.Aff(((af.Mod(J, 4), 1),))
    assert smt.valid(af.Eq(raw_div + 1), [af.Eq(J + 1)]).ok
    assert smt.valid(af.Eq(raw_mod - 3), [af.Eq(J + 1)]).ok
    # j == 4 * (j / 4) + j % 4 for every j
    assert smt.valid(af.Eq(J - raw_div.scale(4) - raw_mod)).ok
    assert smt.valid(af.Ge(raw_mod)).ok and smt.valid(af.lt(raw_mod, af.Aff.num(4))).ok
    assert not smt.valid(af.Eq(raw_mod)).ok


def test_booleans_and_connectives() -> None:
    flag, i = Sym("flag"), Sym("i")
    I = af.Aff.var(i)
    p = af.Or((af.And((af.BVar(flag), af.Ge(I))), af.Not(af.BVar(flag))))
    assert smt.valid(af.Ge(I), [p, af.BVar(flag)]).ok
    res = smt.valid(af.BVar(flag), [p])
    assert not res.ok and res.counterexample is not None
    assert res.counterexample[flag] is False


def test_cache_hits_on_renamed_queries() -> None:
    smt.reset()
    for _ in range(3):
        a, b = Sym("i@1"), Sym("i@2")  # fresh copies each time, as the checks make them
        A, B = af.Aff.var(a), af.Aff.var(b)
        assert smt.satisfiable([af.lt(A, B), af.Eq(A - B + 1)]) is not None
    st = smt.stats()
    assert st.queries == 3 and st.hits == 2 and st.solver_calls == 1
    assert abs(st.hit_rate() - 2 / 3) < 1e-9


def test_unsat_query() -> None:
    a = Sym("a")
    A = af.Aff.var(a)
    assert smt.satisfiable([af.Ge(A - 1), af.Ge(-A)]) is None
    assert smt.valid(af.BConst(True)).ok
