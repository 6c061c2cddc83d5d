"""Soundness of scan_fuse on generated programs: the first loop's update, the terms, the
accumulator's shape and start, tiling and what sits between the loops are drawn at random;
whatever scan_fuse accepts must compute what the two loops computed (interpreter, random
inputs), and whatever it refuses must be refused with a ``SchedulingError``.
``CURSCHED_FUZZ`` sets the number of examples."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursched import DRAM, scan_fuse, split
from cursched.errors import SchedulingError
from cursched.frontend import parse_source
from cursched.proc import Proc
from cursched.testing import assert_equivalent

EXAMPLES = int(os.environ.get("CURSCHED_FUZZ", "60"))

UPDATES = ["fmax(m, x[i])", "fmin(m, x[i])", "fmax(x[i], m)", "0.5 * m + x[i]", "x[i]"]
TERMS = [
    "exp(x[i] - m)",
    "exp(m - x[i])",
    "exp2(x[i] - m) * y[i]",
    "exp(0.5 * (x[i] - m))",
    "exp(x[i]) / exp(m)",
    "exp(x[i] - m) * (m - m + 1.0)",
    "exp(x[i] * m)",
    "(x[i] - m) * (x[i] - m)",
    "exp(x[i] - m) + 1.0",
    "y[i]",
]
INITS = ["0.0", "0.0", "1.0"]
BETWEEN = ["", "z[0] = 2.0", "z[0] = m"]


def _program(update: str, term: str, term2: str, init: str, between: str, tensor: bool) -> Proc:
    acc_init = "    for j in seq(0, 3):\n        o[j] = 0.0" if tensor else ""
    acc_update = "        for j in seq(0, 3):\n            o[j] += " + term2 if tensor else ""
    src = f"""
def p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, o: f32[3] @ DRAM, z: f32[1] @ DRAM):
    assert n % 4 == 0
    m: f32
    m = -inf
    for i in seq(0, n):
        m = {update}
    {between or "pass"}
    s: f32
    s = {init}
{acc_init}
    for i in seq(0, n):
        s += {term}
{acc_update}
    z[0] = s + m
"""
    return Proc(parse_source(src, {"DRAM": DRAM}))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    update=st.sampled_from(UPDATES),
    term=st.sampled_from(TERMS),
    term2=st.sampled_from(TERMS),
    init=st.sampled_from(INITS),
    between=st.sampled_from(BETWEEN),
    tensor=st.booleans(),
    tile=st.sampled_from([None, 2, 4, 3]),
)
def test_scan_fuse_is_sound(
    update: str, term: str, term2: str, init: str, between: str, tensor: bool, tile: int | None
) -> None:
    p = _program(update, term, term2, init, between, tensor)
    first, second = p.find_loop("i", many=True)
    q = p
    if tile is not None:
        tail = "perfect" if tile != 3 else "guard"  # 3 does not divide n: guarded tiles
        q, a = split(q, first, tile, ("io", "ii"), tail=tail)
        q, b = split(q, second, tile, ("io", "ii"), tail=tail)
        first, second = a.outer, b.outer
    try:
        r, _ = scan_fuse(q, first, second)
    except SchedulingError:
        return
    # accepted: same results on random inputs (exp of sums of normals stays finite)
    assert_equivalent(p, r, trials=2, sizes={"n": 8}, rtol=1e-3, atol=1e-3)
