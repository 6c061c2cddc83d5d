"""The affine normal form and the simplifier, proven sound by SMT on generated expressions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.ir.nodes import BinOp, Const, Expr, Read, USub
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL, INDEX, INT, SIZE

N = Sym("n")
IO = Sym("io")
II = Sym("ii")
J = Sym("j")
VARS = {N: SIZE, IO: INDEX, II: INDEX, J: INDEX}
# the constraints every generated expression is checked under: n >= 1, 0 <= ii < 4,
# 0 <= io < n, j unconstrained (a negative numerator must still divide by floor)
RANGES: dict[Sym, af.Bound] = {II: (0, 3), IO: (0, None)}


def r(s: Sym) -> Read:
    return Read(s, (), VARS[s])


def c(v: int) -> Const:
    return Const(v, INT)


def b(op: str, x: Expr, y: Expr) -> BinOp:
    return BinOp(op, x, y, INDEX)  # type: ignore[arg-type]


def text(e: Expr) -> str:
    return print_expr(af.simplify_expr(e))


# ------------------------------------------------------------------------- normal form


def test_normal_form_is_canonical() -> None:
    e1 = b("+", b("*", c(4), r(IO)), r(II))
    e2 = b("-", b("+", r(II), b("*", r(IO), c(5))), r(IO))
    assert af.to_aff(e1) == af.to_aff(e2)
    assert af.to_aff(b("-", r(IO), r(IO))) == af.Aff.num(0)


def test_non_affine_is_none() -> None:
    assert af.to_aff(b("*", r(IO), r(II))) is None
    assert af.to_aff(b("/", r(IO), r(II))) is None
    assert af.to_aff(b("/", r(IO), c(0))) is None


def test_readable_output() -> None:
    assert text(b("+", b("*", r(IO), c(4)), r(II))) == "4 * io + ii"
    assert text(b("-", b("+", b("*", r(IO), c(4)), c(4)), b("*", r(IO), c(4)))) == "4"
    assert text(b("-", b("-", r(N), r(IO)), c(1))) == "n - io - 1"
    assert text(b("-", c(3), r(IO))) == "3 - io"
    assert text(USub(r(IO), INDEX)) == "-io"
    assert text(b("-", r(IO), r(IO))) == "0"


def test_division_normalisation() -> None:
    assert text(b("/", b("+", b("*", c(4), r(IO)), r(II)), c(4))) == "io + ii / 4"
    assert text(b("%", b("+", b("*", c(4), r(IO)), r(II)), c(4))) == "ii % 4"
    assert text(b("/", b("/", r(J), c(2)), c(3))) == "j / 6"
    assert text(b("%", b("%", r(J), c(8)), c(4))) == "j % 4"
    assert text(b("/", b("+", r(J), c(9)), c(4))) == "(j + 1) / 4 + 2"
    assert text(b("/", c(-7), c(2))) == "-4"
    assert text(b("%", c(-7), c(2))) == "1"


def test_div_mod_pairs_fold_back() -> None:
    x = b("+", b("*", c(3), r(J)), r(N))
    e = b("+", b("*", c(4), b("/", x, c(4))), b("%", x, c(4)))
    assert text(e) == "n + 3 * j"
    assert text(b("*", c(2), e)) == "2 * n + 6 * j"
    assert text(b("+", b("*", c(4), b("/", r(J), c(4))), b("%", r(J), c(2)))) != "j"


def test_simplify_with_ranges() -> None:
    e = b("/", b("+", b("*", c(4), r(IO)), r(II)), c(4))
    assert print_expr(af.simplify_expr(e, RANGES)) == "io"
    m = b("%", b("+", b("*", c(4), r(IO)), r(II)), c(4))
    assert print_expr(af.simplify_expr(m, RANGES)) == "ii"
    cmp = BinOp("<", r(II), c(4), BOOL)
    assert af.simplify_expr(cmp, RANGES) == Const(True, BOOL)
    assert af.simplify_expr(cmp) == cmp


def test_prove_nonneg() -> None:
    loops = [af.SymBound(IO, af.Aff.num(0), af.Aff.var(N, SIZE) - 1)]
    n_minus_io = af.Aff.var(N, SIZE) - af.Aff.var(IO)
    assert af.prove_nonneg(n_minus_io - 1, loops)
    assert not af.prove_nonneg(n_minus_io - 2, loops)  # unknown, not false
    four_div = af.Aff.var(N, SIZE) - af.div(af.Aff.var(N, SIZE), 4).scale(4)
    assert af.prove_nonneg(four_div, [])


# --------------------------------------------------------------------- soundness by SMT


def raw(e: Expr) -> af.Aff:
    """A structural translation of ``e`` that does no division rewriting at all: division
    and modulo become raw atoms over the unnormalised numerator, so the SMT layer checks the
    normaliser against the plain floor semantics."""
    match e:
        case Const():
            assert isinstance(e.value, int)
            return af.Aff.num(e.value)
        case Read():
            return af.Aff.var(e.sym, e.type)
        case USub():
            return -raw(e.arg)
        case BinOp():
            x, y = raw(e.lhs), raw(e.rhs)
            match e.op:
                case "+":
                    return x + y
                case "-":
                    return x - y
                case "*":
                    return x.scale(y.const) if y.is_const() else y.scale(x.const)
                case "/":
                    return af.Aff(((af.Div(x, y.const), 1),))
                case "%":
                    return af.Aff(((af.Mod(x, y.const), 1),))
                case _:
                    raise AssertionError(e.op)
        case _:
            raise AssertionError(e)


def evaluate(e: Expr, env: dict[Sym, int]) -> int:
    match e:
        case Const():
            assert isinstance(e.value, int)
            return e.value
        case Read():
            return env[e.sym]
        case USub():
            return -evaluate(e.arg, env)
        case BinOp():
            x, y = evaluate(e.lhs, env), evaluate(e.rhs, env)
            match e.op:
                case "+":
                    return x + y
                case "-":
                    return x - y
                case "*":
                    return x * y
                case "/":
                    return x // y
                case "%":
                    return x % y
                case _:
                    raise AssertionError(e.op)
        case _:
            raise AssertionError(e)


def exprs() -> st.SearchStrategy[Expr]:
    leaves = st.one_of(
        st.sampled_from([r(N), r(IO), r(II), r(J)]),
        st.integers(-9, 9).map(c),
    )

    def extend(sub: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        k = st.integers(1, 8).map(c)
        return st.one_of(
            st.tuples(st.sampled_from(["+", "-"]), sub, sub).map(lambda t: b(*t)),
            st.tuples(k, sub).map(lambda t: b("*", t[0], t[1])),
            st.tuples(st.sampled_from(["/", "%"]), sub, k).map(lambda t: b(*t)),
            sub.map(lambda x: USub(x, INDEX)),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def constraints() -> list[af.Prop]:
    n, io, ii = af.Aff.var(N, SIZE), af.Aff.var(IO), af.Aff.var(II)
    return [
        af.Ge(n - 1),
        af.Ge(io),
        af.lt(io, n),
        af.Ge(ii),
        af.lt(ii, af.Aff.num(4)),
    ]


@settings(max_examples=150, deadline=None)
@given(exprs())
def test_simplifier_is_sound_by_smt(e: Expr) -> None:
    out = af.simplify_expr(e, RANGES)
    res = smt.valid(af.Eq(raw(e) - raw(out)), constraints())
    assert res.ok, f"{print_expr(e)} -> {print_expr(out)}: {smt.format_model(res.counterexample)}"


@settings(max_examples=150, deadline=None)
@given(exprs(), st.integers(1, 20), st.integers(0, 19), st.integers(0, 3), st.integers(-20, 20))
def test_simplifier_agrees_with_evaluation(e: Expr, n: int, io: int, ii: int, j: int) -> None:
    # an independent check of the SMT encoding itself: plain Python floor arithmetic
    env = {N: n, IO: io % n, II: ii, J: j}
    assert evaluate(af.simplify_expr(e, RANGES), env) == evaluate(e, env)
    assert evaluate(af.simplify_expr(e), env) == evaluate(e, env)


def test_simplify_keeps_unchanged_nodes() -> None:
    e = b("+", b("*", c(4), r(IO)), r(II))
    assert af.simplify_expr(e) is e
    cmp = BinOp("<", e, r(N), BOOL)
    assert af.simplify_expr(cmp) is cmp
