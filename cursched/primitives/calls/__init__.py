"""Call and instruction primitives: inline, extract_subproc, replace (unification), call_eqv."""

from cursched.primitives.calls.call_eqv import call_eqv
from cursched.primitives.calls.calls import inline
from cursched.primitives.calls.extract import extract_subproc
from cursched.primitives.calls.instrs import make_instr
from cursched.primitives.calls.noop import insert_noop_call
from cursched.primitives.calls.replace import replace

__all__ = [
    "call_eqv",
    "extract_subproc",
    "inline",
    "insert_noop_call",
    "make_instr",
    "replace",
]
