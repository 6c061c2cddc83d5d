"""Every corpus proc compiled to C agrees with the interpreter and with numpy.

Integer outputs must be equal; float outputs equal to a tight tolerance (``expf`` and
friends of libm and numpy may differ in the last ulp, and the default flags let the compiler
contract ``a * b + c`` into an FMA). With ``-ffp-contract=off``, procs that call no
transcendental function must match the interpreter bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from corpus import CASES, Case, check_case, copy_inputs

from cursched.ir.nodes import Call, Extern
from cursched.ir.traversal import proc_exprs, walk_stmts

IDS = [c.name for c in CASES]
EXACT_EXTERNS = {"select", "relu", "fmax", "fmaxf", "fmin", "sqrt"}  # correctly rounded in C


def _externs(case: Case) -> set[str]:
    seen: set[str] = set()
    todo = [case.proc.ir()]
    while todo:
        p = todo.pop()
        seen |= {e.name for e in proc_exprs(p) if isinstance(e, Extern)}
        todo += [s.proc for s in walk_stmts(p.body) if isinstance(s, Call)]
    return seen


def _run_both(case: Case, fn: Any, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    args = case.inputs(np.random.default_rng(seed))
    compiled, interpreted = copy_inputs(args), copy_inputs(args)
    fn(**compiled)
    case.proc.interpret(**interpreted)
    return compiled, interpreted


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compiled_matches_interpreter(case: Case) -> None:
    fn = case.proc.compile()
    for seed in range(3):
        compiled, interpreted = _run_both(case, fn, seed)
        for k, v in compiled.items():
            if not isinstance(v, np.ndarray):
                continue
            if v.dtype.kind == "f":
                np.testing.assert_allclose(
                    v.astype(np.float64), interpreted[k], rtol=2e-6, atol=1e-6, err_msg=k
                )
            else:
                np.testing.assert_array_equal(v, interpreted[k], err_msg=k)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compiled_matches_numpy(case: Case) -> None:
    check_case(case, case.proc.compile(), np.random.default_rng(7))


BITWISE = [c for c in CASES if _externs(c) <= EXACT_EXTERNS]


@pytest.mark.parametrize("case", BITWISE, ids=[c.name for c in BITWISE])
def test_bitwise_without_contraction(case: Case) -> None:
    fn = case.proc.compile(fp_contract_off=True)
    assert fn.lib_path != case.proc.compile().lib_path  # the flag is part of the build
    for seed in range(3):
        compiled, interpreted = _run_both(case, fn, seed)
        for k, v in compiled.items():
            if isinstance(v, np.ndarray):
                assert v.tobytes() == interpreted[k].tobytes(), (
                    f"{case.name}: argument {k} differs bitwise from the interpreter"
                )


def test_bitwise_set_is_large() -> None:
    # the bitwise test must cover most of the corpus, not a token few procs
    assert len(BITWISE) >= 30
