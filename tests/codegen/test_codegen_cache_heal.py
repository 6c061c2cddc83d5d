"""The self-healing build cache (issue 11, finding 4) and its pruning.

A damaged cached library used to be trusted because it existed: truncated, it killed every
later process with SIGBUS on load; empty or garbage, an untyped ``OSError`` forever. Now a
library is used only if it matches the digest recorded beside it, loaded from the verified
bytes, and rebuilt once when damaged. Loads run in child processes, so a signal fails the
test instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from cursched import DRAM, BuildError, proc
from cursched.cli import main as cli_main
from cursched.codegen import build
from cursched.codegen.build import build_library, digest_path, load_library, verified_bytes
from cursched.codegen.cache import parse_bytes, prune

HERE = Path(__file__).parent
SOURCE = "int cs_answer(void) { return 42; }\n"


@proc
def scale2(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = x[i] * 2.0


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CURSCHED_CACHE_DIR", str(tmp_path))
    return tmp_path


def _damage(lib: Path, how: str) -> None:
    data = lib.read_bytes()
    if how == "truncated":
        lib.write_bytes(data[: len(data) // 3])  # in place: the inode stays
    elif how == "empty":
        lib.write_bytes(b"")
    elif how == "garbage":
        lib.write_bytes(b"\x7fELF" + os.urandom(len(data)))
    elif how == "no digest":
        digest_path(lib).unlink()
    elif how == "unreadable":
        lib.unlink()
        lib.mkdir()  # reading a directory fails
    else:
        raise AssertionError(how)


_CHILD_LOAD = textwrap.dedent(
    """
    import ctypes
    from cursched.codegen.build import build_library, load_library
    r = build_library("answer", {source!r}, ("-O1",))
    print(r.hit, load_library(r).cs_answer())
    """
)


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "no digest", "unreadable"])
def test_damaged_library_is_rebuilt(fresh_cache: Path, how: str) -> None:
    first = build_library("answer", SOURCE, ("-O1",))
    assert verified_bytes(first.lib_path) == first.data != b""
    if how == "unreadable":
        # the unreadable path is a directory: the build's rename fails, a typed BuildError
        _damage(first.lib_path, how)
        with pytest.raises(BuildError, match="cannot write the build cache"):
            build_library("answer", SOURCE, ("-O1",))
        return
    _damage(first.lib_path, how)
    env = dict(os.environ, CURSCHED_CACHE_DIR=str(fresh_cache))
    r = subprocess.run(
        [sys.executable, "-c", _CHILD_LOAD.format(source=SOURCE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, f"child died (exit {r.returncode}):\n{r.stderr}"
    assert r.stdout.split() == ["False", "42"]  # not a hit: rebuilt, then loaded
    assert verified_bytes(first.lib_path) is not None  # and the cache is whole again


def test_library_failing_to_load_is_rebuilt_once_then_build_error(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = build_library("answer", SOURCE, ("-O1",))
    calls: list[int] = []
    real = build._load_private

    def fails_first(b: build.BuildResult) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("simulated: cannot map")
        return real(b)

    monkeypatch.setattr(build, "_LOADED", {})
    monkeypatch.setattr(build, "_load_private", fails_first)
    assert load_library(built).cs_answer() == 42
    assert len(calls) == 2

    def always_fails(b: build.BuildResult) -> object:
        raise OSError("simulated: cannot map")

    monkeypatch.setattr(build, "_LOADED", {})
    monkeypatch.setattr(build, "_load_private", always_fails)
    with pytest.raises(BuildError, match="even rebuilt"):
        load_library(built)


def test_loaded_library_survives_cache_damage(fresh_cache: Path) -> None:
    f = scale2.compile()
    lib = Path(f.lib_path)
    _damage(lib, "truncated")  # would be a SIGBUS if the call ran from the mapped cache file
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    f(4, x, y)
    assert y.tolist() == [0, 2, 4, 6]


_CHILD_RACE = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    sys.path.insert(0, {here!r})
    from cursched.errors import CurschedError
    import test_codegen_cache_heal as m

    corrupt = sys.argv[1] == "corrupt"
    deadline = time.time() + 8
    ok = typed = 0
    while time.time() < deadline:
        if corrupt:
            for name in os.listdir({cache!r}):
                p = os.path.join({cache!r}, name)
                if name.endswith(".so") and os.path.isfile(p):
                    try:
                        data = open(p, "rb").read()
                        with open(p, "r+b") as f:   # in place, as a dying disk would
                            f.truncate(len(data) // 2)
                    except OSError:
                        pass
        try:
            f = m.scale2.compile()
            x = np.arange(8, dtype=np.float32)
            y = np.zeros(8, np.float32)
            f(8, x, y)
            assert y.tolist() == (2 * x).tolist(), y
            ok += 1
        except CurschedError as e:
            typed += 1
        # a fresh load next time, as a new process would do
        import cursched.codegen.build as b
        b._LOADED.clear()
    print(ok, typed)
    """
)


def test_four_processes_compile_while_one_corrupts_the_cache(fresh_cache: Path) -> None:
    env = dict(os.environ, CURSCHED_CACHE_DIR=str(fresh_cache))
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    script = _CHILD_RACE.format(here=str(HERE), cache=str(fresh_cache))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, "corrupt" if k == 0 else "plain"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        # a negative return code is a signal (SIGBUS, SIGSEGV): the failure this test is for
        assert p.returncode == 0, f"exit {p.returncode}:\n{err}"
        ok, typed = map(int, out.split())
        results.append((ok, typed))
    # every run ended with a correct result or a typed error, and most got a result
    assert all(ok + typed > 0 for ok, typed in results), results
    assert sum(ok for ok, _ in results[1:]) > 0, results


def test_prune_by_age_and_size(fresh_cache: Path) -> None:
    libs = [build_library(f"u{k}", SOURCE + f"/* {k} */\n", ("-O1",)).lib_path for k in range(4)]
    now = time.time()
    for k, lib in enumerate(libs):  # u0 is the oldest
        os.utime(lib, (now - (4 - k) * 86400, now - (4 - k) * 86400))
    r = prune(fresh_cache, max_age_seconds=3.5 * 86400)
    assert r.removed == [libs[0]]
    assert not libs[0].exists() and not digest_path(libs[0]).exists()
    assert not libs[0].with_suffix(".c").exists()
    one = sum(p.stat().st_size for p in fresh_cache.glob("u1-*"))
    r = prune(fresh_cache, max_bytes=one + 10)
    assert r.removed == libs[1:3] and r.kept == 1 and libs[3].exists()


def test_size_cap_applies_after_each_build(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSCHED_CACHE_MAX_BYTES", "1")  # only the newest library stays
    a = build_library("capa", SOURCE, ("-O1",))
    b = build_library("capb", SOURCE + "/* b */\n", ("-O1",))
    assert b.lib_path.exists() and not a.lib_path.exists()


def test_cli_cache_prune(fresh_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_library("cli", SOURCE, ("-O1",))
    assert cli_main(["cache", "prune", "--max-size", "0"]) == 0
    out = capsys.readouterr().out
    assert "removed 1 libraries" in out and "kept 0" in out
    assert not list(fresh_cache.glob("*.so"))
    assert cli_main(["cache", "prune", "--max-size", "lots"]) == 1
    assert "not a size" in capsys.readouterr().err


def test_parse_bytes() -> None:
    assert parse_bytes("512M") == 512 << 20
    assert parse_bytes("1GiB") == 1 << 30
    assert parse_bytes("100") == 100
    with pytest.raises(ValueError):
        parse_bytes("big")


def test_elf_completeness(fresh_cache: Path) -> None:
    # a library with a large zero-initialised array: its last segment is bigger in memory
    # than in the file, which is complete all the same
    src = "static float cs_arena[1 << 20];\nfloat *cs_get(void) { return cs_arena; }\n"
    data = build_library("arena", src, ("-O1",)).data
    assert build.elf_complete(data)
    assert not build.elf_complete(data[: len(data) - 64])
    assert not build.elf_complete(data[:100])
    assert not build.elf_complete(b"")
