"""The record of a search: one SQLite table, one row per measured candidate.

A row keeps what is needed to trust and reuse a measurement: the target (file, names and a
hash of the proc and schedule), the parameters, the outcome (time, or the refusing error's
class and message), the proc's history script, the machine (CPU model, flags, cores) and the
library versions. A later search of the same target on the same machine skips what is here.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cursched.tune.evaluate import Outcome

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    time_s REAL,
    times TEXT NOT NULL,
    error_class TEXT,
    error_message TEXT,
    history TEXT NOT NULL,
    machine TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpu_flags TEXT NOT NULL,
    versions TEXT NOT NULL,
    search_id TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS candidates_lookup ON candidates (target, machine, params);
"""


@dataclass(frozen=True)
class Machine:
    """The machine a measurement was taken on; ``key`` is what resuming compares."""

    cpu_model: str
    cpu_flags: str
    cores: int

    @property
    def key(self) -> str:
        text = f"{self.cpu_model}|{self.cpu_flags}|{self.cores}"
        return f"{self.cpu_model} x{self.cores} [{hashlib.sha256(text.encode()).hexdigest()[:8]}]"


@cache
def this_machine() -> Machine:
    """The running machine (from ``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and model in ("", platform.processor()):
                model = value.strip()
            elif name.strip() == "flags" and not flags:
                flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    return Machine(model, flags, os.cpu_count() or 1)


@cache
def versions() -> dict[str, str]:
    """The versions of the libraries a measurement depends on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("cursched", "numpy", "optuna"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    out["cc"] = os.environ.get("CC", "cc")
    return out


@dataclass(frozen=True)
class Row:
    """One recorded candidate."""

    id: int
    target: str
    params: dict[str, Any]
    status: str
    time_s: float | None
    times: list[float]
    error_class: str | None
    error_message: str | None
    history: str
    machine: str
    search_id: str


class Record:
    """A SQLite file of measured candidates (created when missing)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def add(self, target: str, outcome: Outcome, search_id: str) -> None:
        m = this_machine()
        row = (
            target,
            json.dumps(outcome.params, sort_keys=True),
            outcome.status,
            outcome.time_s,
            json.dumps(outcome.times),
            outcome.error_class,
            outcome.error_message,
            outcome.history,
            m.key,
            m.cpu_model,
            m.cpu_flags,
            json.dumps(versions(), sort_keys=True),
            search_id,
            time.time(),
        )
        with self._connect() as db:
            db.execute(
                "INSERT INTO candidates (target, params, status, time_s, times, error_class,"
                " error_message, history, machine, cpu_model, cpu_flags, versions, search_id,"
                " created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

    def rows(self, target: str | None = None, machine: str | None = None) -> list[Row]:
        """The recorded candidates, oldest first (of one target and machine when given)."""
        query, args = "SELECT * FROM candidates WHERE 1 = 1", list[str]()
        if target is not None:
            query, args = query + " AND target = ?", [*args, target]
        if machine is not None:
            query, args = query + " AND machine = ?", [*args, machine]
        with self._connect() as db:
            db.row_factory = sqlite3.Row
            found = db.execute(query + " ORDER BY id", args).fetchall()
        return [_row(r) for r in found]

    def targets(self) -> list[str]:
        with self._connect() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT target FROM candidates")]


def _row(r: sqlite3.Row) -> Row:
    return Row(
        id=r["id"],
        target=r["target"],
        params=json.loads(r["params"]),
        status=r["status"],
        time_s=r["time_s"],
        times=json.loads(r["times"]),
        error_class=r["error_class"],
        error_message=r["error_message"],
        history=r["history"],
        machine=r["machine"],
        search_id=r["search_id"],
    )
