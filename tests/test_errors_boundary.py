"""Errors a user reads top-down: an error raised at an API entry point (a primitive through the
registry, ``@proc``/``@instr``, ``Proc.compile``, a compiled proc's call, ``Proc.interpret``,
``Proc.find``) has a traceback of the user's frames and that one entry point, prints its
message once, and keeps the internal chain on ``internal_cause`` for debugging."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cursched import (
    DRAM,
    ArgumentError,
    CodegenError,
    CurschedError,
    InterpreterError,
    PatternError,
    TypeCheckError,
    instr,
    proc,
    split,
    stage_mem,
)
from cursched.analysis.checks import OutsideWindowError
from cursched.primitives.buffers.stage import StageOutsideWindowError
from cursched.primitives.loops.loop_split import SplitFactorError

HERE = Path(__file__).resolve()

# the entry points a traceback may end in, besides the user's own file
BOUNDARIES = {
    ("errors.py", "entry"),  # errors.api_boundary: @proc, @instr, Proc methods
    ("registry.py", "run"),  # every primitive
}


@proc
def foo(n: size, A: i8[n] @ DRAM):
    assert n % 4 == 0
    for io in seq(0, n / 4):
        for ii in seq(0, 4):
            A[4 * io + ii] += 2


@proc
def blocked(n: size, x: f32[n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n / 4):
        x[4 * i] = 1.0


@instr("{dst_data}[0] = {nowhere};")
def unknown_placeholder(dst: [f32][1] @ DRAM):
    dst[0] = 0.0


@proc
def uses_unknown(x: f32[1] @ DRAM):
    unknown_placeholder(x[0:1])


def _raise(action: Callable[[], object], cls: type[CurschedError]) -> CurschedError:
    with pytest.raises(cls) as info:
        action()
    return info.value


def _frames(e: BaseException) -> list[tuple[str, str]]:
    """(file name, function) of every frame of ``e``'s traceback below this test module."""
    return [(Path(f.filename).name, f.name) for f in traceback.extract_tb(e.__traceback__)]


def _assert_top_down(e: CurschedError, boundary: tuple[str, str] | None = None) -> None:
    frames = _frames(e)
    inner = [f for f in frames if f[0] != HERE.name]
    # the test's own frame, then one entry point, and nothing of cursched's insides
    assert frames[0][0] == HERE.name, frames
    assert len(inner) == 1, frames
    assert inner[0] in (BOUNDARIES if boundary is None else {boundary}), frames
    assert e.__cause__ is None and e.__suppress_context__
    text = "".join(traceback.format_exception(e))
    assert "The above exception was the direct cause" not in text
    assert "During handling of the above exception" not in text


def test_primitive_error_has_no_internal_frames_and_prints_once() -> None:
    e = _raise(
        lambda: stage_mem(foo, "for ii in _: _", "A[4 * io:4 * io + 3]", "tile"),
        StageOutsideWindowError,
    )
    _assert_top_down(e, ("registry.py", "run"))
    text = "".join(traceback.format_exception(e))
    # the message was printed twice when the analysis error was chained behind it
    assert text.count("leaves the window A[4 * io:4 * io + 3]") == 1, text
    assert text.count("counterexample: n = 4, io = 0, ii = 3") == 1, text
    # the analysis error behind it is kept for debugging, with its own frames
    assert isinstance(e.internal_cause, OutsideWindowError)
    assert e.internal_traceback is not None
    assert e.counterexample is not None  # type: ignore[attr-defined]


def test_precondition_raised_directly_by_a_primitive() -> None:
    e = _raise(lambda: split(foo, "ii", 0), SplitFactorError)
    _assert_top_down(e, ("registry.py", "run"))
    assert e.internal_traceback is not None


def test_proc_decorator_error() -> None:
    def define() -> object:
        @proc
        def f(n: size, x: f32[n * n] @ DRAM):
            x[0] = 1.0

        return f

    e = _raise(define, TypeCheckError)
    _assert_top_down(e, ("errors.py", "entry"))
    # a shape gets a message about shapes, not indices
    assert "shape expressions must be affine" in str(e)
    assert "index" not in str(e).splitlines()[0]


def test_instr_decorator_error() -> None:
    def define() -> object:
        @instr("{x_data}[0] = 0;")
        def f(x: [f32][1] @ DRAM):
            x[0] = y

        return f

    e = _raise(define, TypeCheckError)
    _assert_top_down(e, ("errors.py", "entry"))


def test_shape_messages_name_shapes() -> None:
    def alloc_shape() -> object:
        @proc
        def g(n: size, x: f32[n] @ DRAM):
            t: f32[n * n]
            t[0] = 0.0
            x[0] = 1.0

        return g

    def data_in_shape() -> object:
        @proc
        def h(n: size, x: f32[n] @ DRAM):
            t: f32[x[0]]
            t[0] = 0.0
            x[0] = 1.0

        return h

    def index() -> object:
        @proc
        def k(n: size, x: f32[n] @ DRAM):
            x[n * n] = 1.0

        return k

    assert "shape expressions must be affine" in str(_raise(alloc_shape, TypeCheckError))
    assert "in a shape" in str(_raise(data_in_shape, TypeCheckError))
    assert "index expressions must be affine" in str(_raise(index, TypeCheckError))


def test_compile_error() -> None:
    e = _raise(uses_unknown.compile, CodegenError)
    _assert_top_down(e, ("errors.py", "entry"))


def test_compiled_call_error() -> None:
    f = blocked.compile()
    e = _raise(lambda: f(8, np.zeros(3, np.float32)), ArgumentError)
    frames = _frames(e)
    assert frames[0][0] == HERE.name
    assert [fr for fr in frames if fr[0] != HERE.name] == [
        ("<cursched wrapper of blocked>", "call")
    ]
    e = _raise(lambda: f(6, np.zeros(6, np.float32)), ArgumentError)
    assert len(_frames(e)) == 3  # this test, the lambda, the wrapper


def test_interpret_error() -> None:
    e = _raise(lambda: blocked.interpret(6, np.zeros(6, np.float32)), InterpreterError)
    _assert_top_down(e, ("errors.py", "entry"))


def test_find_error() -> None:
    e = _raise(lambda: foo.find("for zz in _: _"), PatternError)
    _assert_top_down(e, ("errors.py", "entry"))


def test_debug_variable_keeps_the_chain(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(
        textwrap.dedent(
            """
            from __future__ import annotations
            from cursched import proc, stage_mem, DRAM

            @proc
            def foo(n: size, A: i8[n] @ DRAM):
                assert n % 4 == 0
                for io in seq(0, n / 4):
                    for ii in seq(0, 4):
                        A[4 * io + ii] += 2

            stage_mem(foo, "for ii in _: _", "A[4 * io:4 * io + 3]", "tile")
            """
        )
    )
    plain = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env("0")
    )
    debug = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env("1")
    )
    assert plain.returncode == 1 and debug.returncode == 1
    # a user sees their line, then the primitive's entry point, then the message, once
    files = [ln.split('"')[1] for ln in plain.stderr.splitlines() if ln.startswith('  File "')]
    assert [Path(f).name for f in files] == ["user.py", "registry.py"], plain.stderr
    assert plain.stderr.count("leaves the window") == 1, plain.stderr
    assert "direct cause" in debug.stderr and "checks.py" in debug.stderr


def _env(debug: str) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["CURSCHED_DEBUG"] = debug
    env["PYTHONPATH"] = str(HERE.parent.parent)
    return env
