"""``nvcc --cubin`` on generated kernels: does it compile, and what resources does it use?

``kernel_resources(source)`` compiles a ``.cu`` text for ``sm_90`` with ``-Xptxas -v`` and
parses ptxas's report per kernel: registers, spill stores/loads (bytes) and static shared
memory (bytes). Results are cached on disk by a hash of the text, the architecture and the
``nvcc --version`` text, so a test suite compiles each kernel once.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from cursched.codegen.build import cache_dir
from cursched.errors import BuildError

_FUNC = re.compile(r"Compiling entry function '(\w+)'|Function properties for (\w+)")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True, slots=True)
class KernelResources:
    """What ptxas reports for one kernel.

    Attributes:
        registers: registers per thread.
        spill_stores: bytes spilled to local memory (stores).
        spill_loads: bytes reloaded from local memory.
        shared_bytes: static shared memory per block.
    """

    registers: int
    spill_stores: int
    spill_loads: int
    shared_bytes: int

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def gpu_available() -> bool:
    """Whether cupy is installed and sees a CUDA device (what ``target="cuda"`` needs)."""
    try:
        import cupy  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return False
    return bool(cupy.is_available())


def _version() -> str:
    r = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False)
    return r.stdout


def parse_ptxas(text: str) -> dict[str, KernelResources]:
    """The per-kernel resources in ptxas ``-v`` output."""
    out: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _FUNC.search(line)
        if m:
            current = m.group(1) or m.group(2)
            out.setdefault(
                current, {"registers": 0, "spill_stores": 0, "spill_loads": 0, "shared_bytes": 0}
            )
            continue
        if current is None:
            continue
        if (s := _SPILL.search(line)) is not None:
            out[current]["spill_stores"] = int(s.group(1))
            out[current]["spill_loads"] = int(s.group(2))
        if (u := _USED.search(line)) is not None:
            out[current]["registers"] = int(u.group(1))
            if (sm := _SMEM.search(line)) is not None:
                out[current]["shared_bytes"] = int(sm.group(1))
    return {k: KernelResources(**v) for k, v in out.items()}


def kernel_resources(source: str, arch: str = "sm_90") -> dict[str, KernelResources]:
    """Compile ``source`` to a cubin for ``arch``; the resources of each kernel in it.

    Raises:
        BuildError: nvcc is missing or fails (its output attached).
    """
    if not nvcc_available():
        raise BuildError("nvcc is not on PATH")
    h = hashlib.sha256()
    for part in (source, arch, _version()):
        h.update(part.encode())
        h.update(b"\xff")
    key = h.hexdigest()[:32]
    d = cache_dir()
    hit = d / f"ptxas-{key}.json"
    if hit.exists():
        data = json.loads(hit.read_text())
        return {k: KernelResources(**v) for k, v in data.items()}
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        src = Path(tmp) / "unit.cu"
        src.write_text(source)
        cmd = [
            "nvcc",
            "--cubin",
            f"-arch={arch}",
            "-Xptxas",
            "-v",
            "-o",
            str(Path(tmp) / "unit.cubin"),
            str(src),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise BuildError(
                "nvcc failed", output=(r.stdout + r.stderr).strip(), source_path=str(src)
            )
        res = parse_ptxas(r.stdout + r.stderr)
    tmp_json = d / f".tmp-ptxas-{key}.json"
    tmp_json.write_text(json.dumps({k: asdict(v) for k, v in res.items()}))
    tmp_json.replace(hit)
    return res
