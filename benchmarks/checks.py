"""Benchmark: the safety checks on a 1024-statement proc and on sgemm, and the SMT cache.

Prints, for each check kind, how many times it ran on the big proc, the mean and the worst
time of one call; the cache hit rate of a first and of a repeated run of the same "schedule"
(the same checks asked again, as a replayed schedule asks them); and the worst time of each
check kind on sgemm (budget: 50 ms each), with Exo 1.0's ``reorder_loops`` (its own checks
included) on the same sgemm as the peer.

Run: ``python benchmarks/checks.py``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from cursched import DRAM
from cursched.analysis import checks as ck
from cursched.analysis import conditions as cd
from cursched.analysis import smt
from cursched.analysis.bounds import check_bounds
from cursched.frontend import parse_source
from cursched.ir.nodes import BinOp, Const, For, Interval, ProcDef, Read, WindowExpr
from cursched.ir.paths import Path
from cursched.ir.types import BOOL, INDEX, INT, SIZE, TensorType

N_GROUPS = 256  # 4 statements each: two loops, two statements in the inner one


def big_source() -> str:
    lines = [
        "def big(n: size, A: f32[n, n] @ DRAM, B: f32[n, n] @ DRAM, C: f32[n + 1, n] @ DRAM,"
        " s: f32):",
        "    assert n % 4 == 0",
    ]
    bodies = [
        ("A[i, j] = B[i, j] * 2.0", "s += A[i, j]"),
        ("C[i + 1, j] = A[i, j]", "B[i, j] = C[i, j] + 1.0"),
        ("A[i, j] += B[j, i]", "C[i, j] = A[i, j]"),
        ("B[i, j] = C[i + 1, j]", "s = s + B[i, j]"),
    ]
    for k in range(N_GROUPS):
        first, second = bodies[k % len(bodies)]
        lines += [
            "    for i in seq(0, n):",
            "        for j in seq(0, n):",
            f"            {first}",
            f"            {second}",
        ]
    return "\n".join(lines) + "\n"


SGEMM = """
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM,
          C: f32[M, N] @ DRAM):
    assert M % 4 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]
"""


def _top(k: int) -> Path:
    return (("body", k),)


def _tasks(p: ProcDef) -> dict[str, list[Callable[[], Any]]]:
    """Every check kind, applied all over ``p`` (failures are answers too)."""
    n = Read(p.args[0].sym, (), SIZE)
    k = len(p.body)
    arr = next(a for a in p.args if isinstance(a.type, TensorType))
    buf = arr.sym
    elem = arr.type.elem  # type: ignore[union-attr]
    four_n4 = BinOp("*", Const(4, INT), BinOp("/", n, Const(4, INT), INDEX), INDEX)
    win = WindowExpr(
        buf,
        (Interval(Const(0, INT), n), Interval(Const(0, INT), n)),
        TensorType(elem, (n, n), window=True),
    )
    loop0 = p.body[0]
    assert isinstance(loop0, For)
    in_range = BinOp("<", Read(loop0.iter, (), INDEX), n, BOOL)
    tasks: dict[str, list[Callable[[], Any]]] = {
        "commute": [
            lambda a=a: ck.check_commute(p, [_top(a)], [_top(a + 1)]) for a in range(k - 1)
        ],
        "reorder_loops": [lambda a=a: ck.check_reorder_loops(p, _top(a)) for a in range(k)],
        "fission": [
            lambda a=a: ck.check_fission(p, (*_top(a), ("body", 0), ("body", 1)), n_lifts=2)
            for a in range(k)
        ],
        "fuse": [lambda a=a: ck.check_fuse(p, _top(a), _top(a + 1)) for a in range(k - 1)],
        "parallel": [lambda a=a: ck.check_parallel(p, _top(a)) for a in range(k)],
        "expr_equal": [
            lambda a=a: ck.check_expr_equal(p, (*_top(a), ("body", 0)), four_n4, n)
            for a in range(k)
        ],
        "divides": [lambda a=a: ck.check_divides(p, _top(a), 4, n) for a in range(k)],
        "le": [lambda a=a: ck.check_le(p, _top(a), four_n4, n) for a in range(k)],
        "in_window": [lambda a=a: ck.check_in_window(p, [_top(a)], buf, win) for a in range(k)],
        "decide_condition": [
            lambda a=a: cd.decide_condition(p, (*_top(a), ("body", 0)), in_range) for a in range(k)
        ],
        "bounds (whole proc)": [lambda: check_bounds(p)],
    }
    return tasks


def _run(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    with contextlib.suppress(ck.SafetyError):  # an illegal rewrite is a correct answer too
        fn()
    return time.perf_counter() - t0


def _pass(tasks: dict[str, list[Callable[[], Any]]]) -> dict[str, list[float]]:
    return {name: [_run(f) for f in fns] for name, fns in tasks.items()}


def main() -> None:
    env: dict[str, object] = {"DRAM": DRAM}
    big = parse_source(big_source(), env, "<big>")
    n_stmts = sum(1 + len(s.body) + len(s.body[0].body) for s in big.body if isinstance(s, For))  # type: ignore[union-attr]
    print(f"big proc: {n_stmts} statements")
    tasks = _tasks(big)
    smt.reset()
    first = _pass(tasks)
    st1 = smt.stats()
    print(f"{'check':22s} {'calls':>6s} {'mean ms':>9s} {'max ms':>9s}")
    for name, times in first.items():
        mean = 1000 * sum(times) / len(times)
        print(f"{name:22s} {len(times):6d} {mean:9.3f} {1000 * max(times):9.3f}")
    print(
        f"first run:    {st1.queries} SMT queries, hit rate {st1.hit_rate():.1%}, "
        f"{st1.solver_calls} solver calls ({st1.solver_seconds * 1000:.0f} ms in z3)"
    )
    smt.reset(clear_cache=False)
    again = _pass(tasks)
    st2 = smt.stats()
    total1 = sum(sum(t) for t in first.values())
    total2 = sum(sum(t) for t in again.values())
    print(
        f"repeated run: {st2.queries} SMT queries, hit rate {st2.hit_rate():.1%}; "
        f"total {total1 * 1000:.0f} ms -> {total2 * 1000:.0f} ms"
    )

    sgemm = parse_source(SGEMM, env, "<sgemm>")
    smt.reset()
    t0 = time.perf_counter()
    sgemm = parse_source(SGEMM, env, "<sgemm>")
    check_bounds(sgemm)
    parse_check = time.perf_counter() - t0
    worst = 0.0
    print(f"sgemm: parse + bounds {parse_check * 1000:.2f} ms")
    for name, fns in _tasks(sgemm).items():
        smt.reset()  # cold cache: the worst case
        if not fns:
            continue  # sgemm has one top-level statement: nothing to commute or fuse
        t = max(_run(f) for f in fns)
        worst = max(worst, t)
        print(f"  sgemm {name:22s} worst {t * 1000:7.3f} ms")
    verdict = "OK" if worst < 0.05 else "OVER"
    print(f"sgemm worst check: {worst * 1000:.2f} ms (budget 50 ms): {verdict}")
    _exo_peer(worst)


def _exo_peer(ours_reorder_worst: float) -> None:
    try:
        from exo import proc as exo_proc  # type: ignore[import-not-found]
        from exo.stdlib.scheduling import reorder_loops  # type: ignore[import-not-found]
    except ImportError as e:  # the peer is optional
        print(f"exo peer unavailable: {e}")
        return
    src = (
        "from __future__ import annotations\n"
        "def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM,"
        " C: f32[M, N] @ DRAM):\n"
        "    for i in seq(0, M):\n"
        "        for j in seq(0, N):\n"
        "            for k in seq(0, K):\n"
        "                C[i, j] += A[i, k] * B[k, j]\n"
    )
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "exo_sgemm.py")
        with open(path, "w") as f:
            f.write(src)
        ns: dict[str, Any] = {}
        code = compile(src, path, "exec")
        import exo  # type: ignore[import-not-found]

        ns.update({"DRAM": exo.DRAM, "__name__": "exo_sgemm"})
        exec(code, ns)
        p = exo_proc(ns["sgemm"])
    t0 = time.perf_counter()
    reorder_loops(p, "j k")
    exo_t = time.perf_counter() - t0
    sg = parse_source(SGEMM, {"DRAM": DRAM}, "<sgemm>")
    smt.reset()
    ours = _run(lambda: ck.check_reorder_loops(sg, (("body", 0), ("body", 0))))
    print(
        f"reorder_loops(j, k) on sgemm: exo {exo_t * 1000:.2f} ms (rewrite + checks), "
        f"cursched check {ours * 1000:.2f} ms: ratio {exo_t / max(ours, 1e-9):.1f}x"
    )
    del ours_reorder_worst


if __name__ == "__main__":
    main()
