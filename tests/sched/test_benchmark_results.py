"""The benchmarks' ``--json`` output (benchmarks/_results.py) and the committed samples that
notebooks/benchmarks.py plots."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from .scripts import ROOT, load_module

BENCH = ROOT / "benchmarks"
SAMPLES = sorted((BENCH / "results").glob("*.json"))


@pytest.fixture
def results() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        mod = load_module(BENCH / "_results.py", "_results_under_test")
    finally:
        sys.path.remove(str(BENCH))
    mod.ROWS.clear()
    return mod


def test_write_records_rows_with_machine_and_date(results: ModuleType, tmp_path: Path) -> None:
    results.record(kernel="k", size=[2, 3], elements=6, times_s={"cursched": 1e-3, "numpy": 2e-3})
    out = results.write(tmp_path / "r.json", "demo", "a note")
    data = json.loads(out.read_text())
    assert data["benchmark"] == "demo" and data["note"] == "a note"
    assert data["date"].endswith("Z") and data["machine"]["cores"] >= 1
    assert "cpu" in data["machine"] and "load_average" in data["machine"]
    assert data["rows"] == [
        {"kernel": "k", "size": [2, 3], "elements": 6, "times_s": {"cursched": 1e-3, "numpy": 2e-3}}
    ]


def test_json_flag(results: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    ap = argparse.ArgumentParser()
    results.add_json_flag(ap)
    results.write_if_asked(ap.parse_args([]), "demo")  # no --json: nothing written
    assert not capsys.readouterr().out
    path = tmp_path / "x.json"
    results.write_if_asked(ap.parse_args(["--json", str(path)]), "demo")
    assert json.loads(path.read_text())["rows"] == []
    assert "wrote" in capsys.readouterr().out


def test_softmax_benchmark_writes_what_it_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        bench = load_module(BENCH / "online_softmax.py", "online_softmax_results_bench")
        import _results
    finally:
        sys.path.remove(str(BENCH))
    _results.ROWS.clear()
    monkeypatch.setattr(bench, "torch_module", lambda: None)  # numpy is the peer here
    monkeypatch.setattr(bench, "QUICK", [(8, 256)])
    out = tmp_path / "softmax.json"
    assert bench.main(["--quick", "--reps", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["benchmark"] == "online_softmax"
    rows = data["rows"]
    assert [r["threads"] for r in rows] == bench.thread_counts()
    for r in rows:
        assert r["kernel"] == "softmax" and r["size"] == [8, 256] and r["elements"] == 2048
        assert set(r["times_s"]) == {"cursched", "numpy"}
        assert all(np.isfinite(v) and v > 0 for v in r["times_s"].values())
        # the printed row holds the same times (ms, two decimals)
        assert f"{r['times_s']['cursched'] * 1e3:.2f}ms" in printed


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_committed_samples_have_what_the_notebook_reads(path: Path) -> None:
    data = json.loads(path.read_text())
    assert data["benchmark"] == path.stem and data["rows"]
    assert {"cpu", "cores", "load_average"} <= set(data["machine"]) and data["date"]
    for row in data["rows"]:
        if path.stem == "schedule_speed":
            assert {"schedule", "primitive", "calls", "exo_ms", "cursched_ms"} <= set(row)
        else:
            assert {"kernel", "size", "times_s"} <= set(row)
            assert {"cursched", "numpy", "torch"} <= set(row["times_s"])
            assert row["threads"] >= 1


def test_there_are_samples_of_each_benchmark() -> None:
    assert {p.stem for p in SAMPLES} == {"schedule_speed", "online_softmax", "flash_attention"}
