"""What the running CPU can execute: its feature flags, and the check ``Proc.compile`` makes.

Generated C is built with ``-march=native``; code using an instruction the CPU lacks would
either fail to compile or die with SIGILL when called. Memories name the features their code
needs (``Memory.requires``, e.g. ``("avx512f",)``) and ``check_features`` turns a missing one
into a ``CodegenError`` before anything is built.

Features are read from ``/proc/cpuinfo`` (the ``flags`` line, Linux's names: ``avx2``,
``fma``, ``avx512f``, ...); where that file does not exist, from the compiler's
``-march=native`` macros (``__AVX2__`` -> ``avx2``). ``CURSCHED_CPU_FEATURES`` (a
comma-separated list) replaces the detected set, so tests and cross-builds can state the CPU.

``cpu_vendor()`` names the maker (``"intel"``, ``"amd"`` or ``"other"``, from the
``vendor_id`` line; ``CURSCHED_CPU_VENDOR`` replaces it): schedules whose best tuning was
measured to differ between the two makers' cores with the same instructions (the sgemm's
prefetching and packing, ``sched/sgemm_x86.py``) choose by it.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from cursched.errors import CodegenError

__all__ = ["check_features", "cpu_features", "cpu_vendor", "native_features"]

#: Compiler macro -> /proc/cpuinfo flag, for the fallback detection.
_MACROS = {
    "__SSE4_1__": "sse4_1",
    "__SSE4_2__": "sse4_2",
    "__AVX__": "avx",
    "__AVX2__": "avx2",
    "__FMA__": "fma",
    "__AVX512F__": "avx512f",
    "__AVX512BW__": "avx512bw",
    "__AVX512DQ__": "avx512dq",
    "__AVX512VL__": "avx512vl",
}


def _from_cpuinfo(path: Path) -> frozenset[str] | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


def _from_compiler() -> frozenset[str]:
    try:
        r = subprocess.run(
            ["cc", "-march=native", "-dM", "-E", "-x", "c", os.devnull],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return frozenset()
    defined = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("#define ")}
    return frozenset(flag for macro, flag in _MACROS.items() if macro in defined)


@functools.cache
def _detected() -> frozenset[str]:
    found = _from_cpuinfo(Path("/proc/cpuinfo"))
    return found if found is not None else _from_compiler()


def native_features() -> frozenset[str]:
    """The feature flags of the CPU this process runs on, whatever ``CURSCHED_CPU_FEATURES``
    states: what ``-march=native`` enables when the compiler knows it."""
    return _detected()


def cpu_features() -> frozenset[str]:
    """The feature flags of the running CPU (``/proc/cpuinfo`` names), or the set
    ``CURSCHED_CPU_FEATURES`` states."""
    env = os.environ.get("CURSCHED_CPU_FEATURES")
    if env is not None:
        return frozenset(f.strip() for f in env.split(",") if f.strip())
    return _detected()


#: ``vendor_id`` of ``/proc/cpuinfo`` -> the name ``cpu_vendor`` gives.
_VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}


@functools.cache
def _detected_vendor() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "other"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "vendor_id":
            return _VENDORS.get(value.strip(), "other")
    return "other"


def cpu_vendor() -> str:
    """The running CPU's maker: ``"intel"``, ``"amd"`` or ``"other"`` (unknown, or no
    ``/proc/cpuinfo``), or what ``CURSCHED_CPU_VENDOR`` states."""
    env = os.environ.get("CURSCHED_CPU_VENDOR")
    if env is not None:
        return env.strip().lower()
    return _detected_vendor()


def check_features(required: Iterable[tuple[str, str]], what: str) -> None:
    """Raise ``CodegenError`` unless the CPU has every feature in ``required``.

    Args:
        required: ``(feature, who needs it)`` pairs, e.g. ``("avx512f", "memory AVX512")``.
        what: the thing being compiled, for the message.
    """
    have = cpu_features()
    missing = [(f, who) for f, who in required if f not in have]
    if missing:
        detail = ", ".join(f"{f} (needed by {who})" for f, who in missing)
        raise CodegenError(
            f"{what}: this CPU lacks {detail}; the code would not run here (SIGILL). Choose"
            " instructions from cursched.platforms.x86.cpu_features(), or set"
            " CURSCHED_CPU_FEATURES when building for another CPU"
        )
