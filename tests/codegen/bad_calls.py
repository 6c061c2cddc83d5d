"""Bad calls of compiled procs, run by test_codegen_args.py in a child process.

Run as a script, it compiles a few procs, makes every call in ``BAD_CALLS`` and prints one
JSON line per call: the exception class raised (or "none") and its message, and finally
whether good calls still work afterwards; with ``--fuzz N`` it makes N calls with random,
mostly wrong, arguments instead. A crash of the child (a segfault in C that ran on a
bad argument) makes the test fail, since no line for the crashing call and after is printed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from cursched import DRAM, proc


@proc
def scale_add(n: size, m: size, a: f32, x: f32[n, m] @ DRAM, y: f32[n, m] @ DRAM):
    assert m % 4 == 0
    for i in seq(0, n):
        for j in seq(0, m):
            y[i, j] += a * x[i, j]


@proc
def win_copy(n: size, flag: bool, off: index, src: [f32][n] @ DRAM, dst: [f32][n] @ DRAM):
    for i in seq(0, n):
        if flag:
            dst[i] = src[i]


@proc
def acc_scalar(n: size, x: i32[n] @ DRAM, total: i32):
    for i in seq(0, n):
        total += x[i]


def _f32(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _misaligned(n: int) -> np.ndarray:
    raw = np.zeros(n * 4 + 1, np.uint8)
    return raw[1:].view(np.float32)


def _calls() -> dict[str, Callable[[Any, Any, Any], None]]:
    """name -> call(scale_add_c, win_copy_c, acc_scalar_c); every one must be refused."""
    x, y, a = _f32(3, 8), _f32(3, 8), np.float32(2)
    return {
        "wrong_dtype": lambda s, w, t: s(3, 8, a, x.astype(np.float64), y),
        "wrong_dtype_int": lambda s, w, t: s(3, 8, a, x, y.astype(np.int32)),
        "wrong_rank": lambda s, w, t: s(3, 8, a, x.reshape(24), y),
        "wrong_rank_3d": lambda s, w, t: s(3, 8, a, x.reshape(3, 2, 4), y),
        "wrong_shape": lambda s, w, t: s(3, 8, a, _f32(3, 9), y),
        "inconsistent_sizes": lambda s, w, t: s(4, 8, a, x, y),
        "non_contiguous": lambda s, w, t: s(3, 8, a, _f32(3, 16)[:, ::2], y),
        "fortran_order": lambda s, w, t: s(3, 8, a, np.asfortranarray(x), y),
        "read_only_output": lambda s, w, t: s(3, 8, a, x, _ro(_f32(3, 8))),
        "missing_argument": lambda s, w, t: s(3, 8, a, x),
        "extra_argument": lambda s, w, t: s(3, 8, a, x, y, y),
        "unknown_keyword": lambda s, w, t: s(3, 8, a, x, y, z=1),
        "duplicate_keyword": lambda s, w, t: s(3, 8, a, x, y, n=3),
        "none_array": lambda s, w, t: s(3, 8, a, None, y),
        "python_list": lambda s, w, t: s(3, 8, a, x.tolist(), y),
        "negative_size": lambda s, w, t: s(-3, 8, a, x, y),
        "zero_size": lambda s, w, t: s(0, 8, a, x, y),
        "float_size": lambda s, w, t: s(3.0, 8, a, x, y),
        "bool_size": lambda s, w, t: s(True, 8, a, x, y),
        "huge_size": lambda s, w, t: s(2**70, 8, a, x, y),
        "violated_assert": lambda s, w, t: s(3, 6, a, _f32(3, 6), _f32(3, 6)),
        "aliased_output": lambda s, w, t: s(3, 8, a, y, y),
        "scalar_wrong_dtype": lambda s, w, t: s(3, 8, np.array(2.0), x, y),
        "scalar_string": lambda s, w, t: s(3, 8, "2", x, y),
        "misaligned": lambda s, w, t: s(3, 8, a, _misaligned(24).reshape(3, 8), y),
        "window_bad_stride": lambda s, w, t: w(
            4, True, 0, np.zeros(17, np.uint8)[1:].view(np.float32), _f32(4)
        ),
        "window_wrong_shape": lambda s, w, t: w(4, True, 0, _f32(8)[::2][:3], _f32(4)),
        "bool_not_bool": lambda s, w, t: w(4, 1, 0, _f32(4), _f32(4)),
        "index_not_int": lambda s, w, t: w(4, True, 0.5, _f32(4), _f32(4)),
        "written_scalar_as_number": lambda s, w, t: t(3, np.ones(3, np.int32), 0),
        "scalar_wrong_shape": lambda s, w, t: t(3, np.ones(3, np.int32), np.zeros(2, np.int32)),
    }


BAD_CALLS = tuple(_calls())


def _random_value(rng: np.random.Generator, good: Any) -> Any:
    """Something close to ``good`` that is probably wrong in one way."""
    if isinstance(good, np.ndarray):
        options: list[Callable[[], Any]] = [
            lambda: good.astype(rng.choice(["float64", "int32", "int8", "float16"])),
            lambda: np.ones(tuple(int(d) for d in rng.integers(0, 5, good.ndim)), good.dtype),
            lambda: np.ones((*good.shape, 2), good.dtype)[..., 0],
            lambda: np.ones(good.shape[::-1], good.dtype).T,
            lambda: _ro(good.copy()),
            lambda: good.reshape(-1),
            lambda: good.tolist(),
            lambda: np.float32(1.5),
            lambda: None,
            lambda: np.zeros(good.size * good.itemsize + 1, np.uint8)[1:].view(good.dtype),
        ]
        return options[int(rng.integers(0, len(options)))]()
    others: list[Any] = [-1, 0, 2**63, 1.0, "3", None, True, np.int64(3), np.bool_(True), -(2**70)]
    return others[int(rng.integers(0, len(others)))]


def fuzz(iterations: int) -> None:
    """Random, mostly wrong, arguments: each call raises ArgumentError or runs."""
    rng = np.random.default_rng(1234)
    fns = {"s": scale_add.compile(), "w": win_copy.compile(), "t": acc_scalar.compile()}
    goods = {
        "s": lambda: [3, 8, np.float32(2), _f32(3, 8), _f32(3, 8)],
        "w": lambda: [4, True, -2, _f32(8)[::2], _f32(4)],
        "t": lambda: [3, np.ones(3, np.int32), np.zeros((), np.int32)],
    }
    counts = {"ArgumentError": 0, "ran": 0}
    for _ in range(iterations):
        key = str(rng.choice(list(fns)))
        args = goods[key]()
        for _ in range(int(rng.choice([0, 1, 1, 1, 2]))):
            k = int(rng.integers(0, len(args)))
            args[k] = _random_value(rng, args[k])
        try:
            fns[key](*args)
            counts["ran"] += 1
        except Exception as e:
            if type(e).__name__ != "ArgumentError":
                raise
            counts["ArgumentError"] += 1
    print(json.dumps({"name": "fuzz", "error": "none", "message": json.dumps(counts)}))


def main() -> None:
    if sys.argv[1:2] == ["--fuzz"]:
        return fuzz(int(sys.argv[2]))
    s, w, t = scale_add.compile(), win_copy.compile(), acc_scalar.compile()
    y = _f32(3, 8)
    for name, call in _calls().items():
        try:
            call(s, w, t)
            outcome = {"name": name, "error": "none", "message": ""}
        except Exception as e:
            outcome = {"name": name, "error": type(e).__name__, "message": str(e)}
        print(json.dumps(outcome), flush=True)
    # a good call still works after all the bad ones, and views with odd strides are fine
    s(3, 8, np.float32(2), _f32(3, 8), y)
    dst = np.zeros(8, np.float32)
    w(4, True, -5, np.arange(8, dtype=np.float32)[::-2], dst[::2])
    total = np.zeros((), np.int32)
    t(3, np.arange(3, dtype=np.int32), total)
    ok = bool((y == 3).all()) and dst.tolist() == [7, 0, 5, 0, 3, 0, 1, 0] and int(total) == 3
    print(json.dumps({"name": "good_calls", "error": "none" if ok else "wrong", "message": ""}))


if __name__ == "__main__":
    sys.exit(main())
