"""Exo 1.0's API spelled as Exo: a schedule written for Exo runs with ``from exo import ...``
(and ``from exo.stdlib.scheduling import *``) changed to ``from cursched.compat.exo import ...``.

What this layer does, and nothing more:

- ``proc``, ``instr``, ``config``, ``DRAM``, ``Memory``, ``SchedulingError``, ``Procedure``,
  ``compile_procs``, ``compile_procs_to_strings``;
- every primitive of ``exo.API_scheduling`` and the helpers of ``exo.stdlib.scheduling``
  under Exo's names and signatures, **returning the proc alone** (Exo's
  ``extract_subproc`` returns ``(proc, subproc)``, as there); each calls the cursched
  primitive, so every cursched check still runs (Exo's ``unsafe_disable_check(s)`` flags are
  accepted and ignored, except where cursched has the same opt-out);
- ``Procedure``: Exo's methods (``find``, ``find_loop``, ``find_alloc_or_arg``, ``find_all``,
  ``forward``, ``body``, ``args``, ``name``, ``is_instr``, ``get_instr``, ``c_code_str``,
  ``compile_c``, ``partial_eval``) over a cursched ``Proc`` (``.proc`` gives it back, with
  its history and the cursors a cursched schedule would use);
- instruction templates in Exo's convention (``translate_template``): in Exo, ``{x_data}``
  of a window in an addressable memory is its first *element* (``&{x_data}`` its address),
  where cursched writes ``{x}`` for the pointer; scalars and tensors are pointers in both.

See ``docs/porting_from_exo.md`` for the side-by-side guide and the table of every entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import cursched.primitives as P
from cursched.analysis.bounds import check_bounds
from cursched.codegen.c.unit import generate_unit
from cursched.cursors import Cursor, ForCursor, Tombstone
from cursched.errors import CurschedError, SchedulingError
from cursched.frontend import parse_function
from cursched.ir.config import ConfigDef
from cursched.ir.config import config as _config
from cursched.ir.memory import DRAM, DRAM_STACK, DRAM_STATIC, Memory
from cursched.ir.nodes import Const, InstrInfo, ProcDef
from cursched.ir.printer import print_expr
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_type, subst_expr, subst_stmt
from cursched.ir.types import BOOL, ControlType, DataType, TensorType
from cursched.proc import Proc

Config = ConfigDef
"""Exo's ``Config`` (the class of a ``@config`` declaration)."""

# ------------------------------------------------------------------------------ Procedure


class Procedure:
    """An Exo ``Procedure``: a cursched ``Proc`` with Exo's method names.

    Cursors are cursched cursors (``ForCursor``, ``BlockCursor``, ...); their navigation
    methods have Exo's names (``parent``, ``body``, ``next``, ``before``, ``expand``, ...).
    """

    __slots__ = ("proc",)

    def __init__(self, proc: Proc) -> None:
        self.proc = proc

    @property
    def __cursched_ir__(self) -> ProcDef:
        """The IR, so that procs calling this one parse (the frontend's protocol)."""
        return self.proc.ir()

    def __str__(self) -> str:
        return str(self.proc)

    def __repr__(self) -> str:
        return repr(self.proc)

    def _repr_html_(self) -> str:
        return self.proc._repr_html_()

    # -- Exo's methods ---------------------------------------------------------------------
    def name(self) -> str:
        return self.proc.name()

    def is_instr(self) -> bool:
        return self.proc.is_instr()

    def get_instr(self) -> str | None:
        """The C template (cursched's convention), or None for a plain proc."""
        info = self.proc.ir().instr
        return None if info is None else info.c_template

    def args(self) -> tuple[Cursor, ...]:
        return self.proc.args()

    def body(self) -> Cursor:
        return self.proc.body()

    def find(self, pattern: str, many: bool = False) -> Any:
        return self.proc.find(pattern, many=many)

    def find_loop(self, pattern: str, many: bool = False) -> Any:
        return self.proc.find_loop(pattern, many=many)  # type: ignore[call-overload]

    def find_alloc_or_arg(self, pattern: str) -> Cursor:
        return self.proc.find_alloc_or_arg(pattern)

    def find_all(self, pattern: str) -> list[Cursor]:
        return self.proc.find_all(pattern)

    def forward(self, cursor: Cursor | Tombstone) -> Cursor | Tombstone:
        return self.proc.forward(cursor)

    def c_code_str(self) -> str:
        """The generated C of this proc and its callees (one unit)."""
        return generate_unit(self.name(), [self.proc.ir()]).c_source

    def compile_c(self, directory: Path | str, filename: str) -> None:
        """Write ``filename.c`` and ``filename.h`` into ``directory``."""
        compile_procs([self], directory, f"{filename}.c", f"{filename}.h")

    def partial_eval(self, *args: Any, **kwargs: Any) -> Procedure:
        """The proc with leading control arguments (or those named) fixed to constants."""
        return Procedure(Proc(_partial_eval(self.proc.ir(), args, kwargs)))

    # cursched extensions, spelled as cursched (not in Exo)
    def interpret(self, *args: Any, **kwargs: Any) -> None:
        self.proc.interpret(*args, **kwargs)

    def compile(self, **options: Any) -> Callable[..., None]:
        return self.proc.compile(**options)

    def history(self) -> str:
        return self.proc.history()


def _partial_eval(ir: ProcDef, args: Sequence[Any], kwargs: dict[str, Any]) -> ProcDef:
    values: dict[str, Any] = dict(kwargs)
    for a, v in zip(ir.args, args, strict=False):
        values[a.sym.name] = v
    env: dict[Sym, Any] = {}
    keep = []
    for a in ir.args:
        if a.sym.name not in values:
            keep.append(a)
            continue
        v = values.pop(a.sym.name)
        if not isinstance(a.type, ControlType):
            raise SchedulingError(f"partial_eval: {a.sym.name} is not a control argument")
        ok = isinstance(v, bool) if a.type == BOOL else isinstance(v, int)
        if not ok or isinstance(v, bool) != (a.type == BOOL):
            raise SchedulingError(f"partial_eval: {a.sym.name}: {v!r} is not a {a.type}")
        env[a.sym] = Const(v, a.type)
    if values:
        raise SchedulingError(f"partial_eval: {ir.name} has no arguments {sorted(values)}")

    def fe(e: Any) -> Any:
        return subst_expr(e, env)

    new_args = tuple(
        a.replace(type=map_type(a.type, fe)) if isinstance(a.type, TensorType) else a for a in keep
    )
    body = tuple(subst_stmt(s, env) for s in ir.body)
    preds = tuple(fe(e) for e in ir.preds)
    return check_bounds(ir.replace(args=new_args, body=body, preds=preds))


_PLAIN: tuple[type, ...] = (Cursor, str, int)
"""The common arguments, passed as they are (a tuple: ``isinstance`` with a union of three
costs 0.15 us more a call in Python 3.11)."""


def _unwrap(x: Any) -> Any:
    if isinstance(x, _PLAIN):
        return x
    if isinstance(x, Procedure):
        return x.proc
    if isinstance(x, list | tuple) and any(isinstance(y, Procedure) for y in x):
        return type(x)(_unwrap(y) for y in x)
    return x


def _procedure(p: Any) -> Proc:
    q = _unwrap(p)
    if not isinstance(q, Proc):
        raise SchedulingError(f"expected a Procedure, got {type(p).__name__}")
    return q


# --------------------------------------------------------------------------- decorators


def proc(fn: Callable[..., Any]) -> Procedure:
    """Exo's ``@proc``."""
    from cursched.proc import proc as _proc

    return Procedure(_proc(fn))


def translate_template(ir: ProcDef, template: str) -> str:
    """An Exo C template in cursched's placeholders (see the module doc).

    Exo fills ``{x}`` with the C argument a function call would get and ``{x_data}`` with
    the same, except for windows, where it is the window's first element (an lvalue; a
    register for a non-addressable memory). So, for a parameter ``x``:

    - a window in an addressable memory (DRAM): ``&{x_data}`` -> ``{x}`` (cursched's element
      pointer), ``{x_data}`` -> ``(*{x})``;
    - a window in a register memory (``addressable = False``): ``{x_data}`` -> ``{x}`` (the
      register lvalue in cursched too);
    - a contiguous tensor: ``{x_data}`` -> ``{x}`` (the pointer in both);
    - a data scalar: ``{x}`` and ``{x_data}`` -> ``{x_data}`` (its address in both);
    - a control value: ``{n}`` is the same in both.
    """
    out = template
    for a in ir.args:
        n = a.sym.name
        ref, amp = "{" + n + "_data}", re.compile(r"&\s*\{" + re.escape(n) + r"_data\}")
        match a.type:
            case TensorType(window=True):
                if a.mem is not None and not a.mem.addressable:
                    out = amp.sub("&{" + n + "}", out).replace(ref, "{" + n + "}")
                else:
                    out = amp.sub("{" + n + "}", out).replace(ref, "(*{" + n + "})")
            case TensorType():
                out = out.replace(ref, "{" + n + "}")
            case DataType():
                out = out.replace("{" + n + "}", ref)
            case ControlType():
                pass
    return out


def instr(c_instr: str, c_global: str = "") -> Callable[[Callable[..., Any]], Procedure]:
    """Exo's ``@instr(template, c_global)``: the template in Exo's convention."""

    def wrap(fn: Callable[..., Any]) -> Procedure:
        ir = parse_function(fn, instr=(c_instr, c_global))
        info = InstrInfo(translate_template(ir, c_instr), c_global)
        return Procedure(Proc(check_bounds(ir.replace(instr=info))))

    return wrap


def config(cls: Any = None, *, readwrite: bool = True) -> Any:
    """Exo's ``@config`` (and ``@config(readwrite=...)``; fields are always read-write)."""
    del readwrite
    if cls is None:
        return _config
    return _config(cls)


# ------------------------------------------------------------------------------ output


def compile_procs_to_strings(procs: Iterable[Any], header_name: str) -> tuple[str, str]:
    """The C source and header of ``procs`` (Exo's function of that name)."""
    stem = header_name.removesuffix(".h")
    unit = generate_unit(stem, [_procedure(p).ir() for p in procs])
    return unit.c_source, unit.h_source


def compile_procs(procs: Iterable[Any], basedir: Path | str, c_file: str, h_file: str) -> None:
    """Write the C source and header of ``procs`` into ``basedir``."""
    c, h = compile_procs_to_strings(procs, h_file)
    base = Path(basedir)
    base.mkdir(parents=True, exist_ok=True)
    (base / c_file).write_text(c)
    (base / h_file).write_text(h)


# ---------------------------------------------------------------------------- primitives


def _prim(name: str, rename: dict[str, str] | None = None, drop: Iterable[str] = ()) -> Any:
    """The Exo-spelled form of cursched primitive ``name``: the proc alone comes back."""
    fn = getattr(P, name)
    renames, dropped = rename or {}, set(drop)

    def run(proc: Any, *args: Any, **kwargs: Any) -> Procedure:
        p = proc.proc if type(proc) is Procedure else _procedure(proc)
        if not kwargs:  # the usual call: no keyword dict to build and unpack (~0.3 us)
            new, _ = fn(p, *map(_unwrap, args))
            return Procedure(new)
        kw = {renames.get(k, k): _unwrap(v) for k, v in kwargs.items() if k not in dropped}
        new, _ = fn(p, *map(_unwrap, args), **kw)
        return Procedure(new)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"Exo's ``{name}``: ``cursched.{name}``, returning the proc alone."
    return run


_UNSAFE = {
    "unsafe_disable_check": "unsafe_skip_checks",
    "unsafe_disable_checks": "unsafe_skip_checks",
}
# Exo flags with no cursched opt-out: the rewrite is always checked
_IGNORED = ("unsafe_disable_check", "unsafe_disable_checks")

simplify = _prim("simplify")
rename = _prim("rename")
insert_pass = _prim("insert_pass")
delete_pass = _prim("delete_pass")
reorder_stmts = _prim("reorder_stmts")
parallelize_loop = _prim("parallelize_loop")
commute_expr = _prim("commute_expr")
left_reassociate_expr = _prim("left_reassociate_expr")
rewrite_expr = _prim("rewrite_expr")
bind_expr = _prim("bind_expr")
inline = _prim("inline")
replace = _prim("replace", drop=("quiet",))
call_eqv = _prim("call_eqv")
set_precision = _prim("set_precision")
set_window = _prim("set_window")
set_memory = _prim("set_memory")
bind_config = _prim("bind_config")
delete_config = _prim("delete_config")
write_config = _prim("write_config")
expand_dim = _prim("expand_dim")
rearrange_dim = _prim("rearrange_dim")
divide_dim = _prim("divide_dim")
mult_dim = _prim("mult_dim")
unroll_buffer = _prim("unroll_buffer")
lift_alloc = _prim("lift_alloc")
sink_alloc = _prim("sink_alloc")
delete_buffer = _prim("delete_buffer")
reuse_buffer = _prim("reuse_buffer")
inline_window = _prim("inline_window")
stage_mem = _prim("stage_mem")
divide_with_recompute = _prim("divide_with_recompute")
mult_loops = _prim("mult_loops")
join_loops = _prim("join_loops")
cut_loop = _prim("cut_loop")
shift_loop = _prim("shift_loop")
reorder_loops = _prim("reorder_loops")
merge_writes = _prim("merge_writes")
split_write = _prim("split_write")
fold_into_reduce = _prim("fold_into_reduce")
inline_assign = _prim("inline_assign")
lift_reduce_constant = _prim("lift_reduce_constant")
fission = _prim("fission", drop=_IGNORED)
fuse = _prim("fuse", drop=_IGNORED)
remove_loop = _prim("remove_loop", rename=_UNSAFE)
add_loop = _prim("add_loop", rename=_UNSAFE)
unroll_loop = _prim("unroll_loop")
lift_scope = _prim("lift_scope")
eliminate_dead_code = _prim("eliminate_dead_code")
specialize = _prim("specialize")
add_unsafe_guard = _prim("add_unsafe_guard")
insert_noop_call = _prim("insert_noop_call")


def make_instr(proc: Any, c_instr: str, c_global: str = "") -> Procedure:
    """Exo's ``make_instr``: the template in Exo's convention (``translate_template``)."""
    p = _procedure(proc)
    new, _ = P.make_instr(p, translate_template(p.ir(), c_instr), c_global)
    return Procedure(new)


def divide_loop(
    proc: Any,
    loop_cursor: Any,
    div_const: int,
    new_iters: Sequence[str],
    tail: str = "guard",
    perfect: bool = False,
) -> Procedure:
    """Exo's ``divide_loop``: ``cursched.split``."""
    names = (new_iters[0], new_iters[1]) if len(new_iters) == 2 else tuple(new_iters)
    new, _ = P.split(_procedure(proc), loop_cursor, div_const, names, tail=tail, perfect=perfect)
    return Procedure(new)


def resize_dim(
    proc: Any, buf_cursor: Any, dim_idx: int, size: Any, offset: Any, fold: bool = False
) -> Procedure:
    """Exo's ``resize_dim`` (``fold=True``, a circular buffer, is not in cursched)."""
    if fold:
        raise SchedulingError("resize_dim: fold=True (circular buffers) is not in cursched")
    new, _ = P.resize_dim(_procedure(proc), buf_cursor, dim_idx, size, offset)
    return Procedure(new)


def extract_subproc(
    proc: Any, block: Any, subproc_name: str, include_asserts: bool = True
) -> tuple[Procedure, Procedure]:
    """Exo's ``extract_subproc``: ``(proc, subproc)``; cursched always carries the asserts
    the block needs (``include_asserts`` is accepted and ignored)."""
    del include_asserts
    new, c = P.extract_subproc(_procedure(proc), block, subproc_name)
    return Procedure(new), Procedure(c.subproc)


def autofission(proc: Any, gap_cursor: Any, n_lifts: int = 1) -> Procedure:
    """Exo's ``autofission``: ``fission``, then the loops of either side whose variable that
    side no longer uses are removed (when ``remove_loop`` proves it)."""
    p, c = P.fission(_procedure(proc), gap_cursor, n_lifts)
    for side in (c.first, c.second):
        loop: Any = p.forward(side)
        while isinstance(loop, ForCursor):
            try:
                p, r = P.remove_loop(p, loop)
            except SchedulingError:
                break
            body = r.body
            loop = body[0] if len(body) == 1 else None
    return Procedure(p)


def autolift_alloc(
    proc: Any,
    alloc_cursor: Any,
    n_lifts: int = 1,
    mode: str = "row",
    size: int | None = None,
    keep_dims: bool = False,
) -> Procedure:
    """Exo's ``autolift_alloc``: ``lift_alloc`` ``n_lifts`` times; where a loop's variable
    indexes the buffer, a dimension of the loop's extent (or ``size``) is added first
    (``mode="row"``: outermost, ``"col"``: innermost)."""
    del keep_dims
    p = _procedure(proc)
    alloc = p.forward(alloc_cursor) if isinstance(alloc_cursor, Cursor) else alloc_cursor
    for _ in range(n_lifts):
        try:
            p, a = P.lift_alloc(p, alloc)
            alloc = a.alloc
            continue
        except SchedulingError:
            pass
        a0: Any = p.find_alloc_or_arg(alloc) if isinstance(alloc, str) else p.forward(alloc)
        loop = a0.parent()
        if not isinstance(loop, ForCursor):
            raise SchedulingError(f"autolift_alloc: nothing to lift {a0.describe()} out of")
        lo, hi = print_expr(loop.loop().lo), print_expr(loop.loop().hi)
        extent = size if size is not None else f"{hi} - ({lo})"
        index = f"{loop.name()} - ({lo})"
        p, d = P.expand_dim(p, a0, extent, index)
        if mode == "col":
            rank = len(d.alloc.shape())
            p, d = P.rearrange_dim(p, d.alloc, [*range(1, rank), 0])
        p, a = P.lift_alloc(p, d.alloc)
        alloc = a.alloc
    return Procedure(p)


# ---------------------------------------------------------------------- stdlib helpers


def repeat(sched: Callable[..., Any], n_times: int | None = None, verbose: bool = False) -> Any:
    """Exo's ``repeat``: apply ``sched`` until it fails (or ``n_times`` times)."""
    if n_times is not None and (not isinstance(n_times, int) or n_times < 1):
        raise TypeError("expected n_times to be None or a positive int")

    def repeated(proc: Any, *args: Any, **kwargs: Any) -> Any:
        if n_times is not None:
            for _ in range(n_times):
                proc = sched(proc, *args, **kwargs)
            return proc
        while True:
            try:
                proc = sched(proc, *args, **kwargs)
            except (CurschedError, TypeError, ValueError) as err:
                if verbose:
                    print("repeat ended with error", err)
                return proc

    repeated.__name__ = f"repeat_{getattr(sched, '__name__', 'sched')}"
    return repeated


def sched_seq(proc: Any, sched_list: Iterable[Any]) -> Any:
    """Exo's ``sched_seq``: each entry a callable of the proc or ``(op, *args)``."""
    for s in sched_list:
        if callable(s):
            proc = s(proc)
        elif isinstance(s, list | tuple) and s:
            proc = s[0](proc, *s[1:])
        else:
            raise TypeError("sched_seq wants callables or (op, *args) entries")
    return proc


def loop_hack(
    sched: Callable[..., Any], find_func: Callable[[Any], Any], verbose: bool = False
) -> Any:
    """Exo's deprecated ``loop_hack``: apply ``sched`` at every match of ``find_func``."""
    del verbose

    def run(proc: Any, *args: Any, **kwargs: Any) -> Any:
        for i in range(len(find_func(proc))):
            proc = sched(proc, find_func(proc)[i], *args, **kwargs)
        return proc

    return run


def lift_if(proc: Any, cursor: Any, n_lifts: int = 1) -> Procedure:
    """Exo's ``lift_if``: ``lift_scope`` ``n_lifts`` times."""
    p = _procedure(proc)
    for _ in range(n_lifts):
        p, c = P.lift_scope(p, cursor)
        cursor = c.outer
    return Procedure(p)


def call_site_mem_aware_replace(
    proc: Any, block_cursor: Any, subproc: Any, quiet: bool = False
) -> Procedure:
    """Exo's ``call_site_mem_aware_replace``: cursched's ``replace`` always checks that the
    memories at the call site are the callee's."""
    del quiet
    new, _ = P.replace(_procedure(proc), block_cursor, _procedure(subproc))
    return Procedure(new)


def replace_all(proc: Any, subprocs: Any, mem_aware: bool = True) -> Procedure:
    """Exo's ``replace_all``: ``cursched.stdlib.replace_all`` (memories always match)."""
    del mem_aware
    from cursched.stdlib import replace_all as _replace_all

    subs = subprocs if isinstance(subprocs, list | tuple) else [subprocs]
    new, _ = _replace_all(_procedure(proc), [_procedure(s) for s in subs])
    return Procedure(new)


def replace_once(proc: Any, subprocs: Any, mem_aware: bool = True) -> Procedure:
    """Exo's ``replace_once``: the first block (in program order) that one of ``subprocs``
    replaces; the proc unchanged when none does."""
    del mem_aware
    subs = subprocs if isinstance(subprocs, list | tuple) else [subprocs]
    p = _procedure(proc)
    for s in subs:
        sub = _procedure(s)
        n = len(sub.ir().body)
        stmt: Any
        for stmt in p.find_all("_"):
            try:
                block = stmt.as_block() if n == 1 else stmt.expand(0, n - 1)
                new, _ = P.replace(p, block, sub)
            except CurschedError:
                continue
            return Procedure(new)
    return Procedure(p)


__all__ = [
    "DRAM",
    "DRAM_STACK",
    "DRAM_STATIC",
    "Config",
    "Memory",
    "Procedure",
    "SchedulingError",
    "add_loop",
    "add_unsafe_guard",
    "autofission",
    "autolift_alloc",
    "bind_config",
    "bind_expr",
    "call_eqv",
    "call_site_mem_aware_replace",
    "commute_expr",
    "compile_procs",
    "compile_procs_to_strings",
    "config",
    "cut_loop",
    "delete_buffer",
    "delete_config",
    "delete_pass",
    "divide_dim",
    "divide_loop",
    "divide_with_recompute",
    "eliminate_dead_code",
    "expand_dim",
    "extract_subproc",
    "fission",
    "fold_into_reduce",
    "fuse",
    "inline",
    "inline_assign",
    "inline_window",
    "insert_noop_call",
    "insert_pass",
    "instr",
    "join_loops",
    "left_reassociate_expr",
    "lift_alloc",
    "lift_if",
    "lift_reduce_constant",
    "lift_scope",
    "loop_hack",
    "make_instr",
    "merge_writes",
    "mult_dim",
    "mult_loops",
    "parallelize_loop",
    "proc",
    "rearrange_dim",
    "remove_loop",
    "rename",
    "reorder_loops",
    "reorder_stmts",
    "repeat",
    "replace",
    "replace_all",
    "replace_once",
    "resize_dim",
    "reuse_buffer",
    "rewrite_expr",
    "sched_seq",
    "set_memory",
    "set_precision",
    "set_window",
    "shift_loop",
    "simplify",
    "sink_alloc",
    "specialize",
    "split_write",
    "stage_mem",
    "translate_template",
    "unroll_buffer",
    "unroll_loop",
    "write_config",
]
