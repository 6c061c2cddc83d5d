"""The printer: IR back to the surface language (docs/architecture.md, contract 3).

``print_proc`` prints a whole proc so that the text parses back (``parse_source``) to an
alpha-equivalent proc; ``print_stmt`` and ``print_expr`` print fragments (cursors show
snippets with them). Parentheses are the fewest that keep the tree: operators are
left-associative, so ``a - (b - c)`` keeps its parentheses and ``a - b - c`` needs none;
comparisons never chain.

Names: a symbol prints as its name, unless a different symbol printed with that name is still
visible where it is bound (two arguments with one name, a loop nested in a loop of the same
name, an allocation shadowing an argument) or the name is one the printout needs for something
else (an extern, a callee, a memory, ``seq``...). Then the later symbol gets the first free name
among ``name_1``, ``name_2``, ... in printing order, which makes the result deterministic.

Marks (for cursors): ``print_proc(p, marks={path: mark})`` where a path is a
``cursched.ir.paths.Path`` and a mark is

* ``"stmt"``: the statement at ``path`` gets a trailing ``  # <--``;
* ``"expr"``: the expression (or argument, window coordinate, type) at ``path`` is underlined
  with ``^`` on the next line;
* ``"gap"``: ``path`` ends in ``(block, k)`` and names the gap before statement ``k`` of that
  block (``k`` may be the block's length: the gap at its end); a ``[GAP]`` line is printed there;
* ``BlockMark(n)``: the ``n`` statements starting at ``path`` are framed by ``# BLOCK START`` and
  ``# BLOCK END`` lines.

A mark that addresses nothing printed raises ``LookupError`` (a cursor bug, not a user error).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, TypeAlias, assert_never

from cursched.ir.memory import Memory
from cursched.ir.nodes import (
    CMP_OPS,
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    FnArg,
    For,
    If,
    Interval,
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.traversal import proc_exprs, walk_exprs, walk_stmts
from cursched.ir.types import ControlType, DataType, TensorType, Type

__all__ = ["BlockMark", "Mark", "MarkKind", "print_expr", "print_proc", "print_stmt"]

INDENT = "    "

MarkKind: TypeAlias = Literal["stmt", "gap", "expr"]


@dataclass(frozen=True, slots=True)
class BlockMark:
    """A mark framing ``length`` consecutive statements, starting at the marked path."""

    length: int


Mark: TypeAlias = MarkKind | BlockMark

# Python's precedence levels, lowest first; only the ones the language uses.
_OR, _AND, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(1, 8)
_LOWEST = 0
_BINOP_PREC: dict[str, int] = {
    "or": _OR,
    "and": _AND,
    **{op: _CMP for op in CMP_OPS},
    "+": _ADD,
    "-": _ADD,
    "*": _MUL,
    "/": _MUL,
    "%": _MUL,
}
# Words the printout itself uses as free names: a variable of that name would capture them.
_SYNTAX_NAMES = frozenset({"seq", "par", "stride", "scope", "inf", "instr"})


def _mem_name(mem: object) -> str:
    # ``Alloc.mem`` is annotated ``type[Memory]`` in a class with a field named ``type``,
    # which mypy reads as that field: take the class's name without relying on the annotation.
    assert isinstance(mem, type) and issubclass(mem, Memory)
    return mem.name()


def _str_literal(s: str) -> str:
    """A double-quoted Python string literal for ``s`` (JSON escapes are valid Python)."""
    return json.dumps(s, ensure_ascii=False)


def _const_text(e: Const) -> str:
    v = e.value
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, numbers.Integral):
        # numbers.Integral, not int: a numpy integer must not print as a float.
        return str(int(v))
    f = float(v)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    # repr of a Python float is the shortest text that reads back to the same value.
    return repr(f)


def _const_prec(e: Const) -> int:
    v = e.value
    if isinstance(v, bool):
        return _ATOM
    # A negative literal prints with a leading minus: it binds like a unary minus.
    if v < 0 or (isinstance(v, float) and math.copysign(1.0, v) < 0):
        return _UNARY
    return _ATOM


def _prec(e: Expr) -> int:
    match e:
        case BinOp():
            return _BINOP_PREC[e.op]
        case USub():
            return _UNARY
        case Const():
            return _const_prec(e)
        case Read() | Extern() | WindowExpr() | StrideExpr():
            return _ATOM
        case _:
            assert_never(e)


class _Names:
    """Printed names of symbols, unique among the symbols visible at each binding."""

    def __init__(self, reserved: frozenset[str] = frozenset()) -> None:
        self._of: dict[Sym, str] = {}
        self._visible: dict[str, Sym] = {}
        self._reserved = reserved
        self._frames: list[list[str]] = [[]]

    def bind(self, sym: Sym) -> str:
        base = sym.name
        name, k = base, 0
        while (name in self._visible and self._visible[name] is not sym) or (
            name in self._reserved
        ):
            k += 1
            name = f"{base}_{k}"
        self._of[sym] = name
        if name not in self._visible:
            self._frames[-1].append(name)
        self._visible[name] = sym
        return name

    def __getitem__(self, sym: Sym) -> str:
        # A symbol bound nowhere (a fragment's free variable) prints as its own name.
        return self._of.get(sym, sym.name)

    @contextmanager
    def scope(self) -> Iterator[None]:
        self._frames.append([])
        try:
            yield
        finally:
            for name in self._frames.pop():
                del self._visible[name]


class _Line:
    """One output line under construction, recording the columns of marked sub-terms."""

    def __init__(self, printer: _Printer, indent: int) -> None:
        self.printer = printer
        self.parts: list[str] = [INDENT * indent]
        self.pos = len(self.parts[0])
        self.spans: list[tuple[int, int]] = []

    def write(self, s: str) -> None:
        self.parts.append(s)
        self.pos += len(s)

    @contextmanager
    def mark(self, path: Path) -> Iterator[None]:
        """Record the columns written inside this context when ``path`` is marked."""
        start = self.pos
        yield
        if self.printer.take(path, ("expr", "stmt")) is not None:
            self.spans.append((start, self.pos))

    def text(self) -> str:
        return "".join(self.parts)

    def underline(self) -> str | None:
        if not self.spans:
            return None
        width = max(end for _, end in self.spans)
        cells = [" "] * width
        for start, end in self.spans:
            for c in range(start, max(end, start + 1)):
                cells[c] = "^"
        return "".join(cells).rstrip()


class _Printer:
    def __init__(self, names: _Names, marks: Mapping[Path, Mark] | None) -> None:
        self.names = names
        self.marks: dict[Path, Mark] = dict(marks or {})
        self.lines: list[str] = []

    # -- marks ----------------------------------------------------------------------------
    def take(self, path: Path, kinds: tuple[str, ...]) -> Mark | None:
        """Consume the mark at ``path`` when its kind is one of ``kinds``."""
        m = self.marks.get(path)
        if m is None:
            return None
        kind = "block" if isinstance(m, BlockMark) else m
        if kind not in kinds:
            return None
        del self.marks[path]
        return m

    def check_all_used(self) -> None:
        if self.marks:
            raise LookupError(f"marks address nothing printed: {sorted(self.marks.items())}")

    def emit(self, line: _Line, suffix: str = "") -> None:
        self.lines.append(line.text() + suffix)
        under = line.underline()
        if under is not None:
            self.lines.append(under)

    # -- expressions ----------------------------------------------------------------------
    def expr(self, out: _Line, e: Expr, path: Path, ctx: int = _LOWEST) -> None:
        paren = _prec(e) < ctx
        if paren:
            out.write("(")
        start = out.pos
        self._expr_body(out, e, path)
        # Inline rather than `out.mark`: this is the printer's hot path.
        if self.marks and self.take(path, ("expr", "stmt")) is not None:
            out.spans.append((start, out.pos))
        if paren:
            out.write(")")

    def _expr_body(self, out: _Line, e: Expr, path: Path) -> None:
        match e:
            case Const():
                out.write(_const_text(e))
            case Read():
                out.write(self.names[e.sym])
                if e.idx:
                    out.write("[")
                    self._expr_list(out, e.idx, path, "idx")
                    out.write("]")
            case BinOp():
                prec = _BINOP_PREC[e.op]
                # Left-associative: only the right operand needs parentheses at equal
                # precedence; comparisons do not chain, so neither side may be a comparison.
                lctx = prec + 1 if prec == _CMP else prec
                self.expr(out, e.lhs, (*path, ("lhs", -1)), lctx)
                out.write(f" {e.op} ")
                self.expr(out, e.rhs, (*path, ("rhs", -1)), prec + 1)
            case USub():
                out.write("-")
                # `-(-x)` and `-(-1)` rather than `--x`, which reads like a typo.
                inner = _prec(e.arg)
                ctx = _ATOM if isinstance(e.arg, USub) or inner == _UNARY else _UNARY
                self.expr(out, e.arg, (*path, ("arg", -1)), ctx)
            case Extern():
                out.write(f"{e.name}(")
                self._expr_list(out, e.args, path, "args")
                out.write(")")
            case WindowExpr():
                out.write(f"{self.names[e.sym]}[")
                for k, w in enumerate(e.idx):
                    if k:
                        out.write(", ")
                    self._waccess(out, w, (*path, ("idx", k)))
                out.write("]")
            case StrideExpr():
                out.write(f"stride({self.names[e.sym]}, {e.dim})")
            case _:
                assert_never(e)

    def _expr_list(self, out: _Line, es: tuple[Expr, ...], path: Path, attr: str) -> None:
        for k, x in enumerate(es):
            if k:
                out.write(", ")
            self.expr(out, x, (*path, (attr, k)))

    def _waccess(self, out: _Line, w: WAccess, path: Path) -> None:
        with out.mark(path):
            match w:
                case Point():
                    self.expr(out, w.pt, (*path, ("pt", -1)))
                case Interval():
                    self.expr(out, w.lo, (*path, ("lo", -1)))
                    out.write(":")
                    self.expr(out, w.hi, (*path, ("hi", -1)))
                case _:
                    assert_never(w)

    def type_(self, out: _Line, t: Type, path: Path) -> None:
        with out.mark(path):
            match t:
                case DataType() | ControlType():
                    out.write(t.name)
                case TensorType():
                    out.write(f"[{t.elem.name}][" if t.window else f"{t.elem.name}[")
                    self._expr_list(out, t.shape, path, "shape")
                    out.write("]")
                case _:
                    assert_never(t)

    # -- statements -----------------------------------------------------------------------
    def block(
        self,
        body: tuple[Stmt, ...],
        path: Path,
        attr: str,
        depth: int,
        pass_if_empty: bool = True,
    ) -> None:
        """Print a statement list (``path`` is its owner's path, ``attr`` its field)."""
        ends: dict[int, int] = {}  # index of last statement -> number of BLOCK ENDs after it
        with self.names.scope():
            for k in range(len(body) + 1):
                here: Path = (*path, (attr, k))
                if self.take(here, ("gap",)) is not None:
                    self.lines.append(INDENT * depth + "[GAP]")
                if k == len(body):
                    break
                bm = self.take(here, ("block",))
                if isinstance(bm, BlockMark):
                    self.lines.append(INDENT * depth + "# BLOCK START")
                    last = k + max(bm.length, 1) - 1
                    ends[last] = ends.get(last, 0) + 1
                self.stmt(body[k], here, depth)
                for _ in range(ends.pop(k, 0)):
                    self.lines.append(INDENT * depth + "# BLOCK END")
            if not body and pass_if_empty:
                self.lines.append(INDENT * depth + "pass")

    def header(self, depth: int, path: Path) -> tuple[_Line, str]:
        """A fresh line for the statement at ``path`` and its trailing-mark suffix."""
        suffix = "  # <--" if self.take(path, ("stmt",)) is not None else ""
        return _Line(self, depth), suffix

    def stmt(self, s: Stmt, path: Path, depth: int) -> None:
        out, suffix = self.header(depth, path)
        match s:
            case Assign() | Reduce():
                out.write(self.names[s.sym])
                if s.idx:
                    out.write("[")
                    self._expr_list(out, s.idx, path, "idx")
                    out.write("]")
                out.write(" = " if isinstance(s, Assign) else " += ")
                self.expr(out, s.rhs, (*path, ("rhs", -1)))
                self.emit(out, suffix)
            case Pass():
                out.write("pass")
                self.emit(out, suffix)
            case If():
                out.write("if ")
                self._if(out, suffix, s, path, depth)
            case For():
                # The loop variable is visible in the body only: its own frame.
                with self.names.scope():
                    out.write(f"for {self.names.bind(s.iter)} in {s.mode}(")
                    self.expr(out, s.lo, (*path, ("lo", -1)))
                    out.write(", ")
                    self.expr(out, s.hi, (*path, ("hi", -1)))
                    if s.axis is not None:
                        out.write(f", axis={_str_literal(s.axis)}")
                    out.write("):")
                    self.emit(out, suffix)
                    self.block(s.body, path, "body", depth + 1)
            case Alloc():
                name = self.names.bind(s.sym)
                out.write(f"{name}: ")
                self.type_(out, s.type, (*path, ("type", -1)))
                out.write(f" @ {_mem_name(s.mem)}")
                self.emit(out, suffix)
            case Call():
                out.write(f"{s.proc.name}(")
                self._expr_list(out, s.args, path, "args")
                out.write(")")
                self.emit(out, suffix)
            case WindowStmt():
                # The rhs is printed before the name is bound: it cannot refer to it.
                rhs = _Line(self, 0)
                self.expr(rhs, s.rhs, (*path, ("rhs", -1)))
                name = self.names.bind(s.sym)
                out.write(f"{name} = ")
                shift = out.pos
                out.write(rhs.text())
                out.spans.extend((a + shift, b + shift) for a, b in rhs.spans)
                self.emit(out, suffix)
            case Scope():
                out.write(f"with scope({_str_literal(s.name)}")
                if s.target is not None:
                    out.write(f", target={_str_literal(s.target)}")
                out.write("):")
                self.emit(out, suffix)
                self.block(s.body, path, "body", depth + 1)
            case _:
                assert_never(s)

    def _if(self, out: _Line, suffix: str, s: If, path: Path, depth: int) -> None:
        self.expr(out, s.cond, (*path, ("cond", -1)))
        out.write(":")
        self.emit(out, suffix)
        self.block(s.body, path, "body", depth + 1)
        orelse_path: Path = (*path, ("orelse", 0))
        if len(s.orelse) == 1 and isinstance(s.orelse[0], If) and not self._gap_or_block(path):
            inner, inner_suffix = self.header(depth, orelse_path)
            inner.write("elif ")
            self._if(inner, inner_suffix, s.orelse[0], orelse_path, depth)
        elif s.orelse or orelse_path in self.marks:
            self.lines.append(INDENT * depth + "else:")
            self.block(s.orelse, path, "orelse", depth + 1)

    def _gap_or_block(self, path: Path) -> bool:
        """Whether a gap or block mark falls in the else branch of the If at ``path``
        (then it prints as ``else:`` with a nested ``if``, so the mark has a line of its own).
        """
        for k in (0, 1):
            m = self.marks.get((*path, ("orelse", k)))
            if m == "gap" or isinstance(m, BlockMark):
                return True
        return False

    # -- procs ----------------------------------------------------------------------------
    def proc(self, p: ProcDef) -> None:
        if p.instr is not None:
            text = f"@instr({_str_literal(p.instr.c_template)}"
            if p.instr.c_global:
                text += f", c_global={_str_literal(p.instr.c_global)}"
            self.lines.append(text + ")")
        out = _Line(self, 0)
        out.write(f"def {p.name}(")
        for k, a in enumerate(p.args):
            if k:
                out.write(", ")
            self._fnarg(out, a, (("args", k),))
        out.write("):")
        self.emit(out)
        for k, pred in enumerate(p.preds):
            line = _Line(self, 1)
            line.write("assert ")
            self.expr(line, pred, (("preds", k),))
            self.emit(line)
        # A body of asserts only is valid Python as it is: no `pass`, which would parse back
        # to a statement.
        self.block(p.body, (), "body", 1, pass_if_empty=not p.preds)

    def _fnarg(self, out: _Line, a: FnArg, path: Path) -> None:
        with out.mark(path):
            out.write(f"{self.names.bind(a.sym)}: ")
            self.type_(out, a.type, (*path, ("type", -1)))
            if a.mem is not None:
                out.write(f" @ {a.mem.name()}")


def _reserved_names(p: ProcDef) -> frozenset[str]:
    """Free names the printout of ``p`` uses: no variable may print under them."""
    names = set(_SYNTAX_NAMES)
    for e in proc_exprs(p):
        if isinstance(e, Extern):
            names.add(e.name)
    for a in p.args:
        if a.mem is not None:
            names.add(a.mem.name())
    for s in walk_stmts(p.body):
        match s:
            case Call():
                names.add(s.proc.name)
            case Alloc():
                names.add(_mem_name(s.mem))
            case _:
                pass
    return frozenset(names)


def print_proc(p: ProcDef, marks: Mapping[Path, Mark] | None = None) -> str:
    """The surface-language text of ``p`` (no trailing newline).

    Args:
        p: the proc to print.
        marks: optional marks by path (see the module docstring), for showing cursors.

    Returns:
        The text; without marks it parses back to a proc alpha-equivalent to ``p``.

    Raises:
        LookupError: when a mark addresses nothing that is printed.
    """
    printer = _Printer(_Names(_reserved_names(p)), marks)
    printer.proc(p)
    printer.check_all_used()
    return "\n".join(printer.lines)


def print_stmt(s: Stmt, indent: int = 0, marks: Mapping[Path, Mark] | None = None) -> str:
    """The text of one statement (with its nested statements) at ``indent`` levels.

    Symbols bound outside ``s`` print as their own names. ``marks`` paths are relative to
    ``s``: ``()`` is the statement itself.
    """
    reserved = {e.name for e in walk_exprs((s,)) if isinstance(e, Extern)}
    printer = _Printer(_Names(frozenset(reserved | _SYNTAX_NAMES)), marks)
    printer.stmt(s, (), indent)
    printer.check_all_used()
    return "\n".join(printer.lines)


def print_expr(e: Expr) -> str:
    """The text of one expression; symbols print as their own names."""
    printer = _Printer(_Names(), None)
    out = _Line(printer, 0)
    printer.expr(out, e, ())
    return out.text()
