"""A proc transliterated to a plain Python loop nest over numpy arrays (benchmarks/interp.py).

What someone would write by hand to run a proc without cursched: the same loops, ``A[i, j]``
indexing numpy arrays, arithmetic on numpy scalars of the destination's type (so f32 rounds
per operation, as in the interpreter), no bounds or shape checks. It is the "plain Python
loop" peer of the interpreter benchmark, not an oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cursched.interp.values import int_div, int_rem, to_python
from cursched.ir.externs import EXTERNS
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
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
    WindowExpr,
    WindowStmt,
)
from cursched.ir.types import ControlType, DataType, TensorType

_CACHE: dict[int, Callable[..., None]] = {}


class _Gen:
    def __init__(self, pd: ProcDef) -> None:
        self.pd = pd
        self.ns: dict[str, Any] = {"np": np, "_int_div": int_div, "_int_rem": int_rem}
        self.lines: list[str] = []
        self.types: dict[Any, Any] = {a.sym: a.type for a in pd.args}
        self.n = 0

    def name(self, sym: Any) -> str:
        return f"{sym.name}_{id(sym) % 100000}"

    def k(self, v: Any) -> str:
        self.n += 1
        self.ns[f"_k{self.n}"] = v
        return f"_k{self.n}"

    def ctrl(self, e: Expr) -> str:
        match e:
            case Const():
                return repr(e.value)
            case Read():
                return self.name(e.sym)
            case BinOp():
                op = {"/": "//"}.get(e.op, e.op)
                return f"({self.ctrl(e.lhs)} {op} {self.ctrl(e.rhs)})"
            case USub():
                return f"(-{self.ctrl(e.arg)})"
            case StrideExpr():
                n = self.name(e.sym)
                return f"({n}.strides[{e.dim}] // {n}.itemsize)"
            case _:
                raise TypeError(e)

    def read(self, e: Read) -> str:
        n = self.name(e.sym)
        return f"{n}[{', '.join(self.ctrl(i) for i in e.idx)}]" if e.idx else f"{n}[()]"

    def data(self, e: Expr, dt: np.dtype[Any]) -> str:
        if not isinstance(e, Const) and isinstance(e.type, ControlType):
            return f"{self.k(dt.type)}({self.ctrl(e)})"
        match e:
            case Const():
                return self.k(dt.type(to_python(e.value, dt)))
            case Read():
                t = self.types[e.sym]
                src = t.elem if isinstance(t, TensorType) else t
                code = self.read(e)
                return code if src.np_dtype == dt else f"{self.k(dt.type)}({code})"
            case BinOp():
                a, b = self.data(e.lhs, dt), self.data(e.rhs, dt)
                if dt.kind in "iu" and e.op in "/%":
                    fn = "_int_div" if e.op == "/" else "_int_rem"
                    return f"{fn}({a}, {b}, {self.k(dt)})"
                if e.op == "%":
                    return f"np.fmod({a}, {b})"
                return f"({a} {e.op} {b})"
            case USub():
                return f"(-{self.data(e.arg, dt)})"
            case Extern():
                fn = self.k(EXTERNS[e.name].numpy)
                return f"{self.k(dt.type)}({fn}({', '.join(self.data(a, dt) for a in e.args)}))"
            case _:
                raise TypeError(e)

    def window(self, w: WindowExpr) -> str:
        parts = []
        for a in w.idx:
            match a:
                case Point():
                    parts.append(self.ctrl(a.pt))
                case Interval():
                    parts.append(f"{self.ctrl(a.lo)}:{self.ctrl(a.hi)}")
        return f"{self.name(w.sym)}[{', '.join(parts)}, ...]"

    def block(self, body: tuple[Stmt, ...], d: int) -> None:
        n = len(self.lines)
        for s in body:
            self.stmt(s, d)
        if len(self.lines) == n:
            self.lines.append("    " * d + "pass")

    def stmt(self, s: Stmt, d: int) -> None:
        pad = "    " * d
        match s:
            case Assign() | Reduce():
                t = self.types[s.sym]
                dt = (t.elem if isinstance(t, TensorType) else t).np_dtype
                op = "=" if isinstance(s, Assign) else "+="
                tgt = self.read(Read(s.sym, s.idx, t))
                self.lines.append(f"{pad}{tgt} {op} {self.data(s.rhs, dt)}")
            case For():
                v = self.name(s.iter)
                self.lines.append(f"{pad}for {v} in range({self.ctrl(s.lo)}, {self.ctrl(s.hi)}):")
                self.block(s.body, d + 1)
            case If():
                self.lines.append(f"{pad}if {self.ctrl(s.cond)}:")
                self.block(s.body, d + 1)
                if s.orelse:
                    self.lines.append(f"{pad}else:")
                    self.block(s.orelse, d + 1)
            case Alloc():
                self.types[s.sym] = s.type
                if isinstance(s.type, DataType):
                    shape, dt = "()", s.type.np_dtype
                else:
                    shape = f"({', '.join(self.ctrl(e) for e in s.type.shape)},)"
                    dt = s.type.elem.np_dtype
                fill = "np.nan" if dt.kind == "f" else "0"
                self.lines.append(
                    f"{pad}{self.name(s.sym)} = np.full({shape}, {fill}, {self.k(dt)})"
                )
            case WindowStmt():
                self.types[s.sym] = s.rhs.type
                self.lines.append(f"{pad}{self.name(s.sym)} = {self.window(s.rhs)}")
            case Call():
                fn = self.k(transliterate(s.proc))
                args = []
                for a, e in zip(s.proc.args, s.args, strict=True):
                    if isinstance(a.type, ControlType):
                        args.append(self.ctrl(e))
                    elif isinstance(e, WindowExpr):
                        args.append(self.window(e))
                    elif isinstance(e, Read) and e.idx:
                        args.append(
                            f"{self.name(e.sym)}[{', '.join(self.ctrl(i) for i in e.idx)}, ...]"
                        )
                    elif isinstance(e, Read):
                        args.append(self.name(e.sym))
                    else:
                        dt = a.type.np_dtype  # type: ignore[union-attr]
                        args.append(f"np.array({self.data(e, dt)})")
                self.lines.append(f"{pad}{fn}({', '.join(args)})")
            case Scope():
                self.block(s.body, d)
            case Pass():
                pass

    def build(self) -> Callable[..., None]:
        names = [self.name(a.sym) for a in self.pd.args]
        self.lines.append(f"def _run({', '.join(names)}):")
        for a, n in zip(self.pd.args, names, strict=True):
            if isinstance(a.type, DataType):  # data scalars as 0-d arrays (or numbers)
                self.lines.append(f"    {n} = np.asarray({n}).reshape(())")
        self.block(self.pd.body, 1)
        exec("\n".join(self.lines), self.ns)
        return self.ns["_run"]  # type: ignore[no-any-return]


def transliterate(pd: ProcDef) -> Callable[..., None]:
    """``pd`` as a Python function over numpy arrays, called with its arguments by name."""
    fn = _CACHE.get(id(pd))
    if fn is None:
        raw = _Gen(pd).build()
        names = [a.sym.name for a in pd.args]

        def fn(*args: Any, **kwargs: Any) -> None:
            values = list(args) + [kwargs[n] for n in names[len(args) :]]
            with np.errstate(all="ignore"):
                raw(*values)

        _CACHE[id(pd)] = fn
    return fn
