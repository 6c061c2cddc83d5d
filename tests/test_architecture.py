"""docs/architecture.md stays true: the modules it names exist, every package of cursched/ is
in its layout, and the imports follow its dependency table. Names on a line (or layout entry)
marked "not built yet" are exempt from the existence check."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "architecture.md"
TEXT = DOC.read_text(encoding="utf-8")
PLANNED = "not built yet"


def _exists(rel: str) -> bool:
    """Whether ``rel`` (``cursched/ir/printer.py``, ``cursched/ir/``, ``cursched.ir.printer``)
    names a file, a folder or a module of the repository."""
    if rel.startswith("cursched.") or rel == "cursched":
        parts = rel.split(".")
        base = ROOT.joinpath(*parts)
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
    return (ROOT / rel.rstrip("/")).exists()


def layout_entries() -> list[tuple[str, bool]]:
    """(path, planned) for each entry of the layout block, paths relative to the root."""
    block = TEXT.split("## Layout", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    entries: list[tuple[str, str]] = []  # (path, the entry's whole text)
    stack: list[tuple[int, str]] = []  # (indent, folder path) of the open folders
    for line in block.splitlines():
        m = re.match(r"^( *)(\S+)( {2,}|$)", line)
        if m is None or len(m.group(1)) >= 20:  # a description's continuation line
            if entries:
                entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
            continue
        indent, name = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (stack[-1][1] if stack else "") + name
        entries.append((path, line))
        if name.endswith("/"):
            stack.append((indent, path))
    return [(path, PLANNED in text) for path, text in entries]


def named_modules() -> list[str]:
    """Every ``cursched/...`` path or ``cursched.x`` module in backticks outside the layout,
    from lines that do not say "not built yet"."""
    out = []
    for line in TEXT.split("## Dependencies", 1)[1].splitlines():
        if PLANNED in line:
            continue
        for name in re.findall(r"`(cursched[./][\w./]*)`", line):
            out.append(name.rstrip("."))
    return out


def test_the_page_is_linked_from_the_readme() -> None:
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_layout_entry_exists() -> None:
    entries = layout_entries()
    assert len(entries) > 25
    missing = [p for p, planned in entries if not planned and not _exists(p)]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


@pytest.mark.parametrize("name", sorted(set(named_modules())))
def test_every_named_module_exists(name: str) -> None:
    assert _exists(name), f"docs/architecture.md names {name}, which does not exist"


def test_every_package_is_in_the_layout() -> None:
    listed = {p for p, _ in layout_entries()}
    here = {
        f"cursched/{p.name}/" if p.is_dir() else f"cursched/{p.name}"
        for p in (ROOT / "cursched").iterdir()
        if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py")
    }
    unlisted = sorted(here - listed)
    assert not unlisted, f"add these to the layout of docs/architecture.md: {unlisted}"


def dependency_table() -> dict[str, set[str]]:
    rows = re.findall(r"^\| `cursched\.(\w+)` \|([^|]*)\|$", TEXT, re.M)
    # an entry's first word is the package ("cursched (the API ...)" allows the top package)
    return {pkg: {x.split()[0] for x in allowed.split(",") if x.strip()} for pkg, allowed in rows}


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> set[str]:
    """The first names after ``cursched.`` that the module imports (anywhere in it)."""
    out = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module]
            if node.module == "cursched":  # from cursched import x: a submodule, or the API
                mods = [f"cursched.{a.name}" for a in node.names]
        else:
            continue
        for m in mods:
            parts = m.split(".")
            if parts[0] == "cursched" and len(parts) > 1:
                top = parts[1]
                sub = ROOT / "cursched" / top
                out.add(top if sub.is_dir() or sub.with_suffix(".py").is_file() else "cursched")
    return out


def exceptions() -> dict[str, set[str]]:
    """The doc's known exceptions: file -> the packages it may import besides its row's."""
    out: dict[str, set[str]] = {}
    for path, pkgs in re.findall(
        r"^- exception: `(cursched/[\w/]+\.py)` imports ([`\w, ]+)", TEXT, re.M
    ):
        out[path] = {x.strip(" `") for x in pkgs.split(",") if x.strip(" `")}
    return out


def test_imports_follow_the_dependency_table() -> None:
    table = dependency_table()
    allowed_more = exceptions()
    assert {"ir", "analysis", "primitives", "codegen", "proc"} <= set(table)
    bad = []
    for pkg, allowed in table.items():
        base = ROOT / "cursched" / pkg
        files = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
        for f in files:
            more = allowed_more.get(str(f.relative_to(ROOT)), set())
            extra = _imports(f) - allowed - more - {pkg}
            if extra:
                bad.append(f"{f.relative_to(ROOT)} imports {sorted(extra)}")
    assert not bad, "imports against docs/architecture.md's table:\n" + "\n".join(bad)


def test_every_exception_is_still_needed() -> None:
    """An exception the code no longer needs is struck from the doc (it stays true)."""
    for path, pkgs in exceptions().items():
        assert (ROOT / path).is_file(), path
        assert pkgs <= _imports(ROOT / path), f"{path} no longer imports {pkgs}: remove it"


def test_only_smt_imports_pysmt() -> None:
    users = []
    for f in sorted((ROOT / "cursched").rglob("*.py")):
        for node in ast.walk(_tree(f)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split(".")[0] == "pysmt" for n in names):
                users.append(str(f.relative_to(ROOT)))
    assert sorted(set(users)) == ["cursched/analysis/smt.py"]
