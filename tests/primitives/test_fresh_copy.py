"""``loop_common.fresh_copy``: a copy sharing no node, its symbols made in binding order;
``unroll_copies``: the copies of an unrolled body, sharing what does not read the variable."""

from __future__ import annotations

from cursched import DRAM, cut_loop, proc, unroll_loop
from cursched.cursors import Tombstone
from cursched.cursors.edits import find_survivors
from cursched.cursors.forwarding import Survivors
from cursched.cursors.tree import walk
from cursched.ir.nodes import Alloc, BinOp, Const, For, Read, Stmt
from cursched.ir.printer import print_expr, print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.types import INDEX, INT
from cursched.primitives.loops.copies import shared_copies
from cursched.primitives.loops.loop_common import Memo, fresh_copy, subst_simplify, unroll_copies
from cursched.primitives.loops.loop_wrap import fresh


@proc
def nest(n: size, x: f32[n, 8] @ DRAM):
    for i in seq(0, n):
        t: f32[8] @ DRAM
        for j in seq(0, 8):
            t[j] = 1.0
        for k in seq(0, 8):
            for m in seq(0, 1):
                x[i, k] = t[k + m]


def _bound(stmts: tuple[Stmt, ...]) -> list[Sym]:
    out: list[Sym] = []
    for s in stmts:
        for _, x in walk(s):
            if isinstance(x, For):
                out.append(x.iter)
            elif isinstance(x, Alloc):
                out.append(x.sym)
    return out


def test_copies_symbols_in_binding_order_and_shares_no_node() -> None:
    body = nest.ir().body
    copy = fresh_copy(body)
    old, new = _bound(body), _bound(copy)
    assert [s.name for s in new] == [s.name for s in old]
    assert not set(map(id, new)) & set(map(id, old))
    # the copies are made in the order of the originals (program order here): the ids order
    # the terms of affine normal forms, so set order made printouts vary between runs
    assert [s.id for s in new] == sorted(s.id for s in new)
    old_nodes = {id(x) for s in body for _, x in walk(s)}
    assert not any(id(x) in old_nodes for s in copy for _, x in walk(s))


@proc
def shared(n: size, x: f32[n, 8] @ DRAM, y: f32[8, n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, 4):
            t: f32[8] @ DRAM
            for k in seq(0, 2):
                t[k] = y[k, i] * 2.0
            x[i, j] = t[j] + y[j, i]


def test_unroll_copies_share_what_does_not_read_the_variable() -> None:
    """``unroll_copies`` prints as one ``fresh_copy`` per iteration does; its copies share
    the body's expressions that read neither the loop variable nor a symbol bound in the
    body (``i``, ``2.0``, the inner loop's bounds), copy all the others, and every statement is new."""
    (loop,) = [x for _, x in walk(shared.ir()) if isinstance(x, For) and x.iter.name == "j"]
    copies = unroll_copies(loop.body, loop.iter, range(4))
    plain = [fresh_copy(loop.body, {loop.iter: Const(k, INT)}) for k in range(4)]
    for a, b in zip(copies, plain, strict=True):
        assert [print_stmt(s) for s in a] == [print_stmt(s) for s in b]
    old = {id(x): x for s in loop.body for _, x in walk(s)}
    new = [x for c in copies for s in c for _, x in walk(s)]
    kept = [x for x in new if id(x) in old]
    assert kept and all(not isinstance(x, Stmt) for x in kept)
    text = {print_expr(x) for x in kept}
    assert text == {"i", "2.0", "0", "2"}, text  # the inner loop's bounds are shared too
    # what lets unroll_loop skip the editor's search for survivors (``kill_all``): it finds
    # none, the shared nodes occurring once per copy
    flat = [s for c in copies for s in c]
    assert find_survivors((loop,), flat) == Survivors({}, {})
    assert find_survivors((loop,), list(plain[0])) == Survivors({}, {})
    # in each copy, the reads of the buffer bound in the body are new, of its own copy
    bufs = [s.sym for c in copies for s in c if isinstance(s, Alloc)]
    assert len(set(bufs)) == 4 and loop.body[0].sym not in bufs  # type: ignore[union-attr]


def test_unroll_kills_cursors_to_shared_expressions() -> None:
    """A shared expression occurs once per copy, so forwarding kills a cursor to it as it
    kills one to a copied node; a loop of one iteration is copied sharing nothing."""
    two = shared.find("y[k, i] * 2.0")
    p, res = unroll_loop(shared, "j")
    assert len(res.copies) == 4
    t = p.forward(two.rhs())
    assert isinstance(t, Tombstone) and t.killer == "unroll_loop"
    one = cut_loop(shared, "j", 1)[0]
    q, _ = unroll_loop(one, one.find_loop("j"))
    old = {id(x) for _, x in walk(one.ir())}
    body = q.find_loop("i").body()
    assert not any(id(x) in old for s in body.stmts()[:3] for _, x in walk(s))


def test_shared_copies_print_as_fresh_copies_and_share_what_reads_no_bound_symbol() -> None:
    """``shared_copies`` (specialize's branches) prints as ``fresh`` made once per copy, with
    the fresh symbols in the same order; its copies share the expressions that read no
    symbol bound in the block (here every one reading only ``i``, the loop's own variable
    being bound in the block copied), and no statement."""
    (loop,) = [x for _, x in walk(shared.ir()) if isinstance(x, For) and x.iter.name == "j"]
    copies = shared_copies((loop,), 3)
    plain = [fresh((loop,)) for _ in range(3)]
    for a, b in zip(copies, plain, strict=True):
        assert [print_stmt(s) for s in a] == [print_stmt(s) for s in b]
    ids = [[s.id for s in _bound(c)] for c in copies]
    assert ids == sorted(ids) and all(x == sorted(x) for x in ids)
    old = {id(x): x for _, x in walk(loop)}
    new = [x for c in copies for s in c for _, x in walk(s)]
    kept = [x for x in new if id(x) in old]
    assert kept and all(not isinstance(x, Stmt) for x in kept)
    assert {print_expr(x) for x in kept} == {"i", "2.0", "0", "4", "2"}
    assert find_survivors((loop,), [s for c in copies for s in c]) == Survivors({}, {})


@proc
def indexed(n: size, x: f32[n, 8] @ DRAM, y: f32[8, 4 * n] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, 8):
            x[i, j] = y[j, 4 * i + 1] + y[j, i]
            x[i, 7 - j] += y[j, (i + 2) / 2] * y[j, i]


def test_memo_of_simplified_indices_changes_no_tree() -> None:
    """The memo of ``subst_simplify`` / ``fresh_copy`` (one simplification per distinct index
    expression) gives trees equal to those made without it, each distinct simplified index
    one object, and the copy shares no node with the original."""
    (loop,) = [x for _, x in walk(indexed.ir()) if isinstance(x, For) and x.iter.name == "i"]
    io, ii = Sym("io"), Sym("ii")
    four_io = BinOp("*", Const(4, INT), Read(io, (), INDEX), INDEX)
    env = {loop.iter: BinOp("+", four_io, Read(ii, (), INDEX), INDEX)}
    ranges = {ii: (0, 3), io: (0, None)}
    plain = tuple(subst_simplify(s, env, ranges) for s in loop.body)
    memo: Memo = {}
    shared = tuple(subst_simplify(s, env, ranges, memo) for s in loop.body)
    assert shared == plain and [print_stmt(s) for s in shared] == [print_stmt(s) for s in plain]
    sums = [x for s in shared for _, x in walk(s) if isinstance(x, BinOp)]
    reads = [x for x in sums if print_expr(x) == "4 * io + ii"]
    assert len(reads) == 4 and all(r is reads[0] for r in reads)  # x[i, _], y[_, i], twice
    copy = fresh_copy(loop.body, env, ranges)
    assert [print_stmt(s) for s in copy] == [print_stmt(s) for s in plain]
    old = {id(x) for s in loop.body for _, x in walk(s)}
    assert not any(id(x) in old for s in copy for _, x in walk(s))
