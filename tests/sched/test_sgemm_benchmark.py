"""benchmarks/sgemm.py finds Exo's AVX2 example in a copy of the exo repository (file,
checkout or bare git directory) and says why when it cannot, so the run skips Exo's row
cleanly instead of failing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from .scripts import ROOT, load_module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    saved = dict(os.environ)  # the benchmark unsets OpenBLAS variables when imported
    try:
        return load_module(ROOT / "benchmarks" / "sgemm.py", "sgemm_bench_under_test")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_no_copy_of_exo_is_a_reason_not_an_error(bench: ModuleType, tmp_path: Path) -> None:
    text, why = bench.exo_example_source("")
    assert text is None and "--exo PATH" in why
    text, why = bench.exo_example_source(str(tmp_path))
    assert text is None and bench.EXAMPLE in why
    c, why = bench.exo_microkernel_c(str(tmp_path))
    assert c is None and why  # no example (or no exo-lang): a reason either way


def test_the_example_is_found_as_a_file_a_checkout_or_git(
    bench: ModuleType, tmp_path: Path
) -> None:
    repo = tmp_path / "exo"
    example = repo / bench.EXAMPLE
    example.parent.mkdir(parents=True)
    example.write_text("# stand-in\n")
    assert bench.exo_example_source(str(example))[0] == "# stand-in\n"
    assert bench.exo_example_source(str(repo))[0] == "# stand-in\n"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run([*git, *cmd], check=True)
    example.unlink()  # only the git history has it now
    text, why = bench.exo_example_source(str(repo / ".git"))
    assert text == "# stand-in\n" and "(git)" in why


def test_the_fma_probe_runs_12_chains(bench: ModuleType) -> None:
    """The probe's loop executes 12 FMAs per step (gcc merged the wave-2 probe's 12 equal
    chains into one, so its peak was 1.5x too high), and the rate it reports is positive."""
    if not bench.cpu_features() >= {"avx2", "fma"}:
        pytest.skip("no AVX2+FMA on this CPU")
    import shutil

    if shutil.which("objdump") is None:
        pytest.skip("no objdump")
    wall, cpu = bench.fma_probe(8)  # exits if the built loop has another FMA count
    assert wall > 0 and cpu > 0


def test_the_edges_benchmark_cuts_each_edge_off() -> None:
    """benchmarks/sgemm_edges.py times n^3 against the shapes without the bottom edge, the
    right edge and both (M, N cut to whole tiles), and times a size without edges once."""
    saved = dict(os.environ)
    try:
        edges = load_module(ROOT / "benchmarks" / "sgemm_edges.py", "sgemm_edges_under_test")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    want = [(1000, 1000, 1000), (994, 1000, 1000), (1000, 992, 1000), (994, 992, 1000)]
    assert edges.shapes(1000, 14, 32) == want
    assert edges.shapes(512, 14, 32) == [(512, 512, 512), (504, 512, 512)]
    assert edges.shapes(448, 14, 32) == [(448, 448, 448)]


def test_the_ab_benchmark_reads_its_variants() -> None:
    """benchmarks/sgemm_ab.py: a variant is the target with the named fields replaced."""
    saved = dict(os.environ)  # importing it unsets OPENBLAS_CORETYPE, as sgemm_edges.py
    try:
        ab = load_module(ROOT / "benchmarks" / "sgemm_ab.py", "sgemm_ab_under_test")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert ab.parse_fields("") == {}
    assert ab.parse_fields("kc=512, mcb=8") == {"kc": 512, "mcb": 8}
    assert ab.parse_fields("right=0,") == {"right": 0}
    from cursched.platforms import x86

    # a value that is not a number names an instruction (an A/B of the Intel target's loads)
    fields = ab.parse_fields("bload=mm512_loadu_ps, kc=-1")
    assert fields == {"bload": x86.mm512_loadu_ps, "kc": -1}
