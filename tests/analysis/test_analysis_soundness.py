"""Soundness of the checks against the interpreter: whatever a check accepts, the rewritten
proc computes the same result.

Random stencil-like bodies (one or two statements reading and writing shifted elements of one
buffer) are generated as source text; the rewrite (loop interchange, reversed iteration order
for parallel loops, fission, fusion) is generated as text too, and both are run by the
reference interpreter on the same random data. A check that says "legal" must never be
contradicted. Known rejected rewrites are run too, to show that they really change the result. The
definition-time bounds check is held to the same standard: what it accepts never fails in the
interpreter, and the counterexample of what it rejects does.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cursched import DRAM, proc
from cursched.analysis import checks as ck
from cursched.analysis.bounds import check_bounds
from cursched.errors import BoundsError, InterpreterError
from cursched.frontend import parse_source
from cursched.interp import interpret
from cursched.ir.nodes import ProcDef

N = 5
PAD = 3  # offsets lie in [-PAD, PAD]; loops run over [PAD, n + PAD)
HEAD = "def p(n: size, A: f32[n + 6, n + 6] @ DRAM, B: f32[n + 6, n + 6] @ DRAM):"

offsets = st.integers(-PAD, PAD)
access = st.tuples(st.sampled_from("AB"), offsets, offsets)


def acc(a: tuple[str, int, int], i: str = "i", j: str = "j") -> str:
    buf, di, dj = a
    return f"{buf}[{i} + {di + PAD}, {j} + {dj + PAD}]"


def parse(lines: list[str]) -> ProcDef:
    return parse_source("\n".join([HEAD, *lines]) + "\n", {"DRAM": DRAM}, "<gen>")


def run(p: ProcDef, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((N + 6, N + 6)).astype(np.float32)
    b = rng.standard_normal((N + 6, N + 6)).astype(np.float32)
    interpret(p, N, a, b)
    return a, b


def same(p: ProcDef, q: ProcDef) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(run(p, 1), run(q, 1), strict=True))


def legal(check: object, *args: object, **kw: object) -> bool:
    try:
        check(*args, **kw)  # type: ignore[operator]
    except ck.SafetyError:
        return False
    return True


def stmt(w: tuple[str, int, int], r: tuple[str, int, int], reduce: bool, i: str = "i") -> str:
    op = "+=" if reduce else "="
    return f"{acc(w, i)} {op} {acc(r, i)} * 0.5 + 1.0"


@settings(max_examples=40, deadline=None)
@given(access, access, st.booleans())
def test_reorder_loops_is_sound(
    w: tuple[str, int, int], r: tuple[str, int, int], red: bool
) -> None:
    body = stmt(w, r, red)
    loops_ij = ["    for i in seq(0, n):", "        for j in seq(0, n):"]
    loops_ji = ["    for j in seq(0, n):", "        for i in seq(0, n):"]
    p = parse([*loops_ij, f"            {body}"])
    q = parse([*loops_ji, f"            {body}"])
    ok = legal(ck.check_reorder_loops, p, (("body", 0),))
    if ok:
        assert same(p, q), body


@settings(max_examples=40, deadline=None)
@given(access, access)
def test_parallel_is_sound(w: tuple[str, int, int], r: tuple[str, int, int]) -> None:
    # a parallel loop may run its iterations in any order: try the reverse one
    body = stmt(w, r, False)
    p = parse(["    for i in seq(0, n):", "        for j in seq(0, n):", f"            {body}"])
    rev = stmt(w, r, False, i="(n - 1 - i)").replace("(n - 1 - i)", "n - 1 - i")
    q = parse(["    for i in seq(0, n):", "        for j in seq(0, n):", f"            {rev}"])
    ok = legal(ck.check_parallel, p, (("body", 0),))
    if ok:
        assert same(p, q), body


@settings(max_examples=40, deadline=None)
@given(access, access, access, access)
def test_fission_and_fusion_are_sound(
    w1: tuple[str, int, int],
    r1: tuple[str, int, int],
    w2: tuple[str, int, int],
    r2: tuple[str, int, int],
) -> None:
    s1, s2 = stmt(w1, r1, False), stmt(w2, r2, False)
    inner = "        for j in seq(0, n):"
    fused = parse(["    for i in seq(0, n):", inner, f"            {s1}", f"            {s2}"])
    split = parse(
        [
            "    for i in seq(0, n):",
            inner,
            f"            {s1}",
            "    for i in seq(0, n):",
            inner,
            f"            {s2}",
        ]
    )
    # fusing the two outer loops gives two inner loops in one outer loop
    outer_fused = parse(
        ["    for i in seq(0, n):", inner, f"            {s1}", inner, f"            {s2}"]
    )
    if legal(ck.check_fission, fused, (("body", 0), ("body", 0), ("body", 1)), 2):
        assert same(fused, split), (s1, s2)
    if legal(ck.check_fuse, split, (("body", 0),), (("body", 1),)):
        assert same(split, outer_fused), (s1, s2)
    if legal(ck.check_fuse, outer_fused, (("body", 0), ("body", 0)), (("body", 0), ("body", 1))):
        assert same(outer_fused, fused), (s1, s2)


def test_rejected_rewrites_do_change_results() -> None:
    # the other direction, on known cases: what the checks reject really differs here
    body = stmt(("A", 0, 0), ("A", -1, 1), False)
    p = parse(["    for i in seq(0, n):", "        for j in seq(0, n):", f"            {body}"])
    q = parse(["    for j in seq(0, n):", "        for i in seq(0, n):", f"            {body}"])
    assert not legal(ck.check_reorder_loops, p, (("body", 0),))
    assert not same(p, q)
    s1, s2 = stmt(("A", 0, 0), ("B", 0, 0), False), stmt(("B", 0, 0), ("A", 1, 0), False)
    inner = "        for j in seq(0, n):"
    fused = parse(["    for i in seq(0, n):", inner, f"            {s1}", f"            {s2}"])
    loop_i = "    for i in seq(0, n):"
    split = parse([loop_i, inner, f"            {s1}", loop_i, inner, f"            {s2}"])
    assert not legal(ck.check_fission, fused, (("body", 0), ("body", 0), ("body", 1)), 2)
    assert not legal(ck.check_fuse, split, (("body", 0),), (("body", 1),))
    assert not same(fused, split)


BOUNDS_HEAD = "def q(n: size, A: f32[2 * n + 3] @ DRAM):"


@settings(max_examples=60, deadline=None)
@given(
    st.integers(-2, 2),
    st.integers(-2, 2),
    st.sampled_from([1, 2, -1]),
    st.integers(-3, 4),
    st.booleans(),
)
def test_bounds_verdicts_match_the_interpreter(
    lo: int, hi: int, k: int, off: int, guard: bool
) -> None:
    lines = [BOUNDS_HEAD, f"    for i in seq({lo}, n + {hi}):"]
    index = f"{k} * i + {off}"
    if guard:
        lines += ["        if i < n:", f"            A[{index}] = 1.0"]
    else:
        lines += [f"        A[{index}] = 1.0"]
    p = parse_source("\n".join(lines) + "\n", {"DRAM": DRAM}, "<gen>")

    def crashes(n: int) -> bool:
        try:
            interpret(p, n, np.zeros(2 * n + 3, dtype=np.float32))
        except InterpreterError:
            return True
        return False

    try:
        check_bounds(p)
    except BoundsError as e:
        # the counterexample is a real one: the interpreter fails on it
        n_sym = p.args[0].sym
        cex = e.counterexample  # type: ignore[attr-defined]
        assert crashes(cex[n_sym]), str(e)
        return
    assert not any(crashes(n) for n in range(1, 9))


# Statements that go through a window and through a call, so that effects are mapped (window
# offsets composed, callee accesses mapped through the arguments) before the checks see them.

WIDE_HEAD = "def p(n: size, A: f32[n + 8, n + 8] @ DRAM, B: f32[n + 8, n + 8] @ DRAM):"
WINDOW = "    w = A[1 : n + 8, 0 : n + 8]"


@proc
def bump(dst: [f32][2] @ DRAM, src: [f32][2] @ DRAM):
    dst[0] = src[1] * 0.5 + 1.0
    dst[1] = src[0] + 2.0


def _at(buf: str, di: int, dj: int, i: str, width: int = 0) -> str:
    j = f"j + {dj + PAD}"
    col = f"{j} : {j} + {width}" if width else j
    return f"{buf}[{i} + {di + PAD}, {col}]"


wide_stmt = st.tuples(
    st.sampled_from(["plain", "window", "call"]), access, access, st.sampled_from("AB")
)


def wide_text(s: tuple[str, tuple[str, int, int], tuple[str, int, int], str], i: str) -> str:
    kind, (wb, wi, wj), (rb, ri, rj), _ = s
    if kind == "call":
        return f"bump({_at(wb, wi, wj, i, 2)}, {_at(rb, ri, rj, i, 2)})"
    target = _at("w" if kind == "window" else wb, wi, wj, i)
    return f"{target} = {_at(rb, ri, rj, i)} * 0.5 + 1.0"


def wide(lines: list[str]) -> ProcDef:
    text = "\n".join([WIDE_HEAD, WINDOW, *lines]) + "\n"
    return parse_source(text, {"DRAM": DRAM, "bump": bump}, "<gen>")


def wide_same(p: ProcDef, q: ProcDef) -> bool:
    def go(x: ProcDef) -> list[np.ndarray]:
        rng = np.random.default_rng(3)
        arrays = [rng.standard_normal((N + 8, N + 8)).astype(np.float32) for _ in range(2)]
        interpret(x, N, *arrays)
        return arrays

    return all(np.array_equal(a, b) for a, b in zip(go(p), go(q), strict=True))


@settings(max_examples=40, deadline=None)
@given(wide_stmt, wide_stmt)
def test_checks_through_windows_and_calls_are_sound(
    s1: tuple[str, tuple[str, int, int], tuple[str, int, int], str],
    s2: tuple[str, tuple[str, int, int], tuple[str, int, int], str],
) -> None:
    li, lj = "    for i in seq(0, n):", "        for j in seq(0, n):"
    ind = " " * 12
    a, b = wide_text(s1, "i"), wide_text(s2, "i")
    both = wide([li, lj, ind + a, ind + b])
    loop = (("body", 1),)
    swapped = wide(["    for j in seq(0, n):", "        for i in seq(0, n):", ind + a, ind + b])
    if legal(ck.check_reorder_loops, both, loop):
        assert wide_same(both, swapped), (a, b)
    if legal(
        ck.check_commute,
        both,
        [(*loop, ("body", 0), ("body", 0))],
        [(*loop, ("body", 0), ("body", 1))],
    ):
        assert wide_same(both, wide([li, lj, ind + b, ind + a])), (a, b)
    if legal(ck.check_fission, both, (*loop, ("body", 0), ("body", 1)), 2):
        assert wide_same(both, wide([li, lj, ind + a, li, lj, ind + b])), (a, b)
    rev_a, rev_b = wide_text(s1, "n - 1 - i"), wide_text(s2, "n - 1 - i")
    if legal(ck.check_parallel, both, loop):
        assert wide_same(both, wide([li, lj, ind + rev_a, ind + rev_b])), (a, b)
