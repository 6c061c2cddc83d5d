"""Property: the minimal parentheses of ``binary`` never change an expression's meaning.

Random trees of integer ``+ - *``, comparisons, ``&&`` and ``||`` are printed with
``binary`` and the text is evaluated (C and Python agree on the precedence of these
operators, and ``binary`` parenthesises any comparison inside another one, so Python's
comparison chaining never applies); the value must equal the tree's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from cursched.codegen.c.expressions import binary

ARITH = ["+", "-", "*"]
CMP = ["<", "<=", "==", "!="]
LOGIC = ["&&", "||"]


@dataclass(frozen=True)
class Node:
    op: str
    lhs: Tree
    rhs: Tree


Tree = Node | int


def _eval(t: Tree) -> int | bool:
    if isinstance(t, int):
        return t
    a, b = _eval(t.lhs), _eval(t.rhs)
    ops = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "<": lambda: a < b,
        "<=": lambda: a <= b,
        "==": lambda: a == b,
        "!=": lambda: a != b,
        "&&": lambda: bool(a) and bool(b),
        "||": lambda: bool(a) or bool(b),
    }
    return ops[t.op]()


def _text(t: Tree) -> str:
    if isinstance(t, int):
        return str(t) if t >= 0 else f"({t})"
    return binary(_text(t.lhs), t.op, _text(t.rhs))


def _py(text: str) -> str:
    return text.replace("&&", " and ").replace("||", " or ")


ints = st.integers(-9, 9)
arith: st.SearchStrategy[Tree] = st.recursive(
    ints, lambda sub: st.builds(Node, st.sampled_from(ARITH), sub, sub), max_leaves=12
)
cmps = st.builds(Node, st.sampled_from(CMP), arith, arith)
logic: st.SearchStrategy[Tree] = st.recursive(
    cmps, lambda sub: st.builds(Node, st.sampled_from(LOGIC), sub, sub), max_leaves=6
)


@settings(max_examples=150, deadline=None)
@given(arith)
def test_arithmetic(t: Tree) -> None:
    assert eval(_py(_text(t))) == _eval(t)


@settings(max_examples=100, deadline=None)
@given(logic)
def test_conditions(t: Tree) -> None:
    assert bool(eval(_py(_text(t)))) == _eval(t)
