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
  left the bindings as ``old``'s middle did (the same symbols, bound to the same things);
  otherwise they are checked again.

The parameters and asserts of ``new``, when they are the very objects of ``old``'s, are not
checked again (their bindings enter the scope), nor the header of a paired loop whose bounds
are the same objects (mode and axis equal). Parameters that changed (a memory, a type) give
other bindings everywhere: then the whole proc is walked (with the memo).
``CURSCHED_VERIFY=full`` runs ``verify_proc(new, memo=False)`` instead, which reuses nothing;
the soundness fuzzer runs both and compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count
from operator import is_, is_not

from cursched.errors import IRVerificationError
from cursched.ir.nodes import Alloc, FnArg, For, If, ProcDef, Scope, Stmt, WindowStmt
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.verify import LOOP_VAR, _Var, _Verifier, known_valid, remember_valid

__all__ = ["verify_both", "verify_step"]

_Binds = dict[Sym, _Var]
_BINDERS = frozenset((Alloc, WindowStmt))  # the statements that bind a symbol in their block


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
        if shared is not None and shared[0] >= 0 and 0 <= shared[1] <= min(n, o) - shared[0]:
            a, b = shared
        else:
            a, b = _shared(body, old)
        bound: list[Sym] = []
        if a:
            self.take_all(body[:a], bound)
        if n == o and a + b == n - 1:  # one statement changed in place, the commonest edit
            same = self.stmt_since(body[a], old[a], (*path, (attr, a)), bound, True)
        else:
            same = self.middle(body[a : n - b], old[a : o - b], path, attr, a, bound)
        # where the bindings after the middle are ``old``'s, the shared suffix holds; its own
        # bindings are not taken: no statement of this block after it is checked
        if not same:
            for k in range(n - b, n):
                self.stmt(body[k], (*path, (attr, k)), bound)
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
    ) -> bool:
        """Check the changed statements; whether the bindings after them equal ``old``'s."""
        if len(new) == len(old):
            same = True
            for k, (s, o) in enumerate(zip(new, old, strict=True)):
                same = self.stmt_since(s, o, (*path, (attr, at + k)), bound, same)
            return same
        before = self.bindings(old)
        start = len(bound)
        for k, s in enumerate(new):
            self.stmt(s, (*path, (attr, at + k)), bound)
        return before == self.since_start(bound, start)

    def stmt_since(self, s: Stmt, o: Stmt, path: Path, bound: list[Sym], same: bool) -> bool:
        """Check ``s`` in the place of ``o``; ``same``: the bindings here equal ``old``'s.
        Returns whether they are still equal after it."""
        if same and self.paired(s, o, path, bound):
            return True
        before = self.bindings((o,)) if same else None
        start = len(bound)
        self.stmt(s, path, bound)
        return same and before == self.since_start(bound, start)

    def paired(self, s: Stmt, o: Stmt, path: Path, bound: list[Sym]) -> bool:
        """Check ``s`` against ``o`` where the bindings are equal; False: not comparable."""
        if s is o:
            self.take(s, bound)
            return True
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


def _same_nodes(new: ProcDef, old: ProcDef) -> bool:
    """Whether ``new`` holds the very parameters, asserts and body of ``old``."""
    return new.body is old.body and new.args is old.args and new.preds is old.preds


def verify_step(new: ProcDef, old: ProcDef | None, top: tuple[int, int] | None = None) -> None:
    """Verify ``new``, a version made from ``old``: incrementally where ``old`` is known
    valid (see the module docstring), else the whole proc (``verify_proc``).

    ``top``: ``(a, b)`` when the caller knows, by construction, that the first ``a`` and the
    last ``b`` statements of ``new.body`` are the very objects of ``old.body``'s (the step's
    forwarding map says where the edit was: ``registry.top_shared``); they are then not
    scanned, which on a big proc is most of the walk. A wrong ``top`` hides a change there:
    only the editor's maps may give it.

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
                v.proc_since(since, top)
            else:
                v.proc()
        except IRVerificationError as e:
            return str(e)
        return None

    return outcome(_Verifier(new, set(), memo=False), None), outcome(_StepVerifier(new, set()), old)
