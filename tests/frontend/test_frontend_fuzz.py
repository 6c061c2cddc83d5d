"""Mutated valid sources: the frontend answers with a proc, a ParseError or a TypeCheckError.

Anything else escaping (an ``AttributeError``, an ``AssertionError``, a ``RecursionError``...)
is a bug. Procs that do parse must also pass the IR verifier and print back to an
alpha-equivalent proc. ``CURSCHED_FUZZ_EXAMPLES`` raises the number of examples (default 400,
a few seconds).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursched.errors import ParseError, TypeCheckError
from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_equal
from cursched.ir.memory import DRAM, Memory
from cursched.ir.nodes import Call, Node, ProcDef
from cursched.ir.printer import print_proc
from cursched.ir.types import TensorType
from cursched.ir.verify import verify_proc


class Vec(Memory):
    """A memory for the fuzzed sources."""


_CALLEE = parse_source(
    "def axpy(n: size, a: f32, x: [f32][n], y: [f32][n]):\n"
    "    for i in seq(0, n):\n"
    "        y[i] += a * x[i]\n",
    {},
)
ENV: dict[str, object] = {"axpy": _CALLEE, "N": 8, "H": 0.5, "Vec": Vec, "DRAM": DRAM}

SEEDS = [
    """def sgemm(M: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, 16], C: f32[M, 16]):
    assert M % 4 == 0
    for i in seq(0, M):
        for j in seq(0, 16):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]
""",
    """def softmax(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    m: f32
    s: f32
    m = -inf
    s = 0.0
    for i in seq(0, n):
        m = fmaxf(m, x[i])
    for i in seq(0, n):
        y[i] = expf(x[i] - m)
        s += y[i]
    for i in par(0, n):
        y[i] = y[i] / s
""",
    """def rows(n: size, a: f32, A: f32[n, 8], b: bool):
    assert stride(A, 1) == 1
    for i in seq(0, n):
        w = A[i, 0:8]
        if b and i < 4:
            axpy(8, a, w, A[i, :])
        elif i % 2 == 1:
            pass
        else:
            w[i % 8] = select(w[0], a, H, -w[1])
""",
    """def blur(n: size, x: i8[n + 2], y: i32[n]):
    t: i32[4] @ Vec
    with scope("k", target="cuda"):
        for i in seq(0, n):
            t[i % 4] = x[i] + x[i + 1] * 2
            y[i] = t[i % 4] + N
""",
]

NAMES = [
    "n",
    "m",
    "i",
    "j",
    "k",
    "x",
    "y",
    "A",
    "B",
    "a",
    "b",
    "w",
    "t",
    "s",
    "seq",
    "par",
    "f32",
    "i8",
    "size",
    "index",
    "bool",
    "DRAM",
    "Vec",
    "expf",
    "select",
    "stride",
    "scope",
    "inf",
    "axpy",
    "N",
    "H",
    "foo",
    "pass",
    "for",
    "if",
    "else",
    "assert",
    "with",
    "def",
    "not",
    "lambda",
    "return",
    "while",
    "True",
    "None",
]
NUMBERS = ["0", "1", "-1", "2.5", "16", "1e40", "0.0", "3", "-0", "99999999999999999999"]
PUNCT = [
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">=",
    "==",
    "=",
    "+=",
    ":",
    ",",
    "[",
    "]",
    "(",
    ")",
    "@",
    ".",
    " and ",
    " or ",
    " not ",
    "**",
    "//",
    "'s'",
    "\t",
    "\n",
    "\\",
    "#",
    "...",
]
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?(?:e\d+)?|\s+|.", re.S)


def _mutate(text: str, ops: list[tuple[int, int, int]]) -> str:
    for kind, a, b in ops:
        toks = _TOKEN.findall(text)
        lines = text.split("\n")
        t, ln = a % len(toks), a % len(lines)
        match kind % 10:
            case 0:
                del toks[t]
            case 1:
                toks.insert(t, toks[t])
            case 2:
                u = b % len(toks)
                toks[t], toks[u] = toks[u], toks[t]
            case 3:
                toks[t] = NAMES[b % len(NAMES)]
            case 4:
                toks[t] = NUMBERS[b % len(NUMBERS)]
            case 5:
                toks[t] = PUNCT[b % len(PUNCT)]
            case 6:
                del lines[ln]
            case 7:
                lines.insert(ln, lines[b % len(lines)])
            case 8:
                lines[ln] = ("    " + lines[ln]) if b % 2 else lines[ln][4:]
            case _:
                u = b % len(lines)
                lines[ln], lines[u] = lines[u], lines[ln]
        text = "\n".join(lines) if kind % 10 >= 6 else "".join(toks)
    return text


_EXAMPLES = int(os.environ.get("CURSCHED_FUZZ_EXAMPLES", "400"))
_ops = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 10_000), st.integers(0, 10_000)),
    min_size=1,
    max_size=3,
)


def node_ids(node: object, seen: list[int]) -> list[int]:
    """The ids of every IR node object in ``node`` (callees excluded: they are shared)."""
    if isinstance(node, tuple):
        for x in node:
            node_ids(x, seen)
    elif isinstance(node, TensorType):
        node_ids(node.shape, seen)
    elif isinstance(node, Node):
        seen.append(id(node))
        for f in dataclasses.fields(node):
            if not (isinstance(node, Call) and f.name == "proc"):
                node_ids(getattr(node, f.name), seen)
    return seen


def check_parsed(p: ProcDef) -> None:
    """What every parsed proc satisfies: verified, unshared nodes, printout parses back."""
    verify_proc(p)
    ids = node_ids(p, [])
    assert len(ids) == len(set(ids)), "a node object appears twice"
    again = parse_source(print_proc(p), ENV)
    assert alpha_equal(p, again), print_proc(p)


def test_seeds_are_valid() -> None:
    for seed in SEEDS:
        check_parsed(parse_source(seed, ENV))


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(st.integers(0, len(SEEDS) - 1), _ops)
def test_mutated_sources(seed: int, ops: list[tuple[int, int, int]]) -> None:
    text = _mutate(SEEDS[seed], ops)
    try:
        p = parse_source(text, ENV, filename="fuzz.py")
    except (ParseError, TypeCheckError) as e:
        assert e.srcinfo is not None and e.srcinfo.filename == "fuzz.py"
        assert str(e).startswith(f"fuzz.py:{e.srcinfo.line}:")
        return
    check_parsed(p)


def test_deep_nesting_is_a_parse_error() -> None:
    terms = " + ".join(["0"] * 900)
    text = f"def f(A: f32[4]):\n    A[{terms}] = 1.0\n"
    try:
        parse_source(text, {}, filename="deep.py")
    except ParseError as e:
        assert str(e).startswith("deep.py:2:5: this statement is nested too deeply")
    else:
        raise AssertionError("a 900-term index must be refused")


# ----------------------------------------------------------- mutations of the syntax tree

_BINOPS: list[ast.operator] = [
    ast.Add(),
    ast.Sub(),
    ast.Mult(),
    ast.Div(),
    ast.Mod(),
    ast.Pow(),
    ast.FloorDiv(),
    ast.MatMult(),
]
_CONSTS: list[object] = [0, 1, -1, 2, 16, 0.5, -2.5, True, None, "s", 10**30, float("inf")]


def _mutate_tree(text: str, ops: list[tuple[int, int, int]]) -> str:
    tree = ast.parse(text)
    for kind, a, b in ops:
        exprs = [n for n in ast.walk(tree) if isinstance(n, ast.expr)]
        bodies = [
            getattr(n, f)
            for n in ast.walk(tree)
            for f in ("body", "orelse")
            if isinstance(getattr(n, f, None), list) and getattr(n, f)
        ]
        match kind % 6:
            case 0:  # put a copy of one expression in place of another
                target, source = exprs[a % len(exprs)], exprs[b % len(exprs)]
                for parent in ast.walk(tree):
                    for field, value in ast.iter_fields(parent):
                        if value is target:
                            setattr(parent, field, copy.deepcopy(source))
                        elif isinstance(value, list):
                            value[:] = [copy.deepcopy(source) if v is target else v for v in value]
            case 1:
                names = [n for n in exprs if isinstance(n, ast.Name)]
                if names:
                    names[a % len(names)].id = NAMES[b % len(NAMES)]
            case 2:
                binops = [n for n in exprs if isinstance(n, ast.BinOp)]
                if binops:
                    binops[a % len(binops)].op = _BINOPS[b % len(_BINOPS)]
            case 3:
                consts = [n for n in exprs if isinstance(n, ast.Constant)]
                if consts:
                    consts[a % len(consts)].value = _CONSTS[b % len(_CONSTS)]
            case 4:  # drop or duplicate a statement
                body = bodies[a % len(bodies)]
                i = b % len(body)
                if b % 2 and len(body) > 1:
                    del body[i]
                else:
                    body.insert(i, copy.deepcopy(body[i]))
            case _:  # move a statement into another block
                src, dst = bodies[a % len(bodies)], bodies[b % len(bodies)]
                if len(src) > 1 and src is not dst:
                    dst.insert(b % (len(dst) + 1), src.pop(a % len(src)))
    return ast.unparse(ast.fix_missing_locations(tree))


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(st.integers(0, len(SEEDS) - 1), _ops)
def test_mutated_syntax_trees(seed: int, ops: list[tuple[int, int, int]]) -> None:
    try:
        text = _mutate_tree(SEEDS[seed], ops)
    except (ValueError, TypeError, RecursionError):  # ast.unparse of a nonsensical tree
        return
    try:
        p = parse_source(text, ENV, filename="fuzz.py")
    except (ParseError, TypeCheckError) as e:
        assert e.srcinfo is not None and e.srcinfo.filename == "fuzz.py"
        return
    check_parsed(p)
