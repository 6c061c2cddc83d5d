"""The golden plugin, tested in throwaway pytest sessions (pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursched.testing.plugin import Golden, as_text, sanitize

pytest_plugins = ["pytester"]


# Sessions load only what they test: hypothesis's plugin (and syrupy's, where installed) cost seconds.
_QUIET = ("-p", "no:hypothesispytest", "-p", "no:syrupy", "-p", "no:cacheprovider")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*_QUIET, *args)


_TEST = """
def test_hello(golden):
    golden.check("hello\\n")
"""


def _golden(pytester: pytest.Pytester, rel: str, text: str) -> Path:
    path = pytester.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_matching_golden_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mod=_TEST)
    _golden(pytester, "tests/golden/test_mod/test_hello.txt", "hello\n")
    _run(pytester).assert_outcomes(passed=1)


def test_mismatch_fails_with_unified_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mod=_TEST)
    _golden(pytester, "tests/golden/test_mod/test_hello.txt", "goodbye\n")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*output differs from golden file*test_hello.txt*",
            "*test_hello.txt (golden)",
            "+++ actual",
            "-goodbye",
            "+hello",
            "*--update-golden*",
        ]
    )


def test_missing_file_fails_with_hint(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mod=_TEST)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_hello.txt does not exist*", "*pytest --update-golden*"])
    assert not (pytester.path / "tests/golden").exists()


def test_update_golden_writes_then_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mod="""
        import pytest

        @pytest.mark.parametrize("n", [1, 2], ids=["one", "a/b c"])
        def test_param(golden, n):
            golden.check(f"n={n}")
            golden.check("second", name="extra")
        """
    )
    result = _run(pytester, "--update-golden")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*cursched: 4 golden file(s) written*"])
    d = pytester.path / "tests/golden/test_mod"
    assert (d / "test_param_one.txt").read_text() == "n=1\n"
    assert (d / "test_param_a_b_c.txt").read_text() == "n=2\n"
    assert (d / "test_param_one__extra.txt").read_text() == "second\n"
    assert sorted(p.name for p in d.iterdir()) == [
        "test_param_a_b_c.txt",
        "test_param_a_b_c__extra.txt",
        "test_param_one.txt",
        "test_param_one__extra.txt",
    ]
    _run(pytester).assert_outcomes(passed=2)


def test_update_golden_rewrites_a_stale_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mod=_TEST)
    path = _golden(pytester, "tests/golden/test_mod/test_hello.txt", "stale\n")
    _run(pytester, "--update-golden").assert_outcomes(passed=1)
    assert path.read_text() == "hello\n"


def test_ini_option_moves_the_golden_dir(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncursched_golden_dir = expected\n")
    pytester.makepyfile(test_mod=_TEST)
    _golden(pytester, "expected/test_mod/test_hello.txt", "hello\n")
    _run(pytester).assert_outcomes(passed=1)


def test_proc_like_objects_are_printed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mod="""
        class FakeProc:
            __cursched_ir__ = None
            def __str__(self):
                return "def p():\\n    pass"

        class TestGroup:
            def test_p(self, golden):
                golden.check(FakeProc())
        """
    )
    _golden(pytester, "tests/golden/test_mod/TestGroup.test_p.txt", "def p():\n    pass\n")
    _run(pytester).assert_outcomes(passed=1)


def test_two_unnamed_checks_in_one_test_fail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mod="""
        def test_twice(golden):
            golden.check("a")
            golden.check("b")
        """
    )
    result = _run(pytester, "--update-golden")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*golden.check called twice*name=*"])


def test_sanitize() -> None:
    assert sanitize("test_x[sgemm]") == "test_x_sgemm"
    assert sanitize("test_x[a/b-1.5]") == "test_x_a_b-1.5"
    assert sanitize("[]") == "_"


def test_as_text_rejects_other_objects() -> None:
    assert as_text("x") == "x\n"
    assert as_text("x\n") == "x\n"
    with pytest.raises(TypeError, match="str or a Proc"):
        as_text(3)


def test_golden_path_layout(tmp_path: Path) -> None:
    g = Golden(tmp_path, "test_mod", "test_a", update=False)
    assert g.path() == tmp_path / "test_mod" / "test_a.txt"
    assert g.path("x y") == tmp_path / "test_mod" / "test_a__x_y.txt"


def test_same_named_files_in_two_folders_do_not_collide(pytester: pytest.Pytester) -> None:
    # the same test name in tests/a/test_dup.py and tests/b/test_dup.py, different outputs
    for folder in ("a", "b"):
        d = pytester.path / "tests" / folder
        d.mkdir(parents=True)
        (d / "__init__.py").write_text("")
        (d / "test_dup.py").write_text(
            f"def test_same(golden):\n    golden.check('from {folder}')\n", encoding="utf-8"
        )
    (pytester.path / "tests" / "__init__.py").write_text("")
    result = _run(pytester, "--update-golden")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*cursched: 2 golden file(s) written*"])
    root = pytester.path / "tests/golden/tests"
    assert (root / "a/test_dup/test_same.txt").read_text() == "from a\n"
    assert (root / "b/test_dup/test_same.txt").read_text() == "from b\n"
    # two runs in a row pass, writing nothing
    for _ in range(2):
        result = _run(pytester)
        result.assert_outcomes(passed=2)
        assert "golden file(s) written" not in result.stdout.str()


def test_a_file_left_at_the_former_place_is_named(pytester: pytest.Pytester) -> None:
    d = pytester.path / "tests" / "sub"
    d.mkdir(parents=True)
    (d / "test_mod.py").write_text(_TEST, encoding="utf-8")
    _golden(pytester, "tests/golden/test_mod/test_hello.txt", "hello\n")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*tests/golden/tests/sub/test_mod/test_hello.txt does not exist*", "*`git mv` it to*"]
    )
