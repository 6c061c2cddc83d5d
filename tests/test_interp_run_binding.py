"""``_run``'s own binding (``CompiledProc.run``): what it takes itself, what it leaves to the
general binding, and the same results and errors either way."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, ArgumentError, proc
from cursched.interp import compiled, interpret
from cursched.interp.run_source import _LIST_MAX


@proc
def add2d(n: size, m: size, a: f32[n, m] @ DRAM, b: f32[n, m] @ DRAM, c: f32[n, m] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            c[i, j] += a[i, j] * b[i, j]


@proc
def first_sum(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        s: f32
        s = x[i] * 2.0
        s += x[0]
        y[i] = s


@proc
def self_read(n: size, y: f32[n] @ DRAM):
    for i in seq(0, n):
        s: f32
        s = s + 1.0
        y[i] = s


def _args(n: int, m: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, m)).astype(np.float32) for _ in range(3)]


def _general(n: int, m: int, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """The general binding (views of the arrays: ``_run`` leaves views to it)."""
    interpret(add2d.ir(), n, m, a[:], b[:], c[:])


def test_two_dimensional_arrays_flattened_agree_with_the_general_binding() -> None:
    # read-only ones as lists, or above _LIST_MAX elements as memoryviews; the written one
    # a memoryview: the same bits as the general binding's
    run = compiled(add2d.ir()).run
    for n, m in ((3, 5), (1, 1), (_LIST_MAX // 100 + 1, 100)):
        a, b, c = _args(n, m, n)
        c2 = c.copy()
        assert run(n, m, a, b, c) is True
        _general(n, m, a, b, c2)
        assert np.array_equal(c.view(np.uint32), c2.view(np.uint32))


@pytest.mark.parametrize("which", ["a", "c"])
def test_not_c_contiguous_two_dimensional_arrays_are_refused(which: str) -> None:
    # a Fortran-ordered array owns its memory (base None), so only the layout test can
    # tell: ``_run`` leaves it to the general binding, which names it
    n, m = 4, 3
    args = dict(zip("abc", _args(n, m, 1), strict=True))
    args[which] = np.asfortranarray(args[which])
    assert args[which].base is None and not args[which].flags.c_contiguous
    assert compiled(add2d.ir()).run(n, m, *args.values()) is False
    with pytest.raises(ArgumentError, match=rf"argument {which} .*not C-contiguous"):
        add2d.interpret(n, m, **args)


def test_read_only_two_dimensional_output_is_refused() -> None:
    n, m = 2, 2
    a, b, c = _args(n, m, 2)
    c.flags.writeable = False
    assert compiled(add2d.ir()).run(n, m, a, b, c) is False
    with pytest.raises(ArgumentError, match=r"argument c .*read-only"):
        add2d.interpret(n, m, a, b, c)


def test_one_array_for_two_read_only_parameters_runs_in_run() -> None:
    # two lists of the same elements read the same values: no need to leave it to the
    # general binding; an array for a read and a written parameter still is
    n, m = 3, 4
    a, _, c = _args(n, m, 3)
    c2 = c.copy()
    assert compiled(add2d.ir()).run(n, m, a, a, c) is True
    _general(n, m, a, a, c2)
    assert np.array_equal(c.view(np.uint32), c2.view(np.uint32))
    c3 = c.copy()
    assert compiled(add2d.ir()).run(n, m, c3, a, c3) is False
    c4 = c3.copy()
    add2d.interpret(n, m, c3, a, c3)  # in place: c[i, j] += c[i, j] * a[i, j]
    with np.errstate(over="ignore"):
        ref = c4 + c4 * a
    assert np.array_equal(c3.view(np.uint32), ref.view(np.uint32))


def test_a_scalar_assigned_right_after_its_allocation_has_no_fill_store() -> None:
    src = compiled(first_sum.ir()).run_source
    assert "_k" not in src.split("for i_")[1].split("\n")[1]  # first line: the assignment
    x = np.array([1.5, -2.0, 3e38], np.float32)
    y = np.zeros(3, np.float32)
    first_sum.interpret(3, x, y)
    with np.errstate(over="ignore"):
        ref = x * np.float32(2.0) + x[0]
    assert np.array_equal(y.view(np.uint32), ref.view(np.uint32))


def test_a_scalar_read_by_its_first_assignment_keeps_its_fill() -> None:
    # the right-hand side reads the uninitialised value: NaN, the fill of floats
    y = np.zeros(2, np.float32)
    self_read.interpret(2, y)
    assert np.isnan(y).all()


def test_rounder_temporaries_read_directly_only_where_nothing_can_round_in_between() -> None:
    from cursched.interp.run_source import read_rounder_directly as direct

    body = ["    _R[0] = (a + b)", "    _t1 = _R[0]", "    _R[0] = (_t1 + c)"]
    assert direct(body) == ["    _R[0] = (a + b)", "    _R[0] = (_R[0] + c)"]
    store = ["    _t2 = _R[0]", "    y_d[_w + 1] = (_t2 / 3.0)"]
    assert direct(store) == ["    y_d[_w + 1] = (_R[0] / 3.0)"]
    kept = [
        ["    _t1 = _R[0]", "    _R[0] = (_t1 * _t1)"],  # two uses
        ["    _t1 = _R[0]", "    _R[0] = (a * b)", "    _R[0] = (_t1 + c)"],  # not next
        ["    _t1 = _R[0]", "    _R[0] = (f(a) + _t1)"],  # a call may round
        ["    _t1 = _R[0]", "        _R[0] = (_t1 + c)"],  # another block
        ["    _t1 = _R[0]", "    else: x = _t1"],
        ["    _t1 = _R[0]", "    _R[0] = (_t1 + c)", "    z = _t1"],  # used later
    ]
    for lines in kept:
        assert direct(lines) == lines
    # a loop's copies repeat its lines: each definition then its one use
    twice = body[1:] * 2
    assert direct(twice) == ["    _R[0] = (_R[0] + c)"] * 2
    assert direct([*twice, "    z = _t1"]) == [*twice, "    z = _t1"]


def test_rounder_read_directly_gives_the_same_bits() -> None:
    # blur_2pass's chains ``(a + b) + c`` then ``/ 3``: each operation still rounded
    from corpus.procs_kernels import blur_2pass

    src = compiled(blur_2pass.ir()).run_source
    assert "(_R[0] + " in src
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((5, 8)) * 1e30).astype(np.float32)
    x[1, 2] = np.inf
    y1, y2 = np.zeros_like(x), np.zeros_like(x)
    blur_2pass.interpret(5, 8, x, y1)
    blur_2pass.interpret(5, 8, x[:], y2[:])  # views: the general binding's body
    assert np.array_equal(y1.view(np.uint32), y2.view(np.uint32))
