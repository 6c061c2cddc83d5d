"""Malformed procs: each must raise the right error class at the right file:line:col.

A case is ``(body, error class, anchor)``. ``body`` is the proc's body (under a fixed
header, ``HEADER``) or a whole source when it starts with ``def`` or ``@``. ``anchor`` is a
piece of the source that occurs once; a ``^`` inside it marks the expected column (its start
when there is none). The test checks the error class (exactly), the location ``bad.py:L:C``
and that the message shows the offending source line with a caret under the column.
"""

from __future__ import annotations

import pytest

import cursched.externs
from cursched.errors import BoundsError, ParseError, TypeCheckError
from cursched.frontend import parse_source
from cursched.ir.memory import DRAM, Memory
from cursched.ir.nodes import ProcDef


class MyMem(Memory):
    """A memory of the tests' own."""


def _lib() -> dict[str, ProcDef]:
    texts = {
        "sub": "def sub(M: size, A: [f32][M, 4] @ DRAM, x: f32):\n    pass\n",
        "g4": "def g4(A: f32[4]):\n    pass\n",
        "gi": "def gi(A: i32[8]):\n    pass\n",
        "gw": "def gw(n: size, A: [f32][n]):\n    pass\n",
        "gb": "def gb(b: bool, n: size):\n    pass\n",
    }
    return {name: parse_source(t, {}) for name, t in texts.items()}


ENV: dict[str, object] = {
    "N": 8,
    "F": 1.5,
    "MyMem": MyMem,
    "DRAM": DRAM,
    "E": cursched.externs.relu,
    **_lib(),
}

HEADER = (
    "def f(n: size, k: index, b: bool, x: f32, A: f32[n, 16] @ DRAM, B: f32[16] @ DRAM, "
    "C: i32[8], M: f32[4] @ MyMem, W: [f32][n, 16]):"
)

CASES: list[tuple[str, str, type[Exception], str]] = [
    # -- the header ----------------------------------------------------------------------
    ("no annotation", "def f(n):\n    pass", ParseError, "f(^n)"),
    ("default value", "def f(n: size = 3):\n    pass", ParseError, "= ^3"),
    ("varargs", "def f(*args: size):\n    pass", ParseError, "args"),
    ("kwonly", "def f(n: size, *, m: size):\n    pass", ParseError, "m: size"),
    ("return annotation", "def f(n: size) -> int:\n    pass", ParseError, "int"),
    ("unknown type", "def f(x: g32[4]):\n    pass", TypeCheckError, "g32"),
    ("unknown memory", "def f(x: f32[4] @ NOPE):\n    pass", TypeCheckError, "NOPE"),
    ("not a memory", "def f(x: f32[4] @ N):\n    pass", TypeCheckError, "@ ^N"),
    ("reserved param", "def f(seq: size):\n    pass", TypeCheckError, "seq"),
    ("reserved loop var", "for stride in seq(0, n):\n        pass", TypeCheckError, "stride in"),
    ("reserved alloc", "inf: f32", TypeCheckError, "inf"),
    (
        "param named like memory",
        "def f(DRAM: size, A: f32[4] @ DRAM):\n    pass",
        TypeCheckError,
        "DRAM: size",
    ),
    (
        "param named like extern",
        "def f(relu: size, x: f32):\n    x = E(x)",
        TypeCheckError,
        "relu: size",
    ),
    ("param named like callee", "def f(g4: size, B: f32[4]):\n    g4(B)", TypeCheckError, "g4(B)"),
    ("duplicate param", "def f(n: size, n: index):\n    pass", TypeCheckError, "n: index"),
    ("size after tensor", "def f(x: f32[m], m: size):\n    pass", TypeCheckError, "[^m]"),
    ("undefined size", "def f(x: f32[m]):\n    pass", TypeCheckError, "[^m]"),
    ("index in shape", "def f(i: index, x: f32[i]):\n    pass", TypeCheckError, "[^i]"),
    ("zero shape", "def f(x: f32[0]):\n    pass", TypeCheckError, "[^0]"),
    ("memory on size", "def f(n: size @ DRAM):\n    pass", TypeCheckError, "DRAM"),
    ("string annotation", "def f(x: 'f32'):\n    pass", ParseError, "'f32'"),
    ("slice in shape", "def f(x: f32[0:4]):\n    pass", ParseError, "0:4"),
    ("float shape", "def f(x: f32[2.5]):\n    pass", TypeCheckError, "2.5"),
    ("two defs", "def f(n: size):\n    pass\ndef g(n: size):\n    pass", ParseError, "def g"),
    ("unknown decorator", "@foo\ndef f(n: size):\n    pass", ParseError, "foo"),
    ("bad instr", "@instr(3)\ndef f(n: size):\n    pass", ParseError, "instr"),
    ("syntax error", "def f(n: size):\n    for i in seq(0, n)\n        pass", ParseError, "n)^\n"),
    ("async def", "async def f(n: size):\n    pass", ParseError, "async"),
    # -- Python statements outside the language ----------------------------------------------
    ("while", "while k < n:\n        pass", ParseError, "while"),
    ("return", "return", ParseError, "return"),
    ("nested def", "pass\n    def g():\n        pass", ParseError, "def g"),
    ("import", "import math", ParseError, "import"),
    ("global", "global x", ParseError, "global"),
    (
        "for else",
        "for i in seq(0, n):\n        pass\n    else:\n        pass",
        ParseError,
        "pass\n    else:\n        ^pass",
    ),
    ("range loop", "for i in range(0, n):\n        pass", ParseError, "range"),
    ("seq arity", "for i in seq(0, n, 2):\n        pass", ParseError, "seq"),
    ("tuple loop var", "for i, j in seq(0, n):\n        pass", ParseError, "i, j"),
    ("with open", "with open('f'):\n        pass", ParseError, "open"),
    ("with as", "with scope('s') as t:\n        pass", ParseError, "with"),
    ("assert in loop", "for i in seq(0, n):\n        assert n > 1", ParseError, "assert"),
    ("assert message", "assert n > 1, 'small'", ParseError, "'small'"),
    ("chained assign", "x = x = 1.0", ParseError, "x = x"),
    ("tuple assign", "x, B[0] = 1.0, 2.0", ParseError, "x, B"),
    ("aug assign *=", "x *= 2.0", ParseError, "x *="),
    ("bare expression", "x", ParseError, "\n    ^x\n"),
    ("stray string", "pass\n    'doc'", ParseError, "'doc'"),
    ("alloc with value", "t: f32 = 0.0", ParseError, "0.0"),
    ("attribute target", "x.y = 1.0", ParseError, "x.y"),
    # -- Python expressions outside the language ---------------------------------------------
    ("lambda", "x = lambda: 0.0", ParseError, "lambda"),
    ("list comp", "x = [y for y in B]", ParseError, "[y"),
    ("f-string", "x = f'{n}'", ParseError, "f'"),
    ("power", "x = x ** 2.0", ParseError, "= ^x **"),
    ("floor div", "B[k // 2] = 1.0", ParseError, "k //"),
    ("not", "if not k < n:\n        pass", ParseError, "not"),
    ("conditional expr", "x = 1.0 if b else 2.0", ParseError, "1.0 if"),
    ("unary plus", "x = +x", ParseError, "+x"),
    ("matmul", "x = B[0] @ B[1]", ParseError, "B[0] @"),
    ("bitand", "B[k & 1] = 1.0", ParseError, "k & 1"),
    ("is", "if k is n:\n        pass", ParseError, "k is"),
    ("string literal", "x = 'a'", ParseError, "'a'"),
    ("keyword args", "sub(n, A=W[0:n, 0:4], x=x)", ParseError, "sub("),
    ("starred arg", "sub(*n)", ParseError, "*n"),
    ("subscript chain", "x = A[0][1]", ParseError, "A[0][1]"),
    ("slice step", "w = B[0:8:2]", ParseError, "0:8:2"),
    ("extern keyword", "x = expf(x=x)", ParseError, "expf"),
    ("stride keyword in loop", "for i in seq(lo=0, hi=n):\n        pass", ParseError, "seq"),
    # -- names --------------------------------------------------------------------------------
    ("undefined read", "x = y", TypeCheckError, "= ^y"),
    ("undefined target", "y = 1.0", TypeCheckError, "y = 1.0"),
    ("undefined index", "B[j] = 1.0", TypeCheckError, "[^j]"),
    (
        "loop var after loop",
        "for i in seq(0, 4):\n        pass\n    B[i] = 1.0",
        TypeCheckError,
        "B[^i]",
    ),
    ("alloc after scope", "if b:\n        t: f32\n    t = 1.0", TypeCheckError, "t = 1.0"),
    ("redeclare", "t: f32\n    t: f32[4]", TypeCheckError, "t: f32["),
    ("redeclare arg", "x: f32", TypeCheckError, "x: f32\n"),
    ("unknown proc", "nope(n)", TypeCheckError, "nope"),
    ("call variable", "x(n)", TypeCheckError, "x(n)"),
    ("unknown function", "x = foo(x)", TypeCheckError, "foo"),
    ("proc in expression", "x = g4(B)", TypeCheckError, "g4"),
    ("extern statement", "expf(x)", TypeCheckError, "expf"),
    # -- writes -------------------------------------------------------------------------------
    ("assign size", "n = 3", TypeCheckError, "n = 3"),
    ("assign index arg", "k = 3", TypeCheckError, "k = 3"),
    ("assign loop var", "for i in seq(0, n):\n        i = 0", TypeCheckError, "i = 0"),
    ("reduce control", "n += 1", TypeCheckError, "n +="),
    ("assign tensor", "B = 1.0", TypeCheckError, "B = 1.0"),
    ("too few indices", "A[0] = 1.0", TypeCheckError, "A[0]"),
    ("too many indices", "B[0, 1] = 1.0", TypeCheckError, "B[0, 1]"),
    ("index scalar", "x[0] = 1.0", TypeCheckError, "x[0]"),
    ("index control", "x = n[0]", TypeCheckError, "n[0]"),
    ("slice target", "B[0:4] = 1.0", TypeCheckError, "0:4"),
    # -- control and data positions -----------------------------------------------------------
    (
        "non-affine index",
        "for i in seq(0, n):\n        for j in seq(0, n):\n            A[i * j, 0] = 1.0",
        TypeCheckError,
        "i * j",
    ),
    ("non-affine bound", "for i in seq(0, n * n):\n        pass", TypeCheckError, "n * n"),
    ("data index", "B[x] = 1.0", TypeCheckError, "B[^x]"),
    ("data element index", "B[B[0]] = 1.0", TypeCheckError, "B[^B[0]]"),
    ("data bound", "for i in seq(0, x):\n        pass", TypeCheckError, "0, ^x"),
    ("data condition", "if x < 0.0:\n        pass", TypeCheckError, "x < 0.0"),
    ("data assert", "assert x > 0.0", TypeCheckError, "x > 0.0"),
    ("control as data", "x = k", TypeCheckError, "= ^k"),
    ("loop var as data", "for i in seq(0, 4):\n        B[i] = i", TypeCheckError, "= ^i"),
    ("stride as data", "x = stride(A, 0)", TypeCheckError, "stride"),
    ("float index", "B[1.5] = 1.0", TypeCheckError, "1.5"),
    ("python float index", "B[F] = 1.0", TypeCheckError, "[^F]"),
    ("inf index", "B[inf] = 1.0", TypeCheckError, "inf"),
    ("int condition", "if k:\n        pass", TypeCheckError, "if ^k"),
    ("bool index", "B[b] = 1.0", TypeCheckError, "[^b]"),
    ("divide by variable", "B[k / n] = 1.0", TypeCheckError, "k / n"),
    ("modulo by zero", "B[k % 0] = 1.0", TypeCheckError, "k % 0"),
    ("modulo negative", "B[k % -4] = 1.0", TypeCheckError, "k % -4"),
    ("bool compare", "if b < b:\n        pass", TypeCheckError, "b < b"),
    ("data comparison", "x = x < 1.0", TypeCheckError, "x < 1.0"),
    ("float modulo", "x = x % 2.0", TypeCheckError, "x % 2.0"),
    ("bool as data", "x = True", TypeCheckError, "True"),
    ("float into int", "C[0] = 1.5", TypeCheckError, "1.5"),
    ("integral float into int", "C[0] = 2.0", TypeCheckError, "2.0"),
    ("inf into int", "C[0] = -inf", TypeCheckError, "-inf"),
    ("int out of range", "C[0] = 2147483648", TypeCheckError, "2147483648"),
    ("python float into int", "C[0] = F", TypeCheckError, "= ^F"),
    ("tensor as scalar", "x = B", TypeCheckError, "= ^B"),
    ("extern arity", "x = expf(x, x)", TypeCheckError, "expf"),
    ("extern in index", "B[relu(k)] = 1.0", TypeCheckError, "relu"),
    ("stride dim variable", "assert stride(A, k) == 1", TypeCheckError, "k)"),
    ("stride dim range", "assert stride(A, 2) == 1", TypeCheckError, "2)"),
    ("stride of scalar", "assert stride(x, 0) == 1", TypeCheckError, "x, 0"),
    ("stride arity", "assert stride(A) == 1", TypeCheckError, "stride"),
    # -- allocations and windows --------------------------------------------------------------
    ("alloc unknown memory", "t: f32[4] @ FOO", TypeCheckError, "FOO"),
    ("alloc unknown type", "t: g32", TypeCheckError, "g32"),
    ("alloc control", "t: index", TypeCheckError, "t: ^index"),
    ("alloc window", "t: [f32][4]", TypeCheckError, "t: ^[f32]"),
    ("alloc shape index", "for i in seq(1, 4):\n        t: f32[i]", TypeCheckError, "[^i]"),
    ("window of scalar", "w = x[0:1]", TypeCheckError, "x[0:1]"),
    ("window rank", "w = A[0:4]", TypeCheckError, "A[0:4]"),
    ("window past end", "w = B[0:20]", BoundsError, "0:20"),
    ("window empty", "w = B[4:4]", TypeCheckError, "4:4"),
    ("window negative", "w = B[-1:4]", BoundsError, "-1:4"),
    ("window data bound", "w = B[0:x]", TypeCheckError, "0:^x"),
    ("window rebind", "w = B[0:4]\n    w = B[4:8]", TypeCheckError, "w = B[4"),
    ("whole-tensor alias", "w = B", TypeCheckError, "w = B"),
    ("scope target", "with scope('s', target='gpu'):\n        pass", TypeCheckError, "'gpu'"),
    ("scope name", "with scope(3):\n        pass", TypeCheckError, "scope(3)"),
    ("scope empty", "with scope(''):\n        pass", TypeCheckError, "''"),
    # -- calls --------------------------------------------------------------------------------
    ("call arity", "sub(n)", TypeCheckError, "sub(n)"),
    ("call data for size", "sub(x, W[0:n, 0:4], x)", TypeCheckError, "sub(^x"),
    ("call nonpositive size", "sub(0, W[0:1, 0:4], x)", TypeCheckError, "sub(^0"),
    ("call tensor for scalar", "sub(n, W[0:n, 0:4], B)", TypeCheckError, ", ^B)"),
    ("call scalar for tensor", "g4(x)", TypeCheckError, "g4(^x)"),
    ("call window to tensor", "g4(B[0:4])", TypeCheckError, "B[0:4]"),
    ("call window var to tensor", "w = B[0:4]\n    g4(w)", TypeCheckError, "g4(^w)"),
    ("call rank", "gw(n, A)", TypeCheckError, "gw(n, ^A)"),
    ("call elem type", "g4(M)", TypeCheckError, "g4(^M)"),
    ("call const shape", "g4(B)", TypeCheckError, "g4(^B)"),
    ("call window shape", "gw(4, B[0:8])", TypeCheckError, "B[0:8]"),
    ("call data type", "gi(B[0:8])", TypeCheckError, "B[0:8]"),
    ("call memory", "g4(M)", TypeCheckError, "g4(^M)"),
    ("call bool param", "gb(k, n)", TypeCheckError, "gb(^k"),
    ("call int for data", "sub(n, W[0:n, 0:4], 1.0)", TypeCheckError, "1.0"),
    ("call undefined arg", "g4(Z)", TypeCheckError, "Z"),
]


def _source(body: str) -> str:
    if body.startswith(("def", "@", "async")):
        return body + "\n"
    return HEADER + "\n    " + body + "\n"


def _position(text: str, anchor: str) -> tuple[int, int]:
    plain = anchor.replace("^", "")
    assert text.count(plain) == 1, f"anchor {plain!r} must occur once in {text!r}"
    at = text.index(plain) + (anchor.index("^") if "^" in anchor else 0)
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1)
    return line, col


@pytest.mark.parametrize(
    ("body", "error", "anchor"),
    [pytest.param(b, e, a, id=name) for name, b, e, a in CASES],
)
def test_malformed_proc(body: str, error: type[Exception], anchor: str) -> None:
    text = _source(body)
    line, col = _position(text, anchor)
    with pytest.raises((ParseError, TypeCheckError)) as info:
        parse_source(text, ENV, filename="bad.py")
    err = info.value
    assert type(err) is error, f"{type(err).__name__}: {err}"
    message = str(err)
    assert message.startswith(f"bad.py:{line}:{col + 1}: "), message
    source_line = text.split("\n")[line - 1]
    assert f"    {source_line}\n    {' ' * col}^" in message, message


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 40
    assert len({name for name, *_ in CASES}) == len(CASES)


def test_valid_header() -> None:
    """The shared header itself is valid, so each case fails for its own reason."""
    p = parse_source(HEADER + "\n    pass\n", ENV)
    assert [a.sym.name for a in p.args] == ["n", "k", "b", "x", "A", "B", "C", "M", "W"]
