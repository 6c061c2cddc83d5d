"""Random sequences of loop primitives on random procs: every step either raises a
``SchedulingError`` subclass or yields a proc equivalent under the interpreter.

Zero unsound acceptances is the property. ``CURSCHED_FUZZ_EXAMPLES`` raises the number of
examples for long runs (default 40, which keeps this file to a few seconds).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cursched import (
    DRAM,
    ParseError,
    PatternError,
    Proc,
    SchedulingError,
    TypeCheckError,
    cut_loop,
    fission,
    fuse,
    join_loops,
    reorder_loops,
    shift_loop,
    split,
)
from cursched.analysis.bounds import check_bounds
from cursched.cursors import ForCursor, IfCursor
from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_equal
from cursched.testing import assert_equivalent

EXAMPLES = int(os.environ.get("CURSCHED_FUZZ_EXAMPLES", "40"))

# ---------------------------------------------------------------------------- random procs

LOS = ["0", "1", "2"]
HIS = ["n", "n + 1", "4", "6", "n - 1"]


@st.composite
def stmt_text(draw: st.DrawFn, var: str, depth: int, pad: str) -> str:
    c1, c2 = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    kinds = ["assign", "reduce", "alloc", "window"] + (["loop", "if"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    a, b = draw(st.sampled_from([("x", "y"), ("y", "x"), ("x", "x")]))
    tag = draw(st.integers(0, 10**6))
    if kind == "alloc":
        t = f"t{tag}"
        return (
            f"{pad}{t}: f32[2] @ DRAM\n{pad}{t}[0] = {b}[{var} + {c2}]\n"
            f"{pad}{t}[1] = {t}[0] * 2.0\n{pad}{a}[{var} + {c1}] = {t}[1]\n"
        )
    if kind == "window":
        w = f"w{tag}"
        return f"{pad}{w} = {a}[{var} + {c1}:{var} + {c1} + 2]\n{pad}{w}[1] += {b}[{var} + {c2}]\n"
    if kind == "assign":
        return f"{pad}{a}[{var} + {c1}] = {b}[{var} + {c2}] * 0.5 + 1.0\n"
    if kind == "reduce":
        return f"{pad}{a}[{var} + {c1}] += {b}[{var} + {c2}]\n"
    if kind == "if":
        body = "".join(
            draw(st.lists(stmt_text(var, depth + 1, pad + "    "), min_size=1, max_size=3))
        )
        text = f"{pad}if {var} >= {c1}:\n{body}"
        if draw(st.booleans()):
            other = draw(stmt_text(var, depth + 1, pad + "    "))
            text += f"{pad}else:\n{other}"
        return text
    inner = "j" if var == "i" else "k"
    body = "".join(
        draw(st.lists(stmt_text(inner, depth + 1, pad + "    "), min_size=1, max_size=2))
    )
    return f"{pad}for {inner} in seq(0, 3):\n{body}".replace(f"[{inner} + ", f"[{var} + {inner} + ")


@st.composite
def proc_text(draw: st.DrawFn) -> str:
    loops = []
    lo, hi = draw(st.sampled_from(LOS)), draw(st.sampled_from(HIS))
    for _ in range(draw(st.integers(1, 2))):
        if loops and not draw(st.booleans()):  # equal bounds half of the time, for fuse
            lo, hi = draw(st.sampled_from(LOS)), draw(st.sampled_from(HIS))
        if draw(st.integers(0, 3)) == 0:  # a perfect nest, for reorder_loops
            body = draw(stmt_text("i", 0, "        ").filter(lambda t: t.lstrip()[:3] == "for"))
        else:
            body = "".join(draw(st.lists(stmt_text("i", 0, "        "), min_size=1, max_size=3)))
        loops.append(f"    for i in seq({lo}, {hi}):\n{body}")
    head = "def fz(n: size, x: f32[n + 12] @ DRAM, y: f32[n + 12] @ DRAM):\n"
    head += f"    assert n >= {draw(st.integers(1, 3))}\n"
    return head + "".join(loops)


def make(text: str) -> Proc:
    try:
        return Proc(check_bounds(parse_source(text, {"DRAM": DRAM})))
    except (ParseError, TypeCheckError):  # two allocations drew the same name
        assume(False)
        raise


# ------------------------------------------------------------------------- random steps


def loops_of(p: Proc) -> list[ForCursor]:
    return [c for c in p.find_all("for _ in _: _") if isinstance(c, ForCursor)]


Step = Callable[[Proc, st.DataObject], tuple[Proc, Any]]


def _pick_loop(p: Proc, data: st.DataObject) -> ForCursor:
    return data.draw(st.sampled_from(loops_of(p)))


def _split(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    tail = data.draw(st.sampled_from(["guard", "cut", "cut_and_guard", "perfect"]))
    return split(p, _pick_loop(p, data), data.draw(st.integers(2, 5)), ("o", "q"), tail=tail)


def _reorder(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    return reorder_loops(p, _pick_loop(p, data))


def _fission(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    try:
        ifs = [c for c in p.find_all("if _: _") if isinstance(c, IfCursor)]
    except PatternError:  # no if in this proc
        ifs = []
    node = data.draw(st.sampled_from([*loops_of(p), *ifs]))
    body = node.body()
    k = data.draw(st.integers(0, max(len(body) - 2, 0)))
    return fission(p, body[k].after(), n_lifts=data.draw(st.integers(1, 2)))


def _adjacent(p: Proc, data: st.DataObject) -> tuple[ForCursor, Any]:
    loop = _pick_loop(p, data)
    return loop, loop.next()


def _fuse(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    a, b = _adjacent(p, data)
    return fuse(p, a, b) if b else (p, None)


def _join(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    a, b = _adjacent(p, data)
    return join_loops(p, a, b) if isinstance(b, ForCursor) else (p, None)


def _cut(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    at = data.draw(st.sampled_from(["1", "2", "n", "n - 1", "n / 2", "3"]))
    return cut_loop(p, _pick_loop(p, data), at)


def _shift(p: Proc, data: st.DataObject) -> tuple[Proc, Any]:
    return shift_loop(p, _pick_loop(p, data), data.draw(st.sampled_from(["0", "1", "n", "-1"])))


STEPS: list[Step] = [_split, _reorder, _fission, _fuse, _join, _cut, _shift]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=proc_text(), data=st.data())
def test_random_schedules_are_sound(text: str, data: st.DataObject) -> None:
    original = make(text)
    p = original
    for _ in range(data.draw(st.integers(1, 3))):
        step = data.draw(st.sampled_from(STEPS))
        try:
            new, _cursors = step(p, data)
        except SchedulingError:
            continue
        if new is not p:
            assert_equivalent(original, new, trials=3, sizes=None)
            # the history replays to the same proc
            env: dict[str, object] = {"fz": original}
            exec(new.history(), env)
            assert alpha_equal(env["p"].ir(), new.ir())  # type: ignore[attr-defined]
        p = new
