"""Pattern finding: ``p.find("for i in _: _")``, ``find_loop("i #1")``, ``find_alloc_or_arg``.

Patterns are surface syntax, parsed with Python's ``ast`` (the frontend's type checker does not
apply: a pattern mentions no types). ``_`` matches anything (an expression, a name, one
statement, or a whole body when it is the body's only statement); ``#n`` at the end picks the
n-th match, counting from 0 as in Exo; ``;`` separates the statements of a sequence pattern,
which matches consecutive statements and yields a block cursor. Exo's shorthands are
accepted: ``"io ii"`` is the loop ``io`` whose body is the single loop ``ii`` (for
``reorder_loops``, ``mult_loops``, ``find_loop``), ``"t : _"`` the allocation ``t``.
Statements are matched in pre-order (source order); expressions in pre-order within each
statement, after those of the asserts when searching a whole proc.

No match, or a malformed pattern, raises ``PatternError`` listing the closest candidates.
"""

from __future__ import annotations

import ast
import difflib
import keyword
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from cursched.cursors.index import count_loops, nth_alloc, nth_loop
from cursched.cursors.kinds import ArgCursor, Cursor, ExprCursor
from cursched.cursors.locs import ArgLoc, BlockLoc, NodeLoc
from cursched.cursors.stmts import BlockCursor, ForCursor, StmtCursor, make_cursor
from cursched.cursors.tree import children, is_expr, walk_stmts
from cursched.errors import PatternError
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Extern,
    For,
    If,
    Interval,
    Pass,
    Point,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at

if TYPE_CHECKING:
    from cursched.proc import Proc

_NTH = re.compile(r"^(.*?)\s*#\s*(\d+)\s*$", re.S)
# Exo's shorthands: ``"io ii"`` is a loop ``io`` whose body is the one loop ``ii``;
# ``"t : _"`` is the allocation ``t`` (a statement pattern, also taken by ``find_alloc_or_arg``)
_NESTED = re.compile(r"^\s*([A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*$")
_ALLOC = re.compile(r"^\s*([A-Za-z_]\w*)\s*:\s*_\s*$")


def _nested_loops(text: str) -> str | None:
    """The ``for`` pattern of Exo's nested-loop shorthand ``"i j"``, else None."""
    m = _NESTED.match(text)
    if m is None or keyword.iskeyword(m.group(1)) or keyword.iskeyword(m.group(2)):
        return None
    return f"for {m.group(1)} in _:\n    for {m.group(2)} in _: _"


_OPS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "/",
    ast.Mod: "%",
    ast.Lt: "<",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.And: "and",
    ast.Or: "or",
}


@dataclass(frozen=True, slots=True)
class Pattern:
    """A parsed pattern: a statement sequence or an expression, and which match to pick."""

    text: str
    stmts: tuple[ast.stmt, ...]
    expr: ast.expr | None
    nth: int | None


@lru_cache(maxsize=512)
def parse_pattern(text: str) -> Pattern:
    """Parse ``text``; raises ``PatternError`` when it is not a pattern."""
    body, nth = text, None
    m = _NTH.match(text)
    if m:
        body, nth = m.group(1), int(m.group(2))
    body = _nested_loops(body) or body
    try:
        tree = ast.parse(body.strip(), mode="exec")
    except SyntaxError as e:
        raise PatternError(f"malformed pattern {text!r}: {e.msg}") from None
    if not tree.body:
        raise PatternError(f"empty pattern {text!r}")
    only = tree.body[0]
    if len(tree.body) == 1 and isinstance(only, ast.Expr) and not _is_wild(only):
        callee = only.value.func if isinstance(only.value, ast.Call) else None
        # A bare call of a non-extern name is a call statement; anything else an expression.
        if not (isinstance(callee, ast.Name) and not _is_extern(callee.id)):
            return Pattern(text, (), only.value, nth)
    return Pattern(text, tuple(tree.body), None, nth)


def _is_extern(name: str) -> bool:
    from cursched.ir.externs import EXTERNS

    return name in EXTERNS or name == "stride"


# ------------------------------------------------------------------------------- matching


def _name_ok(pat: ast.expr, name: str) -> bool:
    return isinstance(pat, ast.Name) and pat.id in ("_", name)


def _is_wild(pat: ast.AST) -> bool:
    if isinstance(pat, ast.Expr):
        pat = pat.value
    return isinstance(pat, ast.Name) and pat.id == "_"


def match_expr(pat: ast.expr, e: Any) -> bool:
    """Whether the expression ``e`` matches the pattern ``pat``."""
    match pat:
        case ast.Name(id="_"):
            return True
        case ast.Name(id=name):
            return isinstance(e, Read) and not e.idx and e.sym.name == name
        case ast.Attribute():
            # a configuration field ``C.f``, whose symbol is named so
            return isinstance(e, Read) and not e.idx and e.sym.name == ast.unparse(pat)
        case ast.Constant(value=v):
            # 2 matches the integer 2, 2.0 the float: the pattern's literal says which.
            return isinstance(e, Const) and type(e.value) is type(v) and e.value == v
        case ast.UnaryOp(op=ast.USub(), operand=arg):
            if isinstance(e, USub):
                return match_expr(arg, e.arg)
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, int | float)):
                return False
            v = -arg.value
            return isinstance(e, Const) and type(e.value) is type(v) and e.value == v
        case ast.BinOp(left=lhs, op=op, right=rhs):
            return (
                isinstance(e, BinOp)
                and _OPS.get(type(op)) == e.op
                and match_expr(lhs, e.lhs)
                and match_expr(rhs, e.rhs)
            )
        case ast.Compare(left=lhs, ops=[op], comparators=[rhs]):
            return (
                isinstance(e, BinOp)
                and _OPS.get(type(op)) == e.op
                and match_expr(lhs, e.lhs)
                and match_expr(rhs, e.rhs)
            )
        case ast.BoolOp(op=op, values=values):
            return _match_boolop(_OPS[type(op)], values, e)
        case ast.Subscript(value=ast.Name(id=name), slice=sl):
            if not isinstance(e, Read | WindowExpr) or name not in ("_", e.sym.name):
                return False
            return _match_indices(sl, e.idx)
        case ast.Call(func=ast.Name(id="stride"), args=[buf, ast.Constant(value=dim)]):
            return isinstance(e, StrideExpr) and _name_ok(buf, e.sym.name) and e.dim == dim
        case ast.Call(func=ast.Name(id=fname), args=args):
            if not isinstance(e, Extern) or fname not in ("_", e.name):
                return False
            return _match_list(args, e.args, match_expr)
        case _:
            return False


def _match_boolop(op: str, values: list[ast.expr], e: Any) -> bool:
    if len(values) == 1:
        return match_expr(values[0], e)
    if not (isinstance(e, BinOp) and e.op == op):
        return False
    return _match_boolop(op, values[:-1], e.lhs) and match_expr(values[-1], e.rhs)


def _match_indices(sl: ast.expr, idx: tuple[Any, ...]) -> bool:
    pats = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    if len(pats) == 1 and _is_wild(pats[0]):
        return True
    if len(pats) != len(idx):
        return False
    for p, x in zip(pats, idx, strict=True):
        if isinstance(x, Interval):
            if not (isinstance(p, ast.Slice) and p.lower and p.upper and p.step is None):
                return False
            if not (match_expr(p.lower, x.lo) and match_expr(p.upper, x.hi)):
                return False
        elif isinstance(p, ast.Slice) or not match_expr(p, x.pt if isinstance(x, Point) else x):
            return False
    return True


def _match_list(pats: list[Any], xs: tuple[Any, ...], fn: Any) -> bool:
    if len(pats) == 1 and _is_wild(pats[0]):
        return True
    return len(pats) == len(xs) and all(fn(p, x) for p, x in zip(pats, xs, strict=True))


def _match_body(pats: list[ast.stmt], body: tuple[Stmt, ...]) -> bool:
    return _match_list(pats, body, match_stmt)


def _match_target(t: ast.expr, sym_name: str, idx: tuple[Any, ...]) -> bool:
    if isinstance(t, ast.Name):
        return t.id == "_" or (t.id == sym_name and not idx)
    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
        return t.value.id in ("_", sym_name) and _match_indices(t.slice, idx)
    if isinstance(t, ast.Attribute):
        # a configuration field ``C.f`` (``cursched.ir.config``): its symbol's name
        return not idx and ast.unparse(t) == sym_name
    return False


def match_stmt(pat: ast.stmt, s: Stmt) -> bool:
    """Whether the statement ``s`` matches the statement pattern ``pat``."""
    match pat:
        case ast.Expr(value=ast.Name(id="_")):
            return True
        case ast.Pass():
            return isinstance(s, Pass)
        case ast.For(target=target, iter=it, body=body):
            if not (isinstance(s, For) and _name_ok(target, s.iter.name)):
                return False
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name):
                if it.func.id not in ("_", s.mode) or len(it.args) != 2:
                    return False
                if not (match_expr(it.args[0], s.lo) and match_expr(it.args[1], s.hi)):
                    return False
            elif not _is_wild(it):
                return False
            return _match_body(body, s.body)
        case ast.If(test=test, body=body, orelse=orelse):
            if not (isinstance(s, If) and match_expr(test, s.cond) and _match_body(body, s.body)):
                return False
            return not orelse or _match_body(orelse, s.orelse)
        case ast.Assign(targets=[target], value=value):
            if isinstance(s, Assign):
                return _match_target(target, s.sym.name, s.idx) and match_expr(value, s.rhs)
            if isinstance(s, WindowStmt):
                # `w = A[...]` binds a name: only a bare-name target (`w = _`) matches it,
                # never an element write pattern such as `w[_] = _`.
                return (
                    isinstance(target, ast.Name)
                    and target.id in ("_", s.sym.name)
                    and match_expr(value, s.rhs)
                )
            return False
        case ast.AugAssign(target=target, op=ast.Add(), value=value):
            return (
                isinstance(s, Reduce)
                and _match_target(target, s.sym.name, s.idx)
                and match_expr(value, s.rhs)
            )
        case ast.AnnAssign(target=ast.Name(id=name)):
            return isinstance(s, Alloc) and name in ("_", s.sym.name)
        case ast.Expr(value=ast.Call(func=ast.Name(id=fname), args=args)):
            if not (isinstance(s, Call) and fname in ("_", s.proc.name)):
                return False
            return _match_list(args, s.args, match_expr)
        case ast.With(items=[ast.withitem(context_expr=ctx)], body=body):
            if not isinstance(s, Scope):
                return False
            named = isinstance(ctx, ast.Call) and ctx.args and isinstance(ctx.args[0], ast.Constant)
            if named and ctx.args[0].value not in ("_", s.name):  # type: ignore[attr-defined]
                return False
            return _match_body(body, s.body)
        case _:
            return False


# -------------------------------------------------------------------------------- search


def _scope(proc: Proc, within: Cursor | None) -> tuple[list[tuple[Path, Stmt]], list[Path]]:
    """The statements to search (with paths) and, for an expression cursor, its path."""
    ir = proc.ir()
    if within is None:
        return list(walk_stmts(ir.body, ())), []
    loc = within.loc
    if isinstance(loc, BlockLoc):
        out: list[tuple[Path, Stmt]] = []
        lst = get_at(ir, loc.parent) if loc.parent else ir
        stmts = getattr(lst, loc.attr)
        for i in range(loc.lo, loc.hi):
            path = (*loc.parent, (loc.attr, i))
            out.append((path, stmts[i]))
            out.extend(_below(stmts[i], path))
        return out, []
    if isinstance(within, StmtCursor):
        return [(within.path(), within.node()), *_below(within.node(), within.path())], []
    if isinstance(within, ExprCursor):
        return [], [within.path()]
    raise PatternError(f"cannot search inside {within.describe()}")


def _below(s: Stmt, path: Path) -> list[tuple[Path, Stmt]]:
    out: list[tuple[Path, Stmt]] = []
    for attr in ("body", "orelse"):
        if hasattr(s, attr):
            out.extend(walk_stmts(getattr(s, attr), path, attr))
    return out


def _expr_roots(stmts: list[tuple[Path, Stmt]]) -> Iterator[tuple[Path, Any]]:
    for path, s in stmts:
        for step, c in children(s):
            if step[0] not in ("body", "orelse"):
                yield (*path, step), c


def _roots(
    proc: Proc, within: Cursor | None, stmts: list[tuple[Path, Stmt]], expr_paths: list[Path]
) -> list[tuple[Path, Any]]:
    """The expressions to search from: the cursor's own, or the asserts then the statements'."""
    ir = proc.ir()
    if expr_paths:
        return [(p, get_at(ir, p)) for p in expr_paths]
    preds = [((("preds", i),), e) for i, e in enumerate(ir.preds)] if within is None else []
    return [*preds, *_expr_roots(stmts)]


def _walk_expr(node: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    yield path, node
    for step, c in children(node):
        yield from _walk_expr(c, (*path, step))


def _matches(proc: Proc, pat: Pattern, within: Cursor | None) -> Iterator[Cursor]:
    stmts, expr_paths = _scope(proc, within)
    if pat.expr is not None:
        e = pat.expr
        roots = _roots(proc, within, stmts, expr_paths)
        for root_path, root in roots:
            for path, node in _walk_expr(root, root_path):
                if is_expr(node) and match_expr(e, node):
                    yield ExprCursor(proc, NodeLoc(path))
        return
    first, n = pat.stmts[0], len(pat.stmts)
    for path, s in stmts:
        if not match_stmt(first, s):
            continue
        if n == 1:
            yield make_cursor(proc, NodeLoc(path))
            continue
        *parent, (attr, i) = path
        lst = getattr(get_at(proc.ir(), tuple(parent)) if parent else proc.ir(), attr)
        seq = lst[i : i + n]
        if len(seq) == n and all(match_stmt(p, x) for p, x in zip(pat.stmts, seq, strict=True)):
            yield BlockCursor(proc, BlockLoc(tuple(parent), attr, i, i + n))


def find(proc: Proc, pattern: str, many: bool = False, within: Cursor | None = None) -> Any:
    """The match of ``pattern`` in ``proc`` (below ``within``); all of them with ``many``.

    Raises:
        PatternError: when the pattern is malformed or matches nothing (listing candidates).
    """
    pat = parse_pattern(pattern)
    if many:
        found = list(_matches(proc, pat, within))
        if pat.nth is not None:
            found = found[pat.nth : pat.nth + 1]
        if not found:
            _no_match(proc, pat, within, 0)
        return found
    want = pat.nth or 0
    count = 0
    for c in _matches(proc, pat, within):
        if count == want:
            return c
        count += 1
    _no_match(proc, pat, within, count)


def find_loop(proc: Proc, pattern: str, within: Cursor | None = None, many: bool = False) -> Any:
    """The loop named by ``"i"``/``"i #2"`` (or given by a full ``for`` pattern); every such
    loop with ``many=True``.
    """
    text = pattern.strip()
    if not text.startswith("for "):
        m = _NTH.match(text)
        name, nth = (m.group(1), m.group(2)) if m else (text, None)
        if _nested_loops(name) is not None:
            return find(proc, text, many=many, within=within)
        if not name.isidentifier():
            raise PatternError(f"find_loop wants a loop variable name like 'i #1', got {pattern!r}")
        if within is None:
            found = _indexed_loops(proc, name, None if nth is None else int(nth), many)
            if found is not None:
                return found
        text = f"for {name} in _: _" + (f" #{nth}" if nth is not None else "")
    c = find(proc, text, many=many, within=within)
    assert all(isinstance(x, ForCursor) for x in c) if many else isinstance(c, ForCursor)
    return c


def _indexed_loops(proc: Proc, name: str, nth: int | None, many: bool) -> Any:
    """``find_loop`` by name through the per-node index (``cursors.index``): the cursor, the
    list with ``many``, or None where nothing matches (``find`` then words the error)."""
    body = proc.ir().body
    if many and nth is None:
        paths = [nth_loop(body, name, k) for k in range(count_loops(body, name))]
        return [make_cursor(proc, NodeLoc(p)) for p in paths if p is not None] or None
    path = nth_loop(body, name, nth or 0)
    if path is None:
        return None
    c = make_cursor(proc, NodeLoc(path))
    return [c] if many else c


def find_alloc_or_arg(proc: Proc, name: str) -> Cursor:
    """The allocation called ``name`` (``"x #1"`` for the second), else the parameter.
    Exo's allocation pattern ``"x : _"`` (``"x : _ #1"``) names the same allocations."""
    m = _NTH.match(name)
    base, nth = (m.group(1).strip(), int(m.group(2))) if m else (name.strip(), 0)
    alloc = _ALLOC.match(base)
    if alloc is not None:
        base = alloc.group(1)
    if not base.isidentifier():
        raise PatternError(f"find_alloc_or_arg wants a name, got {name!r}")
    path = nth_alloc(proc.ir().body, base, nth)
    if path is not None:
        return make_cursor(proc, NodeLoc(path))
    for i, a in enumerate(proc.ir().args):
        if a.sym.name == base:
            return ArgCursor(proc, ArgLoc(i))
    names = sorted(
        {s.sym.name for _, s in walk_stmts(proc.ir().body, ()) if isinstance(s, Alloc)}
        | {a.sym.name for a in proc.ir().args}
    )
    close = difflib.get_close_matches(base, names, n=5)
    raise PatternError(
        f"no allocation or argument {name!r} in {proc.name()}; "
        f"closest: {', '.join(close) or '(none)'}; all: {', '.join(names)}"
    )


# ---------------------------------------------------------------------------- candidates


def _one_line(s: Stmt) -> str:
    from cursched.ir.printer import print_stmt

    return print_stmt(s).splitlines()[0].strip()


def _no_match(proc: Proc, pat: Pattern, within: Cursor | None, count: int) -> Any:
    where = proc.name() if within is None else f"{within.describe()} of {proc.name()}"
    if count and pat.nth is not None:
        raise PatternError(
            f"pattern {pat.text!r} wants match #{pat.nth} but {where} has only {count} "
            f"(#0..#{count - 1})"
        )
    stmts, expr_paths = _scope(proc, within)
    if pat.expr is not None:
        from cursched.ir.printer import print_expr

        roots = [e for _, e in _roots(proc, within, stmts, expr_paths)]
        texts = list(
            dict.fromkeys(print_expr(x) for r in roots for _, x in _walk_expr(r, ()) if is_expr(x))
        )
        close = difflib.get_close_matches(pat.text, texts, n=5, cutoff=0.3)
    elif isinstance(pat.stmts[0], ast.For):
        loops = [f"{s.iter.name} (line {_line(s)})" for _, s in stmts if isinstance(s, For)]
        raise PatternError(
            f"no match for {pat.text!r} in {where}; the loops are: {', '.join(loops) or '(none)'}"
        )
    else:
        texts = list(dict.fromkeys(_one_line(s) for _, s in stmts))
        close = difflib.get_close_matches(pat.text, texts, n=5, cutoff=0.3)
    shown = "; ".join(repr(t) for t in close) or "(nothing similar)"
    raise PatternError(f"no match for {pat.text!r} in {where}; closest candidates: {shown}")


def _line(s: Stmt) -> str:
    return str(s.srcinfo.line) if s.srcinfo is not None else "?"
