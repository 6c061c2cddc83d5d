"""The IR verifier: every invariant a well-formed ``ProcDef`` keeps, checked in one pass.

``verify_proc(p)`` raises ``IRVerificationError`` naming the broken invariant (in brackets,
e.g. ``[sym-defined]``), the proc, the place (a path as in ``cursched.ir.paths``, spelled
``body[1].body[0].rhs``) and the source location when known. It runs after every primitive in
the tests, so it is one walk over the proc, linear in its size; each callee is verified once.
Control expressions and assignments already verified (the same node objects, which versions
of a proc share) are not walked again where the symbols they read are bound as before
(``memo=False`` turns this off: the reference walk of ``CURSCHED_VERIFY=full``). Every proc
that passes is remembered (``known_valid``): after a primitive, the registry checks the new
version incrementally against its input (``cursched.ir.verify_step``).

The invariants, each checked by one small function below:

- ``sym-defined``: every symbol read, written, windowed or strided is bound (a parameter, a
  loop variable, an allocation or a window statement) in an enclosing scope before the use,
  or is a configuration field (``cursched.ir.config``: global, bound nowhere).
- ``sym-unique``: a symbol is not bound again while it is in scope (in an overlapping scope).
- ``fnarg``: a control parameter (size, index, bool) has no memory; a data scalar or tensor
  parameter has one; tensor parameter shapes read only control parameters.
- ``const-type``: a constant's value is a Python bool, int or float that fits its type: bools
  are ``bool``; ints are an integer control type or a data type (in range for integer data
  types); floats (``inf`` included) are a float data type.
- ``read-type``: a read has its variable's declared type (control variables, data scalars),
  the element type of the tensor it indexes, or, read whole, the tensor's own type.
- ``index-count``: an access has as many indices as its buffer has dimensions.
- ``control-expr``: control expressions (indices, bounds, conditions, asserts, shapes,
  control call arguments) contain only control constants, control reads, strides, arithmetic,
  comparisons, ``and``/``or``; data expressions contain no control reads, strides,
  comparisons, windows or whole tensors.
- ``op-type``: an operation's type follows its operands: integer arithmetic gives an integer
  control type, data arithmetic a data type; comparisons take integers (``==``/``!=`` also
  bools) and give bool; ``and``/``or`` take and give bool; negation keeps its kind.
- ``quasi-affine``: control ``*`` has a constant operand; ``/`` and ``%`` a positive constant
  divisor.
- ``extern-call``: an extern is in the table, called with its arity, on data, giving data.
- ``bool-cond``: ``if`` conditions and asserts are of type bool.
- ``loop-bounds``: loop bounds are integer control expressions; the mode is seq or par.
- ``loop-axis``: a loop bound to a CUDA axis is a ``par`` loop, the axis one of ``CUDA_AXES``,
  inside a ``target="cuda"`` scope.
- ``window-expr``: a window's buffer is a tensor; it has one coordinate per dimension;
  intervals are integer control ranges; its type is a window of the tensor's element type
  whose rank is the number of intervals and whose each extent is ``hi - lo``.
- ``stride-expr``: ``stride(A, d)`` names a tensor, ``0 <= d < rank``, and is an integer.
- ``write-target``: ``=`` and ``+=`` write only data buffers (data scalars, tensors,
  windows), never sizes, index or bool parameters or loop variables, and assign data.
- ``alloc``: an allocation is a data scalar or a non-window tensor of integer control shape, in
  a memory (a ``Memory`` subclass).
- ``call-args``: a call passes as many arguments as the callee has parameters, each of the
  parameter's kind: a control value of the same family, a data read of the same data type, or a
  whole tensor or window of the same element type and rank, in the parameter's memory; every
  callee satisfies every invariant.
- ``scope``: a scope has a non-empty name and a target that is None or a non-empty string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NoReturn, TypeAlias, assert_never

import numpy as np

from cursched.errors import IRVerificationError, SrcInfo
from cursched.ir.config import ConfigField
from cursched.ir.externs import EXTERNS
from cursched.ir.memory import DRAM, Memory, passes_for
from cursched.ir.nodes import (
    ARITH_OPS,
    BOOL_OPS,
    CMP_OPS,
    CUDA_AXES,
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
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.types import BOOL, INDEX, ControlType, DataType, TensorType, Type

__all__ = ["known_valid", "remember_valid", "verify_proc"]

Role: TypeAlias = Literal["param", "loop", "alloc", "window"]
# The value of an integer constant expression, or None for anything that reads a variable.
Value: TypeAlias = int | None


@dataclass(frozen=True, slots=True)
class _Var:
    type: Type
    role: Role
    # Where a data buffer lives (a window lives where its tensor does); None for control.
    mem: object = None


LOOP_VAR = _Var(INDEX, "loop")


def _is_int(t: Type) -> bool:
    return isinstance(t, ControlType) and t.is_integer()


def _path_text(path: Path) -> str:
    parts = [f"{a}[{i}]" if i >= 0 else a for a, i in path]
    return ".".join(parts) or "proc"


# Control expressions already checked, by node: the verifier runs after every primitive and
# most index and bound expressions are shared with the previous version. A check of a
# control expression depends only on the node and on the bindings of the symbols it reads
# (``lookup`` is the only access to the environment), so an entry holds those bindings and
# is reused only where they are equal. Keyed by ``id`` with the node kept alive in the entry;
# only passing checks are stored; cleared when full. Only the *types* of those bindings are
# kept: whether such a check passes reads nothing else of a binding (its role is named in
# failure messages only, and its memory matters to calls and window statements, which are
# not memoized), so a statement after an allocation that changed memory is not checked again.
_Deps: TypeAlias = tuple[tuple[Sym, Type], ...]
_CTRL_MEMO: dict[int, tuple[Expr, Value, _Deps]] = {}
_CTRL_MEMO_LIMIT = 1 << 15
# The same for assignments and reductions (they bind nothing and hold no statements, and
# every access to the environment they make goes through ``lookup``).
_WRITE_MEMO: dict[int, tuple[Stmt, _Deps]] = {}


def _holds(env: dict[Sym, _Var], deps: _Deps) -> bool:
    """Whether every symbol of ``deps`` is bound in ``env`` with the type it had."""
    for sym, t in deps:
        var = env.get(sym)
        if var is None or (var.type is not t and var.type != t):
            return False
    return True


class _Verifier:
    def __init__(self, p: ProcDef, verified: set[int], memo: bool = True) -> None:
        self.p = p
        self.env: dict[Sym, _Var] = {}
        self.verified = verified
        # memo=False: the reference walk (``CURSCHED_VERIFY=full``) reuses nothing checked
        # before: no memo of expressions or statements, no proc known to be valid
        self.memo = memo
        # the bindings read by the control expression being checked (None: outside one)
        self.deps: dict[Sym, Type] | None = None
        self.cuda_depth = 0  # how many target="cuda" scopes enclose the statement checked

    def fail(self, inv: str, path: Path, msg: str, src: SrcInfo | None = None) -> NoReturn:
        where = f"in proc {self.p.name} at {_path_text(path)}"
        loc = f" ({src})" if src is not None else ""
        raise IRVerificationError(f"[{inv}] {where}: {msg}{loc}")

    # -- symbols ------------------------------------------------------------------ sym-*
    def bind(self, sym: Sym, var: _Var, path: Path, bound: list[Sym]) -> None:
        if sym in self.env:
            self.fail("sym-unique", path, f"{sym!r} is bound again while in scope")
        self.env[sym] = var
        bound.append(sym)

    def lookup(self, sym: Sym, path: Path, src: SrcInfo | None) -> _Var:
        var = self.env.get(sym)
        if var is None and isinstance(sym, ConfigField):
            # a configuration field is global: bound by no statement, a scalar in DRAM
            return _Var(sym.type, "alloc", DRAM)
        if var is None:
            self.fail("sym-defined", path, f"{sym!r} is used where it is not bound", src)
        if self.deps is not None:
            self.deps[sym] = var.type
        return var

    # -- constants ---------------------------------------------------------------- const-type
    def const(self, e: Const, path: Path) -> None:
        v, t = e.value, e.type
        if type(v) not in (bool, int, float):
            # numpy scalars compare and hash differently and print as other literals.
            self.fail("const-type", path, f"constant {v!r} is a {type(v).__name__}", e.srcinfo)
        if isinstance(v, bool):
            ok = t == BOOL
        elif isinstance(v, int):
            ok = _is_int(t) or isinstance(t, DataType)
            if ok and isinstance(t, DataType) and not t.is_float():
                info = np.iinfo(t.numpy)
                ok = int(info.min) <= v <= int(info.max)
        else:
            ok = isinstance(t, DataType) and t.is_float()
        if not ok:
            self.fail("const-type", path, f"constant {v!r} cannot have type {t}", e.srcinfo)

    # -- control expressions ---------------------------------------- control-expr, op-type
    def ctrl(self, e: Expr, path: Path) -> Value:
        """Check a control expression; return its value when it is an integer constant."""
        if not isinstance(e, BinOp | USub) or not self.memo:
            return self._ctrl(e, path)
        hit = _CTRL_MEMO.get(id(e))
        if hit is not None and hit[0] is e and _holds(self.env, hit[2]):
            if self.deps is not None:
                self.deps.update(hit[2])
            return hit[1]
        outer, self.deps = self.deps, {}
        try:
            v = self._ctrl(e, path)
            deps = tuple(self.deps.items())
        finally:
            self.deps = outer
        if outer is not None:
            outer.update(deps)
        if len(_CTRL_MEMO) >= _CTRL_MEMO_LIMIT:
            _CTRL_MEMO.clear()
        _CTRL_MEMO[id(e)] = (e, v, deps)
        return v

    def _ctrl(self, e: Expr, path: Path) -> Value:
        match e:
            case Const():
                self.const(e, path)
                if not isinstance(e.type, ControlType):
                    self.fail("control-expr", path, "a data constant in a control expression")
                return e.value if isinstance(e.value, int) and _is_int(e.type) else None
            case Read():
                var = self.lookup(e.sym, path, e.srcinfo)
                if not isinstance(var.type, ControlType):
                    self.fail("control-expr", path, f"{e.sym!r} is data, read as control")
                if e.idx:
                    self.fail("index-count", path, f"control variable {e.sym!r} is indexed")
                if e.type != var.type:
                    self.fail("read-type", path, f"{e.sym!r}: {e.type} read, {var.type} declared")
                return None
            case StrideExpr():
                self.stride(e, path)
                return None
            case BinOp():
                return self.ctrl_binop(e, path)
            case USub():
                v = self.ctrl(e.arg, (*path, ("arg", -1)))
                if not (_is_int(e.arg.type) and _is_int(e.type)):
                    self.fail("op-type", path, "negation of a non-integer control value")
                return None if v is None else -v
            case Extern() | WindowExpr():
                self.fail("control-expr", path, f"{type(e).__name__} in a control expression")
            case _:
                assert_never(e)

    def ctrl_binop(self, e: BinOp, path: Path) -> Value:
        a = self.ctrl(e.lhs, (*path, ("lhs", -1)))
        b = self.ctrl(e.rhs, (*path, ("rhs", -1)))
        lt, rt = e.lhs.type, e.rhs.type
        if e.op in ARITH_OPS:
            if not (_is_int(lt) and _is_int(rt) and _is_int(e.type)):
                self.fail("op-type", path, f"{lt} {e.op} {rt} typed {e.type}")
            return self.quasi_affine(e, a, b, path)
        if e.op in CMP_OPS:
            both_bool = lt == BOOL and rt == BOOL and e.op in ("==", "!=")
            if not ((_is_int(lt) and _is_int(rt)) or both_bool) or e.type != BOOL:
                self.fail("op-type", path, f"{lt} {e.op} {rt} typed {e.type}")
            return None
        if e.op in BOOL_OPS:
            if not (lt == BOOL and rt == BOOL and e.type == BOOL):
                self.fail("op-type", path, f"{lt} {e.op} {rt} typed {e.type}")
            return None
        self.fail("op-type", path, f"unknown operator {e.op!r}")

    def quasi_affine(self, e: BinOp, a: Value, b: Value, path: Path) -> Value:
        if e.op == "*" and a is None and b is None:
            self.fail("quasi-affine", path, "`*` of two non-constant operands", e.srcinfo)
        if e.op in ("/", "%") and (b is None or b <= 0):
            self.fail("quasi-affine", path, f"`{e.op}` by a non-constant or non-positive value")
        if a is None or b is None:
            return None
        match e.op:
            case "+":
                return a + b
            case "-":
                return a - b
            case "*":
                return a * b
            case "/":
                return a // b
            case _:
                return a % b

    def int_ctrl(self, e: Expr, path: Path, inv: str, what: str) -> Value:
        v = self.ctrl(e, path)
        if not _is_int(e.type):
            self.fail(inv, path, f"{what} has type {e.type}, not an integer type")
        return v

    def bool_ctrl(self, e: Expr, path: Path, what: str) -> None:
        self.ctrl(e, path)
        if e.type != BOOL:
            self.fail("bool-cond", path, f"{what} has type {e.type}, not bool")

    def stride(self, e: StrideExpr, path: Path) -> None:
        var = self.lookup(e.sym, path, e.srcinfo)
        if not isinstance(var.type, TensorType):
            self.fail("stride-expr", path, f"stride of {e.sym!r}, which is not a tensor")
        if not 0 <= e.dim < var.type.rank():
            self.fail("stride-expr", path, f"dimension {e.dim} of a rank-{var.type.rank()} tensor")
        if not _is_int(e.type):
            self.fail("stride-expr", path, f"stride typed {e.type}")

    # -- data expressions ------------------------------------ control-expr, read-type, ...
    def data(self, e: Expr, path: Path) -> None:
        if type(e) is Const and type(e.value) is float:  # the commonest: a float literal
            t = e.type
            if type(t) is DataType and t.is_float():
                return
        match e:
            case Const():
                self.const(e, path)
                if not isinstance(e.type, DataType):
                    self.fail("control-expr", path, "a control constant in a data expression")
            case Read():
                self.data_read(e, path)
            case BinOp():
                self.data(e.lhs, (*path, ("lhs", -1)))
                self.data(e.rhs, (*path, ("rhs", -1)))
                if e.op not in ARITH_OPS:
                    self.fail("control-expr", path, f"`{e.op}` in a data expression")
                if not isinstance(e.type, DataType):
                    self.fail("op-type", path, f"data `{e.op}` typed {e.type}")
            case USub():
                self.data(e.arg, (*path, ("arg", -1)))
                if not isinstance(e.type, DataType):
                    self.fail("op-type", path, f"data negation typed {e.type}")
            case Extern():
                self.extern(e, path)
            case WindowExpr() | StrideExpr():
                self.fail("control-expr", path, f"{type(e).__name__} in a data expression")
            case _:
                assert_never(e)

    def data_ok(self, e: Expr) -> bool:
        """Whether ``data`` passes ``e``, decided without paths for the commonest shapes.

        Float literals, reads of data (their indices checked as ``indices`` checks them)
        and arithmetic over them: the right-hand side of nearly every unrolled or split
        loop, verified again for each copy. True only where ``data``
        would pass and after recording the same ``deps``; False (anything else, and every
        failure) sends the caller to ``data``, which rechecks and builds the message.
        """
        if type(e) is BinOp:
            return (
                e.op in ARITH_OPS
                and type(e.type) is DataType
                and self.data_ok(e.lhs)
                and self.data_ok(e.rhs)
            )
        if type(e) is Const:
            t = e.type
            return type(e.value) is float and type(t) is DataType and t.is_float()
        if type(e) is not Read:
            return False
        var = self.env.get(e.sym)
        if var is None:
            return False  # a configuration field, or unbound: the general path decides
        t = var.type
        if type(t) is TensorType:
            if len(e.idx) != t.rank() or e.type != t.elem:
                return False
        elif type(t) is not DataType or e.idx or e.type != t:
            return False
        try:
            # no path: only a failure words one, and a failure goes to ``data`` again
            self.indices(e.idx, ())
        except IRVerificationError:
            return False
        if self.deps is not None:
            self.deps[e.sym] = t
        return True

    def data_read(self, e: Read, path: Path) -> None:
        var = self.lookup(e.sym, path, e.srcinfo)
        t = var.type
        if isinstance(t, ControlType):
            self.fail("control-expr", path, f"control variable {e.sym!r} in a data expression")
        rank = t.rank() if isinstance(t, TensorType) else 0
        if len(e.idx) != rank:
            self.fail("index-count", path, f"{e.sym!r} has rank {rank}, {len(e.idx)} indices")
        self.indices(e.idx, path)
        want = t.elem if isinstance(t, TensorType) else t
        if e.type != want:
            self.fail("read-type", path, f"{e.sym!r}: {e.type} read, {want} declared")

    def indices(self, idx: tuple[Expr, ...], path: Path) -> None:
        env, deps = self.env, self.deps
        for k, i in enumerate(idx):
            # the two commonest indices, a loop variable and an integer literal, decided
            # here as ``int_ctrl`` would pass them (anything else, and every failure, takes
            # the general check, which builds the path for its message)
            if type(i) is Read and not i.idx:
                var = env.get(i.sym)
                it = i.type
                ok = isinstance(it, ControlType) and it.name != "bool"
                if ok and var is not None and it == var.type:
                    if deps is not None:
                        deps[i.sym] = var.type
                    continue
            elif type(i) is Const and type(i.value) is int:
                ct = i.type
                if type(ct) is ControlType and ct.name != "bool":
                    continue
            self.int_ctrl(i, (*path, ("idx", k)), "control-expr", "an index")

    def extern(self, e: Extern, path: Path) -> None:
        spec = EXTERNS.get(e.name)
        if spec is None:
            self.fail("extern-call", path, f"unknown extern {e.name!r}")
        if len(e.args) != spec.arity:
            self.fail("extern-call", path, f"{e.name} takes {spec.arity}, got {len(e.args)}")
        for k, a in enumerate(e.args):
            self.data(a, (*path, ("args", k)))
        if not isinstance(e.type, DataType):
            self.fail("extern-call", path, f"{e.name} typed {e.type}, not a data type")

    # -- windows and types ----------------------------------------------------- window-expr
    def window(self, e: WindowExpr, path: Path) -> None:
        var = self.lookup(e.sym, path, e.srcinfo)
        t = var.type
        if not isinstance(t, TensorType):
            self.fail("window-expr", path, f"window of {e.sym!r}, which is not a tensor")
        if len(e.idx) != t.rank():
            self.fail("window-expr", path, f"{len(e.idx)} coordinates for rank {t.rank()}")
        extents: list[tuple[Expr, Expr]] = []
        for k, w in enumerate(e.idx):
            wp: Path = (*path, ("idx", k))
            match w:
                case Point():
                    self.int_ctrl(w.pt, (*wp, ("pt", -1)), "window-expr", "a window point")
                case Interval():
                    self.int_ctrl(w.lo, (*wp, ("lo", -1)), "window-expr", "an interval bound")
                    self.int_ctrl(w.hi, (*wp, ("hi", -1)), "window-expr", "an interval bound")
                    extents.append((w.lo, w.hi))
                case _:
                    assert_never(w)
        wt = e.type
        if not (isinstance(wt, TensorType) and wt.window and wt.elem == t.elem):
            self.fail("window-expr", path, f"type {wt} is not a window of {t.elem}")
        if wt.rank() != len(extents):
            self.fail("window-expr", path, f"rank {wt.rank()} for {len(extents)} intervals")
        for k, ((lo, hi), ext) in enumerate(zip(extents, wt.shape, strict=True)):
            self.int_ctrl(ext, (*path, ("type", -1), ("shape", k)), "window-expr", "an extent")
            _check_extent(self, lo, hi, ext, (*path, ("type", -1), ("shape", k)))

    def tensor_shape(self, t: TensorType, path: Path) -> None:
        for k, s in enumerate(t.shape):
            self.int_ctrl(s, (*path, ("shape", k)), "control-expr", "a dimension")

    def call_arg(self, e: Expr, param: FnArg, path: Path) -> None:
        pt = param.type
        match pt:
            case ControlType():
                self.ctrl(e, path)
                if _is_int(pt) != _is_int(e.type) or not isinstance(e.type, ControlType):
                    self.fail("call-args", path, f"{e.type} passed for {param.sym!r}: {pt}")
            case DataType():
                if not isinstance(e, Read) or isinstance(e.type, TensorType):
                    self.fail("call-args", path, f"data parameter {param.sym!r} needs a scalar")
                self.data_read(e, path)
                if e.type != pt:
                    self.fail("call-args", path, f"{e.type} passed for {param.sym!r}: {pt}")
            case TensorType():
                if isinstance(e, WindowExpr):
                    self.window(e, path)
                elif isinstance(e, Read) and not e.idx:
                    var = self.lookup(e.sym, path, e.srcinfo)
                    if not isinstance(var.type, TensorType) or e.type != var.type:
                        self.fail("read-type", path, f"whole {e.sym!r} read as {e.type}")
                else:
                    self.fail("call-args", path, f"tensor parameter {param.sym!r} needs a tensor")
                at = e.type
                if not (
                    isinstance(at, TensorType) and at.elem == pt.elem and at.rank() == pt.rank()
                ):
                    self.fail("call-args", path, f"{at} passed for {param.sym!r}")
            case _:
                assert_never(pt)
        if isinstance(pt, ControlType):
            return
        assert isinstance(e, Read | WindowExpr)
        have = self.env[e.sym].mem
        if not passes_for(have, param.mem):
            names = [getattr(m, "__name__", repr(m)) for m in (have, param.mem)]
            self.fail(
                "call-args", path, f"{e.sym!r} lives in {names[0]}, the parameter in {names[1]}"
            )

    # -- statements -------------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...], path: Path, attr: str) -> None:
        bound: list[Sym] = []
        for k, s in enumerate(body):
            self.stmt(s, (*path, (attr, k)), bound)
        for sym in bound:
            # Leaving the block ends the scope of what it bound (a later block may rebind).
            del self.env[sym]

    def stmt(self, s: Stmt, path: Path, bound: list[Sym]) -> None:
        match s:
            case Assign() | Reduce():
                self.write_once(s, path)
            case Pass():
                pass
            case If():
                self.bool_ctrl(s.cond, (*path, ("cond", -1)), "an if condition")
                self.block(s.body, path, "body")
                self.block(s.orelse, path, "orelse")
            case For():
                self.loop(s, path)
            case Alloc():
                self.alloc(s, path)
                self.bind(s.sym, _Var(s.type, "alloc", s.mem), path, bound)
            case Call():
                self.call(s, path)
            case WindowStmt():
                if not isinstance(s.rhs, WindowExpr):
                    self.fail("window-expr", path, "a window statement binds a non-window")
                self.window(s.rhs, (*path, ("rhs", -1)))
                base = self.env[s.rhs.sym].mem
                self.bind(s.sym, _Var(s.rhs.type, "window", base), path, bound)
            case Scope():
                self.scope(s, path)
            case _:
                assert_never(s)

    def write_once(self, s: Assign | Reduce, path: Path) -> None:
        """``write``, skipped for a statement already checked under equal bindings."""
        if not self.memo:
            self.write(s, path)
            return
        hit = _WRITE_MEMO.get(id(s))
        if hit is not None and hit[0] is s and _holds(self.env, hit[1]):
            if self.deps is not None:
                self.deps.update(hit[1])
            return
        outer, self.deps = self.deps, {}
        try:
            self.write(s, path)
            deps = tuple(self.deps.items())
        finally:
            self.deps = outer
        if outer is not None:
            outer.update(deps)
        if len(_WRITE_MEMO) >= _CTRL_MEMO_LIMIT:
            _WRITE_MEMO.clear()
        _WRITE_MEMO[id(s)] = (s, deps)

    def write(self, s: Assign | Reduce, path: Path) -> None:
        var = self.lookup(s.sym, path, s.srcinfo)
        t = var.type
        if isinstance(t, ControlType):
            self.fail("write-target", path, f"{s.sym!r} ({var.role}, {t}) is written", s.srcinfo)
        rank = t.rank() if isinstance(t, TensorType) else 0
        if len(s.idx) != rank:
            self.fail("index-count", path, f"{s.sym!r} has rank {rank}, {len(s.idx)} indices")
        self.indices(s.idx, path)
        if not self.data_ok(s.rhs):
            self.data(s.rhs, (*path, ("rhs", -1)))

    def loop(self, s: For, path: Path) -> None:
        self.loop_header(s, path)
        self.bind(s.iter, LOOP_VAR, path, [])
        self.block(s.body, path, "body")
        del self.env[s.iter]

    def loop_header(self, s: For, path: Path) -> None:
        self.int_ctrl(s.lo, (*path, ("lo", -1)), "loop-bounds", "a loop bound")
        self.int_ctrl(s.hi, (*path, ("hi", -1)), "loop-bounds", "a loop bound")
        self.loop_mode(s, path)

    def loop_mode(self, s: For, path: Path) -> None:
        """A loop's mode and axis; they read no binding, only the CUDA scopes around (a
        step that changes only them is checked here alone: ``verify_step``)."""
        if s.mode not in ("seq", "par"):
            self.fail("loop-bounds", path, f"loop mode {s.mode!r}")
        if s.axis is not None and (
            s.axis not in CUDA_AXES or s.mode != "par" or not self.cuda_depth
        ):
            msg = f"loop {s.iter!r} bound to {s.axis!r} (mode {s.mode}, cuda scopes around: "
            self.fail("loop-axis", path, msg + f"{self.cuda_depth})")

    def alloc(self, s: Alloc, path: Path) -> None:
        t = s.type
        if isinstance(t, TensorType):
            if t.window:
                self.fail("alloc", path, f"allocation of a window type {t}")
            self.tensor_shape(t, (*path, ("type", -1)))
        elif not isinstance(t, DataType):
            self.fail("alloc", path, f"allocation of {t}, not data")
        self.alloc_memory(s, path)

    def alloc_memory(self, s: Alloc, path: Path) -> None:
        """An allocation's memory; it reads no binding (a step that changes only it is
        checked here alone: ``verify_step``)."""
        mem: object = s.mem
        if not (isinstance(mem, type) and issubclass(mem, Memory)):
            self.fail("alloc", path, f"memory {mem!r} is not a Memory subclass")

    def call(self, s: Call, path: Path) -> None:
        callee = s.proc
        if id(callee) not in self.verified and not (self.memo and _known_valid(callee)):
            _Verifier(callee, self.verified, self.memo).proc()
        if len(s.args) != len(callee.args):
            self.fail("call-args", path, f"{callee.name} takes {len(callee.args)} arguments")
        for k, (a, param) in enumerate(zip(s.args, callee.args, strict=True)):
            self.call_arg(a, param, (*path, ("args", k)))

    def scope(self, s: Scope, path: Path) -> None:
        self.scope_header(s, path)
        cuda = s.target == "cuda"
        self.cuda_depth += cuda
        self.block(s.body, path, "body")
        self.cuda_depth -= cuda

    def scope_header(self, s: Scope, path: Path) -> None:
        if not s.name or (s.target is not None and not s.target):
            self.fail("scope", path, f"scope name {s.name!r}, target {s.target!r}")

    # -- the proc ------------------------------------------------------------------------
    def fnarg(self, a: FnArg, path: Path, bound: list[Sym]) -> None:
        t = a.type
        if isinstance(t, ControlType):
            if a.mem is not None:
                self.fail("fnarg", path, f"control parameter {a.sym!r} has a memory")
        elif not (isinstance(mem := a.mem, type) and issubclass(mem, Memory)):
            self.fail("fnarg", path, f"data parameter {a.sym!r} has no memory")
        self.bind(a.sym, _Var(t, "param", a.mem), path, bound)

    def proc(self) -> None:
        p = self.p
        bound: list[Sym] = []
        for k, a in enumerate(p.args):
            self.fnarg(a, (("args", k),), bound)
        for k, a in enumerate(p.args):
            if isinstance(a.type, TensorType):
                self.tensor_shape(a.type, (("args", k), ("type", -1)))
        for k, pred in enumerate(p.preds):
            self.bool_ctrl(pred, (("preds", k),), "an assert")
        self.block(p.body, (), "body")
        self.verified.add(id(p))


def _linear(e: Expr) -> dict[Sym | None, int] | None:
    """``e`` as a linear combination of control reads (``None`` keys the constant term), or
    None when it is not one (division, modulo, strides)."""
    match e:
        case Const(value=bool()):
            return None
        case Const(value=int() as v):
            return {None: v}
        case Read(idx=()):
            return {e.sym: 1}
        case USub():
            a = _linear(e.arg)
            return None if a is None else {k: -c for k, c in a.items()}
        case BinOp(op="+" | "-" | "*"):
            a, b = _linear(e.lhs), _linear(e.rhs)
            if a is None or b is None:
                return None
            if e.op == "*":
                if set(a) == {None}:
                    return {k: a[None] * c for k, c in b.items()}
                if set(b) == {None}:
                    return {k: b[None] * c for k, c in a.items()}
                return None
            sign = 1 if e.op == "+" else -1
            out = dict(a)
            for k, c in b.items():
                out[k] = out.get(k, 0) + sign * c
            return out
        case _:
            return None


def _check_extent(v: _Verifier, lo: Expr, hi: Expr, ext: Expr, path: Path) -> None:
    """A window's extent must equal ``hi - lo`` (decided when all three are linear)."""
    a, b, e = _linear(lo), _linear(hi), _linear(ext)
    if a is None or b is None or e is None:
        return
    diff = dict(b)
    for k, c in a.items():
        diff[k] = diff.get(k, 0) - c
    if {k: c for k, c in diff.items() if c} != {k: c for k, c in e.items() if c}:
        v.fail("window-expr", path, "the extent is not the interval's hi - lo")


# Procs that passed a verification, by id with the proc kept alive (versions share most of
# their nodes, so an entry costs little): ``verify_step`` checks a new version against one of
# these, and a call to one of them needs no second walk of the callee. Only a proc that
# passed goes in, so membership is proof of validity; when full, the least recently used
# entry (asked or remembered) goes.
_VALID: dict[int, ProcDef] = {}
_VALID_LIMIT = 1 << 10


def known_valid(p: ProcDef) -> bool:
    """Whether ``p`` (this very object) passed a verification in this process."""
    i = id(p)
    if _VALID.get(i) is not p:
        return False
    # least recently used goes first: a proc that many steps start from (the base of an
    # autotuner's variants) stays known, where clearing the table when full made every
    # later step from it walk the whole proc
    del _VALID[i]
    _VALID[i] = p
    return True


def remember_valid(p: ProcDef) -> None:
    """Record that ``p`` passed a verification (only a verifier may call this)."""
    i = id(p)
    if i in _VALID:  # the entry keeps its proc alive, so the id is this proc's
        del _VALID[i]
    elif len(_VALID) >= _VALID_LIMIT:
        del _VALID[next(iter(_VALID))]  # the least recently used
    _VALID[i] = p


def _known_valid(p: ProcDef) -> bool:
    return _VALID.get(id(p)) is p


def verify_proc(p: ProcDef, *, memo: bool = True) -> None:
    """Check every invariant listed in this module's docstring on ``p`` and its callees.

    Args:
        p: the proc.
        memo: reuse the checks of nodes already verified (under equal bindings) and skip
            callees known valid; ``False`` is the reference walk that reuses nothing
            (``CURSCHED_VERIFY=full``, and the soundness fuzzer's comparison).

    Raises:
        IRVerificationError: naming the first broken invariant and where it is broken.
    """
    _Verifier(p, set(), memo).proc()
    remember_valid(p)
