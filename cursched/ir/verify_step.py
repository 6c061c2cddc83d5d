"""Incremental verification: check a new version of a proc where it differs from a valid one.

A primitive edits a few statements; the IR shares every untouched subtree with the version
it came from (``node.replace`` returns the same object when nothing changes). So after a
step, ``verify_step(new, old)``, with ``old`` a proc known valid (``verify.known_valid``),
checks only what changed, with the context it needs, and reaches the verdict the whole-proc
``verify_proc(new)`` would (the same first broken invariant, at the same place):

- a check of a statement depends only on the statement and on the verifier's state where it
  starts: the bindings in scope (symbol -> type, role, memory) and the number of CUDA scopes
  around it. Where ``new`` and ``old`` have the same parameters, both walks start with equal
  bindings;
- in a block whose walk starts with equal bindings in both, the statements shared by identity
  at its start (the prefix) were checked in ``old`` under those bindings: they hold. Only
  their own bindings (allocations, window statements) are taken into scope;
- the changed middle is checked statement by statement. Where both sides have as many
  statements, each new one is paired with the old one at its place: a loop with the same
  iteration variable, an ``if``, a scope of the same CUDA-ness has its own fields checked and
  its blocks compared the same way (the bindings at their start are equal again); any other
  statement is checked whole (``_Verifier.stmt``, which reuses the memo of expressions and
  assignments). The bindings are still equal after a pair when neither side binds, or both
  bind the same symbol to the same thing;
- the shared statements at the end of the block (the suffix) hold as well where the middle
  left the bindings as ``old``'s middle did (the same symbols, bound to the same things).
  Where they differ only in the memory of some symbols (an allocation retagged by
  ``set_memory``), a statement of the suffix is checked again only where its check reads
  one of those memories (``_mem_reads``: a call passing the buffer, a window of it, and
  from then on the window's too); otherwise every statement of the suffix is checked again.

The parameters and asserts of ``new``, when they are the very objects of ``old``'s, are not
checked again (their bindings enter the scope), nor the header of a paired loop whose bounds
are the same objects (mode and axis equal). Parameters that changed (a memory, a type) give
other bindings everywhere: then the whole proc is walked (with the memo).

A step that changed one statement's own plain fields under its very children
(``Editor.retag``: an allocation's memory, a loop's mode or axis) is not walked: a descent
comparing by identity finds that statement, and only the fields that changed are checked
(with the CUDA scopes counted on the way), and for an allocation, that no later statement of
its block reads its memory (``_retag_step``); anything else goes to the walk.

``CURSCHED_VERIFY=full`` runs ``verify_proc(new, memo=False)`` instead, which reuses nothing;
the soundness fuzzer runs both and compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count
from operator import is_, is_not
from typing import NamedTuple, TypeAlias, assert_never

from cursched.errors import IRVerificationError
from cursched.ir.nodes import (
    Alloc,
    Assign,
    Call,
    FnArg,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.verify import LOOP_VAR, _Var, _Verifier, known_valid, remember_valid

__all__ = ["verify_both", "verify_step"]

_Binds = dict[Sym, _Var]
_BINDERS = frozenset((Alloc, WindowStmt))  # the statements that bind a symbol in their block
_NESTS = frozenset((For, If, Scope))  # the statements that hold blocks

# What the walk of a block knows of its bindings against ``old``'s at the same place: equal
# (``_SAME``), equal but for the memory of the symbols in the set (an allocation given another
# memory: ``set_memory``'s retag), or ``None``: they may differ in any way.
_Diff: TypeAlias = frozenset[Sym] | None
_SAME: frozenset[Sym] = frozenset()
_NO_SYMS: frozenset[Sym] = frozenset()


def _mem_diff(before: _Binds, after: _Binds) -> _Diff:
    """``after`` against ``before``, the bindings of the same statements of ``new`` and
    ``old`` from equal bindings: ``_SAME``, the symbols bound to another memory where that
    is all that differs, or None."""
    if before == after:
        return _SAME
    if before.keys() != after.keys():
        return None
    moved = []
    for sym, b in before.items():
        a = after[sym]
        if a.type != b.type or a.role != b.role:
            return None
        if a.mem is not b.mem:
            moved.append(sym)
    return frozenset(moved) if moved else _SAME


# the statements whose check reads no memory (``_mem_reads``), the commonest, tested first
_NO_MEM_READS = frozenset((Assign, Reduce, Pass, Alloc))

# ``_mem_reads`` of compound statements, by id with the statement kept alive in the entry:
# the statements after a retagged allocation are those of ``old``, met again at each step
_MEM_READS: dict[int, tuple[Stmt, frozenset[Sym]]] = {}
_MEM_READS_LIMIT = 1 << 15


def _mem_reads(s: Stmt) -> frozenset[Sym]:
    """The symbols whose memory the check of ``s`` may read. The verifier reads a binding's
    memory in two places only: a data or tensor argument of a call (``call_arg``: a read or
    a window of the symbol) and a window statement (its window lives where its base does);
    every other check reads types (and a role, for a message). So a statement of a valid
    ``old`` is valid again where only the memories of other symbols changed."""
    match s:
        case Assign() | Reduce() | Pass() | Alloc():
            return _NO_SYMS
        case Call():
            return frozenset(a.sym for a in s.args if isinstance(a, Read | WindowExpr))
        case WindowStmt():
            return frozenset((s.rhs.sym,)) if isinstance(s.rhs, WindowExpr) else _NO_SYMS
        case For() | If() | Scope():
            return _mem_reads_nested(s)
        case _:
            assert_never(s)


def _mem_reads_nested(s: For | If | Scope) -> frozenset[Sym]:
    hit = _MEM_READS.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    blocks = (s.body, s.orelse) if isinstance(s, If) else (s.body,)
    out = _NO_SYMS.union(*(_mem_reads(c) for b in blocks for c in b))
    if len(_MEM_READS) >= _MEM_READS_LIMIT:
        _MEM_READS.clear()
    _MEM_READS[id(s)] = (s, out)
    return out


def _shared(new: tuple[Stmt, ...], old: tuple[Stmt, ...]) -> tuple[int, int]:
    """How many statements at the start of ``new`` are those of ``old`` (by identity), and
    how many at the end of the rest, counted at C speed: each scan stops at the first
    difference and copies nothing (a block of a big proc is long, its change short)."""
    m = min(len(new), len(old))
    a = next(compress(count(), map(is_not, new, old)), m)
    b = next(compress(count(), map(is_not, reversed(new), reversed(old))), m)
    return a, min(b, m - a)


# The bindings of a parameter list, by the tuple's id (kept alive in the entry): versions of
# a proc share their parameters, and each step's walk starts from these bindings.
_PARAMS: dict[int, tuple[tuple[FnArg, ...], _Binds]] = {}
_PARAMS_LIMIT = 1 << 8


def _param_env(args: tuple[FnArg, ...]) -> _Binds:
    """The bindings of the parameters of a valid proc (not to be mutated)."""
    hit = _PARAMS.get(id(args))
    if hit is not None and hit[0] is args:
        return hit[1]
    env = {a.sym: _Var(a.type, "param", a.mem) for a in args}
    if len(_PARAMS) >= _PARAMS_LIMIT:
        _PARAMS.clear()
    _PARAMS[id(args)] = (args, env)
    return env


def _ends(
    new: tuple[Stmt, ...], old: tuple[Stmt, ...], shared: tuple[int, int] | None
) -> tuple[int, int]:
    """How many statements at the start and at the end of ``new`` are ``old``'s: ``shared``
    where the caller knows them (and they fit both blocks), none for two one-statement
    blocks (the inner bodies of a loop nest: nothing to scan), else counted (``_shared``)."""
    n, o = len(new), len(old)
    if shared is not None and shared[0] >= 0 and 0 <= shared[1] <= min(n, o) - shared[0]:
        return shared
    if n == 1 == o:
        return 0, 0
    return _shared(new, old)


class _StepVerifier(_Verifier):
    """The verifier walking ``new`` against ``old``, skipping what the two share."""

    def proc_since(self, old: ProcDef, top: tuple[int, int] | None = None) -> None:
        """Walk ``p`` against the valid ``old``; ``top``: see ``verify_step``."""
        p = self.p
        if p.args is not old.args and (
            len(p.args) != len(old.args)
            or any(a is not b and a != b for a, b in zip(p.args, old.args, strict=True))
        ):
            self.proc()
            return
        if p.args is old.args or all(map(is_, p.args, old.args)):
            # the very parameters of the valid ``old``: they hold, only their bindings enter
            self.env.update(_param_env(p.args))
        else:
            bound: list[Sym] = []
            for k, a in enumerate(p.args):
                self.fnarg(a, (("args", k),), bound)
        # an assert depends only on the parameters, equal here: the same objects held in old
        if p.preds is not old.preds and (
            len(p.preds) != len(old.preds) or not all(map(is_, p.preds, old.preds))
        ):
            for k, pred in enumerate(p.preds):
                self.bool_ctrl(pred, (("preds", k),), "an assert")
        self.block_since(p.body, old.body, (), "body", top)
        self.verified.add(id(p))

    # -- bindings ------------------------------------------------------------------------
    def binding(self, s: Stmt, extra: _Binds | None = None) -> tuple[Sym, _Var] | None:
        """What a statement of a valid proc binds in its block, under the current bindings
        (plus ``extra``)."""
        if isinstance(s, Alloc):
            return s.sym, _Var(s.type, "alloc", s.mem)
        if isinstance(s, WindowStmt):
            base = (extra or {}).get(s.rhs.sym) or self.env[s.rhs.sym]
            return s.sym, _Var(s.rhs.type, "window", base.mem)
        return None

    def take(self, s: Stmt, bound: list[Sym]) -> None:
        """A statement known to hold here: only its binding enters the scope."""
        b = self.binding(s)
        if b is not None:
            self.env[b[0]] = b[1]
            bound.append(b[0])

    def take_all(self, stmts: tuple[Stmt, ...], bound: list[Sym]) -> None:
        """``take`` for each statement; the test for binders runs at C speed first (the
        shared part of a block of a big proc is long and rarely binds)."""
        if _BINDERS.isdisjoint(map(type, stmts)):
            return
        for s in stmts:
            self.take(s, bound)

    def bindings(self, stmts: Sequence[Stmt]) -> _Binds:
        """What the statements of a valid block bind, in order, from the current bindings."""
        out: _Binds = {}
        for s in stmts:
            b = self.binding(s, out)
            if b is not None:
                out[b[0]] = b[1]
        return out

    def since_start(self, bound: list[Sym], start: int) -> _Binds:
        return {sym: self.env[sym] for sym in bound[start:]}

    # -- blocks and statements -----------------------------------------------------------
    def block_since(
        self,
        body: tuple[Stmt, ...],
        old: tuple[Stmt, ...],
        path: Path,
        attr: str,
        shared: tuple[int, int] | None = None,
    ) -> None:
        """Check ``body`` where ``old`` (valid) was walked under the same bindings;
        ``shared``: how many statements at its start and end are ``old``'s, when the caller
        knows (else they are counted)."""
        if body is old:
            return
        n, o = len(body), len(old)
        a, b = _ends(body, old, shared)
        bound: list[Sym] = []
        if a:
            self.take_all(body[:a], bound)
        if n == o and a + b == n - 1:  # one statement changed in place, the commonest edit
            diff = self.stmt_since(body[a], old[a], (*path, (attr, a)), bound, _SAME)
        else:
            diff = self.middle(body[a : n - b], old[a : o - b], path, attr, a, bound)
        # where the bindings after the middle are ``old``'s, the shared suffix holds; its own
        # bindings are not taken: no statement of this block after it is checked. Where only
        # memories changed, only what reads them is checked again (``shared_stmt``)
        if diff is None or diff:
            for k in range(n - b, n):
                diff = self.shared_stmt(body[k], (*path, (attr, k)), bound, diff)
        for sym in bound:
            del self.env[sym]

    def middle(
        self,
        new: tuple[Stmt, ...],
        old: tuple[Stmt, ...],
        path: Path,
        attr: str,
        at: int,
        bound: list[Sym],
    ) -> _Diff:
        """Check the changed statements, from bindings equal to ``old``'s; what the bindings
        after them are against ``old``'s."""
        if len(new) == len(old):
            diff: _Diff = _SAME
            for k, (s, o) in enumerate(zip(new, old, strict=True)):
                diff = self.stmt_since(s, o, (*path, (attr, at + k)), bound, diff)
            return diff
        before = self.bindings(old)
        start = len(bound)
        for k, s in enumerate(new):
            self.stmt(s, (*path, (attr, at + k)), bound)
        if len(bound) - start != len(before):  # another binding (lift_alloc's move): no diff
            return None
        after = self.since_start(bound, start) if before else {}
        return _SAME if before == after else _mem_diff(before, after)

    def stmt_since(self, s: Stmt, o: Stmt, path: Path, bound: list[Sym], diff: _Diff) -> _Diff:
        """Check ``s`` in the place of ``o``, where the bindings are ``diff`` against
        ``old``'s; returns what they are after it."""
        if s is o:
            return self.shared_stmt(s, path, bound, diff)
        same = diff is not None and not diff
        if same and self.paired(s, o, path, bound):
            return _SAME
        if type(s) not in _BINDERS and type(o) not in _BINDERS:
            self.stmt(s, path, bound)
            return diff  # neither binds: the bindings after are as before
        # ``o``'s binding computed here is the one it had in ``old`` only where the bindings
        # are equal (a window's memory is its base's)
        before = self.bindings((o,)) if same else None
        start = len(bound)
        self.stmt(s, path, bound)
        if before is not None:
            after = self.since_start(bound, start) if len(bound) > start else {}
            return _SAME if before == after else _mem_diff(before, after)
        return None

    def shared_stmt(self, s: Stmt, path: Path, bound: list[Sym], diff: _Diff) -> _Diff:
        """``s``, a statement of ``old`` at its place there, where the bindings are ``diff``
        against ``old``'s: it held under ``old``'s, so it holds here unless its check reads
        a memory that changed (``_mem_reads``); else it is checked. Returns the bindings
        after it."""
        if diff is not None and (not diff or diff.isdisjoint(_mem_reads(s))):
            self.take(s, bound)  # its binding, if any, is ``old``'s: no memory it reads moved
            return diff
        self.stmt(s, path, bound)
        if diff is not None and type(s) is WindowStmt:
            return diff | {s.sym}  # a window of a buffer in another memory lives there too
        return diff

    def paired(self, s: Stmt, o: Stmt, path: Path, bound: list[Sym]) -> bool:
        """Check ``s`` against ``o`` where the bindings are equal; False: not comparable."""
        if type(s) not in _NESTS or type(s) is not type(o):
            return False  # the commonest changed statement, an assignment, at once
        if isinstance(s, For) and isinstance(o, For) and s.iter is o.iter:
            # the header depends on its fields, the bindings and the CUDA depth (equal here)
            same_header = s.lo is o.lo and s.hi is o.hi and s.mode == o.mode
            if not (same_header and s.axis == o.axis):
                self.loop_header(s, path)
            self.bind(s.iter, LOOP_VAR, path, [])
            self.block_since(s.body, o.body, path, "body")
            del self.env[s.iter]
            return True
        if isinstance(s, If) and isinstance(o, If):
            self.bool_ctrl(s.cond, (*path, ("cond", -1)), "an if condition")
            self.block_since(s.body, o.body, path, "body")
            self.block_since(s.orelse, o.orelse, path, "orelse")
            return True
        if isinstance(s, Scope) and isinstance(o, Scope):
            cuda = s.target == "cuda"
            if cuda != (o.target == "cuda"):
                return False
            self.scope_header(s, path)
            self.cuda_depth += cuda
            self.block_since(s.body, o.body, path, "body")
            self.cuda_depth -= cuda
            return True
        return False


# -- a step that retagged one statement ---------------------------------------------------
# ``Editor.retag`` (set_memory, parallelize_loop) gives one statement other plain fields
# under the very same children; ``update_at`` rebuilds only the statements on its path. The
# walk above still pays for the bindings along that path, which such a step cannot change:
# a descent comparing by identity finds the one statement and checks only what reads the
# fields that changed.


class _Retagged(NamedTuple):
    """The one statement of ``new`` that is not ``old``'s, with where it sits."""

    new: Stmt
    old: Stmt
    block: tuple[Stmt, ...]  # the block of ``new`` holding it, at ``at``
    at: int
    cuda_depth: int  # the target="cuda" scopes around it


_Blocks: TypeAlias = tuple[tuple[Stmt, ...], tuple[Stmt, ...]]


def _only_change(
    block: tuple[Stmt, ...], old: tuple[Stmt, ...], shared: tuple[int, int] | None
) -> int | None:
    """The index of the one statement of ``block`` that is not ``old``'s (every other the
    very object of ``old``'s at its place), or None; ``shared`` as for ``block_since``."""
    n = len(block)
    if n != len(old):
        return None
    a, b = _ends(block, old, shared)
    return a if a + b == n - 1 and block[a] is not old[a] else None


def _inner_change(s: Stmt, o: Stmt) -> _Blocks | None:
    """The one block (new, old) in which ``s`` differs from ``o``, where everything else of
    theirs is the same (objects; names, modes and axes equal), or None."""
    if type(s) is For and type(o) is For:
        same = s.iter is o.iter and s.lo is o.lo and s.hi is o.hi
        if same and s.mode == o.mode and s.axis == o.axis and s.body is not o.body:
            return s.body, o.body
    elif type(s) is If and type(o) is If and s.cond is o.cond:
        if s.orelse is o.orelse and s.body is not o.body:
            return s.body, o.body
        if s.body is o.body and s.orelse is not o.orelse:
            return s.orelse, o.orelse
    elif type(s) is Scope and type(o) is Scope and s.body is not o.body:
        return (s.body, o.body) if s.name == o.name and s.target == o.target else None
    return None


def _retagged(new: ProcDef, old: ProcDef, top: tuple[int, int] | None) -> _Retagged | None:
    """The one statement where ``new`` differs from ``old`` (each statement around it, and
    around each statement enclosing it, the same object; the enclosing headers the same),
    or None where the difference is anything else. No path is built: only a failure would
    word one, and a failure goes to the walk."""
    if new.args is not old.args or new.preds is not old.preds:
        return None
    block, oblock, cuda, shared = new.body, old.body, 0, top
    while True:
        k = _only_change(block, oblock, shared)
        if k is None:
            return None
        s, o = block[k], oblock[k]
        inner = _inner_change(s, o)
        if inner is None:
            return _Retagged(s, o, block, k, cuda)
        block, oblock = inner
        cuda += type(s) is Scope and s.target == "cuda"
        shared = None


def _retag_holds(v: _Verifier, r: _Retagged) -> bool:
    """Whether ``r.new``, differing from the valid ``r.old`` only in plain fields that no
    other check reads, is valid: an allocation moved to another memory, which no later
    statement of its block reads (``_mem_reads``), or a loop with another mode or axis.
    Everything else of the proc is ``old``'s under the same bindings, and held there. False
    for anything else or a failure: the walk decides, and words the message."""
    s, o = r.new, r.old
    try:
        if type(s) is Alloc and type(o) is Alloc:
            if s.sym is not o.sym or s.type is not o.type:
                return False  # a type is read by every use of the buffer
            v.alloc_memory(s, ())
            for x in r.block[r.at + 1 :]:
                if type(x) not in _NO_MEM_READS and s.sym in _mem_reads(x):
                    return False
            return True
        if type(s) is For and type(o) is For:
            if s.iter is not o.iter or s.lo is not o.lo or s.hi is not o.hi or s.body is not o.body:
                return False
            depth, v.cuda_depth = v.cuda_depth, r.cuda_depth
            try:
                v.loop_mode(s, ())
            finally:
                v.cuda_depth = depth  # the walk, when this fails, starts from the top
            return True
    except IRVerificationError:
        pass
    return False


def _retag_step(v: _Verifier, new: ProcDef, old: ProcDef, top: tuple[int, int] | None) -> bool:
    """Whether ``new`` is the valid ``old`` with one statement retagged, and valid."""
    r = _retagged(new, old, top)
    return r is not None and _retag_holds(v, r)


def _same_nodes(new: ProcDef, old: ProcDef) -> bool:
    """Whether ``new`` holds the very parameters, asserts and body of ``old``."""
    return new.body is old.body and new.args is old.args and new.preds is old.preds


def verify_step(
    new: ProcDef, old: ProcDef | None, top: tuple[int, int] | None = None, retag: bool = True
) -> None:
    """Verify ``new``, a version made from ``old``: incrementally where ``old`` is known
    valid (see the module docstring), else the whole proc (``verify_proc``).

    ``top``: ``(a, b)`` when the caller knows, by construction, that the first ``a`` and the
    last ``b`` statements of ``new.body`` are the very objects of ``old.body``'s (the step's
    forwarding map says where the edit was: ``registry.top_shared``); they are then not
    scanned, which on a big proc is most of the walk. A wrong ``top`` hides a change there:
    only the editor's maps may give it.

    ``retag``: whether to try the descent to one retagged statement first (``_retag_step``);
    the registry passes False where the step's map says the edit was no retag, so other
    steps do not pay for a descent that fails. A wrong True costs time, never soundness:
    the descent compares by identity.

    Raises:
        IRVerificationError: naming the first broken invariant and where it is broken, as
            ``verify_proc(new)`` would.
    """
    if known_valid(new):
        return
    if old is not None and _same_nodes(new, old) and known_valid(old):
        remember_valid(new)  # a new name or instruction template: no invariant reads them
        return
    v = _StepVerifier(new, set())
    if old is not None and known_valid(old):
        if not (retag and _retag_step(v, new, old, top)):
            v.proc_since(old, top)
    else:
        v.proc()
    remember_valid(new)


def verify_both(
    new: ProcDef, old: ProcDef, top: tuple[int, int] | None = None
) -> tuple[str | None, str | None]:
    """The verdicts of the whole-proc walk reusing nothing (``verify_proc(new, memo=False)``)
    and of the incremental walk of ``new`` against ``old``, which must be known valid: each
    ``None`` (passed) or the error's message. They must be equal; the soundness fuzzer
    compares them on every step it accepts (with the step's ``top``, as the registry gives
    it) and on corrupted copies of it (without).
    """
    assert known_valid(old), "the incremental walk starts from a proc known valid"

    def outcome(v: _Verifier, since: ProcDef | None) -> str | None:
        try:
            if isinstance(v, _StepVerifier) and since is not None:
                if not _retag_step(v, new, since, top):
                    v.proc_since(since, top)
            else:
                v.proc()
        except IRVerificationError as e:
            return str(e)
        return None

    return outcome(_Verifier(new, set(), memo=False), None), outcome(_StepVerifier(new, set()), old)
