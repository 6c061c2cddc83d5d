"""verify_proc: valid procs pass; one broken IR per invariant, named in the error."""

from __future__ import annotations

import numpy as np
import pytest
from ir_builders import (
    BOOL,
    F32,
    INDEX,
    INT,
    SIZE,
    alloc,
    arg,
    assign,
    c,
    iv,
    ld,
    loop,
    mkproc,
    op,
    pt,
    reduce,
    tensor,
    v,
    win,
)

from cursched.errors import CurschedError, IRVerificationError, SrcInfo
from cursched.ir.memory import DRAM, DRAM_STACK
from cursched.ir.nodes import (
    Alloc,
    BinOp,
    Call,
    Const,
    Expr,
    Extern,
    FnArg,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Scope,
    Stmt,
    StrideExpr,
    USub,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.symbols import Sym
from cursched.ir.types import F64, I8, I32, TensorType
from cursched.ir.verify import verify_proc

n, m, k, flag, A, x, y, W = (Sym(s) for s in ["n", "m", "k", "flag", "A", "x", "y", "W"])
i, j, t, w = Sym("i"), Sym("j"), Sym("t"), Sym("w")
N, M, K = v(n, SIZE), v(m, SIZE), v(k, INDEX)
WT = tensor(F32, c(8), window=True)
ARGS = [
    arg(n, SIZE),
    arg(m, SIZE),
    arg(k, INDEX),
    arg(flag, BOOL),
    arg(A, tensor(F32, N, M)),
    arg(x, F32),
    arg(y, I32),
    arg(W, WT),
]


def P(*body: Stmt, preds: tuple[Expr, ...] = ()) -> ProcDef:
    """A proc over the standard arguments with ``body``."""
    return mkproc("p", list(ARGS), list(body), preds)


def in_loop(*body: Stmt) -> ProcDef:
    """``body`` inside ``for i in seq(0, n)``."""
    return P(loop(i, c(0), N, *body))


def broken(p: ProcDef, invariant: str) -> IRVerificationError:
    with pytest.raises(IRVerificationError, match=rf"^\[{invariant}\] in proc ") as info:
        verify_proc(p)
    return info.value


def _callee() -> ProcDef:
    sz, d, s, q = Sym("sz"), Sym("d"), Sym("s"), Sym("q")
    ii = Sym("ii")
    body = [loop(ii, c(0), c(8), assign(d, (v(ii),), op("*", ld(s, v(ii)), v(q, F32))))]
    return mkproc("g", [arg(sz, SIZE), arg(d, WT), arg(s, WT), arg(q, F32)], body)


G = _callee()


def _valid() -> ProcDef:
    a_row = win(A, F32, pt(v(i)), iv(c(0), c(8)), shape=(c(8),))
    return P(
        alloc(t, tensor(F32, c(4), N)),
        loop(
            i,
            c(0),
            N,
            loop(
                j,
                op("/", v(i), c(2)),
                op("+", op("*", c(4), v(i)), c(1)),
                If(
                    op("and", op("<", v(j), M), v(flag, BOOL)),
                    (reduce(A, (v(i), v(j)), op("*", ld(A, v(i), v(j)), c(2.0))),),
                    (
                        assign(
                            x,
                            (),
                            Extern("select", (v(x, F32), c(0.0), c(1, F32), ld(W, c(0))), F32),
                        ),
                    ),
                ),
                mode="par",
            ),
            WindowStmt(w, a_row),
            Call(G, (N, Read(w, (), WT), win(W, F32, iv(c(0), c(8)), shape=(c(8),)), v(x, F32))),
            Scope("s", (assign(t, (c(0), op("%", v(i), c(4))), USub(c(-1.5), F32)),), "cuda"),
            assign(y, (), c(-3, I32)),
            assign(A, (v(i), StrideExpr(A, 1, INDEX)), ld(A, v(i), op("-", K, c(1)))),
        ),
        preds=(op(">", N, c(8)), op("==", op("%", M, c(4)), c(0))),
    )


# -------------------------------------------------------------------------------- valid


def test_valid_proc_passes() -> None:
    verify_proc(_valid())
    verify_proc(G)


def test_error_is_a_cursched_error_with_place_and_srcinfo() -> None:
    bad = Read(Sym("ghost"), (), INDEX, srcinfo=SrcInfo("f.py", 7, 3))
    err = broken(in_loop(assign(A, (v(i), bad), c(0.0))), "sym-defined")
    assert isinstance(err, CurschedError)
    assert "in proc p at body[0].body[0].idx[1]" in str(err)
    assert "f.py:7:4" in str(err)


def test_symbols_may_be_rebound_in_disjoint_scopes() -> None:
    verify_proc(P(loop(i, c(0), N, Pass()), loop(i, c(0), N, Pass())))
    verify_proc(P(loop(i, c(0), N, alloc(t, F32)), loop(j, c(0), N, alloc(t, F32))))


# ----------------------------------------------------------------------------- symbols


def test_sym_defined_read_of_unbound_symbol() -> None:
    broken(P(assign(x, (), v(Sym("z"), F32))), "sym-defined")


def test_sym_defined_use_before_allocation() -> None:
    broken(P(assign(t, (), c(1.0)), alloc(t, F32)), "sym-defined")


def test_sym_defined_use_after_its_scope() -> None:
    broken(P(loop(i, c(0), N, alloc(t, F32)), assign(t, (), c(1.0))), "sym-defined")


def test_sym_defined_loop_variable_outside_its_loop() -> None:
    broken(P(loop(i, c(0), N, Pass()), assign(A, (v(i), c(0)), c(1.0))), "sym-defined")


def test_sym_unique_nested_rebinding() -> None:
    broken(in_loop(loop(i, c(0), N, Pass())), "sym-unique")


def test_sym_unique_allocation_of_an_argument() -> None:
    broken(P(alloc(x, F32)), "sym-unique")


def test_sym_unique_argument_twice() -> None:
    broken(mkproc("p", [arg(n, SIZE), arg(n, SIZE)], []), "sym-unique")


# ---------------------------------------------------------------------------- arguments


def test_fnarg_control_parameter_with_memory() -> None:
    broken(mkproc("p", [FnArg(n, SIZE, DRAM)], []), "fnarg")


def test_fnarg_data_parameter_without_memory() -> None:
    broken(mkproc("p", [FnArg(x, F32, None)], []), "fnarg")


def test_fnarg_shape_reading_data_is_not_control() -> None:
    bad = tensor(F32, Read(x, (), F32))
    broken(mkproc("p", [arg(x, F32), arg(A, bad)], []), "control-expr")


# ---------------------------------------------------------------------------- constants


def test_const_type_numpy_scalar() -> None:
    broken(P(assign(x, (), Const(np.float32(1.0), F32))), "const-type")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "const",
    [
        Const(True, INT),
        Const(1, BOOL),
        Const(1.5, INT),
        Const(1.5, I32),
        Const(300, I8),
        Const(float("inf"), INDEX),
    ],
)
def test_const_type(const: Const) -> None:
    e: Expr = const
    if const.type in (INT, INDEX, BOOL):
        broken(P(If(op("==", e, e), (Pass(),), ())), "const-type")
    else:
        broken(P(assign(y, (), e)), "const-type")


# --------------------------------------------------------------------------- expressions


def test_read_type_of_a_data_read() -> None:
    broken(in_loop(assign(x, (), ld(A, v(i), c(0), t=F64))), "read-type")


def test_read_type_of_a_control_read() -> None:
    broken(in_loop(assign(A, (Read(i, (), SIZE), c(0)), c(0.0))), "read-type")


def test_read_type_of_a_whole_tensor_argument() -> None:
    call = Call(G, (N, Read(W, (), tensor(F32, c(9), window=True)), Read(W, (), WT), v(x, F32)))
    broken(P(call), "read-type")


def test_index_count_of_a_read() -> None:
    broken(in_loop(assign(x, (), ld(A, v(i)))), "index-count")


def test_index_count_of_a_write() -> None:
    broken(in_loop(assign(A, (v(i), c(0), c(0)), c(0.0))), "index-count")


def test_index_count_of_a_scalar() -> None:
    broken(P(assign(x, (c(0),), c(0.0))), "index-count")


def test_control_expr_data_in_an_index() -> None:
    broken(P(assign(A, (Read(x, (), F32), c(0)), c(0.0))), "control-expr")


def test_control_expr_control_read_in_data() -> None:
    broken(in_loop(assign(x, (), v(i))), "control-expr")


def test_control_expr_comparison_in_data() -> None:
    broken(P(assign(x, (), BinOp("<", v(x, F32), c(0.0), F32))), "control-expr")


def test_control_expr_extern_in_an_index() -> None:
    broken(P(assign(A, (Extern("relu", (K,), INDEX), c(0)), c(0.0))), "control-expr")


def test_op_type_arithmetic_on_bools() -> None:
    broken(P(If(op("<", op("+", v(flag, BOOL), c(1), INDEX), c(2)), (), ())), "op-type")


def test_op_type_comparison_typed_int() -> None:
    broken(P(If(op("<", K, c(2), INDEX), (), ())), "op-type")


def test_op_type_and_of_integers() -> None:
    broken(P(If(op("and", K, c(2), BOOL), (), ())), "op-type")


def test_op_type_data_operation_typed_control() -> None:
    broken(P(assign(x, (), BinOp("+", v(x, F32), c(1.0), INDEX))), "op-type")


def test_op_type_negation_of_a_bool() -> None:
    broken(P(If(op("<", USub(v(flag, BOOL), INDEX), c(0)), (), ())), "op-type")


def test_quasi_affine_product_of_variables() -> None:
    broken(in_loop(assign(A, (op("*", v(i), v(i)), c(0)), c(0.0))), "quasi-affine")


def test_quasi_affine_division_by_a_variable() -> None:
    broken(in_loop(assign(A, (op("/", v(i), K), c(0)), c(0.0))), "quasi-affine")


def test_quasi_affine_modulo_by_zero() -> None:
    broken(in_loop(assign(A, (op("%", v(i), op("-", c(2), c(2))), c(0)), c(0.0))), "quasi-affine")


def test_quasi_affine_product_with_a_folded_constant_is_fine() -> None:
    verify_proc(in_loop(assign(A, (op("*", op("+", c(1), c(1)), v(i)), c(0)), c(0.0))))


def test_extern_call_unknown() -> None:
    broken(P(assign(x, (), Extern("tanh", (v(x, F32),), F32))), "extern-call")


def test_extern_call_arity() -> None:
    broken(P(assign(x, (), Extern("select", (v(x, F32),), F32))), "extern-call")


def test_extern_call_typed_control() -> None:
    broken(P(assign(x, (), Extern("relu", (v(x, F32),), INDEX))), "extern-call")


def test_bool_cond_if() -> None:
    broken(P(If(K, (Pass(),), ())), "bool-cond")


def test_bool_cond_assert() -> None:
    broken(P(preds=(N,)), "bool-cond")


def test_loop_bounds_of_bool_type() -> None:
    broken(P(loop(i, c(0), v(flag, BOOL))), "loop-bounds")


def test_loop_bounds_mode() -> None:
    bad = For(i, c(0), N, (), "vectorized")  # type: ignore[arg-type]
    broken(P(bad), "loop-bounds")


def test_loop_axis_outside_a_cuda_scope() -> None:
    broken(P(For(i, c(0), N, (Pass(),), "par", "threadIdx.x")), "loop-axis")


def test_loop_axis_on_a_seq_loop() -> None:
    bad = For(i, c(0), N, (Pass(),), "seq", "threadIdx.x")
    broken(P(Scope("k", (bad,), "cuda")), "loop-axis")


def test_loop_axis_unknown() -> None:
    bad = For(i, c(0), N, (Pass(),), "par", "warpIdx.x")
    broken(P(Scope("k", (bad,), "cuda")), "loop-axis")


def test_loop_axis_in_a_cuda_scope_is_fine() -> None:
    ok = For(i, c(0), N, (Pass(),), "par", "blockIdx.x")
    verify_proc(P(Scope("k", (ok,), "cuda")))


# ------------------------------------------------------------------------------ windows


def test_window_expr_of_a_scalar() -> None:
    broken(P(WindowStmt(w, win(x, F32, iv(c(0), c(1)), shape=(c(1),)))), "window-expr")


def test_window_expr_coordinate_count() -> None:
    broken(in_loop(WindowStmt(w, win(A, F32, iv(c(0), c(8)), shape=(c(8),)))), "window-expr")


def test_window_expr_rank_of_its_type() -> None:
    bad = win(A, F32, pt(v(i)), iv(c(0), c(8)), shape=(c(8), c(1)))
    broken(in_loop(WindowStmt(w, bad)), "window-expr")


def test_window_expr_extent_must_be_hi_minus_lo() -> None:
    bad = win(A, F32, pt(v(i)), iv(c(2), c(8)), shape=(c(8),))
    broken(in_loop(WindowStmt(w, bad)), "window-expr")


def test_window_expr_symbolic_extent() -> None:
    good = win(A, F32, pt(v(i)), iv(K, op("+", K, c(4))), shape=(c(4),))
    verify_proc(in_loop(WindowStmt(w, good)))
    bad = win(A, F32, pt(v(i)), iv(K, M), shape=(M,))
    broken(in_loop(WindowStmt(w, bad)), "window-expr")


def test_window_expr_element_type_and_window_flag() -> None:
    bad = WindowExpr(A, (pt(c(0)), iv(c(0), c(8))), TensorType(F64, (c(8),), True))
    broken(P(WindowStmt(w, bad)), "window-expr")
    bad2 = WindowExpr(A, (pt(c(0)), iv(c(0), c(8))), TensorType(F32, (c(8),), False))
    broken(P(WindowStmt(w, bad2)), "window-expr")


def test_window_expr_bound_of_data_type() -> None:
    bad = win(A, F32, pt(v(x, F32)), iv(c(0), c(8)), shape=(c(8),))
    broken(P(WindowStmt(w, bad)), "control-expr")


def test_window_expr_point_of_bool_type() -> None:
    bad = win(A, F32, pt(v(flag, BOOL)), iv(c(0), c(8)), shape=(c(8),))
    broken(P(WindowStmt(w, bad)), "window-expr")


def test_stride_expr_of_a_scalar() -> None:
    broken(P(assign(A, (StrideExpr(x, 0, INDEX), c(0)), c(0.0))), "stride-expr")


def test_stride_expr_dimension_out_of_range() -> None:
    broken(P(assign(A, (StrideExpr(A, 2, INDEX), c(0)), c(0.0))), "stride-expr")


# ------------------------------------------------------------------------- statements


def test_write_target_size() -> None:
    broken(P(assign(n, (), c(1, INT))), "write-target")


def test_write_target_loop_variable() -> None:
    broken(in_loop(reduce(i, (), c(1, INT))), "write-target")


def test_write_target_index_argument() -> None:
    broken(P(assign(k, (), c(1.0))), "write-target")


def test_write_target_assigns_data_only() -> None:
    broken(P(assign(x, (), c(1, INT))), "control-expr")


def test_alloc_window_type() -> None:
    broken(P(alloc(t, WT)), "alloc")


def test_alloc_control_type() -> None:
    broken(P(Alloc(t, INDEX, DRAM)), "alloc")  # type: ignore[arg-type]


def test_alloc_memory_not_a_memory() -> None:
    broken(P(Alloc(t, F32, int)), "alloc")  # type: ignore[arg-type]


def test_alloc_shape_of_data() -> None:
    broken(P(alloc(t, tensor(F32, v(x, F32)))), "control-expr")


def test_window_stmt_window_can_be_used_as_tensor() -> None:
    a_row = win(A, F32, pt(v(i)), iv(c(0), c(8)), shape=(c(8),))
    verify_proc(in_loop(WindowStmt(w, a_row), assign(w, (c(3),), ld(w, c(2)))))
    broken(in_loop(WindowStmt(w, a_row), assign(w, (c(3), c(0)), c(0.0))), "index-count")


def test_call_args_arity() -> None:
    broken(P(Call(G, (N,))), "call-args")


def test_call_args_bool_for_a_size() -> None:
    call = Call(G, (v(flag, BOOL), Read(W, (), WT), Read(W, (), WT), v(x, F32)))
    broken(P(call), "call-args")


def test_call_args_tensor_for_a_scalar() -> None:
    call = Call(G, (N, Read(W, (), WT), Read(W, (), WT), Read(W, (), WT)))
    broken(P(call), "call-args")


def test_call_args_data_type_of_a_scalar() -> None:
    call = Call(G, (N, Read(W, (), WT), Read(W, (), WT), v(y, I32)))
    broken(P(call), "call-args")


def test_call_args_expression_for_a_scalar() -> None:
    call = Call(G, (N, Read(W, (), WT), Read(W, (), WT), op("+", v(x, F32), c(1.0))))
    broken(P(call), "call-args")


def test_call_args_element_for_a_tensor() -> None:
    call = Call(G, (N, Read(W, (), WT), ld(W, c(0)), v(x, F32)))
    broken(P(call), "call-args")


def test_call_args_rank_of_a_tensor() -> None:
    call = Call(G, (N, Read(A, (), tensor(F32, N, M)), Read(W, (), WT), v(x, F32)))
    broken(P(call), "call-args")


def test_call_args_memory_of_a_tensor() -> None:
    stack = alloc(t, tensor(F32, c(8)), DRAM_STACK)
    call = Call(G, (N, Read(t, (), tensor(F32, c(8))), Read(W, (), WT), v(x, F32)))
    assert "lives in DRAM_STACK, the parameter in DRAM" in str(broken(P(stack, call), "call-args"))


def test_call_args_memory_of_a_window_is_its_tensors() -> None:
    stack = alloc(t, tensor(F32, c(8)), DRAM_STACK)
    wt_ = win(t, F32, iv(c(0), c(8)), shape=(c(8),))
    call = Call(G, (N, Read(w, (), WT), Read(W, (), WT), v(x, F32)))
    broken(P(stack, WindowStmt(w, wt_), call), "call-args")
    ok = alloc(t, tensor(F32, c(8)))
    verify_proc(P(ok, WindowStmt(w, wt_), call))


def test_call_args_invalid_callee_is_reported() -> None:
    bad_callee = mkproc("h", [arg(x, F32)], [assign(x, (), v(Sym("ghost"), F32))])
    err = broken(P(Call(bad_callee, (v(x, F32),))), "sym-defined")
    assert "in proc h" in str(err)


def test_scope_with_empty_name() -> None:
    broken(P(Scope("", (Pass(),))), "scope")


def test_scope_with_empty_target() -> None:
    broken(P(Scope("s", (Pass(),), "")), "scope")


# ---------------------------------------------------------------------------- speed


def test_linear_in_size() -> None:
    """A long body and a deep nest verify quickly (no quadratic re-walks)."""
    body = [in_loop(assign(A, (v(i), c(0)), ld(A, v(i), c(1)))).body[0] for _ in range(3000)]
    verify_proc(P(*body))
    deep: Stmt = assign(x, (), c(0.0))
    for d in range(300):
        deep = loop(Sym(f"i{d}"), c(0), N, deep)
    verify_proc(P(deep))
    big: Expr = v(x, F32)
    for _ in range(300):
        big = op("+", big, c(1.0))
    verify_proc(P(assign(x, (), big)))


def test_every_documented_invariant_has_a_negative_test() -> None:
    """The module docstring's list is the spec: each name is raised by some test here."""
    import re
    from pathlib import Path

    import cursched.ir.verify as verify_module

    documented = re.findall(r"^- ``([a-z-]+)``:", verify_module.__doc__ or "", re.MULTILINE)
    assert len(documented) >= 18
    source = Path(__file__).read_text(encoding="utf-8")
    missing = [name for name in documented if f'"{name}")' not in source]
    assert not missing
