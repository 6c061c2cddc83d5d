"""The interpreter's fast paths against its checked ones: arrays worked on in place, loop
nests whose bounds checks move to their entry, the generated binding, numpy's error state."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cursched import DRAM, InterpreterError, proc
from cursched.interp import compiled, interpret
from cursched.interp.exprs import _sigmoid
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import ProcDef


@proc
def shift2d(n: size, m: size, d: index, x: f32[n, m] @ DRAM, y: f32[n, m] @ DRAM):
    assert d == 0
    for i in seq(0, n):
        for j in seq(0, m):
            y[i, j] = x[i, j + d] * 2.0


@proc
def mirror(n: size, m: size, x: f32[n, m] @ DRAM, y: f32[n, m] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            y[n - 1 - i, m - 1 - j] = x[i, j]


@proc
def empty_inner(n: size, k: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert k == 0
    for i in seq(0, n):
        for j in seq(0, k):
            y[i + j + 100] = x[i]


@proc
def guarded2d(n: size, m: size, x: f32[n, m] @ DRAM, y: f32[n, m] @ DRAM):
    for i in seq(0, n + 1):
        for j in seq(0, m):
            if i < n:
                y[i, j] = x[i, j] + 1.0


@proc
def mixed(
    n: size, a: f32[n] @ DRAM, b: f64[n] @ DRAM, c: i8[n] @ DRAM, h: f16[n] @ DRAM, s: f32 @ DRAM
):
    for i in seq(0, n):
        for _r in seq(0, 2):
            a[i] = a[i] * a[i] + s
            b[i] = b[i] * b[i] + 1.0
            c[i] = c[i] * c[i] + 3
            h[i] = h[i] * h[i] + 1.0
            s += a[i]


@proc
def strided_sum(n: size, W: [f32][n, n] @ DRAM, out: f32[n] @ DRAM):  # noqa: RUF016
    for i in seq(0, n):
        for j in seq(0, n):
            out[i] += W[i, j] * W[j, i]


@proc
def gate(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = sigmoid(x[i]) * expf(x[i])


def unchecked(p: object) -> ProcDef:
    ir = p.ir()  # type: ignore[attr-defined]
    assert isinstance(ir, ProcDef)
    return ir.replace(preds=())


def test_nest_error_names_the_first_failing_access() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.zeros((3, 4), np.float32)
    # j + 1 leaves the array at j = 3 of the very first row: the nest's check on entry
    # fails, the checked copy runs and stops there, with row 0's first writes made
    msg = r"out-of-bounds read x\[i, j \+ d\]: index \(0, 4\) outside shape \(3, 4\)"
    with pytest.raises(InterpreterError, match=msg):
        interpret(unchecked(shift2d), 3, 4, 1, x, y)
    assert list(y[0]) == [2.0, 4.0, 6.0, 0.0] and not y[1:].any()
    shift2d.interpret(3, 4, 0, x, y)  # in bounds: the unchecked copy
    assert np.array_equal(y, x * 2)
    assert "_oob" not in compiled(unchecked(shift2d)).source.split("    else:")[0]


def test_negative_coefficients_are_checked_at_the_other_corner() -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    y = np.zeros((4, 5), np.float32)
    mirror.interpret(4, 5, x, y)
    assert np.array_equal(y, x[::-1, ::-1])


def test_zero_trip_inner_loop_runs_nothing() -> None:
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    interpret(
        unchecked(empty_inner), 4, 0, x, y
    )  # y[i + j + 100] would be out of bounds: never runs
    assert not y.any()
    with pytest.raises(InterpreterError, match=r"index 100 outside shape \(4,\)"):
        interpret(unchecked(empty_inner), 4, 1, x, y)


def test_guarded_accesses_past_the_end_run_the_checked_copy() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.zeros((2, 3), np.float32)
    guarded2d.interpret(2, 3, x, y)
    assert np.array_equal(y, x + 1)


def _mixed_args(n: int, rng: np.random.Generator) -> list[object]:
    return [
        n,
        (rng.standard_normal(n) * 1e19).astype(np.float32),  # squares overflow f32 to inf
        rng.standard_normal(n),
        rng.integers(-128, 128, n).astype(np.int8),
        (rng.standard_normal(n) * 100).astype(np.float16),
        np.array([np.nan if n % 2 else 0.5], np.float32),
    ]


def _mixed_numpy(args: list[object]) -> list[np.ndarray]:
    n = args[0]
    a, b, c, h, s = (np.array(v, copy=True) for v in args[1:])  # type: ignore[call-overload]
    with np.errstate(all="ignore"):
        for i in range(n):  # type: ignore[call-overload]
            for _ in range(2):
                a[i] = a[i] * a[i] + s[0]
                b[i] = b[i] * b[i] + 1.0
                c[i] = c[i] * c[i] + np.int8(3)
                h[i] = h[i] * h[i] + np.float16(1)
                s[0] = s[0] + a[i]
    return [a, b, c, h, s]


@pytest.mark.parametrize("n", [1, 5, 9])
def test_types_in_place_and_through_lists_agree_with_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    args = _mixed_args(n, rng)
    want = _mixed_numpy(args)
    owned = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
    mixed.interpret(*owned)  # arrays owning their memory: the generated binding
    assert compiled(mixed.ir()).run(*[v.copy() if isinstance(v, np.ndarray) else v for v in args])
    views = [
        np.concatenate([v.reshape(-1), v.reshape(-1)])[: v.size].reshape(v.shape)
        if isinstance(v, np.ndarray)
        else v
        for v in args
    ]
    mixed.interpret(**dict(zip(["n", "a", "b", "c", "h", "s"], views, strict=True)))  # general
    for got in (owned, views):
        for w, g in zip(want, got[1:], strict=True):
            assert isinstance(g, np.ndarray)
            assert w.tobytes() == g.tobytes()  # bit for bit, NaN and inf included


@pytest.mark.parametrize("layout", ["transposed", "strided", "offset"])
def test_windows_with_strides(layout: str) -> None:
    base = np.arange(1, 101, dtype=np.float32).reshape(10, 10) / 7
    W = {"transposed": base[:6, :6].T, "strided": base[::2, 1::2], "offset": base[3:8, 4:9]}[layout]
    n = W.shape[0]
    out = np.zeros(n, np.float32)
    strided_sum.interpret(n, W, out)
    want = np.zeros(n, np.float32)
    for i in range(n):
        for j in range(n):
            want[i] = np.float32(want[i] + np.float32(W[i, j] * W[j, i]))
    assert want.tobytes() == out.tobytes()


def test_a_window_written_through_a_view_of_one_array_is_seen_in_place() -> None:
    t = np.arange(6, dtype=np.float32)
    src = t[0:5]
    dst = t[1:6]
    # dst[i] = src[i] * 2 + 1 in order: each write is read by the next iteration
    interpret(_axpb, 5, src, dst)
    want = np.arange(6, dtype=np.float32)
    for i in range(5):
        want[i + 1] = want[i] * 2 + 1
    assert np.array_equal(t, want)


@proc
def _axpb(n: size, x: [f32][n] @ DRAM, y: [f32][n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] * 2.0 + 1.0


def test_sigmoid_is_the_tables_bit_for_bit() -> None:
    table = EXTERNS["sigmoid"].numpy
    xs = np.concatenate(
        [np.linspace(-120, 120, 2001), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 88.72]]
    )
    with np.errstate(all="ignore"):
        for dt in (np.float32, np.float64):
            mine = _sigmoid(np.dtype(dt))
            for x in xs.astype(dt):
                assert (
                    np.array(mine(float(x)), dt).tobytes() == np.array(table(dt(x)), dt).tobytes()
                )


def test_numpy_error_state_is_restored_after_a_failing_run() -> None:
    before = np.geterr()
    x = np.full(4, 100.0, np.float32)  # expf overflows: ignored inside the run
    y = np.zeros(3, np.float32)
    with pytest.raises(Exception, match="y"):
        gate.interpret(4, x, y)  # wrong shape: refused before running
    y = np.zeros(4, np.float32)
    gate.interpret(4, x, y)
    assert np.isinf(y).all()
    assert np.geterr() == before


def test_threads_round_independently() -> None:
    rng = np.random.default_rng(7)
    args = _mixed_args(64, rng)
    want = _mixed_numpy(args)
    results: list[list[object]] = []

    def work() -> None:
        for _ in range(5):
            mine = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
            mixed.interpret(*mine)
            results.append(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20
    for got in results:
        for w, g in zip(want, got[1:], strict=True):
            assert isinstance(g, np.ndarray)
            assert w.tobytes() == g.tobytes()


@proc
def wrap_dot(n: size, m: size, a: i8[n, m] @ DRAM, b: i8[m] @ DRAM, c: i8[n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            c[i] += a[i, j] * b[j]
        for j in seq(0, m):
            c[i] += c[i] * b[j] + 1


def test_integer_accumulators_wrap_as_per_operation() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (3, 40)).astype(np.int8)
    b = rng.integers(-128, 128, 40).astype(np.int8)
    c = rng.integers(-128, 128, 3).astype(np.int8)
    want = c.copy()
    with np.errstate(over="ignore"):
        for i in range(3):
            for j in range(40):
                want[i] = want[i] + a[i, j] * b[j]
            for j in range(40):
                want[i] = want[i] + (want[i] * b[j] + np.int8(1))
    wrap_dot.interpret(3, 40, a, b, c)
    assert np.array_equal(c, want)
    # the first loop only adds to its accumulator: wrapped once, when stored
    assert "- 128)" in compiled(wrap_dot.ir()).source.split("finally:")[1].splitlines()[1]


@proc
def imatmul(M: size, N: size, K: size, A: i8[M, K] @ DRAM, B: i8[K, N] @ DRAM, C: i32[M, N] @ DRAM):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def isum_wrap(n: size, a: i8[n] @ DRAM, out: i8[1] @ DRAM):
    for i in seq(0, n):
        out[0] += a[i]


@proc
def idot_reversed(n: size, a: i8[n] @ DRAM, b: i8[n] @ DRAM, out: i8[1] @ DRAM):
    for i in seq(0, n):
        out[0] += a[n - 1 - i] * b[i]


@proc
def idot_empty(n: size, a: i32[n - 1, n] @ DRAM, out: i32[1] @ DRAM):
    for i in seq(0, n - 1):
        out[0] += a[i, 0] * a[i, n - 1]


def _wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def test_integer_dot_products_are_sums_with_the_loops_results() -> None:
    # ``_run``'s body computes an integer accumulation loop as one sum over slices (strided
    # for B's column, wrapped once when stored): the same values as the loop, wrap-around
    # included, also when the general binding (views) runs the loop itself
    rng = np.random.default_rng(5)
    A = rng.integers(-128, 128, (5, 33)).astype(np.int8)
    B = rng.integers(-128, 128, (33, 7)).astype(np.int8)
    C = np.zeros((5, 7), np.int32)
    imatmul.interpret(5, 7, 33, A, B, C)
    assert np.array_equal(C, A.astype(np.int32) @ B.astype(np.int32))
    assert "sum(map(" in compiled(imatmul.ir()).run_source
    C2 = np.zeros((5, 7), np.int32)
    imatmul.interpret(5, 7, 33, A[:], B[:], C2[:])  # views: the general binding's loop
    assert np.array_equal(C2, C)
    a = rng.integers(-128, 128, 50).astype(np.int8)
    out = np.array([3], np.int8)
    isum_wrap.interpret(50, a, out)
    assert out[0] == _wrap(3 + sum(int(x) for x in a), 8)
    assert "(sum(a_" in compiled(isum_wrap.ir()).run_source
    x, y = (rng.integers(-128, 128, 20).astype(np.int8) for _ in range(2))
    out = np.array([0], np.int8)
    idot_reversed.interpret(20, x, y, out)  # a reversed walk: the loop, not a slice
    assert out[0] == _wrap(sum(int(p) * int(q) for p, q in zip(x[::-1], y, strict=True)), 8)
    out = np.array([7], np.int32)
    idot_empty.interpret(1, np.zeros((0, 1), np.int32), out)  # no rows: stride 0, no sum
    assert out[0] == 7


@proc
def ufunc_operands(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = expf(x[i] * x[i]) + log(x[i] * 3.0)
        z[i] = sin(x[i] + 1.0)


def test_f32_ufunc_operands_rounded_by_their_store_agree_with_numpy() -> None:
    # an f32 ufunc's computed operand is rounded by its store into the run's f32 array (no
    # _R round trip), overflow to infinity included, without a numpy warning escaping
    vals = [0.0, -0.0, 1.0, -1.0, 1e20, -1e20, 3e38, np.inf, -np.inf, np.nan, 88.7, 1e-45]
    x = np.array([*vals, -7.5, 100.0, 20.0, 2.0**-126], np.float32)
    n = len(x)
    y, z = np.zeros(n, np.float32), np.zeros(n, np.float32)
    ufunc_operands.interpret(n, x, y, z)
    f = np.float32
    with np.errstate(all="ignore"):
        ry = [f(np.exp(f(v * v))) + f(np.log(f(v * f(3.0)))) for v in x]
        rz = [np.sin(f(v + f(1.0))) for v in x]
    assert np.array_equal(y.view(np.uint32), np.array(ry, np.float32).view(np.uint32))
    assert np.array_equal(z.view(np.uint32), np.array(rz, np.float32).view(np.uint32))


@proc
def short_rows(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM, s: f32[n] @ DRAM):
    for i in seq(0, n):
        for k in seq(0, 4):
            y[i, k] = x[i, k] * 2.0 + y[i, k]
            s[i] += x[i, k]


@proc
def short_div(x: i32[2, 3] @ DRAM, d: i32[2, 3] @ DRAM, y: i32[2, 3] @ DRAM):
    for i in seq(0, 2):
        for k in seq(0, 3):
            y[i, k] = x[i, k] / d[i, k]


def test_unrolled_short_loops_agree_with_the_general_run() -> None:
    # ``_run``'s body unrolls innermost loops of up to 4 iterations (the variable a
    # literal): the same results as the general binding's loop, and the same error at the
    # same statement, the writes before it made
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y1, s1 = np.ones((6, 4), np.float32), np.zeros(6, np.float32)
    y2, s2 = y1.copy(), s1.copy()
    short_rows.interpret(6, x, y1, s1)
    short_rows.interpret(6, x[:], y2[:], s2[:])  # views: the general binding
    assert "for k_" not in compiled(short_rows.ir()).run_source.split("else:")[0]
    assert np.array_equal(y1, y2) and np.array_equal(s1, s2)
    xs = np.array([[7, 8, 9], [4, 5, 6]], np.int32)
    ds = np.array([[2, 3, 1], [1, 0, 1]], np.int32)
    assert "for k_" not in compiled(short_div.ir()).run_source
    outs = []
    for general in (False, True):
        yy = np.full((2, 3), -1, np.int32)
        with pytest.raises(InterpreterError) as err:
            short_div.interpret(xs[:] if general else xs, ds, yy[:] if general else yy)
        outs.append((str(err.value), yy.tolist()))
    assert outs[0] == outs[1] and outs[0][1] == [[3, 2, 9], [4, -1, -1]]


@proc
def scaled_copy(n: size, x: f32[n] @ DRAM, a: f32 @ DRAM, y: f32[n] @ DRAM, t: f32 @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] * a
    t = y[0] * a  # noqa: F841


def test_read_only_arrays_as_lists_or_big_as_memoryviews() -> None:
    # ``_run`` reads a read-only array through a list of its elements, or, above
    # _LIST_MAX elements, through a memoryview; written f32 arrays and scalars are stored
    # into directly (the memoryview rounds): the same bits either way
    from cursched.interp.run_source import _LIST_MAX

    for n in (7, _LIST_MAX + 5):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        x[:3] = [np.inf, np.nan, 3e38]
        a, t = np.array(3.0, np.float32), np.zeros((), np.float32)
        y = np.zeros(n, np.float32)
        scaled_copy.interpret(n, x, a, y, t)
        with np.errstate(over="ignore", invalid="ignore"):
            ref = x * np.float32(3.0)
        assert np.array_equal(y.view(np.uint32), ref.view(np.uint32))
        assert t == np.float32(ref[0] * np.float32(3.0))


@proc
def fmatmul(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def test_f32_dot_products_agree_bit_for_bit() -> None:
    # ``_run``'s body (scalar-replaced accumulator, read-only lists, unit strides) and the
    # general binding's loop give the same bits as a sequential float32 reference, with
    # overflow, infinities, NaN and subnormals among the values
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 9)).astype(np.float32) * np.float32(1e19)
    B = rng.standard_normal((9, 6)).astype(np.float32) * np.float32(1e19)
    A[0, :3] = [np.inf, np.nan, 1e-45]
    B[4, 2] = -np.inf
    C = rng.standard_normal((5, 6)).astype(np.float32)
    C1, C2 = C.copy(), C.copy()
    fmatmul.interpret(5, 6, 9, A, B, C1)
    fmatmul.interpret(5, 6, 9, A[:], B[:], C2[:])  # views: the general binding's loop
    ref = C.copy()
    with np.errstate(all="ignore"):
        for i in range(5):
            for j in range(6):
                for k in range(9):
                    ref[i, j] = np.float32(ref[i, j] + np.float32(A[i, k] * B[k, j]))
    assert np.array_equal(C1.view(np.uint32), C2.view(np.uint32))
    assert np.array_equal(C1.view(np.uint32), ref.view(np.uint32))
