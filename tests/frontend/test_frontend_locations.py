"""Source locations, name resolution in the defining scope, and the externs module."""

from __future__ import annotations

from pathlib import Path

import pytest

import cursched.externs
from cursched import DRAM, Memory, proc
from cursched.errors import ParseError, SrcInfo, TypeCheckError
from cursched.frontend import parse_function, parse_source
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import Assign, BinOp, Const, For, Node, ProcDef, Read
from cursched.ir.traversal import proc_exprs, walk_stmts
from cursched.ir.types import F32, INDEX, INT, SIZE, TensorType

THIS = str(Path(__file__).resolve())
LINES = Path(__file__).read_text().split("\n")
K = 2


def _line_of(marker: str) -> int:
    (n,) = [i + 1 for i, ln in enumerate(LINES) if ln.rstrip().endswith(marker)]
    return n


@proc
def located(n: size, A: f32[n, 4]):
    for i in seq(0, n):
        A[i, K] = 1.0  # MARK-ASSIGN


def _all_srcinfos(p: ProcDef) -> list[tuple[Node, SrcInfo | None]]:
    nodes: list[Node] = [*p.args, *walk_stmts(p.body), *proc_exprs(p)]
    return [(node, getattr(node, "srcinfo", None)) for node in nodes]


def test_every_node_has_a_location_in_this_file() -> None:
    p = located.ir()
    first = _line_of("def located(n: size, A: f32[n, 4]):")
    for node, info in _all_srcinfos(p):
        assert info is not None, node
        assert info.filename == THIS
        assert first <= info.line <= first + 3
        assert info.text == LINES[info.line - 1]
    assert p.srcinfo is not None and p.srcinfo.line == first


def test_statement_location_is_line_and_column_of_the_file() -> None:
    (loop,) = located.ir().body
    assert isinstance(loop, For)
    (assign,) = loop.body
    line = _line_of("# MARK-ASSIGN")
    assert assign.srcinfo == SrcInfo(THIS, line, 8, LINES[line - 1])
    assert isinstance(assign, Assign) and assign.idx[1] == Const(K, INT)
    assert assign.idx[1].srcinfo == SrcInfo(THIS, line, 13, LINES[line - 1])


def test_error_in_an_indented_proc_points_into_the_file() -> None:
    with pytest.raises(TypeCheckError) as info:

        @proc
        def bad(n: size):
            for _i in seq(0, n):
                n = 1  # MARK-BAD

    line = _line_of("# MARK-BAD")
    col = LINES[line - 1].index("n = 1")
    assert info.value.srcinfo == SrcInfo(THIS, line, col, LINES[line - 1])
    assert str(info.value).startswith(f"{THIS}:{line}:{col + 1}: cannot write 'n'")
    assert f"{LINES[line - 1]}\n    {' ' * col}^" in str(info.value)


def test_columns_count_characters_not_bytes() -> None:
    text = 'def f(x: f32):\n    with scope("éé"): x = zz\n'
    with pytest.raises(TypeCheckError) as info:
        parse_source(text, {})
    assert info.value.srcinfo is not None
    assert info.value.srcinfo.col == text.split("\n")[1].index("zz")


def test_crlf_and_indented_source() -> None:
    text = "    def f(x: f32):\r\n        x = 1.0\r\n        x = y\r\n"
    with pytest.raises(TypeCheckError) as info:
        parse_source(text, {}, filename="w.py")
    assert str(info.value).startswith("w.py:3:13: 'y' is not defined")


def test_source_must_be_available() -> None:
    namespace: dict[str, object] = {}
    exec("def f(n: size):\n    pass\n", namespace)
    f = namespace["f"]
    assert callable(f)
    with pytest.raises(ParseError, match="cannot read the source"):
        parse_function(f)


def test_only_functions_are_procs() -> None:
    with pytest.raises(ParseError, match="not lambda"):
        parse_function(lambda n: None)

    class NotAProc:
        pass

    with pytest.raises(ParseError, match="must be defined with def"):
        parse_function(NotAProc)
    with pytest.raises(ParseError, match="cannot read the source"):
        parse_function(len)


def test_parse_function_instr_argument() -> None:
    def f(n: size):
        pass

    p = parse_function(f, instr=("t({n});", "g"))
    assert p.instr is not None and (p.instr.c_template, p.instr.c_global) == ("t({n});", "g")


# ------------------------------------------------------------------------- name resolution


def test_closure_overrides_globals() -> None:
    K = 3  # shadows the module's K = 2

    @proc
    def f(A: f32[4]):
        A[K] = 0.0

    (assign,) = f.ir().body
    assert isinstance(assign, Assign) and assign.idx == (Const(3, INT),)


def test_procs_resolve_from_closure() -> None:
    @proc
    def inner(x: f32):
        pass

    @proc
    def outer(y: f32):
        inner(y)

    (call,) = outer.ir().body
    assert call.proc is inner.ir()  # type: ignore[union-attr]


def test_memory_from_module_scope_and_env() -> None:
    class Local(Memory):
        pass

    p = parse_source("def f(A: f32[4] @ L):\n    pass\n", {"L": Local})
    assert p.args[0].mem is Local
    q = parse_source("def f(A: f32[4] @ m.DRAM):\n    pass\n", {"m": cursched})
    assert q.args[0].mem is DRAM
    # the built-in memories need no import
    r = parse_source("def f(A: f32[4] @ SHARED):\n    pass\n", {})
    assert r.args[0].mem is not None and r.args[0].mem.__name__ == "SHARED"


def test_python_value_of_wrong_kind() -> None:
    with pytest.raises(TypeCheckError, match="is a Python str"):
        parse_source("def f(A: f32[4]):\n    A[s] = 1.0\n", {"s": "text"})
    with pytest.raises(TypeCheckError, match="not a memory"):
        parse_source("def f(A: f32[4] @ s):\n    pass\n", {"s": "text"})


def test_proc_def_is_callable_directly() -> None:
    callee = parse_source("def g(x: f32):\n    pass\n", {})
    p = parse_source("def f(y: f32):\n    g(y)\n", {"g": callee})
    assert p.body[0].proc is callee  # type: ignore[union-attr]
    assert p.body[0].args == (Read(p.args[0].sym, (), F32),)  # type: ignore[union-attr]


def test_shape_types_keep_expressions() -> None:
    p = parse_source("def f(n: size, A: f32[n + 1, 2 * n]):\n    pass\n", {})
    t = p.args[1].type
    assert isinstance(t, TensorType)
    n = Read(p.args[0].sym, (), SIZE)
    assert t.shape == (
        BinOp("+", n, Const(1, INT), INDEX),
        BinOp("*", Const(2, INT), n, INDEX),
    )


# ------------------------------------------------------------------------------- externs


def test_externs_module_names_every_extern() -> None:
    for name in EXTERNS:
        fn = getattr(cursched.externs, name)
        assert isinstance(fn, cursched.externs.ExternFunction) and fn.name == name
        with pytest.raises(TypeError, match="only be used inside a @proc"):
            fn(1.0)
    assert cursched.externs.inf == float("inf")
    assert set(EXTERNS) <= set(cursched.externs.__all__)


def test_undefined_call_argument_is_named() -> None:
    callee = parse_source("def g(A: f32[4]):\n    pass\n", {})
    with pytest.raises(TypeCheckError, match="'Z' is not defined"):
        parse_source("def f(B: f32[4]):\n    g(Z)\n", {"g": callee})
