"""sched/online_softmax.py: runs as a file, golden output of the derived procs, float32 checks
against a float64 numpy reference with the issue's tolerances (rows starting with -inf, rows of
equal values), equivalence with the two-pass procs, and one pattern only."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from cursched import Memory, Proc
from cursched.codegen.c.unit import generate_unit
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "online_softmax.py"


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def softmax_denominator(R: size")
    assert "ok: denominator, softmax and log-sum-exp match numpy" in out


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> dict[str, Proc]:
    """The three procs scheduled once for the module."""
    return {n: script.schedule(getattr(script, n)) for n in NAMES}


NAMES = ("softmax_denominator", "softmax", "logsumexp")


@pytest.mark.parametrize("name", NAMES)
def test_golden_numpy_equivalent(script: ModuleType, scheduled, golden, name: str) -> None:  # type: ignore[no-untyped-def]
    p, q = getattr(script, name), scheduled[name]
    golden.check(q, name=name)
    text = str(q)
    assert "for rt in par(0, R / 8):" in text and "for jo in seq(0, C / 64):" in text
    assert "alpha = alpha" not in text and "xt: f32[64, 8] @ DRAM" in text
    assert "mm256_max_ps(m_v[0:8], m_v[0:8], x_m[0:8])" in text
    assert "mm256_exp_ps(exp_s[0:8], arg_s[0:8])" in text
    if name == "softmax":  # the normalisation along the rows, 8 columns at a time
        assert "mm256_div_ps(y_v[0:8], exp_y[0:8], s_y[0:8])" in text
    assert script.check(q, script.rows(8, 64, 1), compiled=False) == []
    for seed in (0, 1):
        assert script.check(q, script.rows(16, 192, seed), compiled=True) == []
    assert_equivalent(p, q, sizes={"R": 8, "C": 64}, trials=1)


def test_without_vector_instructions(script: ModuleType) -> None:
    q = script.schedule(script.softmax, vector=False)
    assert "mm256" not in str(q) and "for rt in par(0, R / 8):" in str(q)
    assert script.check(q, script.rows(16, 128), compiled=True) == []


def test_vector_instructions_in_the_inner_loops_of_the_c(scheduled) -> None:  # type: ignore[no-untyped-def]
    c = generate_unit("sm", [scheduled["softmax"].ir()]).c_source
    # the column loops' bodies: vector max, the guarded exponent, exp, add, divide
    for call in (
        "m_v = _mm256_blendv_ps(_mm256_max_ps(m_v, x_m)",
        "exp_s = cs_exp256_ps(arg_s);",
        "s_v = _mm256_add_ps(s_v, exp_s);",
        "exp_y = cs_exp256_ps(arg_y);",
        "y_v = _mm256_div_ps(exp_y, s_y);",
    ):
        assert call in c, call
    assert "cs_fmax_float(" not in c  # no scalar running max left
    assert c.count("expf(") == 1  # the one scalar exp: the correction, once per tile and row


def test_infinities_and_nan_as_the_unfused_program(script: ModuleType, scheduled) -> None:  # type: ignore[no-untyped-def]
    x = script.rows(16, 128, 3)
    x[2, 5] = np.inf  # a row with +inf: NaN in both
    x[3, 7] = np.nan  # a row with NaN: NaN in both
    x[4, 64:] = -np.inf  # a row ending with -inf
    x[5, :] = -np.inf  # the documented difference: all -inf
    for name in NAMES:
        outs = []
        for p in (getattr(script, name), scheduled[name]):
            args = {
                "softmax": [np.zeros_like(x)],
                "softmax_denominator": [np.zeros(16, np.float32), np.zeros(16, np.float32)],
                "logsumexp": [np.zeros(16, np.float32)],
            }[name]
            with np.errstate(all="ignore"):
                p.compile()(16, 128, x, *args)
            outs.append(args)
        keep = np.arange(16) != 5
        for a, b in zip(*outs, strict=True):
            np.testing.assert_allclose(b[keep], a[keep], rtol=2e-6, atol=1e-7, equal_nan=True)
        if name == "softmax_denominator":  # unfused: NaN (exp(-inf - -inf)); fused: 0
            assert np.isnan(outs[0][1][5]) and outs[1][1][5] == 0.0
        if name == "softmax":
            assert np.isnan(outs[0][0][2]).all() and np.isfinite(outs[1][0][4]).all()


def test_results_independent_of_the_thread_count(scheduled) -> None:  # type: ignore[no-untyped-def]
    f = scheduled["softmax"].compile()
    x = np.random.default_rng(4).standard_normal((40, 256)).astype(np.float32)  # 5 row tiles
    outs = []
    for threads in (1, 2, 3):
        y = np.zeros_like(x)
        with threadpool_limits(limits=threads, user_api="openmp"):
            f(40, 256, x, y)
        outs.append(y)
    assert all(np.array_equal(y, outs[0]) for y in outs[1:])


def test_patterns_only_at_the_start() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule", 1)[1].split("def _lane_operand", 1)[0]
    head, steps = body.split("# 1.", 1)
    assert len(re.findall(r"\b(find\w*|at)\(", head)) == 4
    assert not re.search(r"\b(find\w*|at)\(", steps)


def test_histories_replay(script: ModuleType, scheduled) -> None:  # type: ignore[no-untyped-def]
    env = {
        k: v
        for k, v in vars(script).items()
        if (isinstance(v, Proc) and v.is_instr()) or (isinstance(v, type) and issubclass(v, Memory))
    }
    for name in NAMES:
        base = getattr(script, name)
        assert_history_replays(scheduled[name], **{name: base}, **env)
