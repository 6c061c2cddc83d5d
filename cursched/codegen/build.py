"""Building generated C into shared libraries, through a content-hash cache.

The compiler is ``cc`` unless the ``CC`` environment variable names another (it may carry
arguments, ``CC="ccache gcc"``). Flags default to ``DEFAULT_CFLAGS``; ``CURSCHED_CFLAGS``
replaces them for a whole run and a ``cflags`` argument for one build; with ``-march=native``
an instruction set the toolchain is known to miscompile is left out (``NATIVE_EXCLUDES``:
AVX512-FP16). The cache lives under
``platformdirs.user_cache_dir("cursched")`` or ``CURSCHED_CACHE_DIR``; a library's file name
is a hash of the source, the flags, the compiler command and the compiler's ``--version``
text, so a change to any of them builds a new library and an unchanged one is reused.

Libraries are compiled to a temporary file in the cache directory and moved into place with
``os.replace``, which is atomic: a concurrent process sees either no library or a complete
one, never a half-written file. Two processes building the same key both succeed; the last
rename wins with identical content.

The cache heals itself: beside each library ``X.so`` lies ``X.so.sha256``, its digest, written
(atomically too) after the library. A library is used only when its bytes match that digest;
a missing, empty, truncated, unreadable or foreign file is rebuilt. ``load_library`` then
loads the very bytes it verified, from a private copy (so that nobody changing the cache
later can pull pages from under a loaded library: a truncated mapped file is a SIGBUS), and
a library that still fails to load is rebuilt once, then reported as ``BuildError``. The
cache is kept under a size cap (``CURSCHED_CACHE_MAX_BYTES``, default
``cache.DEFAULT_MAX_BYTES``), pruned least recently used first after each build; ``cursched
cache prune`` prunes by size and age on demand (``cursched.codegen.cache``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import shlex
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from cursched.codegen.cpu import native_features
from cursched.errors import BuildError

DEFAULT_CFLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fPIC", "-shared", "-fopenmp")
#: Flags of sanitizer builds (``compile(sanitize=True)``): ASan + UBSan, stopping at the first
#: undefined behaviour so that a report is never missed; ``-march=native`` as in the default
#: build, since code of the vector instruction libraries needs the CPU's ISA enabled (the
#: features a unit needs are checked against the running CPU before it is built).
SANITIZE_CFLAGS: tuple[str, ...] = (
    "-O1",
    "-march=native",
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
    """A built (or cached) library: its path, the source it was built from, whether the
    cache already held it, and the library's verified bytes (what ``load_library`` loads)."""

    lib_path: Path
    source_path: Path
    key: str
    hit: bool
    data: bytes = field(default=b"", repr=False)
    #: what ``load_library`` needs to rebuild a library that fails to load
    rebuild: Callable[[], BuildResult] | None = field(default=None, repr=False, compare=False)


#: CPU flag (``/proc/cpuinfo``'s name) -> the option that keeps ``-march=native`` from using
#: that instruction set, where compilers emit code for it that their assembler rejects. With
#: AVX512-FP16 (Sapphire Rapids and later), GCC 12 to 14 compile ``_Float16`` arithmetic to a
#: masked ``vmovsh`` that binutils refuses ("unsupported masking for `vmovsh'"): units using
#: f16 failed to build. Without it f16 arithmetic goes through float (F16C conversions), each
#: operation rounded to f16 as the semantics say, bitwise as on CPUs without AVX512-FP16.
NATIVE_EXCLUDES: dict[str, str] = {"avx512_fp16": "-mno-avx512fp16"}


@functools.cache
def accepts_option(cmd: tuple[str, ...], option: str) -> bool:
    """Whether the compiler ``cmd`` knows ``option`` (it preprocesses an empty file with it)."""
    try:
        r = subprocess.run(
            [*cmd, option, "-x", "c", "-E", os.devnull], capture_output=True, check=False
        )
    except OSError:
        return False
    return r.returncode == 0


def native_flags(flags: tuple[str, ...], cmd: tuple[str, ...]) -> tuple[str, ...]:
    """``flags`` with the ``NATIVE_EXCLUDES`` options this CPU needs when they contain
    ``-march=native`` (unless the flags enable that instruction set themselves, or the
    compiler does not know the option: then it does not know the instructions either)."""
    if "-march=native" not in flags:
        return flags
    have = native_features()
    extra = [
        opt
        for feature, opt in NATIVE_EXCLUDES.items()
        if feature in have
        and opt not in flags
        and "-m" + opt.removeprefix("-mno-") not in flags
        and accepts_option(cmd, opt)
    ]
    return (*flags, *extra)


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
        try:
            text = stamp_file.read_text()
            if text:
                return text
        except (OSError, UnicodeDecodeError):  # missing or damaged: ask the compiler again
            pass
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


def digest_path(lib: Path) -> Path:
    """Where the digest of library ``lib`` is recorded."""
    return lib.with_name(lib.name + ".sha256")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified_bytes(lib: Path) -> bytes | None:
    """The bytes of ``lib`` if they match its recorded digest (None: missing, empty,
    unreadable, or changed since it was built)."""
    try:
        data = lib.read_bytes()
        want = digest_path(lib).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not data or _digest(data) != want:
        return None
    return data


def build_library(
    stem: str, source: str, cflags: tuple[str, ...] | None = None, *, force: bool = False
) -> BuildResult:
    """Compile ``source`` into a shared library, or find it (verified) in the cache.

    Args:
        stem: a readable prefix of the file names (the unit's name).
        source: the complete C source.
        cflags: compiler flags (default: ``default_cflags()``); ``-shared`` and ``-fPIC`` are
            added when missing, since the result must be loadable.
        force: build even if the cache holds a library that matches its digest (a library
            that verified but failed to load).

    Returns:
        Where the library and its source are, whether it was a cache hit, and its bytes.

    Raises:
        BuildError: the compiler failed (its output and the source path attached) or could
            not be run, or the cache directory cannot be written.
    """
    flags = tuple(default_cflags() if cflags is None else cflags)
    flags += tuple(f for f in ("-fPIC", "-shared") if f not in flags)
    cmd = tuple(compiler())
    flags = native_flags(flags, cmd)
    key = cache_key(source, flags, cmd)
    d = cache_dir()
    lib = d / f"{stem}-{key}.so"
    src = d / f"{stem}-{key}.c"

    def again() -> BuildResult:
        return build_library(stem, source, cflags, force=True)

    if not force:
        data = verified_bytes(lib)
        if data is not None:
            _touch(lib)
            return BuildResult(lib, src, key, hit=True, data=data, rebuild=again)
    try:
        data = _compile(stem, source, src, lib, flags, cmd)
    except OSError as e:  # the cache directory is not writable, the disk is full, ...
        raise BuildError(f"cannot write the build cache {d}: {e}") from None
    from cursched.codegen.cache import enforce_cap

    enforce_cap(d, keep=lib)
    return BuildResult(lib, src, key, hit=False, data=data, rebuild=again)


def _compile(
    stem: str, source: str, src: Path, lib: Path, flags: tuple[str, ...], cmd: tuple[str, ...]
) -> bytes:
    """Build ``lib`` from ``source`` (written to ``src``); record its digest; its bytes.

    The compiler writes into a private directory, so nothing that walks the cache (or damages
    it) sees the library before it is complete and renamed into place.
    """
    _write_atomic(src, source)
    tmpdir = Path(tempfile.mkdtemp(dir=lib.parent, prefix=".tmp-"))
    tmp = tmpdir / "lib.so"
    try:
        try:
            r = subprocess.run(
                [*cmd, *flags, "-o", str(tmp), str(src), "-lm"],
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
        data = tmp.read_bytes()
        if not elf_complete(data):
            raise BuildError(f"the C compiler wrote an incomplete library for unit '{stem}'")
        os.replace(tmp, lib)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    # After the library: a reader that sees this digest sees a library at least this new.
    _write_atomic(digest_path(lib), _digest(data) + "\n")
    return data


def elf_complete(data: bytes) -> bool:
    """Whether ``data`` holds every byte its ELF headers point to (or is not ELF64).

    A truncated shared library can pass ``dlopen`` and then raise SIGBUS when a page past
    its end is touched; this refuses it first. Only 64-bit little-endian ELF (what the
    compilers here produce) is inspected; anything else is left to ``dlopen`` to judge.
    """
    if len(data) < 64:
        return False
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return data[:4] != b"\x7fELF"  # an ELF we do not parse must at least be 64-bit LE
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    end = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
    if end > len(data):
        return False
    for k in range(phnum):
        # p_offset, then p_vaddr and p_paddr skipped, then p_filesz (not p_memsz: a
        # segment with .bss is larger in memory than in the file)
        offset, filesz = struct.unpack_from("<Q16xQ", data, phoff + k * phentsize + 8)
        if offset + filesz > len(data):
            return False
    return True


def _touch(lib: Path) -> None:
    """Mark ``lib`` recently used (the size cap evicts the least recently used first)."""
    with contextlib.suppress(OSError):  # a read-only cache is still usable
        os.utime(lib)


_LOADED: dict[str, ctypes.CDLL] = {}


def load_library(built: BuildResult) -> ctypes.CDLL:
    """Load a built library from the bytes that were verified against its digest.

    The bytes are written to a private file that is loaded and then unlinked, so a change to
    the cache after verification (another process truncating or rewriting the file) can
    neither be loaded nor pull pages from under the loaded library. A library that fails to
    load is rebuilt once.

    Raises:
        BuildError: the library, rebuilt, still fails to load.
    """
    key = _digest(built.data) if built.data else str(built.lib_path)
    lib = _LOADED.get(key)
    if lib is not None:
        return lib
    try:
        lib = _load_private(built)
    except OSError as first:
        if built.rebuild is None:
            raise BuildError(f"cannot load {built.lib_path}: {first}") from None
        again = built.rebuild()
        try:
            lib = _load_private(again)
        except OSError as e:
            raise BuildError(
                f"cannot load {again.lib_path}, even rebuilt: {e} (first attempt: {first})"
            ) from None
        key = _digest(again.data)
    _LOADED[key] = lib
    return lib


def _load_private(built: BuildResult) -> ctypes.CDLL:
    if not built.data:
        return ctypes.CDLL(str(built.lib_path))
    if not elf_complete(built.data):
        raise OSError(f"{built.lib_path}: not a complete shared library")
    # A fresh directory per load: a unique path (the dynamic loader would hand back an
    # earlier library loaded under the same name) that nothing else knows of.
    try:
        d = tempfile.mkdtemp(dir=built.lib_path.parent, prefix=".load-")
    except OSError:  # a read-only cache: the system's temporary directory then
        d = tempfile.mkdtemp(prefix="cursched-load-")
    try:
        path = Path(d) / built.lib_path.name
        path.write_bytes(built.data)
        return ctypes.CDLL(str(path))
    finally:
        shutil.rmtree(d, ignore_errors=True)
