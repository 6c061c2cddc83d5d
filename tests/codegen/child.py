"""Running a compiled call in a child process: a call that may crash (a signal, an allocation
that fails) must not take the test process with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_child(code: str, cache: Path, timeout: float = 300) -> str:
    """Run ``code`` in a fresh interpreter with the build cache ``cache`` and this process's
    import path; its standard output (the test fails if the child exits non-zero)."""
    env = dict(os.environ, CURSCHED_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join([*sys.path])
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert r.returncode == 0, f"child crashed (exit {r.returncode}):\n{r.stderr}"
    return r.stdout
