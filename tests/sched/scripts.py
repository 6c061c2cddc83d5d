"""Helpers shared by the tests of the schedule scripts in ``sched/`` (not a package: each
script is loaded by path) and of the benchmarks built on them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from cursched import Proc
from cursched.ir.alpha import alpha_equal

ROOT = Path(__file__).resolve().parents[2]


def load_module(path: Path, name: str) -> ModuleType:
    """The Python file at ``path`` executed as a module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_file(path: Path) -> str:
    """Run the script at ``path`` in a fresh interpreter; its standard output (it must exit 0)."""
    result = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_history_replays(p: Proc, **procs: Proc) -> None:
    """Running ``p.history()`` with ``procs`` bound by name rebuilds ``p`` (alpha-equal)."""
    env: dict[str, object] = dict(procs)
    exec(p.history(), env)
    replayed = env["p"]
    assert isinstance(replayed, Proc)
    assert alpha_equal(replayed.ir(), p.ir())
