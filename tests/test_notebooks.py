"""Every notebook under notebooks/ (jupytext percent-format .py files) runs without error; the
benchmark notebook draws its plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupytext
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.py"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ holds no .py notebooks"


_EXECUTED: dict[str, Any] = {}


def execute(path: Path) -> Any:
    """The notebook at ``path`` executed (once per session)."""
    if path.stem not in _EXECUTED:
        nb = jupytext.read(path)
        client = NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
        _EXECUTED[path.stem] = nb
    return _EXECUTED[path.stem]


def outputs(nb: Any) -> list[Any]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path) -> None:
    errors = [out for out in outputs(execute(path)) if out.get("output_type") == "error"]
    assert not errors, errors


def test_benchmark_notebook_plots_the_results() -> None:
    nb = execute(Path(__file__).parent.parent / "notebooks" / "benchmarks.py")
    pngs = [out for out in outputs(nb) if "image/png" in out.get("data", {})]
    assert len(pngs) == 2  # scheduling time against Exo; kernels against numpy and torch
    text = "".join(out.get("text", "") for out in outputs(nb))
    for name in ("schedule_speed", "online_softmax", "flash_attention"):
        assert f"{name}: 20" in text  # each sample's date and machine are printed
