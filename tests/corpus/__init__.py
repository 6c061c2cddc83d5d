"""The corpus: 30+ procs covering the whole language, each with its numpy meaning.

``CASES`` lists them (see ``registry.Case``); ``ENV`` maps the names their printouts use
(callee procs, instructions) to their objects, for parsing printouts back.
Other test directories import it as ``corpus`` (tests/conftest.py puts tests/ on sys.path).
"""

from __future__ import annotations

from typing import Any

from . import procs_kernels, procs_language
from .registry import CASES, Case, check_case, copy_inputs

ENV: dict[str, Any] = {
    name: value
    for module in (procs_kernels, procs_language)
    for name, value in vars(module).items()
    if not name.startswith("__")
}

__all__ = ["CASES", "ENV", "Case", "check_case", "copy_inputs"]
