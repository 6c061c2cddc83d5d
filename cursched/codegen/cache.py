"""Pruning the build cache (``cursched.codegen.build``): by total size and by age.

An entry is a library ``X.so`` with its source ``X.c`` and digest ``X.so.sha256``; its age
is the library's modification time, which a cache hit refreshes (least recently used first).
Leftovers of interrupted builds and loads (``.tmp-*``, ``.load-*``) older than an hour go as
well; the compiler's ``--version`` stamps (``compiler-*.txt``) are tiny and kept.

``enforce_cap`` runs after every build, keeping the cache under ``CURSCHED_CACHE_MAX_BYTES``
(default ``DEFAULT_MAX_BYTES``; ``0`` turns the cap off); ``cursched cache prune`` calls
``prune``.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

#: The size cap of the cache when ``CURSCHED_CACHE_MAX_BYTES`` is not set: 1 GiB.
DEFAULT_MAX_BYTES = 1 << 30
#: Temporary files older than this (seconds) belong to a build or load that died.
STALE_TEMP_SECONDS = 3600.0


@dataclass
class PruneResult:
    """What ``prune`` did.

    Attributes:
        removed: the library entries removed (their ``.so`` paths).
        freed: bytes freed (entries and stale temporary files).
        kept: entries left.
        kept_bytes: bytes the kept entries take.
    """

    removed: list[Path] = field(default_factory=list)
    freed: int = 0
    kept: int = 0
    kept_bytes: int = 0


@dataclass
class _Entry:
    lib: Path
    files: list[Path]
    size: int
    used: float


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _entries(d: Path) -> tuple[list[_Entry], list[Path]]:
    """The cache's library entries and its stale temporary files."""
    entries: list[_Entry] = []
    stale: list[Path] = []
    now = time.time()
    try:
        names = os.listdir(d)
    except OSError:
        return [], []
    for name in names:
        p = d / name
        if name.startswith((".tmp-", ".load-")):
            try:
                if now - p.stat().st_mtime > STALE_TEMP_SECONDS:
                    stale.append(p)
            except OSError:
                pass
            continue
        if not name.endswith(".so"):
            continue
        files = [p, p.with_name(name + ".sha256"), p.with_suffix(".c")]
        try:
            used = p.stat().st_mtime
        except OSError:
            continue
        entries.append(_Entry(p, files, sum(_size(f) for f in files), used))
    return entries, stale


def _remove(files: list[Path]) -> int:
    freed = 0
    for f in files:
        size = _size(f)
        try:
            if f.is_dir() and not f.is_symlink():  # a dead build's or load's directory
                shutil.rmtree(f)
            else:
                f.unlink()
            freed += size
        except FileNotFoundError:
            pass
        except OSError:  # another process may hold or have removed it; the next prune retries
            pass
    return freed


def prune(
    directory: Path | None = None,
    *,
    max_bytes: int | None = None,
    max_age_seconds: float | None = None,
    keep: Path | None = None,
) -> PruneResult:
    """Remove cache entries older than ``max_age_seconds``, then the least recently used
    ones until the rest take at most ``max_bytes``.

    Args:
        directory: the cache directory (default: ``build.cache_dir()``).
        max_bytes: the size to get under (None: no size limit).
        max_age_seconds: the age beyond which an entry goes (None: no age limit).
        keep: a library never removed (the one just built).

    Returns:
        What was removed and what is left.
    """
    if directory is None:
        from cursched.codegen.build import cache_dir

        directory = cache_dir()
    entries, stale = _entries(directory)
    out = PruneResult()
    out.freed += _remove(stale)
    now = time.time()
    entries.sort(key=lambda e: e.used)  # oldest first
    total = sum(e.size for e in entries)
    left: list[_Entry] = []
    for e in entries:
        old = max_age_seconds is not None and now - e.used > max_age_seconds
        over = max_bytes is not None and total > max_bytes
        if e.lib != keep and (old or over):
            out.freed += _remove(e.files)
            out.removed.append(e.lib)
            total -= e.size
        else:
            left.append(e)
    out.kept = len(left)
    out.kept_bytes = sum(e.size for e in left)
    return out


def max_bytes_setting() -> int:
    """The size cap: ``CURSCHED_CACHE_MAX_BYTES`` (0: no cap) or ``DEFAULT_MAX_BYTES``."""
    env = os.environ.get("CURSCHED_CACHE_MAX_BYTES", "").strip()
    if not env:
        return DEFAULT_MAX_BYTES
    try:
        return max(0, parse_bytes(env))
    except ValueError:
        return DEFAULT_MAX_BYTES


def enforce_cap(directory: Path, keep: Path | None = None) -> PruneResult | None:
    """Keep the cache under the size cap (after a build). None when there is no cap."""
    cap = max_bytes_setting()
    if cap == 0:
        return None
    return prune(directory, max_bytes=cap, keep=keep)


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(text: str) -> int:
    """``"512M"`` -> 536870912 (suffixes K, M, G, T, powers of 1024; an optional ``B``/``iB``).

    Raises:
        ValueError: not a size.
    """
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS and t[-1:] else ""
    number = t[: len(t) - len(unit)].strip()
    value = float(number)  # ValueError for junk
    if value < 0:
        raise ValueError(f"a size cannot be negative: {text!r}")
    return int(value * _UNITS[unit])
