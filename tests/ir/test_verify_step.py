"""Incremental verification (issue 16): ``verify_step(new, old)`` checks only what a step
changed and gives the verdict of the whole-proc walk, message included; the registry runs it
by default and the whole-proc walk with ``CURSCHED_VERIFY=full``; the fuzzer's comparison of
the two catches a blind spot injected into the incremental walk."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from cursched import split
from cursched.cursors.tree import stmt_list, update_at
from cursched.errors import IRVerificationError
from cursched.frontend import parse_source
from cursched.ir import verify as verify_mod
from cursched.ir import verify_step as step_mod
from cursched.ir.memory import DRAM, DRAM_STACK
from cursched.ir.nodes import ProcDef
from cursched.ir.paths import Path
from cursched.ir.verify import known_valid, verify_proc
from cursched.ir.verify_step import verify_both, verify_step
from cursched.primitives import settings
from cursched.proc import Proc
from tests.primitives.verify_agree import check_agree

SRC = """
def f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    t: f32[n] @ DRAM
    for i in seq(0, n):
        t[i] = x[i]
    for j in seq(0, n):
        for k in seq(0, 4):
            y[j] = t[j] + 1.0
    for i in seq(0, n):
        x[i] = t[i]
"""


def _valid() -> ProcDef:
    p = parse_source(SRC, {"DRAM": DRAM})
    verify_proc(p, memo=False)
    assert known_valid(p)
    return p


def _set_block(ir: ProcDef, parent: Path, attr: str, lst: tuple[object, ...]) -> ProcDef:
    return update_at(ir, parent, lambda n: n.replace(**{attr: lst}))


def _full_error(p: ProcDef) -> str:
    with pytest.raises(IRVerificationError) as e:
        verify_proc(p, memo=False)
    return str(e.value)


def test_a_valid_step_passes_and_is_remembered_valid() -> None:
    old = _valid()
    body = old.body
    new = old.replace(body=(body[0], body[1], body[3], body[2]))  # the last two loops swapped
    verify_step(new, old)
    assert known_valid(new)


def test_an_allocation_deleted_before_unchanged_uses_is_caught_with_the_full_message() -> None:
    old = _valid()
    new = old.replace(body=old.body[1:])  # the suffix still reads t
    with pytest.raises(IRVerificationError) as e:
        verify_step(new, old)
    assert "[sym-defined]" in str(e.value)
    assert str(e.value) == _full_error(new)
    assert not known_valid(new)


def test_a_binding_added_before_unchanged_code_that_binds_it_is_caught() -> None:
    old = _valid()
    j_loop = old.body[2]
    inner = j_loop.body[0]  # type: ignore[attr-defined]
    # the loop over k, copied in front of the j loop's body: fine; in front of itself inside
    # its own body: `k` bound again while in scope
    nested = inner.replace(body=(inner, *inner.body))
    new = _set_block(old, (("body", 2),), "body", (nested,))
    with pytest.raises(IRVerificationError, match=r"\[sym-unique\]") as e:
        verify_step(new, old)
    assert str(e.value) == _full_error(new)


def test_a_deep_edit_is_checked_where_it_is() -> None:
    old = _valid()
    k_path: Path = (("body", 2), ("body", 0))
    k_body = stmt_list(old, k_path, "body")
    write_t = old.body[1].body[0]  # type: ignore[attr-defined]  # t[i] = x[i]: reads `i`
    new = _set_block(old, k_path, "body", (*k_body, write_t))
    with pytest.raises(IRVerificationError, match=r"\[sym-defined\].*body\[2\]\.body\[0\]") as e:
        verify_step(new, old)
    assert str(e.value) == _full_error(new)


def test_changed_parameters_walk_the_whole_proc() -> None:
    old = _valid()
    x = old.args[1]
    new = old.replace(args=(old.args[0], x.replace(mem=None), old.args[2]))
    with pytest.raises(IRVerificationError, match=r"\[fnarg\]"):
        verify_step(new, old)


def test_an_input_not_known_valid_is_verified_whole() -> None:
    old = parse_source(SRC, {"DRAM": DRAM})
    assert not known_valid(old)
    verify_step(old.replace(body=old.body[:1]), old)  # valid: checked whole, no shortcut
    with pytest.raises(IRVerificationError, match=r"\[sym-defined\]"):
        verify_step(old.replace(body=old.body[1:]), old)


@pytest.fixture
def mode() -> Iterator[None]:
    saved = settings.verify_mode
    yield
    settings.verify_mode = saved


def test_the_registry_runs_the_mode_asked(mode: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_full, real_step = verify_mod.verify_proc, step_mod.verify_step

    def full(p: ProcDef, *, memo: bool = True) -> None:
        calls.append(f"full memo={memo}")
        real_full(p, memo=memo)

    def step(
        new: ProcDef, old: ProcDef | None, top: tuple[int, int] | None = None, retag: bool = True
    ) -> None:
        calls.append("incremental")
        real_step(new, old, top, retag)

    monkeypatch.setattr(verify_mod, "verify_proc", full)
    monkeypatch.setattr(step_mod, "verify_step", step)
    p = Proc(parse_source(SRC, {"DRAM": DRAM}))
    settings.verify_mode = "full"
    full_p, _ = split(p, "j", 2, ("jo", "ji"), tail="cut")
    settings.verify_mode = "incremental"
    inc_p, _ = split(p, "j", 2, ("jo", "ji"), tail="cut")
    assert calls == ["full memo=False", "incremental"]
    assert str(full_p) == str(inc_p)


def test_the_fuzzers_comparison_catches_an_injected_blind_spot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = _valid()
    new = old.replace(body=(old.body[0], *old.body[2:]))  # the first loop deleted: valid
    check_agree(old, new)  # both modes agree (here: both pass)
    broken = old.replace(body=old.body[1:])
    check_agree(old, broken)  # both refuse, with the same message
    full, incremental = verify_both(broken, old)
    assert full is not None and full == incremental

    # the bug: the incremental walk believes a changed middle never changes the bindings,
    # so it skips the unchanged statements after it, which read the deleted `t`
    real = step_mod._StepVerifier.middle

    def blind(self: step_mod._StepVerifier, *args: object) -> frozenset[object]:
        real(self, *args)  # type: ignore[arg-type]
        return step_mod._SAME

    monkeypatch.setattr(step_mod._StepVerifier, "middle", blind)
    assert verify_both(broken, old)[1] is None  # the incremental walk misses it now
    with pytest.raises(AssertionError, match="verification modes disagree: full says"):
        check_agree(old, broken)


def test_a_proc_asked_for_stays_known_valid_past_the_table_limit() -> None:
    """The table of valid procs drops its least recently used entry when full (it was
    cleared): a base that every step starts from stays known, so the steps from it stay
    incremental, while a proc not asked for since goes."""
    base, old = _valid(), _valid()
    assert known_valid(base) and known_valid(old)
    for k in range(verify_mod._VALID_LIMIT + 10):
        verify_proc(base.replace(name=f"v{k}"))
        assert known_valid(base)
    assert not known_valid(old)
    assert len(verify_mod._VALID) == verify_mod._VALID_LIMIT


def test_a_new_name_is_valid_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    old = _valid()
    walks: list[str] = []
    monkeypatch.setattr(step_mod._StepVerifier, "proc_since", lambda *a: walks.append("walk"))
    verify_step(old.replace(name="g"), old)
    assert walks == []
    verify_step(old.replace(name="h", body=old.body[:1]), old)  # a body of its own: walked
    assert walks == ["walk"]


def test_a_shared_write_is_checked_again_where_a_binding_changed_type() -> None:
    # ``t[i] = x[i]`` passed under t: f32[n]; the very node after t became a scalar (or a
    # rank-2 tensor) must fail: the memo of writes keys the bindings it read by their types
    old = _valid()
    verify_proc(old)  # the walk with the memo, as a step's verification leaves it
    alloc = old.body[0]
    for t in (alloc.type.elem, dataclasses.replace(alloc.type, shape=(*alloc.type.shape,) * 2)):  # type: ignore[attr-defined]
        new = old.replace(body=(alloc.replace(type=t), *old.body[1:]))
        with pytest.raises(IRVerificationError, match=r"\[index-count\]") as e:
            verify_step(new, old)
        assert str(e.value) == _full_error(new)


def test_a_binding_that_changed_memory_only_keeps_its_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = _valid()
    verify_proc(old)  # the walk with the memo, as a step's verification leaves it
    alloc = old.body[0]
    new = old.replace(body=(alloc.replace(mem=DRAM_STACK), *old.body[1:]))
    checked: list[object] = []
    real = verify_mod._Verifier.write
    monkeypatch.setattr(
        verify_mod._Verifier,
        "write",
        lambda self, s, path: checked.append(s) or real(self, s, path),
    )
    verify_step(new, old)
    assert checked == []  # every write of t was checked in old under the same types
    assert verify_both(new, old) == (None, None)
