"""The barrier checker: every cross-thread dependence of a kernel is ordered by a barrier.

A kernel (``with scope(name, target="cuda")``) runs its uniform-level code on every thread of a
block and each thread loop's iterations on separate threads (``cursched.analysis.kernels``).
Threads of one block run in any interleaving between two barriers (``sync_threads()``), so two
accesses of one ``SHARED`` or ``GLOBAL`` element, at least one a write, made by *different*
threads with no barrier between them, are a race. Within one thread loop the iterations are
independent (``bind_loop`` proved it), so races are between the accesses of two thread loops,
or of one thread loop with itself one iteration later of a serial loop around it (a loop at
the uniform level, like the k loop of a tiled matmul).

The walk goes over the uniform level in program order keeping the accesses made since the last
barrier; a serial loop's body is walked twice, the second time with what the first left over
(its iteration variable renamed: the accesses of the previous iteration). Each pair of
conflicting accesses from the pending set and a new thread loop is a query: is there an
element both touch, from two threads whose indices differ? (``deps.dependence``; a model is
the counterexample.)

``kernel_race`` finds the first race (or ``None``); ``check_kernels`` raises for a proc's
first problem: ``MissingBarrierError`` (naming both accesses), ``DivergentBarrierError`` (a
barrier inside a thread loop, which only some threads would reach in CUDA, while the
sequential meaning of the loop runs it once per iteration), ``UniformWriteError`` (a write to
``SHARED``/``GLOBAL`` outside every thread loop: every thread of the block would make it).
"""

from __future__ import annotations

from dataclasses import dataclass

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.checks import SafetyError
from cursched.analysis.context import context_of
from cursched.analysis.deps import conflicting, dependence, instance
from cursched.analysis.effects import Access, block_effects
from cursched.analysis.kernels import is_thread_loop, kernel_layout, kernels
from cursched.errors import RaceError
from cursched.ir.barrier import is_barrier
from cursched.ir.memory import GLOBAL, SHARED
from cursched.ir.nodes import Alloc, Assign, Call, For, If, ProcDef, Reduce, Scope, Stmt
from cursched.ir.paths import Path
from cursched.ir.printer import print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_stmts


class KernelRaceError(SafetyError, RaceError):
    """A kernel is not race-free (base of the barrier checker's errors)."""


class MissingBarrierError(KernelRaceError):
    """Two threads touch one SHARED/GLOBAL element, one writing, with no barrier between."""


class DivergentBarrierError(KernelRaceError):
    """A barrier sits under thread-divergent control (inside a thread loop)."""


class UniformWriteError(KernelRaceError):
    """A SHARED/GLOBAL buffer is written outside every thread loop (by every thread)."""


@dataclass(frozen=True, slots=True)
class _Pending:
    """An access made since the last barrier.

    ``carried`` holds the serial loops whose previous iteration made it; ``everyone`` marks
    an access at the uniform level (made by every thread).
    """

    access: Access
    nest: Path
    carried: tuple[For, ...] = ()
    everyone: bool = False


@dataclass(frozen=True, slots=True)
class Race:
    """Two accesses of one element by two threads with no barrier between.

    Attributes:
        first: the earlier access (``first_path`` is its thread loop or statement).
        second: the later access; a barrier at the gap before ``second_path`` orders them.
        model: the values (sizes, loop variables of both threads) witnessing it.
    """

    first: Access
    first_path: Path
    second: Access
    second_path: Path
    model: smt.Model | None
    carried: bool

    def describe(self) -> str:
        def show(a: Access) -> str:
            site = a.site if a.site is not None else a.stmt
            return f"{a.kind} of {a.buf.name} in `{print_stmt(site).splitlines()[0].strip()}`"

        where = " (in the previous iteration)" if self.carried else ""
        return f"{show(self.first)}{where} and {show(self.second)} by two threads"


def _shared(buf: Sym, p: ProcDef, allocs: dict[Sym, Alloc]) -> bool:
    """Whether ``buf`` is visible to several threads: a SHARED allocation or a GLOBAL
    argument."""
    a = allocs.get(buf)
    if a is not None:
        return a.mem is SHARED
    return any(x.sym is buf and x.mem is GLOBAL for x in p.args)


class _Walk:
    def __init__(self, p: ProcDef, scope_path: Path, scope: Scope) -> None:
        self.p = p
        self.scope_path = scope_path
        self.dims = kernel_layout(scope).block_dims
        self.allocs = {s.sym: s for s in walk_stmts(scope.body) if isinstance(s, Alloc)}
        self.race: Race | None = None
        self.divergent: Path | None = None
        self.uniform_write: tuple[Path, Access] | None = None

    # -- the walk -----------------------------------------------------------------------
    def block(
        self, body: tuple[Stmt, ...], path: Path, attr: str, pend: list[_Pending]
    ) -> list[_Pending]:
        for k, s in enumerate(body):
            if self.found():
                return pend
            pend = self.stmt(s, (*path, (attr, k)), pend)
        return pend

    def found(self) -> bool:
        return self.race is not None or self.divergent is not None or self.uniform_write is not None

    def stmt(self, s: Stmt, path: Path, pend: list[_Pending]) -> list[_Pending]:
        if is_barrier(s):
            return []
        if is_thread_loop(s):
            assert isinstance(s, For)
            for inner_path, inner in _walk_paths(s.body, path):
                if is_barrier(inner):
                    self.divergent = inner_path
                    return pend
            return self.accesses(s, path, pend, everyone=False)
        match s:
            case For():
                if s.axis is not None:  # a block loop: its iterations are other blocks
                    return self.block(s.body, path, "body", pend)
                first = self.block(s.body, path, "body", pend)
                if self.found():
                    return first
                again = [
                    x if x.carried else _Pending(x.access, x.nest, (s,), x.everyone) for x in first
                ]
                carried = [x for x in again if s in x.carried]
                second = self.block(s.body, path, "body", carried)
                return [*first, *(x for x in second if x not in first)]
            case If():
                a = self.block(s.body, path, "body", list(pend))
                b = self.block(s.orelse, path, "orelse", list(pend))
                return [*a, *(x for x in b if x not in a)]
            case Scope():
                return self.block(s.body, path, "body", pend)
            case Assign() | Reduce() | Call():
                return self.accesses(s, path, pend, everyone=True)
            case _:
                return pend

    def accesses(
        self, s: Stmt, path: Path, pend: list[_Pending], *, everyone: bool
    ) -> list[_Pending]:
        ctx = context_of(self.p, path)
        mine = [
            a
            for a in block_effects((s,), ctx.windows)
            if not a.local and _shared(a.buf, self.p, self.allocs)
        ]
        if everyone:
            for a in mine:
                if a.kind != "read":
                    self.uniform_write = (path, a)
                    return pend
        base = ctx.props()
        for b in mine:
            for x in pend:
                if not conflicting(x.access, b, reductions_commute=False):
                    continue
                model = self.query(x, _Pending(b, path, (), everyone), base)
                if model is not None:
                    self.race = Race(x.access, x.nest, b, path, model, bool(x.carried))
                    return pend
        return [*pend, *(_Pending(a, path, (), everyone) for a in mine)]

    def query(self, x: _Pending, y: _Pending, base: list[af.Prop]) -> smt.Model | None:
        outer = x.carried
        ix, iy = instance(x.access, "1", outer), instance(y.access, "2", outer)
        order = [af.lt(ix.var(loop.iter), iy.var(loop.iter)) for loop in outer[:1]]
        if x.everyone or y.everyone:
            if len(self.dims) == 0 or all(n == 1 for n in self.dims.values()):
                return None
            differ: list[af.Prop] = []
        else:
            tx, ty = self.thread_ids(x.access, ix.var), self.thread_ids(y.access, iy.var)
            differ = [af.Or(tuple(af.Not(af.Eq(tx[a] - ty[a])) for a in self.dims))]
        return dependence(ix, iy, base, [*order, *differ])

    def thread_ids(self, a: Access, var: object) -> dict[str, af.Aff]:
        """Per thread axis of the block, the thread's index along it, as an affine value."""
        ids: dict[str, af.Aff] = {ax: af.Aff.num(0) for ax in self.dims}
        for loop in a.loops:
            if loop.axis is not None and loop.axis.startswith("threadIdx"):
                lo = af.to_aff(loop.lo)
                v = var(loop.iter)  # type: ignore[operator]
                ids[loop.axis] = v - (lo if lo is not None else af.Aff.num(0))
        return ids


def _walk_paths(body: tuple[Stmt, ...], prefix: Path) -> list[tuple[Path, Stmt]]:
    from cursched.cursors.tree import walk_stmts as walk_with_paths

    return list(walk_with_paths(body, prefix))


def kernel_race(p: ProcDef, scope_path: Path, scope: Scope) -> _Walk:
    """Walk one kernel; the result's ``race``, ``divergent`` and ``uniform_write`` say what
    it found first (all None: the kernel is race-free)."""
    w = _Walk(p, scope_path, scope)
    w.block(scope.body, scope_path, "body", [])
    return w


def check_kernels(p: ProcDef, *, primitive: str | None = None) -> None:
    """Prove every cuda scope of ``p`` race-free.

    Raises:
        MissingBarrierError: a cross-thread dependence with no barrier between (both
            accesses named, with a counterexample).
        DivergentBarrierError: a barrier inside a thread loop.
        UniformWriteError: a SHARED/GLOBAL write outside every thread loop.
    """
    head = f"{primitive}: " if primitive else ""
    for path, scope in kernels(p):
        w = kernel_race(p, path, scope)
        if w.divergent is not None:
            msg = f"{head}kernel {scope.name}: a barrier inside a thread loop (thread-divergent)"
            raise DivergentBarrierError(msg, proc=p, path=w.divergent)
        if w.uniform_write is not None:
            at, a = w.uniform_write
            msg = (
                f"{head}kernel {scope.name}: {a.buf.name} is written outside every thread loop,"
                " by every thread of the block"
            )
            raise UniformWriteError(msg, proc=p, path=at)
        if w.race is not None:
            msg = f"{head}kernel {scope.name}: no barrier between the {w.race.describe()}"
            raise MissingBarrierError(msg, w.race.model, proc=p, path=w.race.second_path)


__all__ = [
    "DivergentBarrierError",
    "KernelRaceError",
    "MissingBarrierError",
    "Race",
    "UniformWriteError",
    "check_kernels",
    "kernel_race",
]
