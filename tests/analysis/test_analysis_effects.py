"""Effects: read, write and reduce sets, through windows and calls."""

from __future__ import annotations

from cursched import DRAM, proc
from cursched.analysis.effects import Access, block_effects, proc_effects, reads, writes
from cursched.ir.printer import print_expr


def show(accs: list[Access]) -> list[str]:
    return [
        f"{a.kind} {a.buf.name}[{', '.join(print_expr(i) for i in a.idx)}]"
        + (f" over {','.join(lp.iter.name for lp in a.loops)}" if a.loops else "")
        + (" local" if a.local else "")
        for a in accs
    ]


@proc
def kinds(n: size, A: f32[n] @ DRAM, B: f32[n] @ DRAM, s: f32):
    for i in seq(0, n):
        B[i] = A[i] * 2.0
        s += B[i]
        s = s + A[i]
        B[i] = B[i] * s


def test_kinds_and_assign_as_reduction() -> None:
    assert show(proc_effects(kinds.ir())) == [
        "read A[i] over i",
        "write B[i] over i",
        "read B[i] over i",
        "reduce s[] over i",
        "read A[i] over i",
        "reduce s[] over i",
        "read B[i] over i",
        "read s[] over i",
        "write B[i] over i",
    ]
    effs = proc_effects(kinds.ir())
    assert writes(effs) == {kinds.ir().args[2].sym, kinds.ir().args[3].sym}
    assert reads(effs) == {a.sym for a in kinds.ir().args[1:4]}


@proc
def windows(n: size, A: f32[n, n] @ DRAM):
    assert n >= 4
    w = A[1, 0:n]
    v = w[2:4]
    v[1] = 0.0


def test_window_offsets_compose() -> None:
    assert show(proc_effects(windows.ir())) == ["write A[1, 2 + 1]"]


@proc
def scale(m: size, x: [f32][m] @ DRAM, alpha: f32):
    for j in seq(0, m):
        x[j] = alpha * x[j]


@proc
def caller(n: size, A: f32[n, n] @ DRAM, t: f32[n] @ DRAM):
    for i in seq(0, n):
        scale(n - i, A[i, i:n], t[i])


def test_call_effects_mapped_through_arguments() -> None:
    assert show(proc_effects(caller.ir())) == [
        "read t[i] over i,j",
        "read A[i, i + j] over i,j",
        "write A[i, i + j] over i,j",
    ]
    j_loop = proc_effects(caller.ir())[0].loops[1]
    assert print_expr(j_loop.hi) == "n - i"


@proc
def locals_(n: size, A: f32[n] @ DRAM):
    for i in seq(0, n):
        t: f32 @ DRAM
        t = A[i]
        A[i] = t


def test_locals_are_marked() -> None:
    loop = locals_.ir().body[0]
    assert show(block_effects(loop.body)) == [  # type: ignore[union-attr]
        "read A[i]",
        "write t[] local",
        "read t[] local",
        "write A[i]",
    ]
