"""Random well-formed procs for the soundness fuzzer (``test_soundness_fuzz.py``).

A proc is drawn as surface text and parsed, so that every generated proc is one a user could
have written. What it contains, by design (each feeds some primitive's preconditions):

- loop nests with constant bounds (``seq(0, 4)``), size bounds (``seq(0, n)``, ``seq(1, n)``)
  and, under ``assert n % 4 == 0``, quotient bounds (``seq(0, n / 4)`` indexed ``4 * q``);
- assignments and reductions into tensors (``x``, ``y``, a 2-d ``z``) and scalars (the argument
  ``s``, local scalars) with shifted and affine indices, reading what is written (stencils,
  prefix sums ``x[i + 1] += x[i]``, accumulators);
- ifs on control conditions (``i < 2``, ``i % 2 == 0``, ``n > 3``), with and without ``else``;
- allocations (``[4]``, ``[8]``, ``[4, 4]``, fully initialised before they are read, so no
  result depends on uninitialised memory), windows (``w = x[i:i + 2]``), calls of a small
  proc (``addone``; ``acc2`` on two overlapping windows of one buffer) and of an instruction
  (``vadd4``) together with loops that match its body
  (so ``replace`` has something to accept).

Indices stay in bounds by construction: a loop variable is "big" (below ``n``), "small"
(below 4) or "quad" (below ``n / 4``, used as ``4 * q``); an index adds at most one big or
quad term, one small term and a constant up to 2, and tensors have ``n + 8`` elements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

from cursched import DRAM, DRAM_STACK, Proc, config
from cursched.frontend import parse_source

__all__ = ["ENV", "HELPERS", "Scope", "make_env", "proc_text"]

# --------------------------------------------------------------------------- helper procs

ADDONE = """
def addone(k: size, a: [f32][k] @ DRAM):
    for q in seq(0, k):
        a[q] += 1.0
"""

ADDTWO = """
def addtwo(k: size, a: [f32][k] @ DRAM):
    for q in seq(0, k):
        a[q] += 2.0
"""

# called with two windows into one buffer (``x[b + 1:b + 3], x[b:b + 2]``): the C backend
# must not declare the pointers ``restrict`` (issue 11, finding 1)
ACC2 = """
def acc2(k: size, dst: [f32][k] @ DRAM, src: [f32][k] @ DRAM):
    for q in seq(0, k):
        dst[q] += src[q]
"""

VADD4 = """
@instr("vadd4({dst_data}, {src_data});")
def vadd4(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    for q in seq(0, 4):
        dst[q] += src[q]
"""

# an instruction that only applies to aligned data: replace must prove ``off % 4 == 0``
VLOAD4A = """
@instr("vload4a({dst_data}, {src_data});")
def vload4a(off: index, dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM):
    assert off % 4 == 0
    for q in seq(0, 4):
        dst[q] = src[q]
"""


# a proc that does nothing, for insert_noop_call (issue 15)
FZ_NOOP = """
def fz_noop(k: index):
    pass
"""


def make_env() -> dict[str, object]:
    """The names the generated procs may use: memories, ``addone``, ``vadd4``, ``vload4a``,
    ``fz_noop`` and the configuration ``FzConfig`` (one f32 field ``v``)."""
    env: dict[str, object] = {"DRAM": DRAM, "DRAM_STACK": DRAM_STACK}
    env["FzConfig"] = config(type("FzConfig", (), {"__annotations__": {"v": "f32"}}))
    for text in (ADDONE, ADDTWO, ACC2, VADD4, VLOAD4A, FZ_NOOP):
        p = Proc(parse_source(text, env))
        env[p.name()] = p
    return env


ENV = make_env()
#: The helper procs by name (the callees of generated calls, and ``replace`` instructions).
HELPERS: dict[str, Proc] = {k: v for k, v in ENV.items() if isinstance(v, Proc)}

# ----------------------------------------------------------------------------- scopes


@dataclass
class Scope:
    """What a statement being drawn may use: loop variables by kind, live local buffers."""

    big: list[str] = field(default_factory=list)  # 0 <= v < n
    small: list[str] = field(default_factory=list)  # 0 <= v < 4
    quad: list[str] = field(default_factory=list)  # 0 <= v < n / 4
    # (name, rank): [4], [8] (named e...), [4, 4]; rank 0: [2] read at constant indices only
    bufs: list[tuple[str, int]] = field(default_factory=list)
    scalars: list[str] = field(default_factory=list)
    depth: int = 0
    mod4: bool = False  # the proc asserts n % 4 == 0
    nloops: int = 0  # enclosing loops whose trip count grows with n (at most NLOOPS)

    def child(self) -> Scope:
        return Scope(
            list(self.big),
            list(self.small),
            list(self.quad),
            list(self.bufs),
            list(self.scalars),
            self.depth + 1,
            self.mod4,
            self.nloops,
        )


#: At most this many nested loops over ``n`` (or ``m``, ``n / 4``): the interpreter runs every
#: accepted step at sizes up to 16, and five nested loops over n made one schedule of a
#: campaign take minutes (16^5 iterations per trial) without reaching any precondition that
#: two do not; deeper nests are drawn over constant ranges
NLOOPS = 2


def grows(sc: Scope) -> bool:
    """Whether a loop drawn in ``sc`` may run over ``n``."""
    return sc.nloops < NLOOPS


class Names:
    """Fresh names (one counter per proc drawn)."""

    def __init__(self) -> None:
        self.k = 0

    def fresh(self, prefix: str) -> str:
        self.k += 1
        return f"{prefix}{self.k}"


# ---------------------------------------------------------------------------- indices


@st.composite
def big_index(draw: st.DrawFn, sc: Scope) -> str:
    """An index below ``n + 6``: at most one big/quad term, one small term, a constant."""
    terms: list[str] = []
    choices = [f"{v}" for v in sc.big] + [f"4 * {v}" for v in sc.quad]
    # quasi-affine terms (floor division, modulo) stay below n too
    choices += [f"{v} / 2" for v in sc.big] + [f"{v} % 3" for v in sc.big + sc.quad]
    if choices and draw(st.integers(0, 3)) > 0:
        terms.append(draw(st.sampled_from(choices)))
    if len(sc.small) > 0 and draw(st.booleans()):
        terms.append(draw(st.sampled_from(sc.small)))
    c = draw(st.integers(0, 2))
    if c or not terms:
        terms.append(str(c))
    return " + ".join(terms)


@st.composite
def small_index(draw: st.DrawFn, sc: Scope, size: int = 4) -> str:
    """An index below ``size`` (4 or 8)."""
    if len(sc.small) > 0 and draw(st.booleans()):
        v = draw(st.sampled_from(sc.small))
        c = draw(st.integers(0, size - 4))
        return f"{v} + {c}" if c else v
    return str(draw(st.integers(0, size - 1)))


@st.composite
def location(draw: st.DrawFn, sc: Scope) -> str:
    """A scalar place: a tensor element, a local buffer element or a scalar."""
    kinds = ["x", "y", "z"] + (["buf"] if sc.bufs else []) + ["scalar"]
    kind = draw(st.sampled_from(kinds))
    if kind in ("x", "y"):
        return f"{kind}[{draw(big_index(sc))}]"
    if kind == "z":
        return f"z[{draw(small_index(sc))}, {draw(big_index(sc))}]"
    if kind == "buf":
        name, rank = draw(st.sampled_from(sc.bufs))
        if rank == 0:
            return f"{name}[{draw(st.integers(0, 1))}]"
        if rank == 2:
            return f"{name}[{draw(small_index(sc))}, {draw(small_index(sc))}]"
        size = 8 if name.startswith("e") else 4
        return f"{name}[{draw(small_index(sc, size))}]"
    return draw(st.sampled_from(["s", *sc.scalars]))


@st.composite
def data_expr(draw: st.DrawFn, sc: Scope, depth: int = 0) -> str:
    """A data expression of reads, constants, ``+``, ``-`` and ``*``."""
    k = draw(st.integers(0, 5 if depth < 2 else 2))
    if k == 0:
        return draw(st.sampled_from(["1.0", "0.5", "2.0", "-1.0"]))
    if k <= 2:
        return draw(location(sc))
    a, b = draw(data_expr(sc, depth + 1)), draw(data_expr(sc, depth + 1))
    op = draw(st.sampled_from(["+", "*", "-"]))
    return f"({a} {op} {b})" if depth else f"{a} {op} {b}"


# --------------------------------------------------------------------------- statements


def _indent(lines: list[str], pad: str) -> list[str]:
    return [pad + ln for ln in lines]


@st.composite
def write(draw: st.DrawFn, sc: Scope) -> list[str]:
    op = draw(st.sampled_from(["=", "+="]))
    return [f"{draw(location(sc))} {op} {draw(data_expr(sc))}"]


@st.composite
def cond(draw: st.DrawFn, sc: Scope) -> str:
    opts = ["n > 3", "n < 6", "n % 2 == 0", "m < n", "m == 2"]
    for v in sc.big + sc.small + sc.quad:
        opts += [f"{v} < 2", f"{v} % 2 == 0", f"{v} >= 1", f"{v} == 0"]
    # decidable ones, for eliminate_dead_code and simplify
    opts += [f"{v} < 4" for v in sc.small] + [f"{v} < n" for v in sc.big] + ["n < 0"]
    c = draw(st.sampled_from(opts))
    if draw(st.integers(0, 5)) == 0:
        c = f"{c} and {draw(st.sampled_from(opts))}"
    return c


@st.composite
def loop_header(draw: st.DrawFn, sc: Scope, names: Names) -> tuple[str, Scope]:
    v = names.fresh("i")
    inner = sc.child()
    opts = ["small", "big", "big1"] + (["quad"] if sc.mod4 else [])
    kind = draw(st.sampled_from(opts)) if grows(sc) else "small"
    if kind != "small":
        inner.nloops += 1
    if kind == "small":
        lo, hi = draw(st.sampled_from([(0, 4), (0, 3), (1, 4), (0, 2), (2, 4)]))
        inner.small.append(v)
        return f"for {v} in seq({lo}, {hi}):", inner
    if kind == "quad":
        inner.quad.append(v)
        return f"for {v} in seq(0, n / 4):", inner
    inner.big.append(v)
    # "n, n" never runs (eliminate_dead_code); m <= n is asserted
    more = ["1, n", "0, n - 1", "2, n", "n, n", "0, m", "1, m", "m, n"]
    bounds = "0, n" if kind == "big" else draw(st.sampled_from(more))
    return f"for {v} in seq({bounds}):", inner


@st.composite
def block(draw: st.DrawFn, sc: Scope, names: Names, lo: int = 1, hi: int = 3) -> list[str]:
    """A list of statements in scope ``sc`` (allocations extend the scope of what follows)."""
    out: list[str] = []
    sc = sc.child()
    sc.depth -= 1  # same nesting level as the caller
    for _ in range(draw(st.integers(lo, hi))):
        out += draw(stmt(sc, names))
    return out


@st.composite
def shaped(draw: st.DrawFn, sc: Scope, names: Names, kind: str | None = None) -> list[str]:
    """Shapes that particular primitives look for (most random code never has them);
    ``kind`` forces one."""
    pad = "    "
    kind = kind or draw(
        st.sampled_from(
            [
                "twins",
                "perfect",
                "invariant",
                "double",
                "fold",
                "scaled",
                "dead",
                "const",
                "copy",
                "halves",
                "reuse",
                # issue 11: join_loops, reuse_buffer and merge_writes were accepted 0-2 times
                # in 4,944 schedules: their shapes are drawn three times as often
                "halves",
                "halves",
                "reuse",
                "reuse",
                "double",
                "double",
                # issue 11: the shapes of the primitives a 1,000-schedule campaign accepted
                # fewer than 10 times (kernels, scans, dead configuration writes, folds,
                # scaled reductions, perfect nests, twin loops, dead and constant buffers)
                "kernel",
                "kernel",
                "scan",
                "scan",
                "config",
                "fold",
                "scaled",
                "perfect",
                "twins",
                "dead",
                "const",
            ]
        )
    )
    if kind in ("kernel", "scan", "config"):
        return draw(_rare_shape(sc, names, kind))
    if kind == "online":
        return draw(online_loop(names))
    if kind == "twins":  # two loops with equal bounds: fuse, join_loops
        head, inner = draw(loop_header(sc, names))
        v = head.split()[1]
        second = head.replace(f"for {v} ", f"for {v}b ")
        body2 = [re.sub(rf"\b{v}\b", f"{v}b", ln) for ln in draw(block(inner, names, 1, 2))]
        return [head, *_indent(draw(block(inner, names, 1, 2)), pad), second, *_indent(body2, pad)]
    if kind == "perfect":  # reorder_loops, mult_loops
        head, inner = draw(loop_header(sc, names))
        head2, inner2 = draw(loop_header(inner, names))
        return [head, pad + head2, *_indent(draw(block(inner2, names, 1, 2)), pad * 2)]
    if kind == "invariant":  # remove_loop, lift of invariant code
        head, _ = draw(loop_header(sc, names))
        return [head, pad + draw(write(sc))[0]]
    if kind == "double":  # merge_writes
        place = draw(location(sc))
        op = draw(st.sampled_from(["=", "+="]))
        return [f"{place} {op} {draw(data_expr(sc))}", f"{place} = {draw(data_expr(sc))}"]
    if kind == "fold":  # fold_into_reduce
        place = draw(location(sc))
        return [f"{place} = {place} + {draw(data_expr(sc))}"]
    if kind == "scaled":  # lift_reduce_constant
        acc, v = names.fresh("acc"), names.fresh("i")
        sc.scalars.append(acc)
        return [
            f"{acc}: f32 @ DRAM",
            f"{acc} = 0.0",
            f"for {v} in seq(0, {'n' if grows(sc) else '4'}):",
            f"{pad}{acc} += 2.0 * {draw(st.sampled_from(['x', 'y']))}[{v}]",
        ]
    if kind == "halves":  # join_loops: the same body over [0, 2) and [2, n)
        v = names.fresh("i")
        inner = sc.child()
        (inner.big if grows(sc) else inner.small).append(v)
        hi = "n" if grows(sc) else "4"
        inner.nloops += 1
        body = draw(block(inner, names, 1, 2))
        w = f"{v}b"
        body2 = [re.sub(rf"\b{v}\b", w, ln) for ln in body]
        return [
            f"for {v} in seq(0, 2):",
            *_indent(body, pad),
            f"for {w} in seq(2, {hi}):",
            *_indent(body2, pad),
        ]
    if kind == "reuse":  # reuse_buffer: two same-typed buffers, the first dead before the second
        t1, t2, a, b = names.fresh("t"), names.fresh("t"), names.fresh("a"), names.fresh("b")
        return [
            f"{t1}: f32[4] @ DRAM",
            f"for {a} in seq(0, 4):",
            f"{pad}{t1}[{a}] = {draw(data_expr(sc))}",
            f"x[0] = {t1}[1]",
            f"{t2}: f32[4] @ DRAM",
            f"for {b} in seq(0, 4):",
            f"{pad}{t2}[{b}] = {draw(data_expr(sc))}",
            f"y[0] = {t2}[2] + {t2}[0]",
        ]
    if kind == "dead":  # delete_buffer, reuse_buffer
        return [f"{names.fresh('t')}: f32[4] @ DRAM"]
    if kind == "const":  # unroll_buffer: constant indices only
        name = names.fresh("c")
        # both values drawn before the buffer is in scope: ``c[0] = c[1]`` would read
        # uninitialised memory (campaign seed 2026, schedule 51590: ``c2[0] = c2[0]``)
        first, second = draw(data_expr(sc)), draw(data_expr(sc))
        sc.bufs.append((name, 0))
        return [f"{name}: f32[2] @ DRAM", f"{name}[0] = {first}", f"{name}[1] = {second}"]
    # copy loops for vload4a, at an aligned (4 * q) or any offset (Exo issue 758's shape)
    q = names.fresh("q")
    base = f"4 * {sc.quad[0]}" if len(sc.quad) > 0 and draw(st.booleans()) else draw(big_index(sc))
    return [f"for {q} in seq(0, 4):", f"{pad}x[{base} + {q}] = y[{base} + {q}]"]


@st.composite
def _rare_shape(draw: st.DrawFn, sc: Scope, names: Names, kind: str) -> list[str]:
    """A kernel (bind_loop, insert_barrier(s), unscope), a running sum (split_scan,
    tree_scan) or a dead configuration write (delete_config)."""
    pad = "    "
    if kind == "kernel":  # a cuda scope: blocks over n, 4 threads each, thread-private writes
        k, b, t, t2 = names.fresh("k"), names.fresh("b"), names.fresh("t"), names.fresh("t")
        src, other = draw(st.sampled_from([("x", "y"), ("y", "x")]))
        c = draw(st.sampled_from(["2.0", "0.5", "-1.0"]))
        cuda = draw(st.integers(0, 3)) > 0  # and now and then a plain named region
        lines = [
            f'with scope("{k}", target="cuda"):' if cuda else f'with scope("{k}"):',
            f"{pad}for {b} in seq(0, {'n' if grows(sc) else '4'}):",
            f"{pad * 2}for {t} in seq(0, 4):",
            f"{pad * 3}z[{t}, {b}] = {src}[{b}] * {c}",
        ]
        if draw(st.booleans()):  # a second thread loop: a barrier between them may be needed
            lines += [
                f"{pad * 2}for {t2} in seq(0, 4):",
                f"{pad * 3}z[{t2}, {b}] += {other}[{b} + 1]",
            ]
        return lines
    if kind == "scan":  # s = running sum of x over a constant (tree_scan) or any range
        acc, i = names.fresh("acc"), names.fresh("i")
        hi = draw(st.sampled_from(["4", "8", "4", "8", "n", "m"] if grows(sc) else ["4", "8"]))
        src, dst = draw(st.sampled_from([("x", "y"), ("y", "x")]))
        sc.scalars.append(acc)
        return [
            f"{acc}: f32 @ DRAM",
            f"{acc} = {draw(st.sampled_from(['0.0', 's']))}",
            f"for {i} in seq(0, {hi}):",
            f"{pad}{acc} += {src}[{i}]",
            f"{pad}{dst}[{i}] = {acc}",
        ]
    # a configuration field written twice before it is read: the first write is dead
    return [
        f"FzConfig.v = {draw(data_expr(sc))}",
        f"FzConfig.v = {draw(data_expr(sc))}",
        f"{draw(location(sc))} = FzConfig.v * 2.0",
    ]


@st.composite
def loop_nest(draw: st.DrawFn, sc: Scope, names: Names) -> list[str]:
    """A loop with a body of 1 to 3 statements (or the body of ``vadd4`` at an offset)."""
    head, inner = draw(loop_header(sc, names))
    if inner.small and draw(st.integers(0, 4)) == 0:
        # the body of vadd4 at an offset: a target for replace
        q = names.fresh("q")
        base = draw(big_index(sc))
        dst, src = draw(st.sampled_from([("x", "y"), ("y", "x"), ("x", "x")]))
        return [f"for {q} in seq(0, 4):", f"    {dst}[{base} + {q}] += {src}[{base} + {q}]"]
    return [head, *_indent(draw(block(inner, names)), "    ")]


@st.composite
def stmt(draw: st.DrawFn, sc: Scope, names: Names) -> list[str]:
    """One statement (or a short group: an allocation with its initialisation)."""
    kinds = ["write", "write", "write", "alloc", "scalar", "window", "call", "shape", "shape"]
    kinds += ["pass"]
    if sc.depth < 3:
        kinds += ["loop", "loop", "loop", "if", "if"]
    kind = draw(st.sampled_from(kinds))
    pad = "    "
    if kind == "write":
        return draw(write(sc))
    if kind == "pass":  # what delete_pass removes
        return ["pass"]
    if kind == "shape":
        return draw(shaped(sc, names))
    if kind == "loop":
        return draw(loop_nest(sc, names))
    if kind == "if":
        inner = sc.child()
        lines = [f"if {draw(cond(sc))}:", *_indent(draw(block(inner, names)), pad)]
        if draw(st.booleans()):
            lines += ["else:", *_indent(draw(block(inner, names, 1, 2)), pad)]
        return lines
    if kind == "alloc":
        rank_size = draw(st.sampled_from([(1, 4), (1, 8), (2, 4)]))
        name = names.fresh("e" if rank_size == (1, 8) else "t")
        mem = draw(st.sampled_from(["DRAM", "DRAM", "DRAM_STACK"]))
        a, b = names.fresh("a"), names.fresh("b")
        init = draw(data_expr(sc))
        if rank_size[0] == 2:
            lines = [
                f"{name}: f32[4, 4] @ {mem}",
                f"for {a} in seq(0, 4):",
                f"{pad}for {b} in seq(0, 4):",
                f"{pad}{pad}{name}[{a}, {b}] = {init}",
            ]
        else:
            lines = [
                f"{name}: f32[{rank_size[1]}] @ {mem}",
                f"for {a} in seq(0, {rank_size[1]}):",
                f"{pad}{name}[{a}] = {init}",
            ]
        sc.bufs.append((name, rank_size[0]))
        return lines
    if kind == "scalar":
        name = names.fresh("acc")
        lines = [f"{name}: f32 @ DRAM", f"{name} = {draw(data_expr(sc))}"]
        sc.scalars.append(name)
        return lines
    if kind == "window":
        w = names.fresh("w")
        base = draw(big_index(sc))
        if draw(st.booleans()):
            view = f"{draw(st.sampled_from(['x', 'y']))}[{base}:{base} + 2]"
        else:
            view = f"z[{draw(small_index(sc))}, {base}:{base} + 2]"
        op = draw(st.sampled_from(["=", "+="]))
        k = draw(st.integers(0, 1))
        return [f"{w} = {view}", f"{w}[{k}] {op} {draw(data_expr(sc))} + {w}[{1 - k}]"]
    # a call: addone on a window of x, y or a row of z, or vadd4 on two 4-element windows
    base = draw(big_index(sc))
    which = draw(st.integers(0, 3))
    if which == 3:  # overlapping windows into one buffer, shifted either way
        buf = draw(st.sampled_from(["x", "y"]))
        a, b = draw(st.sampled_from([("1", "0"), ("0", "1"), ("0", "0")]))
        # 8 elements (so that the callee's loop vectorises), from a plain big variable
        v = draw(st.sampled_from(sc.big)) if sc.big else "0"
        w = f"{buf}[{v} + {{}}:{v} + {{}} + 8]"
        return [f"acc2(8, {w.format(a, a)}, {w.format(b, b)})"]
    if which == 0:
        width = draw(st.integers(1, 4))
        return [f"addone({width}, {draw(st.sampled_from(['x', 'y']))}[{base}:{base} + {width}])"]
    if which == 1:
        if draw(st.booleans()):  # a column: a strided window
            r = draw(st.sampled_from(["0", "1", "2"]))
            return [f"addone(2, z[{r}:{r} + 2, {base}])"]
        row = draw(small_index(sc))
        return [f"addone(2, z[{row}, {base}:{base} + 2])"]
    dst, src = draw(st.sampled_from([("x", "y"), ("y", "x"), ("x", "z[1, ")]))
    if src == "z[1, ":
        return [f"vadd4(x[{base}:{base} + 4], z[1, {base}:{base} + 4])"]
    return [f"vadd4({dst}[{base}:{base} + 4], {src}[{base}:{base} + 4])"]


@st.composite
def online_loop(draw: st.DrawFn, names: Names) -> list[str]:
    """A running max and sum in one loop, as ``scan_fuse`` leaves them (split_online's
    shape; the generator's scan_pair reaches it only after an accepted scan_fuse)."""
    m, acc, j = names.fresh("mx"), names.fresh("sm"), names.fresh("i")
    prev, alpha = names.fresh("mp"), names.fresh("al")
    src = draw(st.sampled_from(["x", "y"]))
    hi = draw(st.sampled_from(["n", "n", "m", "8"]))
    return [
        f"{m}: f32 @ DRAM",
        f"{m} = -inf",
        f"{acc}: f32 @ DRAM",
        f"{acc} = 0.0",
        f"for {j} in seq(0, {hi}):",
        f"    {prev}: f32 @ DRAM",
        f"    {prev} = {m}",
        f"    {m} = fmax({m}, {src}[{j}])",
        f"    {alpha}: f32 @ DRAM",
        f"    {alpha} = select({prev}, {m}, exp({prev} - {m}), 1.0)",
        f"    {acc} = {alpha} * {acc}",
        f"    {acc} += exp({src}[{j}] - select(-inf, {m}, {m}, 0.0))",
        f"s = {acc} + {m}",
    ]


@st.composite
def scan_pair(draw: st.DrawFn, names: Names) -> list[str]:
    """A running max and a later loop reducing ``exp(x[i] - m)`` (scan_fuse's shape), with
    one of the issue's counter-examples now and then (a start of 1, ``x[i] * m``, a read of
    the accumulator inside the loop).
    """
    m, acc, i, j = names.fresh("mx"), names.fresh("sm"), names.fresh("i"), names.fresh("i")
    src = draw(st.sampled_from(["x", "y"]))
    start = draw(st.sampled_from(["-inf", "-inf", f"{src}[0]"]))
    term = draw(st.sampled_from([f"exp({src}[{j}] - {m})"] * 3 + [f"exp({src}[{j}] * {m})"]))
    init = draw(st.sampled_from(["0.0", "0.0", "0.0", "1.0"]))
    lines = [
        f"{m}: f32 @ DRAM",
        f"{m} = {start}",
        f"for {i} in seq(0, n):",
        f"    {m} = fmax({m}, {src}[{i}])",
        f"{acc}: f32 @ DRAM",
        f"{acc} = {init}",
        f"for {j} in seq(0, n):",
        f"    {acc} += {term}",
    ]
    if draw(st.integers(0, 3)) == 0:
        lines.append(f"    z[0, {j}] = {acc}")
    lines.append(f"s = {acc} + {m}")
    return lines


RARE_SHAPES = [
    *("halves", "reuse", "double", "twins", "dead", "const", "perfect"),
    *("kernel", "kernel", "kernel", "scan", "scan", "scan", "config", "config", "config"),
    *("scaled", "scaled", "fold", "fold", "online", "online", "online", "online"),
]

ASSERTS = ["n >= 1", "n % 4 == 0", "n % 2 == 0 and n >= 2", "n >= 3"]


@st.composite
def proc_text(draw: st.DrawFn) -> str:
    """The text of a random well-formed proc named ``fz``."""
    pred = draw(st.sampled_from(ASSERTS))
    sc = Scope(mod4=pred == "n % 4 == 0")
    names = Names()
    body: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        body += draw(loop_nest(sc, names) if draw(st.integers(0, 3)) else stmt(sc, names))
    if draw(st.integers(0, 4)) == 0:
        body = draw(scan_pair(names)) + body
    for _ in range(draw(st.integers(0, 2))):
        # the shapes of the primitives most rarely accepted (issue 11: join_loops,
        # reuse_buffer, merge_writes; kernels, scans, configuration writes, folds), at the
        # top level where their steps find them (a kernel cannot be nested in another)
        body += draw(shaped(sc, names, draw(st.sampled_from(RARE_SHAPES))))
    lines = [
        "def fz(n: size, m: size, x: f32[n + 8] @ DRAM, y: f32[n + 8] @ DRAM, "
        "z: f32[4, n + 8] @ DRAM, s: f32 @ DRAM):",
        f"    assert {pred}",
        "    assert m <= n",
        *_indent(body, "    "),
    ]
    return "\n".join(lines) + "\n"
