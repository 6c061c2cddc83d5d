"""The ``cursched`` command line: compile, show, help, and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cursched.cli import main

EXAMPLE = Path(__file__).with_name("schedule_example.py")


def test_compile_writes_c_and_h(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(EXAMPLE), "-o", str(tmp_path)]) == 0
    c = (tmp_path / "schedule_example.c").read_text()
    h = (tmp_path / "schedule_example.h").read_text()
    assert "void scale(" in c and "void scale_copy(" in c
    assert "void copy1(" not in c  # instructions are expanded, not emitted
    assert "void scale(int_fast64_t n, float *a, float *restrict x);" in h
    assert "scale_copy" in capsys.readouterr().out
    # the generated unit compiles on its own
    r = subprocess.run(
        [
            "cc",
            "-c",
            "-fopenmp",
            "-Wall",
            "-Werror",
            str(tmp_path / "schedule_example.c"),
            "-o",
            str(tmp_path / "u.o"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr


def test_compile_selected_procs(tmp_path: Path) -> None:
    assert (
        main(["compile", str(EXAMPLE), "-o", str(tmp_path), "--proc", "scale", "--name", "k"]) == 0
    )
    c = (tmp_path / "k.c").read_text()
    assert "void scale(" in c and "scale_copy" not in c


def test_compile_several_named_procs(tmp_path: Path) -> None:
    argv = ["compile", str(EXAMPLE), "-o", str(tmp_path), "--proc", "scale", "copy1"]
    assert main(argv) == 0
    c = (tmp_path / "schedule_example.c").read_text()
    # an instruction named explicitly becomes a function running its template
    assert "void scale(" in c and "void copy1(" in c and "scale_copy" not in c


def test_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", f"{EXAMPLE}:scale"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def scale(n: size")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", f"{EXAMPLE}:nope"], "defines no proc nope"),
        (["show", str(EXAMPLE)], "expected FILE.py:NAME"),
        (["compile", "/nonexistent/file.py"], "no such file"),
        (["compile", str(EXAMPLE), "--proc", "nope"], "defines no proc nope"),
    ],
)
def test_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("cursched: error: ") and message in err
    assert err.count("\n") == 1


def test_broken_schedule_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from __future__ import annotations\nraise ValueError('boom')\n")
    assert main(["compile", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom" in err and "Traceback" not in err


@pytest.mark.parametrize("cmd", [[], ["compile"], ["show"]])
def test_help(cmd: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*cmd, "--help"])
    assert info.value.code == 0
    assert "usage: cursched" in capsys.readouterr().out


def test_console_script_error_has_no_traceback() -> None:
    help_run = subprocess.run(
        [sys.executable, "-m", "cursched.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert help_run.returncode == 0 and "compile" in help_run.stdout
    r = subprocess.run(
        [sys.executable, "-m", "cursched.cli", "show", f"{EXAMPLE}:missing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and r.stderr.startswith("cursched: error:")
