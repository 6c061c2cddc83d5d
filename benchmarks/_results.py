"""Benchmark results as small JSON files, for notebooks/benchmarks.py to plot.

A benchmark script takes ``--json PATH`` (``add_json_flag``), records each measurement it
prints (``record``), and writes them at the end (``write_if_asked``). The file says where and
when it was measured, since timings mean little without the machine and its load::

    {"benchmark": "schedule_speed", "date": "2026-12-01T21:00:00Z",
     "machine": {"cpu": "...", "cores": 2, "load_average": [1.9, 1.7, 1.2], ...},
     "note": "...", "rows": [{...}, ...]}

Committed samples live in ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
from pathlib import Path
from typing import Any

ROWS: list[dict[str, Any]] = []
"""The measurements recorded in this run, in order."""


def machine() -> dict[str, Any]:
    """The CPU model, core count, load average and Python/OS of this machine."""
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else []
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in load],
        "python": platform.python_version(),
        "system": platform.platform(),
    }


def add_json_flag(ap: argparse.ArgumentParser) -> None:
    """Add ``--json PATH`` to a benchmark's argument parser."""
    ap.add_argument(
        "--json",
        metavar="PATH",
        help="also write the measurements to PATH as JSON (notebooks/benchmarks.py plots them)",
    )


def record(**row: Any) -> None:
    """Record one measurement (plain values: str, int, float, or dicts of them)."""
    ROWS.append(row)


def write(path: str | Path, benchmark: str, note: str = "") -> Path:
    """Write the recorded rows to ``path``; returns the path."""
    data = {
        "benchmark": benchmark,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "note": note,
        "rows": ROWS,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    return out


def write_if_asked(args: argparse.Namespace, benchmark: str, note: str = "") -> None:
    """``write`` to ``args.json`` when the run was given ``--json``."""
    if getattr(args, "json", None):
        print(f"wrote {write(args.json, benchmark, note)}")
