"""Incremental verification of a retag (issue 16): a step that gives one allocation another
memory, or one loop another mode or axis (``Editor.retag``: ``set_memory``,
``parallelize_loop``), is verified without the walk where nothing else reads what changed,
and by the walk, checking again only the statements that read a changed memory, where
something does; either way with the verdict and message of the whole-proc walk. Any other
statement changed in place (``commute_expr``) is walked to, and only it is checked."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from cursched import bind_expr, commute_expr, parallelize_loop, set_memory
from cursched.cursors.tree import update_at
from cursched.errors import IRVerificationError
from cursched.frontend import parse_source
from cursched.ir import verify as verify_mod
from cursched.ir import verify_step as step_mod
from cursched.ir.memory import DRAM, DRAM_STACK, SHARED
from cursched.ir.nodes import Alloc, ProcDef, Stmt
from cursched.ir.paths import Path, get_at
from cursched.ir.verify import known_valid, verify_proc
from cursched.ir.verify_step import verify_both, verify_step
from cursched.proc import Proc
from tests.primitives.verify_agree import check_agree

ENV: dict[str, object] = {"DRAM": DRAM, "DRAM_STACK": DRAM_STACK}
for _text in (
    "def g(a: f32[8] @ DRAM):\n    a[0] = 1.0\n",
    "def h(a: [f32][4] @ DRAM):\n    a[0] = 1.0\n",
    "def s1(a: f32 @ DRAM):\n    a = 1.0\n",
):
    _p = parse_source(_text, ENV)
    ENV[_p.name] = _p

# ``t`` at body[1], its uses after it: none reads its memory (writes, reads, a loop)
PLAIN = """
def f(n: size, x: f32[8] @ DRAM):
    u: f32[8] @ DRAM
    t: f32[8] @ DRAM
    for i in seq(0, 8):
        t[i] = x[i]
    for j in seq(0, 8):
        x[j] = t[j] + 1.0
    g(u)
"""

# the uses that read ``t``'s memory, one per proc: a call passing it, a window of it passed,
# a window of a window, a call nested in a loop and an if, an element passed as a scalar
READERS = {
    "call": "g(t)",
    "window": "w = t[0:4]\n    h(w)",
    "window of a window": "w = t[0:8]\n    v = w[2:6]\n    h(v)",
    "nested": "for i in seq(0, 2):\n        if n > 1:\n            h(t[4 * i:4 * i + 4])",
    "scalar": "s1(t[3])",
}


def _proc(src: str) -> ProcDef:
    p = parse_source(src, ENV)
    verify_proc(p, memo=False)
    assert known_valid(p)
    return p


def _reader(use: str) -> ProcDef:
    return _proc(
        "def f(n: size, x: f32[8] @ DRAM):\n    t: f32[8] @ DRAM\n"
        f"    for i in seq(0, 8):\n        t[i] = x[i]\n    {use}\n    x[0] = t[0]\n"
    )


def _retag(p: ProcDef, path: Path, **fields: object) -> ProcDef:
    """``p`` with the statement at ``path`` given other plain fields, as ``Editor.retag``
    makes it (the very same children; only the nodes on the path rebuilt)."""
    node: Stmt = get_at(p, path)  # type: ignore[assignment]
    return update_at(p, path, lambda _: node.replace(**fields))


def _seen(spy: list[object], s: Stmt) -> bool:
    """Whether the very statement ``s`` was checked (equal ones do not count)."""
    return any(x is s for x in spy)


def _full_error(p: ProcDef) -> str:
    with pytest.raises(IRVerificationError) as e:
        verify_proc(p, memo=False)
    return str(e.value)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """What the verifiers check: "walk" for each incremental walk of the proc, and each
    statement checked whole (also by the walk that makes a test's proc known valid: a test
    clears the list before the step it looks at)."""
    seen: list[object] = []
    real_walk, real_stmt = step_mod._StepVerifier.proc_since, verify_mod._Verifier.stmt

    def walk(self: step_mod._StepVerifier, *args: object) -> None:
        seen.append("walk")
        real_walk(self, *args)  # type: ignore[arg-type]

    def stmt(self: verify_mod._Verifier, s: Stmt, *args: object) -> None:
        seen.append(s)
        real_stmt(self, s, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(step_mod._StepVerifier, "proc_since", walk)
    monkeypatch.setattr(verify_mod._Verifier, "stmt", stmt)
    yield seen


def test_set_memory_is_verified_without_a_walk(spy: list[object]) -> None:
    p = Proc(_proc(PLAIN))
    spy.clear()  # the walk that made p known valid
    q, _ = set_memory(p, "t", DRAM_STACK)
    assert spy == []  # no walk, no statement checked again
    assert known_valid(q.ir())
    assert verify_both(q.ir(), p.ir()) == (None, None)


def test_parallelize_loop_is_verified_without_a_walk(spy: list[object]) -> None:
    p = Proc(_proc(PLAIN))
    spy.clear()
    q, _ = parallelize_loop(p, "j")
    assert spy == []
    assert known_valid(q.ir())


@pytest.mark.parametrize("use", sorted(READERS))
def test_a_use_that_reads_the_memory_refuses_the_retag_as_the_full_walk_does(
    use: str, spy: list[object]
) -> None:
    old = _reader(READERS[use])
    new = _retag(old, (("body", 0),), mem=SHARED)  # the callees take DRAM
    spy.clear()
    with pytest.raises(IRVerificationError, match=r"\[call-args\].*lives in SHARED") as e:
        verify_step(new, old)
    assert spy[0] == "walk"  # the fast path declined: something reads t's memory
    # the walk checked the allocation and what reads its memory, not the loop writing t
    assert not _seen(spy, old.body[1])
    assert str(e.value) == _full_error(new)
    assert not known_valid(new)


@pytest.mark.parametrize("use", sorted(READERS))
def test_a_use_that_reads_the_memory_passes_where_the_memory_passes(use: str) -> None:
    old = _reader(READERS[use])
    # DRAM_STACK passes for no other memory: refused; DRAM, the parameters' own: valid
    for mem, verdict in ((DRAM_STACK, "lives in DRAM_STACK"), (DRAM, None)):
        new = _retag(old, (("body", 0),), mem=mem)
        full, incremental = verify_both(new, old)
        assert full == incremental
        assert (full is None) if verdict is None else (verdict in (full or ""))


def test_an_allocation_retagged_with_another_change_narrows_the_walk(spy: list[object]) -> None:
    """The fast path takes one changed statement; with a second change the walk runs, and
    after the retagged allocation it checks again only the statements that read a memory
    that changed: the call of ``g(t)`` is checked, the loop and the call of ``g(u)`` not."""
    old = _proc(PLAIN.replace("    g(u)\n", "    g(t)\n    g(u)\n"))
    body = old.body
    loop = dataclasses.replace(body[2])  # a new object, equal: a changed statement
    new = old.replace(body=(body[0], body[1].replace(mem=SHARED), loop, *body[3:]))
    spy.clear()
    with pytest.raises(IRVerificationError, match=r"\[call-args\] in proc f at body\[4\]") as e:
        verify_step(new, old)
    assert spy[0] == "walk"
    assert not _seen(spy, body[3]) and _seen(spy, body[4]) and not _seen(spy, body[5])
    assert str(e.value) == _full_error(new)
    ok = old.replace(body=(body[0], body[1].replace(mem=DRAM_STACK), loop, body[3], body[5]))
    old_ok = old.replace(body=(*body[:4], body[5]))
    verify_proc(old_ok, memo=False)
    spy.clear()
    verify_step(ok, old_ok)  # DRAM_STACK: nothing after t reads its memory
    # the allocation and the changed loop only (with the write inside it)
    assert spy[0] == "walk" and spy[1] is ok.body[1] and spy[2] is loop and len(spy) == 4
    assert not _seen(spy, body[3]) and not _seen(spy, body[5])


def test_a_window_of_a_retagged_buffer_lives_in_its_memory() -> None:
    """A window statement after the retagged allocation binds a window in the new memory:
    a call passing the window, two statements later, is checked again."""
    old = _reader("w = t[0:8]\n    x[1] = 2.0\n    v = w[0:4]\n    x[2] = 3.0\n    h(v)")
    new = _retag(old, (("body", 0),), mem=SHARED)
    with pytest.raises(IRVerificationError, match=r"at body\[6\].*lives in SHARED") as e:
        verify_step(new, old)
    assert str(e.value) == _full_error(new)


@pytest.mark.parametrize(
    ("fields", "inv"),
    [
        ({"mem": int}, "alloc"),  # not a Memory subclass
        ({"type": parse_source("def k(a: f32):\n    pass\n", ENV).args[0].type}, "index-count"),
    ],
)
def test_an_allocation_broken_by_a_retag_is_refused_as_the_full_walk_does(
    fields: dict[str, object], inv: str
) -> None:
    old = _proc(PLAIN)
    new = _retag(old, (("body", 1),), **fields)
    with pytest.raises(IRVerificationError, match=rf"\[{inv}\]") as e:
        verify_step(new, old)
    assert str(e.value) == _full_error(new)


CUDA = """
def f(n: size, x: f32[8] @ DRAM):
    with scope("k", target="cuda"):
        for i in par(0, 8):
            x[i] = 1.0
    for j in seq(0, 8):
        x[j] = 2.0
"""


@pytest.mark.parametrize(
    ("path", "fields", "inv"),
    [
        ((("body", 1),), {"mode": "par", "axis": "threadIdx.x"}, "loop-axis"),  # no cuda scope
        ((("body", 0), ("body", 0)), {"axis": "threadIdx.x"}, None),  # in the cuda scope
        ((("body", 0), ("body", 0)), {"mode": "seq", "axis": "threadIdx.x"}, "loop-axis"),
        ((("body", 0), ("body", 0)), {"axis": "warp.x"}, "loop-axis"),
        ((("body", 1),), {"mode": "unrolled"}, "loop-bounds"),
    ],
)
def test_a_loop_retag_is_checked_with_the_cuda_scopes_around(
    path: Path, fields: dict[str, object], inv: str | None
) -> None:
    old = _proc(CUDA)
    new = _retag(old, path, **fields)
    fast = step_mod._retag_step(step_mod._StepVerifier(new, set()), new, old, None)
    assert fast == (inv is None)  # the shortcut passes only what holds
    full, incremental = verify_both(new, old)
    assert full == incremental
    assert (full is None) if inv is None else (f"[{inv}]" in (full or ""))
    check_agree(old, new)


def test_the_retag_comparison_catches_an_injected_blind_spot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fast path believing no statement reads a memory passes a call the full walk
    refuses: the fuzzer's comparison (``check_agree``) reports it."""
    old = _reader(READERS["call"])
    new = _retag(old, (("body", 0),), mem=SHARED)
    check_agree(old, new)  # both refuse, with the same message
    monkeypatch.setattr(step_mod, "_mem_reads", lambda s: step_mod._NO_SYMS)
    assert verify_both(new, old)[1] is None
    with pytest.raises(AssertionError, match="verification modes disagree: full says"):
        check_agree(old, new)


def test_only_one_changed_statement_is_a_retag() -> None:
    old = _proc(PLAIN)
    body = old.body
    both = (body[0].replace(mem=DRAM_STACK), body[1].replace(mem=DRAM_STACK))
    two = old.replace(body=(*both, *body[2:]))
    assert step_mod._retagged(two, old, None) is None
    moved = old.replace(body=(body[1], body[0], *body[2:]))
    assert step_mod._retagged(moved, old, None) is None
    one = _retag(old, (("body", 1),), mem=DRAM_STACK)
    r = step_mod._retagged(one, old, None)
    assert r is not None and r.new is one.body[1] and r.at == 1 and isinstance(r.old, Alloc)


def test_the_registry_tries_the_descent_only_after_a_retag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The step's map says whether the edit was a retag: other steps (here ``commute_expr``,
    a node replaced, and ``bind_expr``, an insertion and a replacement) do not pay for a
    descent that cannot pass."""
    tried: list[bool] = []
    real = step_mod.verify_step

    def step(
        new: ProcDef, old: ProcDef | None, top: tuple[int, int] | None = None, retag: bool = True
    ) -> None:
        tried.append(retag)
        real(new, old, top, retag)

    monkeypatch.setattr(step_mod, "verify_step", step)
    p = Proc(_proc(PLAIN))
    q, _ = set_memory(p, "t", DRAM_STACK)
    parallelize_loop(q, "j")
    commute_expr(q, [q.find("t[j] + 1.0")])
    bind_expr(q, q.find("t[j] + 1.0"), "s")
    assert tried == [True, True, False, False]


# the bindings on the path of the innermost statements: a window and an allocation before
# the first loop, an allocation before the inner loop, two loop variables
DEEP = """
def f(n: size, x: f32[8] @ DRAM, y: f32[8, 8] @ DRAM):
    w = y[0:8, 0]
    t: f32[8] @ DRAM
    for i in seq(0, 8):
        u: f32 @ DRAM
        x[i] = 0.0
        for j in seq(0, 8):
            u = w[j]
            t[i] = u + x[j]
    for k in seq(0, 8):
        x[k] = t[k]
"""
_INNER: Path = (("body", 2), ("body", 2), ("body", 1))  # t[i] = u + x[j]


def test_commute_expr_checks_the_one_changed_statement(spy: list[object]) -> None:
    p = Proc(_proc(DEEP))
    spy.clear()
    q, _ = commute_expr(p, [p.find("u + x[j]")])
    changed = get_at(q.ir(), _INNER)
    assert spy == ["walk", changed]  # walked to it; nothing else checked
    assert known_valid(q.ir())
    assert verify_both(q.ir(), p.ir()) == (None, None)


@pytest.mark.parametrize(
    ("source", "inv"),
    [
        ((("body", 3), ("body", 0)), "sym-defined"),  # x[k] = t[k]: k unbound there
        ((("body", 2), ("body", 2)), "sym-unique"),  # the j loop inside itself: j, again
        ((("body", 2), ("body", 0)), "sym-unique"),  # u: f32 allocated again in its scope
        ((("body", 2), ("body", 2), ("body", 0)), None),  # u = w[j]: valid there
    ],
)
def test_a_statement_changed_in_place_is_checked_under_the_bindings_of_its_path(
    source: Path, inv: str | None, spy: list[object]
) -> None:
    old = _proc(DEEP)
    new = update_at(old, _INNER, lambda _: get_at(old, source))
    spy.clear()
    if inv is None:
        verify_step(new, old)
        assert spy == ["walk", new.body[2].body[2].body[1]]  # type: ignore[union-attr]
        return
    with pytest.raises(IRVerificationError, match=rf"\[{inv}\]") as e:
        verify_step(new, old)
    assert str(e.value) == _full_error(new)
    assert verify_both(new, old) == (str(e.value), str(e.value))


GPU = """
def f(n: size, x: f32[8] @ DRAM):
    with scope("k", target="cuda"):
        for i in par(0, 8, axis="blockIdx.x"):
            x[i] = 1.0
    for j in seq(0, 8):
        x[j] = 2.0
"""


@pytest.mark.parametrize(
    ("path", "ok"), [((("body", 0), ("body", 0)), True), ((("body", 1),), False)]
)
def test_a_loop_changed_in_place_is_checked_with_the_cuda_scopes_around(
    path: Path, ok: bool
) -> None:
    """A loop given an axis and a new body (no retag: the walk checks it): valid inside the
    kernel scope only."""
    old = _proc(GPU)
    loop = get_at(old, path)
    fresh = dataclasses.replace(loop.body[0])  # an equal statement, another object
    new = update_at(
        old, path, lambda _: loop.replace(mode="par", axis="threadIdx.x", body=(fresh,))
    )
    full, incremental = verify_both(new, old)
    assert full == incremental
    assert (full is None) == ok
