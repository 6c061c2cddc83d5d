"""Configuration state (issue 15, item 1): ``@config`` fields in the language, printer,
interpreter and C backend, and bind_config, write_config, delete_config (golden output, one
negative test per precondition, forwarding, differential equivalence)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    bind_config,
    config,
    delete_config,
    extract_subproc,
    fission,
    inline_assign,
    proc,
    remove_loop,
    write_config,
)
from cursched.codegen.c.unit import generate_unit
from cursched.cursors import AssignCursor, ExprCursor, Tombstone
from cursched.errors import TypeCheckError
from cursched.frontend import parse_source
from cursched.ir.alpha import alpha_equal
from cursched.ir.config import ConfigField
from cursched.ir.printer import print_proc
from cursched.primitives.exprs.binds import NotALocalBufferError
from cursched.primitives.exprs.configs import (
    BindConfigPlaceError,
    BindConfigPrecisionError,
    ConfigFieldError,
    ConfigObservedError,
    DeleteConfigLiveError,
    DeleteConfigNotWriteError,
    WriteConfigValueError,
)
from cursched.primitives.loops.loop_nests import FissionDependenceError
from cursched.testing import assert_equivalent


@config
class ConfigLoad:
    scale: f32
    mode: i32


@config
class ConfigAct:
    relu: i32


@proc
def scaled(n: size, scale: f32, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = x[i] * scale


@proc
def uses(n: size, x: f32[n], y: f32[n]):
    ConfigLoad.scale = 2.0
    for i in seq(0, n):
        y[i] = x[i] * ConfigLoad.scale
    ConfigLoad.scale += 1.0


# ---------------------------------------------------------------------- the language


def test_config_declares_fields() -> None:
    f = ConfigLoad.scale
    assert isinstance(f, ConfigField) and f.field == "scale" and str(f.type) == "f32"
    assert [g.field for g in ConfigLoad] == ["scale", "mode"]
    with pytest.raises(AttributeError):
        ConfigLoad.nothing


@pytest.mark.parametrize("ann", ["index", "size", "banana"])
def test_config_refuses_control_fields(ann: str) -> None:
    cls = type("Bad", (), {"__annotations__": {"x": ann}})
    with pytest.raises(TypeCheckError, match="not a data type"):
        config(cls)


def test_print_parse_interpret_compile(golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(uses)
    again = parse_source(str(uses), {"ConfigLoad": ConfigLoad})
    assert print_proc(again) == str(uses)
    x = np.arange(5, dtype=np.float32)
    y = np.zeros(5, dtype=np.float32)
    uses.interpret(5, x, y)
    assert y.tolist() == (2 * x).tolist()
    y2 = np.zeros(5, dtype=np.float32)
    uses.compile()(5, x, y2)
    assert y2.tolist() == y.tolist()
    c = generate_unit("u", [uses.ir()]).c_source
    assert "static struct { float scale; int32_t mode; } cs_config_ConfigLoad;" in c
    assert "cs_config_ConfigLoad.scale = 2.0f;" in c


def test_read_of_unwritten_field_is_unspecified() -> None:
    @proc
    def early(y: f32[1]):
        y[0] = ConfigLoad.scale

    y = np.zeros(1, dtype=np.float32)
    early.interpret(y)
    assert np.isnan(y[0])  # the fresh-allocation value, whatever an earlier run wrote


def test_state_is_shared_with_callees() -> None:
    @proc
    def set_scale(s: f32):
        ConfigLoad.scale = s

    @proc
    def caller(s: f32, y: f32[1]):
        set_scale(s)
        y[0] = ConfigLoad.scale

    y = np.zeros(1, dtype=np.float32)
    caller.interpret(np.array(3.0, dtype=np.float32), y)
    assert y[0] == 3.0
    y[0] = 0.0
    caller.compile()(np.array(3.0, dtype=np.float32), y)
    assert y[0] == 3.0


def test_control_use_of_a_field_is_refused() -> None:
    src = "def f(n: size, x: f32[n]):\n    for i in seq(0, ConfigLoad.scale):\n        pass\n"
    with pytest.raises(TypeCheckError, match="control value"):
        parse_source(src, {"ConfigLoad": ConfigLoad})


def test_unknown_field_write_is_refused() -> None:
    src = "def f(x: f32[1]):\n    ConfigLoad.nope = 1.0\n"
    with pytest.raises(TypeCheckError, match="no field"):
        parse_source(src, {"ConfigLoad": ConfigLoad})


# ------------------------------------------------------------------------------ bind_config


def test_bind_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    stmt = scaled.find("y[_] = _")
    p, c = bind_config(scaled, "scale", ConfigLoad, "scale")
    golden.check(p)
    assert isinstance(c.write, AssignCursor) and isinstance(c.read, ExprCursor)
    assert c.read.node().sym is ConfigLoad.scale
    assert p.forward(stmt) == c.write.next()
    assert_equivalent(scaled, p, trials=3)


def test_fission_hoists_a_loop_invariant_config_write() -> None:
    # every iteration writes the same value, so the reads after the gap see it whichever
    # iteration wrote last (cursched.analysis.checks._invariant_config_writes)
    p, c = bind_config(scaled, "scale", ConfigLoad, "scale")
    q, f = fission(p, c.write.after())
    r, _ = remove_loop(q, f.first)
    assert str(r).splitlines()[1].strip() == "ConfigLoad.scale = scale"
    assert_equivalent(scaled, r, trials=3)


@proc
def variant(n: size, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        ConfigLoad.scale = x[i]
        y[i] = x[i] * ConfigLoad.scale


@proc
def variant_after(n: size, s: f32, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        ConfigLoad.scale = s
        y[i] = x[i] * ConfigLoad.scale
        ConfigLoad.scale = 0.0


def test_fission_still_refuses_other_config_writes() -> None:
    # a value that changes with i, and a field written twice in the loop
    with pytest.raises(FissionDependenceError, match=r"ConfigLoad\.scale"):
        fission(variant, variant.find("ConfigLoad.scale = _").after())
    with pytest.raises(FissionDependenceError, match=r"ConfigLoad\.scale"):
        fission(variant_after, variant_after.find("ConfigLoad.scale = _").after())


def test_bind_field() -> None:
    with pytest.raises(ConfigFieldError):
        bind_config(scaled, "scale", ConfigLoad, "nope")
    with pytest.raises(ConfigFieldError):
        bind_config(scaled, "scale", "ConfigLoad", "scale")


def test_bind_place() -> None:
    with pytest.raises(BindConfigPlaceError):
        bind_config(scaled, "i", ConfigLoad, "scale")


def test_bind_precision() -> None:
    with pytest.raises(BindConfigPrecisionError):
        bind_config(scaled, "scale", ConfigLoad, "mode")


def test_bind_observed() -> None:
    with pytest.raises(ConfigObservedError):
        bind_config(uses, "x[_]", ConfigLoad, "scale")


# ----------------------------------------------------------------------------- write_config


def test_write_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    stmt = scaled.find("y[_] = _")
    p, c = write_config(scaled, stmt.before(), ConfigAct, "relu", 1)
    golden.check(p)
    assert isinstance(c.write, AssignCursor) and c.write.next() == p.forward(stmt)
    assert_equivalent(scaled, p, trials=3)
    q, w = write_config(p, c.write.before(), ConfigLoad, "scale", "x[i]")
    assert "ConfigLoad.scale = x[i]" in str(q)
    r, _ = write_config(q, w.write.before(), ConfigLoad, "mode", "-3")
    assert "ConfigLoad.mode = -3" in str(r)
    assert_equivalent(scaled, r, trials=2)


@pytest.mark.parametrize("value", [1.5, "y", "z[i]", "x[i, 0]", "x", "i + 1", True])
def test_write_value(value: object) -> None:
    with pytest.raises(WriteConfigValueError):
        write_config(scaled, scaled.find("y[_] = _").before(), ConfigLoad, "mode", value)


def test_write_field() -> None:
    with pytest.raises(ConfigFieldError):
        write_config(scaled, scaled.find("y[_] = _").before(), ConfigAct, "scale", 1)


def test_write_observed() -> None:
    with pytest.raises(ConfigObservedError):
        write_config(uses, uses.find("y[_] = _").before(), ConfigLoad, "scale", 3.0)


# ---------------------------------------------------------------------------- delete_config


@proc
def rewrites(n: size, x: f32[n], y: f32[n]):
    ConfigLoad.scale = 1.0
    ConfigAct.relu = 1
    ConfigLoad.scale = 2.0
    for i in seq(0, n):
        y[i] = x[i] * ConfigLoad.scale


def test_delete_golden_forwarding_equivalent(golden) -> None:  # type: ignore[no-untyped-def]
    first = rewrites.find("ConfigLoad.scale = _")
    act = rewrites.find("ConfigAct.relu = _")
    p, c = delete_config(rewrites, first)
    golden.check(p)
    assert len(c) == 0 and isinstance(p.forward(first), Tombstone)
    assert_equivalent(rewrites, p, trials=2)
    q, _ = delete_config(p, act)  # never read
    assert "ConfigAct" not in str(q)
    assert_equivalent(rewrites, q, trials=2)


def test_delete_not_write() -> None:
    with pytest.raises(DeleteConfigNotWriteError):
        delete_config(rewrites, "y[_] = _")
    with pytest.raises(DeleteConfigNotWriteError):
        delete_config(uses, "ConfigLoad.scale += _")


def test_delete_live() -> None:
    with pytest.raises(DeleteConfigLiveError):
        delete_config(rewrites, "ConfigLoad.scale = _ #1")


@proc
def dead_in_loop(n: size, x: f32[n]):
    for i in seq(0, n):
        x[i] = 1.0
    for r in seq(0, 4):  # noqa: B007
        ConfigAct.relu = 0


def test_delete_leaves_no_empty_body() -> None:
    """Campaign finding (seed 2026, schedule 61265): deleting the only statement of a loop
    body left ``body=()``, which prints as ``pass`` and parses back to a Pass, so the
    printout no longer parsed back to the proc."""
    p, _ = delete_config(dead_in_loop, "ConfigAct.relu = _")
    assert p.find_loop("r").node().body != ()
    again = parse_source(str(p), {"ConfigAct": ConfigAct})
    assert alpha_equal(again, p.ir())
    assert_equivalent(dead_in_loop, p, trials=2)


def test_inline_assign_refuses_a_config_field() -> None:
    """Campaign finding (seed 2026, schedules 16498 and 65020): after bind_config and
    extract_subproc, the field's read sat in a callee; inline_assign deleted the write and
    the callee read an unset field (NaN). A field is global state, not a local buffer."""
    p, _ = extract_subproc(rewrites, rewrites.find_loop("i"), "sub")
    with pytest.raises(NotALocalBufferError, match="not a buffer allocated"):
        inline_assign(p, "ConfigLoad.scale = _ #1")


def test_extract_subproc_keeps_config_fields_global() -> None:
    # found by the fuzzer: a block using a field became a subproc with a parameter for it
    from cursched import extract_subproc

    p, c = extract_subproc(rewrites, rewrites.find_loop("i"), "sub")
    assert [a.sym.name for a in c.subproc.ir().args] == ["n", "x", "y"]
    assert "ConfigLoad.scale" in str(c.subproc)
    assert_equivalent(rewrites, p, trials=2)
