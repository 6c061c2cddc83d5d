"""Random accesses replaced by random instructions: ``replace`` either raises a
``SchedulingError`` subclass or yields a proc equivalent under the interpreter.

Zero unsound acceptances is the property; the random instructions carry asserts (unit
strides, fixed sizes) that only some call sites satisfy, as in Exo issue 758.
``CURSCHED_FUZZ_EXAMPLES`` raises the number of examples (default 40).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursched import DRAM, BoundsError, Proc, SchedulingError, replace
from cursched.analysis.bounds import check_bounds
from cursched.frontend import parse_source
from cursched.testing import assert_equivalent

EXAMPLES = int(os.environ.get("CURSCHED_FUZZ_EXAMPLES", "40"))

ENV = {"DRAM": DRAM}


def _instr(kind: str, width: str, asserts: tuple[str, ...]) -> Proc:
    size = "N" if width == "N" else width
    head = "N: size, " if width == "N" else ""
    body = {
        "copy": "dst[i] = src[i]",
        "acc": "dst[i] += src[i]",
        "scale": "dst[i] = src[i] * 2.0",
    }[kind]
    lines = [
        '@instr("op({dst_data}, {src_data});")',
        f"def op({head}dst: [f32][{size}] @ DRAM, src: [f32][{size}] @ DRAM):",
        *(f"    assert {a}" for a in asserts),
        f"    for i in seq(0, {size}):",
        f"        {body}",
    ]
    return Proc(check_bounds(parse_source("\n".join(lines), ENV)))


def _caller(kind: str, trips: int, dst: str, src: str, lo: int = 0) -> Proc | None:
    body = {
        "copy": f"B[{dst}] = A[{src}]",
        "acc": f"B[{dst}] += A[{src}]",
        "scale": f"B[{dst}] = A[{src}] * 2.0",
    }[kind]
    text = "\n".join(
        [
            "def caller(A: f32[12, 12] @ DRAM, B: f32[12, 12] @ DRAM):",
            "    for o in seq(0, 2):",
            f"        for i in seq({lo}, {lo + trips}):",
            f"            {body}",
        ]
    )
    try:
        return Proc(check_bounds(parse_source(text, ENV)))
    except BoundsError:
        return None  # an out-of-bounds caller is not a valid input


INDEX = st.sampled_from(
    ["o, i", "i, o", "o + 1, i + 2", "i, 3", "2 * i, o", "o, 2 * i", "o, i + o", "i + o, i"]
)


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)
@given(
    kind=st.sampled_from(["copy", "acc", "scale"]),
    caller_kind=st.sampled_from(["copy", "acc", "scale"]),
    trips=st.sampled_from([2, 4]),
    lo=st.sampled_from([0, 0, 1]),
    width=st.sampled_from(["4", "N"]),
    asserts=st.sets(
        st.sampled_from(["stride(src, 0) == 1", "stride(dst, 0) == 1", "N == 4"]), max_size=2
    ),
    dst=INDEX,
    src=INDEX,
)
def test_replace_is_sound(
    kind: str,
    caller_kind: str,
    trips: int,
    lo: int,
    width: str,
    asserts: set[str],
    dst: str,
    src: str,
) -> None:
    if width != "N":
        asserts = {a for a in asserts if "N" not in a}
    op = _instr(kind, width, tuple(sorted(asserts)))
    p = _caller(caller_kind, trips, dst, src, lo)
    if p is None:
        return
    try:
        q, c = replace(p, "for i in _: _", op)
    except SchedulingError:
        return
    assert c.call.name() == "op"
    assert kind == caller_kind
    assert_equivalent(p, q, trials=2)
