"""sched/attention.py: runs as a file, golden output of the attention row and of flash
attention 2, float32 checks against float64 numpy with the issue's tolerances (interpreter and
C), equivalence with the naive procs, patterns only at the start."""

from __future__ import annotations

import re
from types import ModuleType

from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, run_file

SCRIPT = ROOT / "sched" / "attention.py"


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def attention_row(Nk: size")
    assert "ok: the attention row and flash attention 2 match numpy" in out
    assert "# schedule of attention: 30 step(s)" in out


def test_attention_row(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    p = script.schedule_row(script.attention_row)
    golden.check(p)
    assert str(p).count("for i in seq(0, Nk):") == 1  # one pass over the keys
    assert script.check_row(p, 40, 8, compiled=False, seed=3) == []
    assert script.check_row(p, 200, 32, compiled=True, seed=4) == []
    assert_equivalent(script.attention_row, p, sizes={"Nk": 12, "D": 4}, trials=2)


def test_flash_attention(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    p = script.schedule_flash(script.attention)
    golden.check(p)
    text = str(p)
    # key tiles outside the rows of a query tile; one correction per key tile
    assert text.index("for io in seq(0, Nk / 16):") < text.index("S: f32[16]")
    assert text.count("alpha = select(") == 1
    assert script.check_flash(p, 8, 48, 8, compiled=False, seed=1) == []
    assert script.check_flash(p, 32, 128, 64, compiled=True, seed=2) == []
    assert_equivalent(script.attention, p, sizes={"Nq": 8, "Nk": 32, "D": 3}, trials=2)
    # other tile sizes
    q = script.schedule_flash(script.attention, key_tile=16, query_tile=2)
    assert "for rr in seq(0, 2):" in str(q)
    assert script.check_flash(q, 8, 64, 16, compiled=True, seed=5) == []
    assert "acc" not in text  # step 6 only from 32 query rows on, unless asked for


def test_flash_attention_staged_columns(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    p = script.schedule_flash(script.attention, stage_columns=True)
    golden.check(p)
    text = str(p)
    # the head dimension outside the keys, a column of the output tile staged
    assert text.index("for d in seq(0, D):\n                acc: f32[4]") < text.index(
        "acc[rr] += w[ii, rr] * Vt[ii, d]"
    )
    assert script.check_flash(p, 8, 48, 8, compiled=False, seed=1) == []
    assert script.check_flash(p, 32, 128, 64, compiled=True, seed=2) == []
    assert_equivalent(script.attention, p, sizes={"Nq": 8, "Nk": 32, "D": 3}, trials=2)


def test_patterns_only_at_the_start() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule_flash", 1)[1].split("def inputs", 1)[0]
    lines = [ln for ln in body.splitlines() if re.search(r"\b(find\w*|at)\(", ln)]
    assert len(lines) == 3 and all("p.find" in ln for ln in lines), lines
    steps = body.split("# 1.", 1)[1]
    assert not re.search(r"\b(find\w*|at)\(", steps)


def test_histories_replay(script: ModuleType) -> None:
    for name, sched in (
        ("attention_row", script.schedule_row),
        ("attention", script.schedule_flash),
        ("attention", lambda p: script.schedule_flash(p, stage_columns=True)),
    ):
        base = getattr(script, name)
        assert_history_replays(sched(base), **{name: base})
