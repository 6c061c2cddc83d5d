"""The before -> after example of every primitive (docstring, shown in docs/primitives.md) runs.

The generator draws each example from the primitive's docstring: a call and a two-column
diagram. Here the left column, under a proc header that declares its names, is parsed into a
proc; the call runs on it; and the right column must appear, with its relative indentation,
in the printout of the result. Examples that are illustrations rather than programs are listed
in ``ILLUSTRATIVE`` with the reason.
"""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import cursched
from cursched import Proc
from cursched.frontend import parse_source

ROOT = Path(__file__).parent.parent

F = "f32[n] @ DRAM"
# The proc header (and asserts) each example's left column is the body of.
HEADERS: dict[str, str] = {
    "add_loop": f"def f(n: size, x: {F}):",
    "add_unsafe_guard": f"def f(n: size, x: {F}):",
    "divide_with_recompute": (
        "def f(H: size, x: f32[H + 2] @ DRAM, t: f32[H + 2] @ DRAM):\n    assert H % 4 == 0"
    ),
    "bind_expr": f"def f(n: size, i: index, x: {F}, a: f32 @ DRAM):\n    assert i >= 0 and i < n",
    "bind_loop": "def f(x: f32[64] @ GLOBAL, y: f32[64] @ GLOBAL):",
    "call_eqv": f"def f(n: size, x: {F}):",
    "tree_scan": "def f(x: f32[4] @ DRAM, y: f32[4] @ DRAM, s: f32 @ DRAM):",
    "rewrite_expr": "def f(n: size, x: f32[n] @ DRAM):\n    assert n % 4 == 0",
    "set_window": "",
    "commute_expr": f"def f(n: size, i: index, x: {F}, y: {F}):\n    assert i >= 0 and i < n",
    "cut_loop": f"def f(n: size, x: {F}):",
    "delete_buffer": f"def f(n: size, x: {F}):",
    "delete_pass": "def f(x: f32 @ DRAM, y: f32 @ DRAM):",
    "divide_dim": "def f(i: index, x: f32[16] @ DRAM):\n    assert i >= 0 and i < 16",
    "eliminate_dead_code": f"def f(n: size, x: {F}):\n    assert n > 4",
    "expand_dim": f"def f(n: size, x: {F}, y: {F}):",
    "extract_subproc": "def f(n: size, A: f32[n, 8] @ DRAM):",
    "fission": f"def f(n: size, x: {F}, y: {F}):",
    "fold_into_reduce": f"def f(n: size, i: index, x: {F}, y: {F}):\n    assert i >= 0 and i < n",
    "fuse": f"def f(n: size, x: {F}, y: {F}):",
    "inline": "def f(n: size, io: index, A: f32[4 * n] @ DRAM):\n    assert io >= 0 and io < n",
    "inline_assign": (
        f"def f(n: size, i: index, x: {F}, y: {F}):\n    assert i >= 0 and i < n\n    t: f32"
    ),
    "inline_window": (
        "def f(n: size, i: index, j: index, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM):\n"
        "    assert i >= 0 and i < n and j >= 0 and j < 4"
    ),
    "insert_pass": "def f(x: f32 @ DRAM, y: f32 @ DRAM):",
    "join_loops": f"def f(n: size, x: {F}):\n    assert n >= 4",
    "left_reassociate_expr": (
        f"def f(n: size, i: index, a: {F}, b: {F}, c: {F}, y: {F}):\n    assert i >= 0 and i < n"
    ),
    "lift_alloc": f"def f(n: size, x: {F}, y: {F}):",
    "lift_reduce_constant": f"def f(n: size, a: f32, x: {F}, s: f32 @ DRAM):",
    "lift_scope": f"def f(n: size, x: {F}):",
    "merge_writes": f"def f(n: size, i: index, x: {F}, y: {F}):\n    assert i >= 0 and i < n",
    "mult_dim": (
        "def f(n: size, i: index, j: index, x: f32[n] @ DRAM):\n"
        "    assert i >= 0 and i < n and j >= 0 and j < 4"
    ),
    "mult_loops": "def f(n: size, x: f32[4 * n] @ DRAM):",
    "parallelize_loop": f"def f(n: size, x: {F}, y: {F}):",
    "rearrange_dim": (
        "def f(i: index, j: index, x: f32[4, 8] @ DRAM):\n"
        "    assert i >= 0 and i < 4 and j >= 0 and j < 8"
    ),
    "remove_loop": f"def f(n: size, x: {F}):",
    "reorder_loops": "def f(n: size, m: size, A: f32[n, m] @ DRAM):",
    "reorder_stmts": "def f(x: f32 @ DRAM, y: f32 @ DRAM):",
    "replace": "def f(n: size, io: index, A: f32[4 * n] @ DRAM, t: f32[4] @ DRAM):\n"
    "    assert io >= 0 and io < n",
    "resize_dim": "def f(x: f32[4] @ DRAM):",
    "reuse_buffer": "def f(x: f32[2] @ DRAM, y: f32[2] @ DRAM):",
    "scan_fuse": f"def f(n: size, x: {F}, m: f32 @ DRAM, s: f32 @ DRAM):",
    "scope": "def f(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):",
    "set_memory": "def f():",
    "set_precision": "def f(x: f32[1] @ DRAM):",
    "shift_loop": f"def f(n: size, x: {F}):",
    "simplify": "def f(n: size, x: f32[4 * n] @ DRAM, y: f32[4] @ DRAM):",
    "sink_alloc": f"def f(n: size, x: {F}, y: {F}):",
    "specialize": f"def f(n: size, x: {F}):",
    "split": f"def f(n: size, x: {F}):",
    "stage_mem": "def f(n: size, A: i8[n] @ DRAM):\n    assert n % 4 == 0",
    "split_write": f"def f(n: size, i: index, x: {F}, y: {F}):\n    assert i >= 0 and i < n",
    "unroll_buffer": "def f(x: f32[2] @ DRAM):",
    "unroll_loop": "def f(x: f32[2] @ DRAM):",
    "unscope": "def f(n: size, x: f32[n] @ GLOBAL, y: f32[n] @ GLOBAL):",
}

# Examples that are not programs, and why.
ILLUSTRATIVE: dict[str, str] = {
    "split_scan": "the diagram elides the allocations, the guard and the carry loop's body",
    "split_online": "the diagram elides the copies of the online step in both new loops",
    "rename": "the diagram elides the proc with `...`",
    # shown by tests/primitives/test_configs.py and test_exo_parity.py instead
    "bind_config": "needs a @config class, which the example environment does not have",
    "write_config": "needs a @config class, which the example environment does not have",
    "delete_config": "needs a @config class, which the example environment does not have",
    "insert_noop_call": "needs a no-op instruction, which the example environment lacks",
    "make_instr": "the diagram elides the instruction's body",
    "insert_barrier": "the bound loops are elided (`par(0, 64, ...)`) to fit two columns",
    "insert_barriers": "the bound loops are elided (`par(0, 64, ...)`) to fit two columns",
}


def _scal() -> dict[str, Any]:
    src = "def scal(n: size, x: [f32][n] @ DRAM):\n    for i in seq(0, n):\n        x[i] = x[i] * 2.0\n"
    scal = Proc(parse_source(src, vars(cursched)))
    instr = (
        '@instr("load4({dst_data}, {src_data});")\n'
        "def load4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):\n"
        "    for i in seq(0, 4):\n        dst[i] = src[i]\n"
    )
    return {"scal": scal, "load4": Proc(parse_source(instr, vars(cursched)))}


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    path = ROOT / "tools" / "gen_primitives_doc.py"
    spec = importlib.util.spec_from_file_location("gen_primitives_doc", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def columns(diagram: str) -> tuple[list[str], list[str]]:
    """The left and right columns of a ``before -> after`` diagram."""
    lines = diagram.splitlines()
    arrow_line = next(ln for ln in lines if " -> " in ln or ln.rstrip().endswith("->"))
    cut = arrow_line.index("->")
    start = cut + 2 + len(arrow_line[cut + 2 :]) - len(arrow_line[cut + 2 :].lstrip())
    left = [ln[:cut].rstrip() for ln in lines]
    right = [ln[start:].split("  #")[0].rstrip() if len(ln) > start else "" for ln in lines]
    return [ln for ln in left if ln.strip()], [ln for ln in right if ln.strip()]


def shape(lines: list[str]) -> list[tuple[int, str]]:
    base = min(len(ln) - len(ln.lstrip()) for ln in lines)
    return [(len(ln) - len(ln.lstrip()) - base, ln.strip()) for ln in lines]


def normalise(lines: list[str]) -> list[str]:
    """Lines with the default memory's ``@ DRAM`` dropped and wrapped signatures joined."""
    out: list[str] = []
    for ln in lines:
        ln = ln.replace(" @ DRAM", "")
        if out and out[-1].endswith(","):
            out[-1] += " " + ln.strip()
        else:
            out.append(ln)
    return out


def appears_in(block: list[str], text: str) -> bool:
    """``block`` is a run of consecutive lines of ``text``, up to a common indentation."""
    want = shape(normalise(block))
    lines = normalise(text.splitlines())
    for k in range(len(lines) - len(want) + 1):
        window = lines[k : k + len(want)]
        if [ln.strip() for ln in window] == [w for _, w in want] and shape(window) == want:
            return True
    return False


def test_every_primitive_has_a_header_or_a_reason() -> None:
    prims = {
        n
        for n in cursched.__all__
        if getattr(getattr(cursched, n), "__cursched_primitive__", False)
    }
    missing = prims - set(HEADERS) - set(ILLUSTRATIVE)
    assert not missing, f"add the proc header of {sorted(missing)}'s docstring example to HEADERS"
    assert prims == set(HEADERS) | set(ILLUSTRATIVE), "HEADERS names a primitive no longer exported"
    assert not set(HEADERS) & set(ILLUSTRATIVE)


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_example_runs_and_gives_what_the_docs_show(name: str, generator: ModuleType) -> None:
    fn = getattr(cursched, name)
    call, remark, diagram = generator.example(name, fn.__doc__ or "", generator.cursors_class(fn))
    left, right = columns(diagram)
    assert left and right, diagram
    if left[0].startswith("def "):  # the diagram shows the header itself
        header, left = left[0], left[1:]
    else:
        header = HEADERS[name]
    if not left or left[-1].endswith(":"):  # a header shown without its body
        left.append(" " * (len(left[-1]) - len(left[-1].lstrip()) + 4 if left else 0) + "pass")
    body = textwrap.indent(textwrap.dedent("\n".join(left)), "    ")
    src = f"{header}\n{body}\n"
    extras = _scal()
    p = Proc(parse_source(src, {**vars(cursched), **extras}, filename=f"<{name} example>"))
    env: dict[str, Any] = {**vars(cursched), **extras, "p": p}
    # a remark "with `name = expr`" defines a value the call uses
    for setup in re.findall(r"`(\w+ = [^`]+)`", remark):
        exec(setup, env)
    exec(call, env)
    after = env["p"]
    assert isinstance(after, Proc)
    # a new proc among the results (extract_subproc's) is part of what the diagram shows
    made = [v for k, v in env.items() if isinstance(v, Proc) and k not in ("p", *extras)]
    got = "\n".join(str(q) for q in [after, *made])
    # a `def` in the right column starts a piece of its own (a body shown beside a new proc)
    pieces: list[list[str]] = [[]]
    for ln in right:
        if ln.lstrip().startswith("def ") and pieces[-1]:
            pieces.append([])
        pieces[-1].append(ln)
    for piece in pieces:
        assert appears_in(piece, got), f"{name}: expected\n" + "\n".join(piece) + f"\n\ngot\n{got}"


def test_appears_in_wants_the_lines_in_order_and_shape() -> None:
    text = "def f():\n    for i in seq(0, 4):\n        x[i] = 0.0\n    y = 1.0"
    assert appears_in(["for i in seq(0, 4):", "    x[i] = 0.0"], text)
    assert not appears_in(["for i in seq(0, 4):", "x[i] = 0.0"], text)
    assert not appears_in(["x[i] = 0.0", "for i in seq(0, 4):"], text)
    assert not appears_in(["for i in seq(0, 4):", "    x[i] = 1.0"], text)
