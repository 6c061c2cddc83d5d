"""The one new-name check (``arguments.check_new_name``, applied by the registry through
``NewName`` annotations): every primitive taking names refuses a Python keyword, a word the
language reserves, the pattern wildcard and a clashing name, each with its own precondition
class (all ``BadNameError``), and accepts a fresh name."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest

import cursched
from cursched import (
    DRAM,
    BadNameError,
    add_loop,
    bind_expr,
    divide_with_recompute,
    extract_subproc,
    mult_loops,
    proc,
    rename,
    scan_fuse,
    scope,
    split,
    split_online,
    split_scan,
    stage_mem,
)
from cursched.frontend import parse_source
from cursched.primitives.arguments import RESERVED_NAMES, NewName, check_new_name
from cursched.primitives.buffers.stage import StageNameError
from cursched.primitives.calls.extract import ExtractNameError
from cursched.primitives.exprs.binds import BadBindNameError
from cursched.primitives.gpu.scopes import ScopeNameError
from cursched.primitives.loops.loop_shapes import MultNameError
from cursched.primitives.loops.loop_split import SplitNamesError
from cursched.primitives.loops.loop_wrap import AddLoopNameError
from cursched.primitives.loops.procs import InvalidNameError
from cursched.primitives.loops.recompute import RecomputeNamesError
from cursched.primitives.scans.split_online import SplitOnlineNameError
from cursched.primitives.scans.split_scan import SplitScanNameError


@proc
def grid(n: size, x: f32[4, 8] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, 4):
        for j in seq(0, 8):
            x[i, j] = 1.0
    for k in seq(0, n):
        y[k] = y[k] * 0.5


@proc
def prefix_sum(n: size, x: f32[n], y: f32[n]):
    assert n % 4 == 0
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += x[i]
        y[i] = s


@proc
def online_sum(n: size, x: f32[n], out: f32[1]):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    out[0] = s


ONLINE_SUM, _ = scan_fuse(online_sum, "for i in _: _ #0", "for i in _: _ #1")


@proc
def long(n: size, x: f32[n], y: f32[n]):
    assert n >= 9
    for i in seq(0, n):
        y[i] = x[i] + 1.0


# each name-taking primitive, as a call with the name to try, and its precondition class
CALLS: dict[str, tuple[Callable[[str], Any], type[BadNameError]]] = {
    "split": (lambda nm: split(grid, "j", 4, names=(nm, "jj")), SplitNamesError),
    "stage_mem": (lambda nm: stage_mem(grid, "for j in _: _", "x[i, 0:8]", nm), StageNameError),
    "add_loop": (lambda nm: add_loop(grid, "x[_] = _", nm, 4), AddLoopNameError),
    "mult_loops": (lambda nm: mult_loops(grid, "i", nm), MultNameError),
    "rename": (lambda nm: rename(grid, nm), InvalidNameError),
    "extract_subproc": (lambda nm: extract_subproc(grid, "for j in _: _", nm), ExtractNameError),
    "bind_expr": (lambda nm: bind_expr(grid, [grid.find("y[_] * 0.5")], nm), BadBindNameError),
    "split_scan": (lambda nm: split_scan(prefix_sum, "i", 4, names=(nm, "ii")), SplitScanNameError),
    "split_online": (
        lambda nm: split_online(ONLINE_SUM, "i", 4, names=(nm, "io")),
        SplitOnlineNameError,
    ),
    "divide_with_recompute": (
        lambda nm: divide_with_recompute(long, "i", 3, 3, (nm, "ii")),
        RecomputeNamesError,
    ),
    "scope": (lambda nm: scope(grid, "for k in _: _", nm), ScopeNameError),
}

# ``scope``'s name is a label, printed as a string literal (``with scope("name"):``), not a
# binding: any non-empty string reads back
LABELS = {"scope"}


def _name_taking_primitives() -> set[str]:
    """Primitives with a parameter annotated ``NewName`` (read from their annotations)."""
    out = set()
    for name in cursched.primitives.__all__:
        prim = getattr(cursched, name)
        if not getattr(prim, "__cursched_primitive__", False):
            continue
        hints = typing.get_type_hints(inspect.unwrap(prim), include_extras=True)
        for ann in hints.values():
            if any(isinstance(m, NewName) for m in getattr(ann, "__metadata__", ())):
                out.add(name)
    return out


def test_every_name_taking_primitive_is_in_the_table() -> None:
    assert _name_taking_primitives() == set(CALLS)
    # and no primitive takes a name without the shared check
    for name in cursched.primitives.__all__:
        prim = getattr(cursched, name)
        if getattr(prim, "__cursched_primitive__", False) and name not in set(CALLS) | LABELS:
            params = inspect.signature(prim).parameters
            assert not {"name", "names", "new_name"} & set(params), name


@pytest.mark.parametrize("prim", sorted(CALLS))
@pytest.mark.parametrize("bad", ["for", "in", "lambda", "None", "seq", "f32", "DRAM", "_", "1x"])
def test_a_bad_name_is_refused_by_every_primitive(prim: str, bad: str) -> None:
    call, cls = CALLS[prim]
    with pytest.raises(cls) as e:
        call(bad)
    assert isinstance(e.value, BadNameError)
    assert repr(bad) in str(e.value)


@pytest.mark.parametrize("prim", sorted(CALLS))
def test_a_fresh_name_is_accepted_and_round_trips(prim: str) -> None:
    call, _ = CALLS[prim]
    p, c = call("fresh")
    assert "fresh" in str(p)
    env: dict[str, object] = {"DRAM": DRAM}
    if prim == "extract_subproc":
        env["fresh"] = c.subproc
    parse_source(str(p), env)


@pytest.mark.parametrize(
    ("prim", "clash"),
    [
        ("split", "i"),  # the enclosing loop's variable: the body's i would change meaning
        ("add_loop", "j"),  # a loop of the block
        ("mult_loops", "j"),  # a loop inside
        ("stage_mem", "k"),  # any name of the proc
        ("bind_expr", "k"),  # the loop the read sits in
        ("bind_expr", "n"),  # a parameter
    ],
)
def test_a_clashing_name_is_refused(prim: str, clash: str) -> None:
    call, cls = CALLS[prim]
    with pytest.raises(cls, match="already used here"):
        call(clash)


def test_split_default_names_get_the_same_check() -> None:
    @proc
    def nested(x: f32[8, 8] @ DRAM):
        for i in seq(0, 8):
            for io in seq(0, 8):
                x[i, io] = 1.0

    # the default outer name io would capture the body's own loop io
    with pytest.raises(SplitNamesError, match="'io' is already used here"):
        split(nested, "i", 4)
    p, _ = split(nested, "i", 4, names=("a", "b"))
    parse_source(str(p), {"DRAM": DRAM})


def test_soft_keywords_are_names() -> None:
    # match, case and type parse as names in an expression: the printout reads back
    for word in ("match", "case", "type"):
        assert check_new_name(word, "test", BadNameError) == word
        p, _ = split(grid, "j", 4, names=(word, "jj"))
        parse_source(str(p), {"DRAM": DRAM})
    assert {"seq", "par", "stride", "f32", "size", "DRAM", "relu", "_"} <= RESERVED_NAMES
