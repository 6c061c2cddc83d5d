"""The cursched pytest plugin: golden-file tests for printouts and generated code.

Registered through the ``pytest11`` entry point, so installing cursched makes it available to
any project (ours and users'). It provides:

* the ``golden`` fixture: ``golden.check(text_or_proc)`` compares a text (or a proc, printed
  with ``str()``) with ``<golden dir>/<test file>/<test name>.txt``, where ``<test file>`` is
  the test file's path relative to the rootdir without ``.py`` (``tests/cursors/test_history``):
  two same-named test files in different folders have golden files of their own;
  ``golden.check(x, name="suffix")`` keeps several golden files per test
  (``<test name>__suffix.txt``);
* the ``--update-golden`` flag: write the golden files instead of comparing;
* the ini option ``cursched_golden_dir`` (relative to the pytest rootdir; default
  ``tests/golden``).

A missing golden file fails with a hint to run ``pytest --update-golden``; a mismatch fails
with a unified diff (golden file first, new text second).

Why not syrupy (installed, and read before writing this): pointing it at
``<rootdir>/tests/golden/<module>/<test>.txt`` means overriding its snapshot discovery
(``dirname``, ``discovery_dirname``, ``owns_snapshot_collection``), internals that its recent
releases keep changing. It then keeps its own update flag (``--snapshot-update``) and its own
unused-snapshot accounting: a run fails when it finds golden files no syrupy assertion read,
and an update run deletes them, while our golden directory is shared with files that other
tests compare by other means. Its failure shows its own diff format, not a unified diff, and
its missing-snapshot message names its flag, not ours. What we need is about a hundred lines
of plain file comparison, so it is written here by hand.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from pathlib import Path

import pytest

GOLDEN_DIR_INI = "cursched_golden_dir"
DEFAULT_GOLDEN_DIR = "tests/golden"
UPDATE_FLAG = "--update-golden"

# The golden files written in this session (for the terminal summary).
_written_key = pytest.StashKey[list[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cursched", "cursched golden files")
    group.addoption(
        UPDATE_FLAG,
        action="store_true",
        default=False,
        help="write golden files (tests/golden/...) from the current outputs instead of "
        "comparing; read the written files before committing them",
    )
    parser.addini(
        GOLDEN_DIR_INI,
        help=f"directory of golden files, relative to the rootdir (default {DEFAULT_GOLDEN_DIR})",
        default=DEFAULT_GOLDEN_DIR,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_written_key] = []


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    written = config.stash.get(_written_key, [])
    if written:
        terminalreporter.write_sep("-", f"cursched: {len(written)} golden file(s) written")
        for path in written:
            terminalreporter.write_line(f"  {path}")


def golden_dir(config: pytest.Config) -> Path:
    """The golden directory of a pytest session: the ini option, relative to the rootdir."""
    value = config.getini(GOLDEN_DIR_INI) or DEFAULT_GOLDEN_DIR
    path = Path(str(value))
    return path if path.is_absolute() else config.rootpath / path


def sanitize(name: str) -> str:
    """A file-name-safe form of a test name: ``test_x[a/b-1]`` becomes ``test_x_a_b-1``."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.")
    return cleaned or "_"


def _test_name(node: pytest.Item) -> str:
    # The node id after the file part names classes too ("TestA::test_b[x]"), so two classes
    # in one module with a same-named test do not share a golden file.
    parts = node.nodeid.split("::")[1:]
    return sanitize(".".join(parts) if parts else node.name)


def as_text(value: object) -> str:
    """The text a golden file holds for ``value``: a proc is printed, a string kept as is.

    Raises:
        TypeError: ``value`` is neither a string nor a proc (has no ``__cursched_ir__``).
    """
    if hasattr(value, "__cursched_ir__"):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        raise TypeError(
            f"golden.check takes a str or a Proc, not {type(value).__name__}; convert it first"
        )
    # Files end with one newline, so the printout and the file agree however they were made.
    return text if text.endswith("\n") else text + "\n"


class Golden:
    """The ``golden`` fixture's value: compares texts with one test's golden files."""

    def __init__(self, directory: Path, module: str, test: str, update: bool) -> None:
        self.root = directory
        self.directory = directory / module
        self.test = test
        self.update = update
        self.written: list[Path] = []
        self._used: set[Path] = set()

    def path(self, name: str | None = None) -> Path:
        """The golden file of this test, or of its check called ``name``."""
        stem = self.test if name is None else f"{self.test}__{sanitize(name)}"
        return self.directory / f"{stem}.txt"

    def legacy_path(self, name: str | None = None) -> Path | None:
        """Where this golden file was before files were keyed by the test file's path
        (``<golden dir>/<module name>/...``), for the hint of a missing file."""
        if self.directory.parent == self.root:
            return None
        return self.root / self.directory.name / self.path(name).name

    def check(self, value: object, name: str | None = None) -> None:
        """Compare ``value`` (a str, or a proc printed with ``str()``) with its golden file.

        Args:
            value: the text or the proc.
            name: a suffix that tells apart several golden files of one test.

        With ``--update-golden`` the file is written instead (only when its text changes).
        """
        text = as_text(value)
        path = self.path(name)
        if path in self._used:
            pytest.fail(
                f"golden.check called twice for {path.name} in one test; "
                'give each check its own name: golden.check(x, name="...")',
                pytrace=False,
            )
        self._used.add(path)
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        if self.update:
            if old != text:
                _write_atomically(path, text)
                self.written.append(path)
            return
        if old is None:
            legacy = self.legacy_path(name)
            moved = (
                f"A golden file at the former place, {legacy}, exists (files were keyed by the"
                f" test module's name alone): `git mv` it to {path}.\n"
                if legacy is not None and legacy.is_file()
                else ""
            )
            pytest.fail(
                f"golden file {path} does not exist.\n{moved}"
                f"Run `pytest {UPDATE_FLAG}` to create it, then read it and commit it.",
                pytrace=False,
            )
        if old != text:
            diff = "".join(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"{path} (golden)",
                    tofile="actual",
                )
            )
            pytest.fail(
                f"output differs from golden file {path}:\n{diff}\n"
                f"If the new output is right, run `pytest {UPDATE_FLAG}` and commit the file.",
                pytrace=False,
            )


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def golden_key(config: pytest.Config, path: Path) -> str:
    """The golden sub-directory of a test file: its path relative to the rootdir, ``.py``
    dropped, each part sanitized (``tests/cursors/test_history.py`` -> ``tests/cursors/
    test_history``). A file outside the rootdir keeps its absolute path's parts."""
    try:
        rel = path.resolve().relative_to(config.rootpath.resolve())
    except ValueError:
        rel = path.resolve().relative_to(path.resolve().anchor)
    return "/".join(sanitize(part) for part in rel.with_suffix("").parts)


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """Compare texts and procs with golden files: ``golden.check(str_or_proc, name=None)``."""
    config = request.config
    node = request.node
    assert isinstance(node, pytest.Item)
    g = Golden(
        golden_dir(config),
        golden_key(config, request.path),
        _test_name(node),
        bool(config.getoption(UPDATE_FLAG)),
    )
    request.addfinalizer(lambda: config.stash[_written_key].extend(g.written))
    return g
