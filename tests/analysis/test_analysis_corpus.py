"""The analysis on the corpus: every correct proc passes the bounds check, and the checks
answer on each of its loops without crashing."""

from __future__ import annotations

import pytest
from corpus import CASES, Case

from cursched.analysis import checks as ck
from cursched.analysis.bounds import check_bounds
from cursched.analysis.effects import proc_effects
from cursched.ir.nodes import For
from cursched.ir.paths import Path, get_at
from cursched.ir.traversal import stmt_blocks


def _loops(body: tuple[object, ...], prefix: Path = ()) -> list[Path]:
    out: list[Path] = []
    for k, s in enumerate(body):
        path = (*prefix, ("body", k))
        if isinstance(s, For):
            out.append(path)
        for attr, block in stmt_blocks(s):  # type: ignore[arg-type]
            if attr == "body":
                out += _loops(block, path)
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_corpus_proc_passes_bounds(case: Case) -> None:
    ir = case.proc.ir()
    assert check_bounds(ir) is ir


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_corpus_par_loops_are_parallel(case: Case) -> None:
    ir = case.proc.ir()
    proc_effects(ir)  # effects of every statement, calls and windows included
    for path in _loops(ir.body):
        loop = get_at(ir, path)
        if loop.mode == "par":
            ck.check_parallel(ir, path)  # the corpus's par loops are really parallel
        else:
            try:
                ck.check_parallel(ir, path)
            except ck.ParallelError as e:
                assert e.counterexample is not None  # a dependence always comes with values
