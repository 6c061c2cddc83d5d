"""assert_equivalent and random_args: differential testing on inputs satisfying the asserts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursched import DRAM, ArgumentError, proc
from cursched.frontend import parse_source
from cursched.interp import interpret
from cursched.ir.nodes import ProcDef
from cursched.testing import assert_equivalent, random_args


@proc
def sgemm(n: size, m: size, k: size, A: f32[n, k] @ DRAM, B: f32[k, m] @ DRAM, C: f32[n, m] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            for kk in seq(0, k):
                C[i, j] += A[i, kk] * B[kk, j]


@proc
def sgemm_reordered(
    n: size, m: size, k: size, A: f32[n, k] @ DRAM, B: f32[k, m] @ DRAM, C: f32[n, m] @ DRAM
):
    for kk in seq(0, k):
        for i in seq(0, n):
            for j in seq(0, m):
                C[i, j] += A[i, kk] * B[kk, j]


@proc
def sgemm_short(
    n: size, m: size, k: size, A: f32[n, k] @ DRAM, B: f32[k, m] @ DRAM, C: f32[n, m] @ DRAM
):
    for i in seq(0, n):
        for j in seq(0, m):
            for kk in seq(0, k - 1):
                C[i, j] += A[i, kk] * B[kk, j]


def test_equal_procs_pass() -> None:
    assert_equivalent(sgemm, sgemm)
    assert_equivalent(sgemm, sgemm_reordered)
    assert_equivalent(sgemm.ir(), sgemm_reordered.ir(), trials=2)


def test_dropped_iteration_is_caught_with_sizes_index_and_values() -> None:
    with pytest.raises(AssertionError) as info:
        assert_equivalent(sgemm, sgemm_short)
    msg = str(info.value)
    # trial 0 draws exactly what random_args draws first from the same seed
    args = random_args(sgemm, np.random.default_rng(0))
    sgemm.interpret(**args)
    C = args["C"]
    assert isinstance(C, np.ndarray)
    sizes = f"n = {args['n']}, m = {args['m']}, k = {args['k']}"
    assert f"sgemm and sgemm_short differ on trial 0 (seed 0; {sizes})" in msg
    assert f"output C[0, 0] is {C[0, 0]!s} in sgemm but " in msg
    assert f"{C.size} of {C.size} elements differ" in msg


def test_failure_message_is_deterministic() -> None:
    msgs = []
    for _ in range(2):
        with pytest.raises(AssertionError) as info:
            assert_equivalent(sgemm, sgemm_short, seed=7)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    assert "(seed 7;" in msgs[0]


def test_random_args_is_deterministic_and_seed_dependent() -> None:
    a = random_args(sgemm, np.random.default_rng(3))
    b = random_args(sgemm, np.random.default_rng(3))
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])  # type: ignore[arg-type]
    draws = {tuple(random_args(sgemm, np.random.default_rng(s))["A"].shape) for s in range(8)}  # type: ignore[attr-defined]
    assert len(draws) > 1


def test_sizes_pin_values() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        args = random_args(sgemm, rng, sizes={"n": 8})
        assert args["n"] == 8
        assert args["A"].shape[0] == 8  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match=r"n = 2, m = 3, k = 1"):
        assert_equivalent(sgemm, sgemm_short, sizes={"n": 2, "m": 3, "k": 1})


def test_sizes_must_name_control_arguments() -> None:
    with pytest.raises(ArgumentError, match="not control arguments"):
        random_args(sgemm, np.random.default_rng(0), sizes={"A": 3})


@proc
def blocked(n: size, m: size, lo: index, flag: bool, x: f32[n, m] @ DRAM):
    assert n % 4 == 0 and m == 2 * n + 1
    assert lo >= 2 and lo < n
    for i in seq(lo, n):
        if flag:
            x[i, 0] = 1.0


def test_draws_satisfy_the_asserts() -> None:
    rng = np.random.default_rng(0)
    seen_n = set()
    for _ in range(30):
        args = random_args(blocked, rng)
        n, m, lo = args["n"], args["m"], args["lo"]
        assert isinstance(n, int) and isinstance(m, int) and isinstance(lo, int)
        assert n % 4 == 0 and m == 2 * n + 1 and 2 <= lo < n
        assert isinstance(args["flag"], bool)
        seen_n.add(n)
    assert len(seen_n) > 1


@proc
def impossible(n: size, x: f32[n] @ DRAM):
    assert n > 4 and n < 3
    x[0] = 1.0


def test_unsatisfiable_asserts_raise() -> None:
    with pytest.raises(ArgumentError, match="no inputs satisfy the asserts of impossible"):
        random_args(impossible, np.random.default_rng(0))


@proc
def scale(n: size, m: size, W: [f32][n, m] @ DRAM, s: f32):  # noqa: RUF016
    for i in seq(0, n):
        for j in seq(0, m):
            W[i, j] = W[i, j] * s


@proc
def scale_twice(n: size, m: size, W: [f32][n, m] @ DRAM, s: f32):  # noqa: RUF016
    for i in seq(0, n):
        for j in seq(0, m):
            W[i, j] = W[i, j] * s
    for i in seq(0, n):
        W[i, 0] = W[i, 0] * s


def test_windows_get_strided_arrays_and_scalars_are_compared() -> None:
    args = random_args(scale, np.random.default_rng(1), sizes={"n": 3})
    W = args["W"]
    assert isinstance(W, np.ndarray) and not W.flags.c_contiguous and W.strides[-1] == 4
    assert isinstance(args["s"], np.ndarray) and args["s"].shape == ()
    assert_equivalent(scale, scale)
    with pytest.raises(AssertionError, match=r"output W\[0, 0\]"):
        assert_equivalent(scale, scale_twice)


@proc
def acc_i8(n: size, a: i8[n] @ DRAM, out: i8[1] @ DRAM):
    for i in seq(0, n):
        out[0] += a[i] * a[i]


@proc
def acc_i8_backwards(n: size, a: i8[n] @ DRAM, out: i8[1] @ DRAM):
    for i in seq(0, n):
        out[0] += a[n - 1 - i] * a[n - 1 - i]


@proc
def acc_i8_plus_one(n: size, a: i8[n] @ DRAM, out: i8[1] @ DRAM):
    for i in seq(0, n):
        out[0] += a[i] * a[i]
    out[0] += 1


def test_integers_compare_exactly() -> None:
    assert_equivalent(acc_i8, acc_i8_backwards)  # wrap-around addition is associative
    with pytest.raises(AssertionError, match=r"output out\[0\]"):
        assert_equivalent(acc_i8, acc_i8_plus_one)


@proc
def nan_out(n: size, x: f32[n] @ DRAM):
    t: f32
    for i in seq(0, n):
        x[i] = t


def test_nan_equals_nan() -> None:
    assert_equivalent(nan_out, nan_out)


@proc
def copy(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i]


@proc
def copy_scaled(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] * 1.00001


def test_tolerances() -> None:
    assert_equivalent(copy, copy_scaled)  # within the default f32 tolerance
    with pytest.raises(AssertionError, match=r"rtol=1e-07, atol=0"):
        assert_equivalent(copy, copy_scaled, rtol=1e-7, atol=0.0)


@proc
def copy_other_names(n: size, x: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        z[i] = x[i]


@proc
def copy_f64(n: size, x: f32[n] @ DRAM, y: f64[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i]


@proc
def copy_extra(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, s: f32):
    for i in seq(0, n):
        y[i] = x[i] * s


def test_signatures_must_match() -> None:
    with pytest.raises(
        AssertionError, match=r"argument 2 is `y: f32\[n\]` in copy but `z: f32\[n\]`"
    ):
        assert_equivalent(copy, copy_other_names)
    with pytest.raises(AssertionError, match=r"different signatures.*f64\[n\]"):
        assert_equivalent(copy, copy_f64)
    with pytest.raises(AssertionError, match="copy has 3 arguments, copy_extra has 4"):
        assert_equivalent(copy, copy_extra)


@proc
def shifted_copy(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert n >= 1
    for i in seq(0, n):
        y[i] = x[i + 0]


def test_q_failing_where_p_runs_is_a_difference() -> None:
    from cursched.ir.nodes import BinOp, Const, Read

    ir = shifted_copy.ir()
    loop = ir.body[0]
    assign = loop.body[0]  # type: ignore[union-attr]
    idx = assign.rhs.idx[0]  # i + 0 -> i + 1: reads one past the end
    bad_idx = BinOp("+", idx.lhs, Const(1, idx.rhs.type), idx.type)
    bad_rhs = Read(assign.rhs.sym, (bad_idx,), assign.rhs.type)
    bad = ir.replace(body=(loop.replace(body=(assign.replace(rhs=bad_rhs),)),))  # type: ignore[union-attr]
    with pytest.raises(
        AssertionError, match=r"shifted_copy fails where shifted_copy runs.*out-of-bounds read"
    ):
        assert_equivalent(shifted_copy, bad)


@proc
def bounded(n: size, x: f32[n] @ DRAM):
    assert n <= 1024 and n % 8 == 0
    x[0] = 1.0


@proc
def large(n: size, x: f32[n] @ DRAM):
    assert n >= 100
    x[0] = 1.0


def test_sizes_stay_small_unless_the_asserts_need_large_ones() -> None:
    rng = np.random.default_rng(0)
    small = {random_args(bounded, rng)["n"] for _ in range(20)}
    assert small <= {8, 16, 24, 32} and len(small) > 1
    big = {random_args(large, rng)["n"] for _ in range(5)}
    assert big <= {100, 101}


@proc
def copy_window(n: size, x: [f32][n] @ DRAM, y: [R][n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i]


@proc
def copy2d(n: size, x: f32[n, 3] @ DRAM, y: f32[n, 3] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, 3):
            y[i, j] = x[i, j]


@proc
def copy2d_window(n: size, x: [f32][n, 3] @ DRAM, y: [f32][n, 3] @ DRAM):  # noqa: RUF016
    for i in seq(0, n):
        for j in seq(0, 3):
            y[i, j] = x[i, j]


def test_window_and_tensor_parameters_and_r_and_f32_match() -> None:
    assert_equivalent(copy, copy_window)
    assert_equivalent(copy_window, copy)
    # the window version alone gets strided rows; against the tensor version, contiguous ones
    assert_equivalent(copy2d_window, copy2d)
    assert_equivalent(copy2d, copy2d_window)


# ------------------------------------------------------------------ the sampler, as a property

_ATOMS = st.one_of(
    st.builds(lambda v, c: f"{v} % {c} == 0", st.sampled_from("nm"), st.integers(2, 16)),
    st.builds(lambda v, c: f"{v} >= {c}", st.sampled_from("nm"), st.integers(1, 40)),
    st.builds(lambda v, c: f"{v} <= {c}", st.sampled_from("nm"), st.integers(1, 40)),
    st.builds(lambda a, b: f"m == {a} * n + {b}", st.integers(1, 3), st.integers(-2, 3)),
    st.builds(lambda c: f"i < n and i >= {c}", st.integers(0, 3)),
)


@settings(max_examples=40, deadline=None)
@given(preds=st.lists(_ATOMS, min_size=1, max_size=3), seed=st.integers(0, 2**16))
def test_random_args_satisfy_random_asserts_or_say_why(preds: list[str], seed: int) -> None:
    asserts = "\n".join(f"    assert {p}" for p in preds)
    text = f"def p(n: size, m: size, i: index, x: f32[n, m] @ DRAM):\n{asserts}\n    pass\n"
    pd = parse_source(text, {"DRAM": DRAM})
    try:
        args = random_args(pd, np.random.default_rng(seed))
    except ArgumentError as e:
        assert "could not draw arguments of p" in str(
            e
        ) or "no inputs satisfy the asserts of p" in str(e)
        return
    n, m, i = args["n"], args["m"], args["i"]
    assert isinstance(n, int) and isinstance(m, int) and isinstance(i, int)
    assert n > 0 and m > 0
    for pred in preds:
        assert eval(pred, {}, {"n": n, "m": m, "i": i}), (pred, n, m, i)
    interpret(pd, **args)  # and the interpreter's own assert check agrees


def test_reference_failing_is_reported_with_the_trial() -> None:
    from cursched import InterpreterError

    bad = fill_unchecked()
    with pytest.raises(InterpreterError) as info:
        assert_equivalent(bad, bad, sizes={"n": 3})
    assert "out-of-bounds write" in str(info.value)
    assert any("assert_equivalent, trial 0 (seed 0; n = 3)" in n for n in info.value.__notes__)


@proc
def fill_first(n: size, x: f32[n] @ DRAM):
    assert n >= 4
    x[3] = 1.0


def fill_unchecked() -> ProcDef:
    return fill_first.ir().replace(preds=())
