"""The argument layer of the primitives: checks and parsers shared by every primitive.

``cursched.primitives.registry`` applies these to a primitive's arguments by their annotations
before the rewrite runs (see its module doc for the annotation types); a primitive may also
call them directly (for a value it computes itself, such as ``split``'s default names).

- ``fail``: a precondition error naming the primitive, with the proc and a location marked;
- ``check_new_name``: the one "usable new name" check: an identifier, not a Python keyword,
  not ``_`` (the pattern wildcard), not a name the language reserves (``seq``, ``f32``,
  ``DRAM``, ``relu``, ...: the printout would no longer parse back), and, for variables, not a
  name visible where the binding goes or bound inside it (shadowing would change which
  variable the printout names);
- ``index_expr``, ``condition_expr``, ``window_expr``, ``control_expr``: a user's string (or
  int, IR expression or expression cursor) as an IR expression valid at a place of the proc.
"""

from __future__ import annotations

import ast
import functools
import keyword
from collections.abc import Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Any, Literal

from cursched.analysis import affine as af
from cursched.analysis.context import context_of
from cursched.cursors import BlockCursor, Cursor, ExprCursor, StmtCursor
from cursched.cursors.index import bound_names
from cursched.cursors.show import loc_text, show_loc
from cursched.errors import BadArgumentError, SchedulingError
from cursched.ir.memory import BUILTIN_MEMORIES, DRAM, Memory
from cursched.ir.nodes import (
    STMT_TYPES,
    BinOp,
    Const,
    Expr,
    For,
    Interval,
    Node,
    Point,
    ProcDef,
    Read,
    USub,
    WAccess,
    WindowExpr,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr
from cursched.ir.types import BOOL, CONTROL_TYPES, DATA_TYPES, INDEX, INT, ControlType, TensorType

# --------------------------------------------------------------------------------- errors


def fail(
    cls: type[SchedulingError], primitive: str, message: str, where: Cursor | None = None
) -> SchedulingError:
    """A precondition error: names the primitive and shows the proc with ``where`` marked."""
    text = f"{primitive}: {message}"
    if where is not None:
        try:
            shown = show_loc(where.proc().ir(), where.loc)
        except LookupError:
            shown = str(where.proc())
        text += f"\n  at {loc_text(where.loc)}:\n" + "\n".join(
            "    " + ln for ln in shown.splitlines()
        )
    return cls(text)


class BadIndexExpressionError(BadArgumentError):
    """An index argument (a cut point, a new lower bound) is not an affine expression over the
    sizes and loop variables visible where it is used."""


# ------------------------------------------------------------------------------ new names


def _reserved() -> frozenset[str]:
    from cursched.frontend.externs import ALL as EXTERNS
    from cursched.frontend.scope import RESERVED

    return frozenset(
        {*RESERVED, *CONTROL_TYPES, *DATA_TYPES, *BUILTIN_MEMORIES, *EXTERNS, "_", "R"}
    )


RESERVED_NAMES: frozenset[str] = _reserved()
"""Names no new variable or proc may take: the language's syntax words (``seq``, ``par``,
``stride``, ``scope``, ``inf``, ``instr``), its types (``size``, ``f32``, ...), built-in
memories (``DRAM``, ...), externs (``relu``, ``expf``, ...) and ``_`` (the pattern wildcard).
Python keywords are refused besides; soft keywords (``match``, ``case``, ``type``) parse as
names, so they are allowed."""

NameScope = Literal["proc", "inside", "rest", "none"]


def name_problem(name: object, taken: Set[str] = frozenset()) -> str | None:
    """Why ``name`` cannot name a new variable or proc, as ``"a Python keyword"`` (None when
    it can)."""
    if not isinstance(name, str):
        return f"a {type(name).__name__}, not a string"
    if not name.isidentifier():
        return "not an identifier"
    if keyword.iskeyword(name):
        return "a Python keyword: the printout would not parse back"
    if name in RESERVED_NAMES:
        return "reserved by the language: the printout would not parse back"
    if name in taken:
        return "already used here: it would shadow a name or be shadowed"
    return None


def check_new_name(
    name: object,
    primitive: str,
    error: type[SchedulingError],
    where: Cursor | None = None,
    taken: Set[str] = frozenset(),
    what: str = "name",
) -> str:
    """``name`` if it can name something new, else ``error`` (see the module doc).

    Args:
        name: the proposed name.
        primitive: the primitive asking (named in the error).
        error: the primitive's precondition class.
        where: the cursor to mark in the error.
        taken: names that clash (``taken_names``).
        what: what the name is for, in the message (``"proc name"``).
    """
    why = name_problem(name, taken)
    if why is not None:
        raise fail(error, primitive, f"{name!r} is not a valid {what} ({why})", where)
    assert isinstance(name, str)
    return name


def _stmt_path(ir: ProcDef, path: Path) -> Path:
    k = len(path)
    while k > 0 and not isinstance(get_at(ir, path[:k]), STMT_TYPES):
        k -= 1
    return path[:k]


def _bound_names(node: Any) -> set[str]:
    # cached per statement node (cursors.index): a step leaves most statements shared
    return set(bound_names(node))


class NameUnion(Set[str]):
    """The union of name sets, without copying them: a new name is checked against a proc's
    bound names (a cached frozenset of every loop, allocation and window name: 6,700 at
    10,000 statements) by membership, so building the union would be most of the check."""

    __slots__ = ("_parts",)

    def __init__(self, *parts: Set[str]) -> None:
        self._parts = parts

    def __contains__(self, name: object) -> bool:
        return any(name in p for p in self._parts)

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for p in self._parts:
            for n in p:
                if n not in seen:
                    seen.add(n)
                    yield n

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _visible_names(ir: ProcDef, path: Path) -> set[str]:
    ctx = context_of(ir, path)
    names = {a.sym.name for a in ir.args}
    names |= {lp.iter.name for lp in ctx.loops}
    names |= {s.name for s in ctx.allocs} | {s.name for s in ctx.windows}
    return names


def taken_names(proc_ir: ProcDef, where: Cursor, scope: NameScope) -> Set[str]:
    """The names a new binding at ``where`` may not take.

    ``"proc"``: every name the proc binds; ``"inside"`` (a loop replacing or wrapping
    ``where``): names visible there and names bound inside it (a loop's own variable excepted:
    it dies); ``"rest"`` (an allocation before ``where``, seen until the end of its block):
    also names bound in the statements after it; ``"none"``: no clash check (proc names).
    """
    if scope == "none":
        return set()
    if scope == "proc":
        return NameUnion(_visible_names(proc_ir, ()), bound_names(proc_ir))
    if isinstance(where, BlockCursor):
        loc = where.block()
        paths = list(loc.stmt_paths())
        nodes: list[Any] = [get_at(proc_ir, p) for p in paths]
        parent: Any = get_at(proc_ir, loc.parent)
        siblings = list(getattr(parent, loc.attr))[loc.hi :]
    else:
        path = _stmt_path(proc_ir, where.path())  # type: ignore[attr-defined]
        paths, node = [path], get_at(proc_ir, path)
        nodes = list(node.body) if isinstance(node, For) else [node]
        parent = get_at(proc_ir, path[:-1]) if path else proc_ir
        attr, i = path[-1] if path else ("body", 0)
        siblings = list(getattr(parent, attr))[i + 1 :]
    names = _visible_names(proc_ir, paths[0])
    for n in nodes:
        names |= _bound_names(n)
    if scope == "rest":
        names |= bound_names(tuple(siblings))
    return names


# ---------------------------------------------------------------------- index expressions

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Div: "/", ast.Mod: "%"}
_CMP = {ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _is_int(e: object) -> bool:
    t = getattr(e, "type", None)
    return isinstance(t, ControlType) and t.is_integer()


def _visible_controls(ir: ProcDef, path: Path) -> dict[str, Read]:
    out: dict[str, Read] = {}
    for a in ir.args:
        if isinstance(a.type, ControlType) and a.type.is_integer():
            out[a.sym.name] = Read(a.sym, (), a.type)
    for loop in context_of(ir, path).loops:
        out[loop.iter.name] = Read(loop.iter, (), INDEX)
    return out


def index_expr(
    ir: ProcDef,
    path: Path,
    value: Any,
    primitive: str,
    where: Cursor,
    what: str,
    error: type[SchedulingError] = BadIndexExpressionError,
) -> Expr:
    """``value`` as a simplified IR expression, valid at ``path``.

    Args:
        ir: the proc.
        path: the statement the expression will be used next to (its enclosing loops and the
            proc's integer parameters are the names it may use).
        value: an int, an integer control expression (an IR node or an expression cursor
            of this version), or its text such as ``"n - 4"``.
        primitive: the primitive asking (named in the error).
        where: the cursor to mark in the error.
        what: what the value is, for the error (``"cut point"``).
        error: the class to raise.

    Raises:
        BadIndexExpressionError: (or ``error``) ``value`` is not quasi-affine, or names
            something that is not a size or an enclosing loop variable.
    """
    names = _visible_controls(ir, path)
    if isinstance(value, ExprCursor):
        # only a cursor of this very version: history() records the argument as given, and
        # an older version's path would name another expression when replayed
        if value.proc() is not where.proc():
            raise fail(
                error,
                primitive,
                f"{what}: an expression cursor of another version; pass its text instead",
                where,
            )
        value = value.node()
    e: Expr | None
    if isinstance(value, bool):
        e = None
    elif isinstance(value, int):
        e = Const(value, INT)
    elif isinstance(value, str):
        tree = _parse_eval(value)
        e = None if tree is None else _from_ast(tree, names)
    elif isinstance(value, Node) and _is_int(value):
        e = value  # type: ignore[assignment]
        if e is not None and not free_syms_expr(e) <= {r.sym for r in names.values()}:
            e = None
    else:
        e = None
    a = None if e is None else af.to_aff(e)
    if a is None:
        raise fail(
            error,
            primitive,
            f"{what} {value!r} is not an affine expression of the sizes and loop variables "
            f"visible here ({', '.join(sorted(names)) or 'none'})",
            where,
        )
    return af.from_aff(a)


def _from_ast(node: ast.expr, names: Mapping[str, Read]) -> Expr | None:
    match node:
        case ast.Constant(value=int() as v) if not isinstance(v, bool):
            return Const(v, INT)
        case ast.Name(id=name) if name in names:
            return names[name]
        case ast.UnaryOp(op=ast.USub(), operand=arg):
            inner = _from_ast(arg, names)
            return None if inner is None else USub(inner, INDEX)
        case ast.BinOp(left=lhs, op=op, right=rhs) if type(op) in _OPS:
            a, b = _from_ast(lhs, names), _from_ast(rhs, names)
            if a is None or b is None:
                return None
            return BinOp(_OPS[type(op)], a, b, INDEX)  # type: ignore[arg-type]
        case _:
            return None


# ----------------------------------------------------------------------------- conditions


@functools.lru_cache(maxsize=512)
def _parse_eval(text: str) -> ast.expr | None:
    """The Python syntax of an argument's text (None: not an expression). Cached: a pure
    function of the text, and a schedule passes the same few condition strings again and
    again; the trees are only read (every converter here builds new IR), never changed."""
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _bool_args(ir: ProcDef) -> dict[str, Read]:
    return {a.sym.name: Read(a.sym, (), BOOL) for a in ir.args if a.type == BOOL}


def condition_expr(
    ir: ProcDef,
    path: Path,
    value: Any,
    primitive: str,
    where: Cursor,
    error: type[SchedulingError],
) -> Expr:
    """``value`` (text such as ``"n % 4 == 0 and n > 8"``, a bool control expression or an
    expression cursor) as an IR condition valid at ``path``.

    Raises:
        error: it is not a comparison of quasi-affine expressions over the sizes and
            enclosing loop variables, a bool parameter, ``and``/``or`` of those, or
            ``True``/``False``.
    """
    if isinstance(value, ExprCursor):
        value = value.node()
    if isinstance(value, str):
        tree = _parse_eval(value)
        e = None if tree is None else _cond_from_ast(ir, path, tree)
    elif isinstance(value, Node) and getattr(value, "type", None) == BOOL:
        e = value  # type: ignore[assignment]
        ok = {a.sym for a in ir.args} | {lp.iter for lp in context_of(ir, path).loops}
        if e is not None and not free_syms_expr(e) <= ok:
            e = None
    else:
        e = None
    if e is None:
        msg = f"{value!r} is not a condition over the sizes, bool parameters and loop variables"
        raise fail(error, primitive, msg, where)
    return e


def _cond_from_ast(ir: ProcDef, path: Path, node: ast.expr) -> Expr | None:
    # the names are looked up once per condition (not once per operand), and an operand's
    # syntax is converted as it is (not printed and parsed again): index_expr's text path
    # is ast.parse, _from_ast, to_aff, from_aff, of which the parse is a round trip
    return _cond(node, _visible_controls(ir, path), _bool_args(ir))


def _arith(x: ast.expr, names: Mapping[str, Read]) -> Expr | None:
    e = _from_ast(x, names)
    a = None if e is None else af.to_aff(e)
    return None if a is None else af.from_aff(a)


def _cond(node: ast.expr, names: Mapping[str, Read], bools: Mapping[str, Read]) -> Expr | None:
    match node:
        case ast.Constant(value=bool() as v):
            return Const(v, BOOL)
        case ast.Name(id=n) if n in bools:
            return bools[n]
        case ast.BoolOp(op=bop, values=values):
            parts = [_cond(v, names, bools) for v in values]
            if any(p is None for p in parts):
                return None
            opname = "and" if isinstance(bop, ast.And) else "or"
            out = parts[0]
            for p in parts[1:]:
                out = BinOp(opname, out, p, BOOL)  # type: ignore[arg-type]
            return out
        case ast.Compare(left=left, ops=ops, comparators=rights):
            terms: list[Expr] = []
            lhs = _arith(left, names)
            for op, r in zip(ops, rights, strict=True):
                rhs = _arith(r, names)
                if lhs is None or rhs is None or type(op) not in _CMP:
                    return None
                terms.append(BinOp(_CMP[type(op)], lhs, rhs, BOOL))  # type: ignore[arg-type]
                lhs = rhs
            out = terms[0]
            for t in terms[1:]:
                out = BinOp("and", out, t, BOOL)
            return out
        case _:
            return None


# -------------------------------------------------------------------------------- windows


@dataclass(frozen=True)
class ParsedWindow:
    """A window argument resolved at a place: its buffer, the buffer's type and memory, and
    one coordinate per dimension (``lo:`` and ``:hi`` filled in with the dimension's ends)."""

    buf: Sym
    btype: TensorType
    mem: type[Memory]
    coords: tuple[WAccess, ...]


def _parse_window_text(text: str) -> tuple[str, list[ast.expr | ast.Slice]] | None:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.Subscript) or not isinstance(tree.value, ast.Name):
        return None
    sl = tree.slice
    coords = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    return tree.value.id, coords


def _tensor_named(
    ir: ProcDef, path: Path, name: str
) -> tuple[Sym, TensorType, type[Memory]] | None:
    ctx = context_of(ir, path)
    for sym, a in ctx.allocs.items():
        if sym.name == name and isinstance(a.type, TensorType):
            found: tuple[Sym, TensorType, type[Memory]] | None = (sym, a.type, a.mem)
            return found
    for arg in ir.args:
        if arg.sym.name == name and isinstance(arg.type, TensorType):
            return arg.sym, arg.type, arg.mem or DRAM
    return None


def window_expr(
    ir: ProcDef,
    path: Path,
    value: Any,
    primitive: str,
    where: Cursor,
    error: type[SchedulingError],
) -> ParsedWindow:
    """``value`` (``"A[lo:hi, pt, ...]"``) as a window of a tensor visible at ``path``.

    Raises:
        error: the text is not ``name[coord, ...]`` over a tensor visible there with one
            coordinate per dimension, or a coordinate is not affine in the visible sizes
            and loop variables.
    """
    parsed = _parse_window_text(value) if isinstance(value, str) else None
    found = None if parsed is None else _tensor_named(ir, path, parsed[0])
    if parsed is None or found is None or len(parsed[1]) != found[1].rank():
        msg = f"window {value!r} is not `name[coord, ...]` over a tensor visible at the block"
        if found is not None and parsed is not None:
            msg += f" with {found[1].rank()} coordinates"
        raise fail(error, primitive, msg, where)
    buf, btype, mem = found

    def coord(text: ast.expr, what: str) -> Expr:
        return index_expr(ir, path, ast.unparse(text), primitive, where, what, error)

    coords: list[WAccess] = []
    for d, c in enumerate(parsed[1]):
        if isinstance(c, ast.Slice):
            lo = coord(c.lower, "window start") if c.lower else Const(0, INT)
            hi = coord(c.upper, "window end") if c.upper else btype.shape[d]
            coords.append(Interval(lo, hi))
        else:
            coords.append(Point(coord(c, "window index")))
    return ParsedWindow(buf, btype, mem, tuple(coords))


# ------------------------------------------------------------------- control expressions


def control_names(ir: ProcDef, path: Path) -> dict[str, Read]:
    """The control names visible at ``path``: control parameters and enclosing loops."""
    out = {a.sym.name: Read(a.sym, (), a.type) for a in ir.args if isinstance(a.type, ControlType)}
    for loop in context_of(ir, path).loops:
        out[loop.iter.name] = Read(loop.iter, (), INDEX)
    return out


def parse_control(node: ast.expr, names: dict[str, Read]) -> Expr | None:
    """A control expression (integer or bool) from Python syntax, as written (no folding)."""
    match node:
        case ast.Constant(value=bool() as v):
            return Const(v, BOOL)
        case ast.Constant(value=int() as v):
            return Const(v, INT)
        case ast.Name(id=n) if n in names:
            return names[n]
        case ast.UnaryOp(op=ast.USub(), operand=arg):
            x = parse_control(arg, names)
            return None if x is None else USub(x, x.type)
        case ast.BinOp(left=lhs, op=op, right=rhs) if type(op) in _OPS:
            a, b = parse_control(lhs, names), parse_control(rhs, names)
            if a is None or b is None:
                return None
            # the frontend's rule (typecheck.arith_type): int only when both sides are int
            t = INT if a.type == INT and b.type == INT else INDEX
            return BinOp(_OPS[type(op)], a, b, t)  # type: ignore[arg-type]
        case ast.Compare(left=lhs, ops=[op], comparators=[rhs]) if type(op) in _CMP:
            a, b = parse_control(lhs, names), parse_control(rhs, names)
            if a is None or b is None:
                return None
            return BinOp(_CMP[type(op)], a, b, BOOL)  # type: ignore[arg-type]
        case ast.BoolOp(op=bop, values=values):
            parts = [parse_control(v, names) for v in values]
            if any(p is None for p in parts):
                return None
            out = parts[0]
            for p in parts[1:]:
                name = "and" if isinstance(bop, ast.And) else "or"
                out = BinOp(name, out, p, BOOL)  # type: ignore[arg-type]
            return out
        case _:
            return None


def control_expr(ir: ProcDef, stmt: Path, old: Expr, new: Any) -> Expr | None:
    """``new`` (text, int, IR node or expression cursor) as an IR expression replacing
    ``old`` at statement ``stmt``, or None. Text is parsed only for a control ``old``."""
    from cursched.ir.types import DataType

    if isinstance(new, ExprCursor):
        new = new.node()
    if isinstance(new, bool | int) and not isinstance(old.type, DataType):
        new = str(new)
    if isinstance(new, str):
        if isinstance(old.type, DataType):
            return None  # data expressions come as IR nodes or cursors
        try:
            tree = ast.parse(new.strip(), mode="eval").body
        except SyntaxError:
            return None
        return parse_control(tree, control_names(ir, stmt))
    if isinstance(new, Node) and hasattr(new, "type"):
        return new  # type: ignore[return-value]
    return None


# ------------------------------------------------------------------ annotation metadata


def _place(ir: ProcDef, where: Cursor) -> Path:
    """The statement path an argument parsed next to ``where`` is resolved at."""
    if isinstance(where, BlockCursor):
        return where.block().stmt_paths()[0]
    if isinstance(where, StmtCursor | ExprCursor):
        return _stmt_path(ir, where.path())
    raise AssertionError(f"cannot resolve an argument next to {where.describe()}")


@dataclass(frozen=True)
class ArgSpec:
    """Base of the metadata of ``Annotated`` argument types (see ``registry``'s module doc).

    Attributes:
        error: the primitive's precondition class raised when the argument is refused.
        at: the parameter whose (coerced) cursor says where the argument is resolved; None:
            the first cursor parameter.
    """

    error: type[SchedulingError]
    at: str | None = None

    def resolve(
        self,
        proc_ir: ProcDef,
        value: Any,
        where: Cursor | None,
        prim: str,
        others: tuple[Cursor, ...] = (),
    ) -> Any:
        """The value the rewrite receives, or the precondition error.

        Args:
            proc_ir: the proc's IR.
            value: the argument as passed.
            where: the (coerced) cursor of the ``at`` parameter: the place, marked in errors.
            prim: the primitive's name.
            others: the other cursors when ``at`` is a sequence of cursors.
        """
        raise AssertionError(f"{type(self).__name__} does not resolve arguments")


@dataclass(frozen=True)
class NewName(ArgSpec):
    """A new name (``str``), or with ``count`` a tuple of that many distinct new names; None
    passes through (the primitive then makes its own and may check it with
    ``check_new_name``).

    Attributes:
        scope: which existing names clash (``taken_names``): ``"inside"`` by default.
        what: what the name is for, in the message (``"proc name"``).
        count: the number of names of a tuple argument (0: a single name).
    """

    scope: NameScope = "inside"
    what: str = "name"
    count: int = 0

    def resolve(
        self,
        proc_ir: ProcDef,
        value: Any,
        where: Cursor | None,
        prim: str,
        others: tuple[Cursor, ...] = (),
    ) -> Any:
        if value is None:
            return None
        taken: Set[str] = set() if where is None else taken_names(proc_ir, where, self.scope)
        if others:  # several places (bind_expr's expressions): a clash at any
            taken = NameUnion(taken, *(taken_names(proc_ir, c, self.scope) for c in others))
        if not self.count:
            return check_new_name(value, prim, self.error, where, taken, self.what)
        head = f"names must be {_NUMBERS.get(self.count, self.count)} different identifiers"
        ok = isinstance(value, tuple | list) and len(value) == self.count
        ok = ok and all(isinstance(v, str) for v in value)
        if not ok or len(set(value)) != len(value):
            raise fail(self.error, prim, f"{head}, got {value!r}", where)
        for v in value:
            why = name_problem(v, taken)
            if why is not None:
                raise fail(self.error, prim, f"{head}, got {value!r}: {v!r} is {why}", where)
        return tuple(value)


_NUMBERS = {2: "two", 3: "three"}


@dataclass(frozen=True)
class Index(ArgSpec):
    """An integer control expression (``int``, text such as ``"n - 4"``, an IR expression or
    an expression cursor of this version) resolved to an IR ``Expr`` at the place of ``at``.

    Attributes:
        what: what the value is, for the message (``"cut point"``).
    """

    error: type[SchedulingError] = BadIndexExpressionError
    what: str = "index"

    def resolve(
        self,
        proc_ir: ProcDef,
        value: Any,
        where: Cursor | None,
        prim: str,
        others: tuple[Cursor, ...] = (),
    ) -> Any:
        assert where is not None, "an Index argument needs a place"
        path = _place(proc_ir, where)
        return index_expr(proc_ir, path, value, prim, where, self.what, self.error)


class Conditions(tuple[Expr, ...]):
    """The IR conditions of a ``Condition(many=True)`` argument, in order, knowing which
    were ``given`` as IR nodes or expression cursors: only those may be nodes of the proc.
    The others were parsed from text into new nodes throughout, so a rewrite that must know
    whether a condition shares a node with the proc looks at ``given`` only
    (``specialize``)."""

    given: tuple[Expr, ...]

    def __new__(cls, exprs: Iterable[Expr], given: Iterable[Expr]) -> Conditions:
        out = super().__new__(cls, exprs)
        out.given = tuple(given)
        return out


@dataclass(frozen=True)
class Condition(ArgSpec):
    """A condition, or (``many=True``) one condition or a sequence of them, resolved to IR
    conditions (``Conditions`` when ``many``) at the place of ``at``."""

    many: bool = False

    def resolve(
        self,
        proc_ir: ProcDef,
        value: Any,
        where: Cursor | None,
        prim: str,
        others: tuple[Cursor, ...] = (),
    ) -> Any:
        assert where is not None, "a Condition argument needs a place"
        path = _place(proc_ir, where)
        if not self.many:
            return condition_expr(proc_ir, path, value, prim, where, self.error)
        items = list(value) if isinstance(value, list | tuple) else [value]
        exprs = [condition_expr(proc_ir, path, c, prim, where, self.error) for c in items]
        given = [e for c, e in zip(items, exprs, strict=True) if not isinstance(c, str)]
        return Conditions(exprs, given)


@dataclass(frozen=True)
class Window(ArgSpec):
    """A window ``"A[lo:hi, pt, ...]"`` over a tensor visible at the place of ``at``,
    resolved to a ``ParsedWindow``."""

    def resolve(
        self,
        proc_ir: ProcDef,
        value: Any,
        where: Cursor | None,
        prim: str,
        others: tuple[Cursor, ...] = (),
    ) -> Any:
        assert where is not None, "a Window argument needs a place"
        return window_expr(proc_ir, _place(proc_ir, where), value, prim, where, self.error)


def window_node(w: ParsedWindow, extents: tuple[Expr, ...]) -> WindowExpr:
    """The IR window of ``w`` whose interval dimensions have ``extents``."""
    return WindowExpr(w.buf, w.coords, TensorType(w.btype.elem, extents))


__all__ = [
    "RESERVED_NAMES",
    "ArgSpec",
    "BadIndexExpressionError",
    "Condition",
    "Conditions",
    "Index",
    "NewName",
    "ParsedWindow",
    "Window",
    "check_new_name",
    "condition_expr",
    "control_expr",
    "control_names",
    "fail",
    "index_expr",
    "name_problem",
    "parse_control",
    "taken_names",
    "window_expr",
    "window_node",
]
