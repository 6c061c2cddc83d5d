"""Building generated C into shared libraries, through a content-hash cache.

The compiler is ``cc`` unless the ``CC`` environment variable names another (it may carry
arguments, ``CC="ccache gcc"``). Flags default to ``DEFAULT_CFLAGS``; ``CURSCHED_CFLAGS``
replaces them for a whole run and a ``cflags`` argument for one build. The cache lives under
``platformdirs.user_cache_dir("cursched")`` or ``CURSCHED_CACHE_DIR``; a library's file name
is a hash of the source, the flags, the compiler command and the compiler's ``--version``
text, so a change to any of them builds a new library and an unchanged one is reused.

Libraries are compiled to a temporary file in the cache directory and moved into place with
``os.replace``, which is atomic: a concurrent process sees either no library or a complete
one, never a half-written file. Two processes building the same key both succeed; the last
rename wins with identical content.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from cursched.errors import BuildError

DEFAULT_CFLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fPIC", "-shared", "-fopenmp")
#: Flags of sanitizer builds (``compile(sanitize=True)``): ASan + UBSan, stopping at the first
#: undefined behaviour so that a report is never missed.
SANITIZE_CFLAGS: tuple[str, ...] = (
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=undefined",
    "-fPIC",
    "-shared",
    "-fopenmp",
)


@dataclass(frozen=True, slots=True)
class BuildResult:
    """A built (or cached) library: its path, the source it was built from, and whether the
    cache already held it."""

    lib_path: Path
    source_path: Path
    key: str
    hit: bool


def compiler() -> list[str]:
    """The compiler command: ``$CC`` split like a shell would, else ``cc``."""
    return shlex.split(os.environ.get("CC", "cc")) or ["cc"]


def default_cflags() -> tuple[str, ...]:
    env = os.environ.get("CURSCHED_CFLAGS")
    return tuple(shlex.split(env)) if env else DEFAULT_CFLAGS


@functools.cache
def compiler_version(cmd: tuple[str, ...]) -> str:
    """The compiler's ``--version`` text (part of the cache key).

    Running the compiler costs ~10 ms, more than the rest of a cache hit, so the text is
    itself cached on disk, keyed by the compiler executable's real path, size and mtime
    (installing another compiler changes them).
    """
    exe = shutil.which(cmd[0])
    stamp_file: Path | None = None
    if exe is not None:
        st = os.stat(exe)
        stamp = f"{os.path.realpath(exe)}\0{st.st_size}\0{st.st_mtime_ns}\0{cmd}"
        digest = hashlib.sha256(stamp.encode()).hexdigest()[:24]
        stamp_file = cache_dir() / f"compiler-{digest}.txt"
        if stamp_file.exists():
            return stamp_file.read_text()
    text = _run_version(cmd)
    if stamp_file is not None:
        _write_atomic(stamp_file, text)
    return text


def _run_version(cmd: tuple[str, ...]) -> str:
    try:
        r = subprocess.run([*cmd, "--version"], capture_output=True, text=True, check=False)
    except OSError as e:
        raise BuildError(f"cannot run the C compiler {' '.join(cmd)!r}: {e}") from None
    return r.stdout + r.stderr


def cache_dir() -> Path:
    """The directory holding built libraries (created on demand)."""
    env = os.environ.get("CURSCHED_CACHE_DIR")
    d = Path(env) if env else Path(platformdirs.user_cache_dir("cursched"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def cache_key(source: str, cflags: tuple[str, ...], cmd: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for part in (source, "\0".join(cflags), "\0".join(cmd), compiler_version(cmd)):
        h.update(part.encode())
        h.update(b"\xff")
    return h.hexdigest()[:32]


def _write_atomic(path: Path, data: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_library(stem: str, source: str, cflags: tuple[str, ...] | None = None) -> BuildResult:
    """Compile ``source`` into a shared library, or find it in the cache.

    Args:
        stem: a readable prefix of the file names (the unit's name).
        source: the complete C source.
        cflags: compiler flags (default: ``default_cflags()``); ``-shared`` and ``-fPIC`` are
            added when missing, since the result must be loadable.

    Returns:
        Where the library and its source are, and whether it was a cache hit.

    Raises:
        BuildError: the compiler failed (its output and the source path attached) or could
            not be run.
    """
    flags = tuple(default_cflags() if cflags is None else cflags)
    flags += tuple(f for f in ("-fPIC", "-shared") if f not in flags)
    cmd = tuple(compiler())
    key = cache_key(source, flags, cmd)
    d = cache_dir()
    lib = d / f"{stem}-{key}.so"
    src = d / f"{stem}-{key}.c"
    if lib.exists():
        return BuildResult(lib, src, key, hit=True)
    _write_atomic(src, source)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".so")
    os.close(fd)
    try:
        try:
            r = subprocess.run(
                [*cmd, *flags, "-o", tmp, str(src), "-lm"],
                capture_output=True,
                text=True,
                check=False,
            )
        except OSError as e:
            raise BuildError(f"cannot run the C compiler {' '.join(cmd)!r}: {e}") from None
        if r.returncode != 0:
            raise BuildError(
                f"C compiler failed on unit '{stem}' (exit {r.returncode})",
                output=(r.stdout + r.stderr).strip(),
                source_path=str(src),
            )
        os.replace(tmp, lib)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return BuildResult(lib, src, key, hit=False)
