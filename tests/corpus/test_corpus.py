"""Every corpus proc: golden printout, print -> parse round trip, interpreter vs numpy."""

from __future__ import annotations

import numpy as np
import pytest

from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_diff, alpha_equal
from cursched.ir.externs import EXTERNS
from cursched.ir.memory import DRAM, DRAM_STACK, DRAM_STATIC
from cursched.ir.nodes import (
    EXPR_TYPES,
    STMT_TYPES,
    Alloc,
    BinOp,
    Call,
    Const,
    Extern,
    For,
    If,
    Interval,
    ProcDef,
    WindowExpr,
)
from cursched.ir.traversal import proc_exprs, walk_expr, walk_stmts
from cursched.ir.types import DATA_TYPES, DataType, TensorType
from cursched.testing.plugin import golden_dir, golden_key, sanitize

from . import CASES, ENV, Case, check_case

IDS = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_printout(case: Case, golden) -> None:
    golden.check(case.proc)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_round_trip(case: Case) -> None:
    text = str(case.proc)
    parsed = parse_source(text, ENV, filename=f"<printout of {case.name}>")
    assert alpha_equal(case.proc.ir(), parsed), alpha_diff(case.proc.ir(), parsed)
    assert str(parsed.name) == case.name


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_interpreter_matches_numpy(case: Case, seed: int) -> None:
    check_case(case, case.proc.interpret, np.random.default_rng(seed))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference_is_not_vacuous(case: Case) -> None:
    """A runner that writes nothing must fail the comparison (each proc has an effect)."""
    with pytest.raises(AssertionError, match="differs"):
        check_case(case, lambda **args: None, np.random.default_rng(0))


# ------------------------------------------------------------------------------ coverage


def _all_procs() -> list[ProcDef]:
    return [c.proc.ir() for c in CASES]


def _stmts(p: ProcDef) -> list[object]:
    return list(walk_stmts(p.body))


def _exprs(p: ProcDef) -> list[object]:
    return [e for root in proc_exprs(p) for e in walk_expr(root)]


def test_corpus_has_at_least_30_procs() -> None:
    assert len(CASES) >= 30
    assert len(set(IDS)) == len(IDS)


def test_required_kernels_are_present() -> None:
    required = {
        "sgemm",
        "conv1d",
        "blur3x3",
        "softmax3",
        "logsumexp",
        "attention_row",
        "prefix_sum",
    }
    assert required <= set(IDS)


def test_every_node_kind_is_covered() -> None:
    seen = {type(n) for p in _all_procs() for n in _stmts(p) + _exprs(p)}
    assert set(STMT_TYPES) <= seen, set(STMT_TYPES) - seen
    assert set(EXPR_TYPES) <= seen, set(EXPR_TYPES) - seen
    assert Interval in {
        type(w) for p in _all_procs() for e in _exprs(p) if isinstance(e, WindowExpr) for w in e.idx
    }


def test_every_extern_is_covered() -> None:
    used = {e.name for p in _all_procs() for e in _exprs(p) if isinstance(e, Extern)}
    assert set(EXTERNS) <= used, set(EXTERNS) - used


def test_every_operator_and_literal_is_covered() -> None:
    exprs = [e for p in _all_procs() for e in _exprs(p)]
    ops = {e.op for e in exprs if isinstance(e, BinOp)}
    assert {"+", "-", "*", "/", "%", "<=", ">=", "==", "and", "or"} <= ops, ops
    consts = [e.value for e in exprs if isinstance(e, Const)]
    assert float("-inf") in consts
    assert float("inf") in consts


def test_every_data_type_memory_and_loop_mode_is_covered() -> None:
    procs = _all_procs()
    types: set[str] = set()
    mems: set[object] = set()
    for p in procs:
        for a in p.args:
            t = a.type
            types.add(t.elem.name if isinstance(t, TensorType) else str(t))
            if a.mem is not None:
                mems.add(a.mem)
        for s in _stmts(p):
            if isinstance(s, Alloc):
                types.add(s.type.elem.name if isinstance(s.type, TensorType) else s.type.name)
                mems.add(s.mem)
    assert set(DATA_TYPES) <= types, set(DATA_TYPES) - types
    assert {"size", "index", "bool"} <= types
    assert {DRAM, DRAM_STACK, DRAM_STATIC} <= mems
    modes = {s.mode for p in procs for s in _stmts(p) if isinstance(s, For)}
    assert modes == {"seq", "par"}
    assert any(s.orelse for p in procs for s in _stmts(p) if isinstance(s, If))
    assert any(p.instr is not None for p in procs)
    assert any(s.proc.instr is not None for p in procs for s in _stmts(p) if isinstance(s, Call))


def test_window_and_scalar_arguments_are_covered() -> None:
    args = [a for p in _all_procs() for a in p.args]
    assert any(isinstance(a.type, TensorType) and a.type.window for a in args)
    assert any(isinstance(a.type, DataType) for a in args)
    # stride asserts and divisibility asserts
    preds = [e for p in _all_procs() for root in p.preds for e in walk_expr(root)]
    assert any(type(e).__name__ == "StrideExpr" for e in preds)
    assert any(isinstance(e, BinOp) and e.op == "%" for e in preds)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_file_parses_back(case: Case, request: pytest.FixtureRequest) -> None:
    """The committed printout itself (not only today's printer output) parses to the proc."""
    name = f"test_printout_{sanitize(case.name)}.txt"
    path = golden_dir(request.config) / golden_key(request.config, request.path) / name
    parsed = parse_source(path.read_text(encoding="utf-8"), ENV, filename=str(path))
    assert alpha_equal(case.proc.ir(), parsed), alpha_diff(case.proc.ir(), parsed)
