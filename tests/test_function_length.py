"""House rule (issue 20, item 7): a primitive's preconditions are ``_check_*`` functions of
their own, so no function of ``cursched/primitives`` is longer than 80 lines of code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "long_functions", ROOT / "tools/long_functions.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_primitive_function_is_longer_than_80_lines() -> None:
    found = _tool().long_functions(ROOT / "cursched/primitives", 80)
    assert found == [], "\n".join(f"{n} lines: {f}:{line} {name}" for n, f, line, name in found)


def test_the_count_skips_docstrings_and_comments(tmp_path: Path) -> None:
    body = "\n".join(f"    x{k} = {k}  # a comment" for k in range(81))
    (tmp_path / "m.py").write_text(
        f'def long():\n    """Doc.\n\n    More doc.\n    """\n    # why\n\n{body}\n\n'
        'def short():\n    """A docstring of\n    three\n    lines."""\n    return 1\n'
    )
    found = _tool().long_functions(tmp_path, 80)
    assert [(n, name) for n, _, _, name in found] == [(82, "long")]
