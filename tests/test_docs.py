"""docs/: the generated primitives page is up to date and every code block that should run runs.

- ``docs/primitives.md`` must equal what ``tools/gen_primitives_doc.py`` generates now;
- its python blocks (one example call per primitive) must parse and bind to the primitive's
  signature;
- the python blocks of every other page run, in order, as one script per page, in a temp dir.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import runpy
from pathlib import Path
from types import ModuleType

import pytest

import cursched

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
GENERATED = DOCS / "primitives.md"
PAGES = sorted(p for p in DOCS.glob("*.md") if p != GENERATED)
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(path: Path, lang: str) -> list[str]:
    return [text for tag, text in BLOCK.findall(path.read_text(encoding="utf-8")) if tag == lang]


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_primitives_doc", ROOT / "tools" / "gen_primitives_doc.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_primitives_page_is_generated_from_the_code(generator: ModuleType) -> None:
    committed = GENERATED.read_text(encoding="utf-8")
    assert committed == generator.render(), (
        "docs/primitives.md differs from the code: run `python tools/gen_primitives_doc.py` "
        "and commit the page"
    )


def test_primitives_page_lists_every_exported_primitive() -> None:
    text = GENERATED.read_text(encoding="utf-8")
    exported = [
        n
        for n in cursched.__all__
        if getattr(getattr(cursched, n), "__cursched_primitive__", False)
    ]
    assert len(exported) >= 40
    for name in exported:
        assert f"\n## `{name}`\n" in text, name


def test_primitives_page_sections_are_complete() -> None:
    """Each primitive's section has a signature, a forwarding paragraph and an example call."""
    sections = GENERATED.read_text(encoding="utf-8").split("\n## `")[1:]
    for section in sections:
        name = section.split("`", 1)[0]
        assert f"```text\n{name}(" in section, name
        forwards = re.search(r"\*\*Forwards / kills\.\*\* (.+)", section)
        assert forwards and len(forwards.group(1)) > 10, name
        assert re.search(rf"^p, .* = {name}\(p", section, re.M), name


def example_calls() -> list[tuple[str, str]]:
    out = []
    for text in blocks(GENERATED, "python"):
        tree = ast.parse(text)
        (stmt,) = tree.body
        assert isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call), text
        func = stmt.value.func
        assert isinstance(func, ast.Name), text
        out.append((func.id, text))
    return out


@pytest.mark.parametrize(("name", "text"), example_calls(), ids=lambda v: str(v)[:30])
def test_primitives_page_example_binds_to_the_signature(name: str, text: str) -> None:
    """The example call names the primitive's real parameters and unpacks its real fields."""
    stmt = ast.parse(text).body[0]
    assert isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
    fn = getattr(cursched, name)
    call = stmt.value
    args = [object() for _ in call.args]
    kwargs = {k.arg: object() for k in call.keywords if k.arg is not None}
    inspect.signature(fn).bind(*args, **kwargs)
    (target,) = stmt.targets
    assert isinstance(target, ast.Tuple) and len(target.elts) == 2
    fields = target.elts[1]
    names = (
        [e.id for e in fields.elts if isinstance(e, ast.Name)]
        if isinstance(fields, ast.Tuple)
        else []
    )
    import typing
    from dataclasses import fields as dc_fields

    (cls,) = typing.get_args(typing.get_type_hints(fn)["return"])
    assert names == [f.name for f in dc_fields(cls)] or (names == [] and not dc_fields(cls))


def test_docs_have_pages_with_code() -> None:
    assert {p.name for p in PAGES} >= {"semantics.md", "cursors.md"}
    assert RUNNABLE


def test_every_python_fence_is_a_block_the_tests_see() -> None:
    """A ```python fence the block pattern misses (indented, unclosed) would never run."""
    for page in [*PAGES, GENERATED]:
        text = page.read_text(encoding="utf-8")
        assert text.count("```python") == len(blocks(page, "python")), page.name


RUNNABLE = [p for p in PAGES if blocks(p, "python")]


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: p.stem)
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's python blocks, in order, as one script (a file, so procs parse), in a temp dir."""
    # each block may start with the future import procs need; it must come first in the file
    future = "from __future__ import annotations\n"
    code = future + "\n\n".join(blocks(page, "python")).replace(future, "")
    script = tmp_path / f"{page.stem}_blocks.py"
    script.write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script), run_name="__main__")


TOMBSTONE = re.compile(r"<stale (\w+) '(\w+)': killed by (\w+) at v\d+; (.+)>")


def test_tombstones_shown_in_the_docs_are_what_cursched_prints() -> None:
    """A tombstone quoted in a page has the real format, and the real hint of its killer."""
    from cursched import Proc, unroll_loop
    from cursched.frontend import parse_source

    four = Proc(
        parse_source(
            "def four(x: f32[4] @ DRAM):\n    for i in seq(0, 4):\n        x[i] = 0.0\n",
            vars(cursched),
        )
    )
    loop = four.find_loop("i")
    q, _ = unroll_loop(four, loop)
    real = TOMBSTONE.fullmatch(repr(q.forward(loop)))
    assert real is not None, repr(q.forward(loop))
    shown = [m for page in PAGES for text in blocks(page, "") for m in TOMBSTONE.finditer(text)]
    assert shown
    for m in shown:
        if m.group(3) == "unroll_loop":
            assert m.group(4) == real.group(4)
