"""The soundness fuzzer's comparison of the two verification modes (issue 16).

After every accepted step, the whole-proc walk that reuses nothing (``CURSCHED_VERIFY=full``)
and the incremental walk of the new proc against the step's input (the default) must agree:
on the new proc itself (both pass), and on corrupted copies of it, where the IR is broken on
purpose next to what the step changed or far from it (a statement deleted, one repeated, two
swapped, one hoisted out of its loops to the top of the proc): the same verdict, the same message. A corruption that deletes an
allocation or a loop shows a blind spot of the incremental walk (uses left unbound after an
unchanged statement), one that repeats a binding shows ``sym-unique`` across shared code.
A retag of the new proc (an allocation's memory, a loop's mode or axis) and one of its
statements put in the place of another, each compared against the new proc, try the
incremental walk's descent to a retag and its check of one statement changed in place,
under the bindings of its path, on procs with calls and windows.
"""

from __future__ import annotations

import random

from cursched.cursors.tree import stmt_list, update_at, walk_stmts
from cursched.ir.memory import DRAM, DRAM_STACK, SHARED
from cursched.ir.nodes import Alloc, For, ProcDef, WindowStmt
from cursched.ir.paths import Path
from cursched.ir.printer import print_proc
from cursched.ir.verify import known_valid, verify_proc
from cursched.ir.verify_step import verify_both
from cursched.primitives.registry import top_shared
from cursched.proc import Proc


def check_agree(old: ProcDef, new: ProcDef, top: tuple[int, int] | None = None) -> None:
    """Full and incremental verification of ``new`` (a step from ``old``) agree; ``top``: what
    the step's map says of the body (``registry.top_shared``), as the registry passes it."""
    if not known_valid(old):
        verify_proc(old, memo=False)
    full, incremental = verify_both(new, old, top)
    assert full == incremental, (
        f"verification modes disagree: full says {full or 'valid'}, "
        f"incremental says {incremental or 'valid'}"
    )


def _edit(ir: ProcDef, path: Path, how: str) -> ProcDef:
    parent, (attr, k) = path[:-1], path[-1]
    block = stmt_list(ir, parent, attr)
    if how == "delete":
        lst = (*block[:k], *block[k + 1 :])
    elif how == "repeat":
        lst = (*block[: k + 1], block[k], *block[k + 1 :])
    elif how == "hoist":  # out of its loops, to the top of the proc (reads left unbound)
        if not parent:
            return ir
        rest = (*block[:k], *block[k + 1 :])
        moved = update_at(ir, parent, lambda n: n.replace(**{attr: rest}))
        return moved.replace(body=(block[k], *moved.body))
    else:  # swap with the next statement
        if k + 1 >= len(block):
            return ir
        lst = (*block[:k], block[k + 1], block[k], *block[k + 2 :])
    return update_at(ir, parent, lambda n: n.replace(**{attr: lst}))


def corruptions(new: ProcDef, seed: int, count: int = 4) -> list[ProcDef]:
    """``count`` corrupted copies of ``new`` (some may still be valid), drawn with ``seed``."""
    paths = [p for p, _ in walk_stmts(new.body, ())]
    if not paths:
        return []
    binders = [p for p, s in walk_stmts(new.body, ()) if isinstance(s, Alloc | WindowStmt)]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        how = rng.choice(("delete", "repeat", "swap", "hoist"))
        # deleting or repeating a binding breaks the IR most often: prefer those statements
        pool = binders if binders and how in ("delete", "repeat") and rng.random() < 0.7 else paths
        out.append(_edit(new, rng.choice(pool), how))
    return out


# what a retag may set: memories the fuzzer's callees take (DRAM) or not, a class that is no
# memory; loop modes and axes, valid or not (no generated proc has a cuda scope)
_MEMS: tuple[object, ...] = (DRAM, DRAM_STACK, SHARED, int)
_LOOPS: tuple[dict[str, object], ...] = (
    {"mode": "par"},
    {"mode": "seq"},
    {"mode": "par", "axis": "threadIdx.x"},
    {"mode": "unrolled"},
)


def retagged(new: ProcDef, rng: random.Random) -> ProcDef | None:
    """``new`` with one allocation given another memory or one loop another mode or axis,
    as ``Editor.retag`` makes it (the very same children), valid or not; None where ``new``
    has neither."""
    sites = [(p, s) for p, s in walk_stmts(new.body, ()) if isinstance(s, Alloc | For)]
    if not sites:
        return None
    path, s = rng.choice(sites)
    if isinstance(s, Alloc):
        fields = {"mem": rng.choice([m for m in _MEMS if m is not s.mem])}
    else:
        fields = rng.choice([f for f in _LOOPS if s.replace(**f) is not s])
    return update_at(new, path, lambda n: n.replace(**fields))


def transplanted(new: ProcDef, rng: random.Random) -> ProcDef | None:
    """``new`` with one statement replaced in place by another of its statements, from
    elsewhere (its loop variables, buffers and windows may be out of scope there, or bound
    twice): a change of one statement for one, which the incremental walk checks alone
    under the bindings of its path; None where ``new`` has one statement."""
    stmts = list(walk_stmts(new.body, ()))
    if len(stmts) < 2:
        return None
    (path, _), (_, other) = rng.sample(stmts, 2)
    return update_at(new, path, lambda _: other)


def check_agree_corrupted(
    old: ProcDef, new: ProcDef, seed: int, top: tuple[int, int] | None = None
) -> None:
    """``check_agree`` on ``new`` (with the step's ``top``, and without) and on corrupted
    copies of it (without: a corruption is no edit of the editor's, its map says nothing);
    and against ``new`` itself, on a retag of it and on one statement of it replaced by
    another (the incremental walk's shortcuts for one changed statement)."""
    check_agree(old, new)
    if top is not None:
        check_agree(old, new, top)
    for bad in corruptions(new, seed):
        check_agree(old, bad)
    # seeded by the proc's text too: the step counts that make ``seed`` are few
    rng = random.Random(f"{seed}:{print_proc(new)}")
    for edit in (retagged, transplanted):
        bad = edit(new, rng)
        if bad is not None:
            check_agree(new, bad)


def step_top(old: Proc, new: Proc) -> tuple[int, int] | None:
    """The ``top`` the registry gave the verification of ``new``, when one primitive made it
    from ``old``."""
    step = new.step()
    if new.parent() is not old or step is None:
        return None
    return top_shared(step.fmap, new.ir(), old.ir())
