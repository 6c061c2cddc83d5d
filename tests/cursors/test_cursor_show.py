"""Showing cursors: the proc printed with the cursor's place marked."""

from __future__ import annotations

from cursched.testing.plugin import Golden

from .procs import nest, two_loops


def test_show_statement(golden: Golden) -> None:
    golden.check(str(two_loops.find_loop("j")))


def test_show_block(golden: Golden) -> None:
    golden.check(str(two_loops.find_loop("i").body()))


def test_show_gap(golden: Golden) -> None:
    golden.check(str(two_loops.find("y[_] = _").before()))


def test_show_expression(golden: Golden) -> None:
    golden.check(str(nest.find("t[_] * _")))


def test_show_argument(golden: Golden) -> None:
    golden.check(str(nest.find_alloc_or_arg("A")))


def test_markers() -> None:
    assert "# <--" in str(two_loops.find_loop("j"))
    text = str(two_loops.find_loop("i").body())
    assert "# BLOCK START" in text and "# BLOCK END" in text
    assert "[GAP]" in str(two_loops.find("y[_] = _").after())
    assert "^^^" in str(nest.find("t[_] * _"))


def test_html() -> None:
    c = two_loops.find_loop("j")
    html = c._repr_html_()
    assert "<pre" in html and "background" in html and "# &lt;--" in html
    assert "<pre" in two_loops._repr_html_()
    assert "&lt;For &#x27;j&#x27;" in html or "For" in html
