"""Sanitized builds (ASan + UBSan, run in a child process) of corpus procs report nothing.

Each proc runs on random inputs in a child that preloads ASan; its outputs come back and must
match the interpreter. A deliberately broken instruction shows that a report is not lost.
"""

from __future__ import annotations

import numpy as np
import pytest
from corpus import CASES, Case, copy_inputs

from cursched import DRAM, BuildError, CodegenError, instr, proc
from cursched.codegen.c.sanitize import asan_runtime


def _no_asan() -> str | None:
    try:
        asan_runtime()
    except BuildError as e:
        return str(e)
    return None


pytestmark = pytest.mark.skipif(
    _no_asan() is not None, reason=f"no AddressSanitizer runtime: {_no_asan()}"
)

SANITIZED = [
    "sgemm_tiled",
    "qgemm_i8",
    "transpose_par",
    "blur3x3",
    "softmax_online",
    "axpy_win",
    "copy2d",
    "upsample2",
    "wrap_ints",
    "mixed_floats",
    "copy_with_instr",
    "maxpool2",
]
CASE_BY_NAME = {c.name: c for c in CASES}


@pytest.mark.parametrize("name", SANITIZED)
def test_sanitized_run_is_clean(name: str) -> None:
    case: Case = CASE_BY_NAME[name]
    fn = case.proc.compile(sanitize=True)
    args = case.inputs(np.random.default_rng(3))
    compiled, interpreted = copy_inputs(args), copy_inputs(args)
    fn(**compiled)
    assert fn.sanitizer.last_report == ""
    case.proc.interpret(**interpreted)
    for k, v in compiled.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_allclose(v, interpreted[k], rtol=1e-5, atol=1e-6, err_msg=k)


@instr("{dst_data}[4] = 0.0f;")
def poke_past_end(dst: [f32][4] @ DRAM):
    for i in seq(0, 4):
        dst[i] = 0.0


@proc
def overflow(x: f32[4] @ DRAM):
    poke_past_end(x[0:4])


def test_sanitizer_reports_an_overflow() -> None:
    fn = overflow.compile(sanitize=True)
    with pytest.raises(CodegenError, match="AddressSanitizer"):
        fn(np.zeros(4, np.float32))
