"""``_Verifier.data_ok``, the verifier's fast path for right-hand sides, against ``data``.

The fast path may only say yes where the general check passes, and every failure goes back
to the general check: so with and without it each proc passes, or fails with the very same
message (invariant, path and text). Each case is verified both ways and compared.
"""

from __future__ import annotations

import pytest
from ir_builders import F32, INDEX, SIZE, arg, assign, c, ld, loop, mkproc, op, tensor, v

from cursched.errors import IRVerificationError
from cursched.ir.nodes import BinOp, Const, Expr, Extern, ProcDef, Read, USub
from cursched.ir.symbols import Sym
from cursched.ir.types import F64, I32
from cursched.ir.verify import _Verifier, verify_proc

n, A, x, y, i, j = (Sym(s) for s in ["n", "A", "x", "y", "i", "j"])
N = v(n, SIZE)
ARGS = [arg(n, SIZE), arg(A, tensor(F32, N, c(8))), arg(x, F32), arg(y, I32)]


def _proc(rhs: Expr) -> ProcDef:
    """``for i: for j: x = rhs``; and a write with the same right-hand side to ``A``."""
    body = [assign(x, (), rhs), assign(A, (v(i), v(j)), rhs)]
    return mkproc("p", list(ARGS), [loop(i, c(0), N, loop(j, c(0), c(8), *body))], ())


def _outcome(p: ProcDef) -> str:
    try:
        verify_proc(p, memo=False)
    except IRVerificationError as err:
        return str(err)
    return "ok"


RHS: dict[str, Expr] = {
    "float literal": c(2.0),
    "loop-variable indices": ld(A, v(i), v(j)),
    "literal indices": ld(A, c(0), c(7)),
    "affine index": ld(A, op("+", op("*", v(i), c(2)), c(1)), v(j)),
    "arithmetic": op("+", op("*", ld(A, v(i), v(j)), v(x, F32)), c(1.0)),
    "negation": USub(ld(A, v(i), v(j)), F32),
    "extern": Extern("relu", (ld(A, v(i), v(j)),), F32),
    "read-type in an operand": op("*", c(2.0), ld(A, v(i), v(j), t=F64)),
    "index-count in an operand": op("+", ld(A, v(i)), c(1.0)),
    "product of loop variables in an index": op("+", ld(A, op("*", v(i), v(j)), c(0)), c(1.0)),
    "data in an index": ld(A, Read(x, (), F32), c(0)),
    "unbound index": ld(A, v(Sym("k"), INDEX), c(0)),
    "unbound index in an affine index": ld(A, op("+", v(Sym("k"), INDEX), c(1)), c(0)),
    "control variable as data": op("+", v(i), c(1.0)),
    "comparison in data": BinOp("<", v(x, F32), c(0.0), F32),
    "data operation typed control": BinOp("+", v(x, F32), c(1.0), INDEX),
    "control constant as data": op("+", Const(1, INDEX), c(1.0)),
    "mismatched scalar": op("+", Read(y, (), F32), c(1.0)),
}


@pytest.mark.parametrize("name", list(RHS))
def test_fast_path_agrees_with_the_general_check(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _proc(RHS[name])
    fast = _outcome(p)
    monkeypatch.setattr(_Verifier, "data_ok", lambda self, e: False)
    assert fast == _outcome(p)


def test_the_cases_reach_both_verdicts_and_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []
    real = _Verifier.data_ok

    def spy(self: _Verifier, e: Expr) -> bool:
        taken.append(real(self, e))
        return taken[-1]

    monkeypatch.setattr(_Verifier, "data_ok", spy)
    outcomes = [_outcome(_proc(e)) for e in RHS.values()]
    assert outcomes[:7] == ["ok"] * 7
    assert all(o.startswith("[") for o in outcomes[7:])
    assert taken.count(True) >= 6  # the good ones but the extern, which takes ``data``
