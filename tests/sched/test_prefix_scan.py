"""sched/prefix_scan.py: runs as a file; the plain-loop scan and the scan_fuse'd scan give the
exclusive, inclusive and final values within 1e-6 * sum|x| (interpreter and C); the returned
cursors name the scan's outputs."""

from __future__ import annotations

from types import ModuleType

import pytest

from cursched.testing import assert_equivalent

from .scripts import ROOT, run_file

SCRIPT = ROOT / "sched" / "prefix_scan.py"


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert "ok: prefix sum and discounted scan" in out


@pytest.mark.parametrize("prefix_sum", [True, False])
def test_numpy(script: ModuleType, prefix_sum: bool) -> None:
    assert script.check(64, prefix_sum=prefix_sum, seed=3, compiled=False) == []
    assert script.check(3000, prefix_sum=prefix_sum, seed=4, compiled=True) == []


def test_cursors_name_the_scan_outputs(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    p, c = script.schedule(script.scan_normalised)
    golden.check(p)
    excl = c.saved[1].node()
    assert str(excl.sym) == "acc_prev" and str(excl.rhs.sym) == "acc"  # exclusive value
    assert str(c.first_updates[0].node().sym) == "acc"  # inclusive update
    assert c.fused.next().node().rhs.sym.name == "acc"  # final value read after the loop
    assert str(c.rescales[0].node().rhs.lhs.sym) == "alpha"  # s is a discounted scan
    assert_equivalent(script.scan_normalised, p, rtol=1e-4, atol=1e-4)
