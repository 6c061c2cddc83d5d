"""The verifier's memo of checked nodes never lets a node through where it is wrong.

``verify_proc`` remembers control expressions and assignments it has checked, with the
bindings of the symbols they read; a node reused under other bindings is checked again.
"""

from __future__ import annotations

import pytest
from ir_builders import F32, SIZE, arg, assign, c, loop, mkproc, op, tensor, v

from cursched.errors import IRVerificationError
from cursched.ir.symbols import Sym
from cursched.ir.verify import verify_proc


def test_an_assignment_checked_once_is_checked_again_where_its_buffer_is_a_size() -> None:
    n, x, i = Sym("n"), Sym("x"), Sym("i")
    write = assign(x, (v(i),), c(0.0))
    good = mkproc(
        "good", [arg(n, SIZE), arg(x, tensor(F32, v(n, SIZE)))], [loop(i, c(0), v(n, SIZE), write)]
    )
    verify_proc(good)
    # the very same statement object, now writing a size parameter
    bad = mkproc("bad", [arg(n, SIZE), arg(x, SIZE)], [loop(i, c(0), v(n, SIZE), write)])
    with pytest.raises(IRVerificationError, match=r"\[write-target\]"):
        verify_proc(bad)


def test_an_index_checked_once_is_checked_again_where_a_symbol_is_unbound() -> None:
    n, x, i, j = Sym("n"), Sym("x"), Sym("i"), Sym("j")
    index = op("+", v(i), v(j))  # a control expression node, shared by both procs
    args = [arg(n, SIZE), arg(x, tensor(F32, v(n, SIZE)))]
    good = mkproc(
        "good", args, [loop(i, c(0), c(1), loop(j, c(0), c(1), assign(x, (index,), c(1.0))))]
    )
    verify_proc(good)
    bad = mkproc("bad", args, [loop(i, c(0), c(1), assign(x, (index,), c(1.0)))])
    with pytest.raises(IRVerificationError, match=r"\[sym-defined\]"):
        verify_proc(bad)


def test_a_bound_checked_once_is_checked_again_where_it_reads_data() -> None:
    n, x, i = Sym("n"), Sym("x"), Sym("i")
    hi = op("+", v(n, SIZE), c(1))
    good = mkproc(
        "good",
        [arg(n, SIZE), arg(x, tensor(F32, c(4)))],
        [loop(i, c(0), hi, assign(x, (c(0),), c(0.0)))],
    )
    verify_proc(good)
    # ``n`` is now a data scalar: the same bound node reads data in a control expression
    bad = mkproc(
        "bad",
        [arg(n, F32), arg(x, tensor(F32, c(4)))],
        [loop(i, c(0), hi, assign(x, (c(0),), c(0.0)))],
    )
    with pytest.raises(IRVerificationError, match=r"\[(control-expr|read-type)\]"):
        verify_proc(bad)
