"""``DRAM_KEPT``: a heap buffer kept between calls (one block per allocation site and thread,
grown on demand, freed when its thread ends), passed for ``DRAM`` parameters (``passes_as``).

Compiled calls that may fail to allocate run in a child process, as in test_codegen_sizes.py.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from cursched import DRAM, DRAM_KEPT, DRAM_STACK, proc, set_memory
from cursched.codegen.c import generate_unit
from cursched.ir.memory import passes_for
from cursched.primitives.buffers.buffer_attrs import SetMemoryCallError
from tests.codegen.child import run_child

HERE = Path(__file__).parent


@proc
def scale_into(n: size, x: [f32][n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = 2.0 * x[i]


@proc
def kept_copy(n: size, m: size, x: f32[n] @ DRAM):
    # ``m`` only sizes the buffer: a huge one makes the allocation fail
    t: f32[n + m] @ DRAM_KEPT
    for i in seq(0, n):
        t[i] = x[i]
    for i in seq(0, n):
        x[i] = t[i] + 1.0


def test_kept_buffer_is_a_static_block_never_freed() -> None:
    c = generate_unit("kept_copy", [kept_copy.ir()]).c_source
    assert "static _Thread_local cs_keep_site cs_kept_t;" in c
    assert "float *restrict t = (float *)cs_keep(&cs_kept_t, cs_mul_sz(" in c
    assert "if (t == NULL) {" in c  # a failure is reported as for DRAM
    assert "free(t)" not in c and "posix_memalign(&k->block, 4096," in c
    # a thread's blocks are freed when it ends (the key's destructor), and on unloading
    assert "pthread_key_create(&cs_keep_key, cs_keep_release)" in c
    assert "__attribute__((destructor)) static void cs_keep_unload(void)" in c


def test_kept_buffer_grows_and_stays_right() -> None:
    f = kept_copy.compile()
    for n in (4, 1000, 3, 5000, 7):  # grown twice, reused when smaller
        x = np.arange(n, dtype=np.float32)
        f(n, 1, x)
        np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32) + 1)
    x = np.arange(5, dtype=np.float32)
    kept_copy.interpret(5, 1, x)
    np.testing.assert_array_equal(x, np.arange(5, dtype=np.float32) + 1)


def test_kept_buffers_pass_for_dram_parameters_only() -> None:
    assert passes_for(DRAM_KEPT, DRAM) and passes_for(DRAM, DRAM)
    assert not passes_for(DRAM, DRAM_KEPT) and not passes_for(DRAM_STACK, DRAM)

    @proc
    def caller(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        t: f32[n] @ DRAM
        for i in seq(0, n):
            t[i] = x[i]
        scale_into(n, t[0:n], y)

    p, _ = set_memory(caller, "t", DRAM_KEPT)  # the callee takes it as DRAM
    assert "t: f32[n] @ DRAM_KEPT" in str(p)
    x, y = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    p.compile()(6, x, y)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(SetMemoryCallError):
        set_memory(caller, "t", DRAM_STACK)


_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    sys.path.insert(0, {here!r})
    import test_codegen_kept as m
    from cursched.errors import AllocationError

    f = m.kept_copy.compile()
    x = np.ones(4, np.float32)
    for extra in (2**61, 2**42):  # the byte count overflows; malloc fails
        try:
            f(4, extra, x)
        except AllocationError:
            print("AllocationError")
    f(4, 1, x)  # and the site allocates again afterwards
    print(x.tolist())
    """
)


def test_failed_kept_allocation_raises_allocation_error(codegen_cache: Path) -> None:
    out = run_child(_CHILD.format(here=str(HERE)), codegen_cache)
    assert out.split("\n")[:3] == [
        "AllocationError",
        "AllocationError",
        "[2.0, 2.0, 2.0, 2.0]",
    ]


_THREADS_CHILD = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    sys.path.insert(0, {here!r})
    import test_codegen_kept as m

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    f = m.kept_copy.compile()
    n = 1 << 22  # 16 MiB of the kept block touched per call
    x = np.zeros(n, np.float32)
    f(n, 1, x)
    before = rss_mb()

    def call():
        f(n, 1, np.zeros(n, np.float32))

    for _ in range(24):  # a thread per task: each gets its own block
        t = threading.Thread(target=call)
        t.start()
        t.join()
    f(n, 1, x)
    print(round(rss_mb() - before), float(x[0]), float(x[-1]))
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_a_thread_that_ends_frees_its_kept_blocks(codegen_cache: Path) -> None:
    # 24 threads of 16 MiB each: a block kept after its thread ended would add ~384 MiB
    out = run_child(_THREADS_CHILD.format(here=str(HERE)), codegen_cache)
    grown, first, last = out.split()
    assert int(grown) < 100, f"resident memory grew by {grown} MiB over 24 threads"
    assert (float(first), float(last)) == (2.0, 2.0)
