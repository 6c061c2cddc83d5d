"""Which arguments a proc writes (directly, through windows, or through the procs it calls).

The runtime wrapper needs it to refuse read-only arrays for written arguments, and to allow
a plain Python number only for data scalars that are never written.
"""

from __future__ import annotations

from cursched.ir.nodes import Assign, Call, ProcDef, Read, Reduce, WindowExpr, WindowStmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_stmts


def written_args(p: ProcDef, _memo: dict[int, frozenset[int]] | None = None) -> frozenset[int]:
    """Positions of the arguments of ``p`` that ``p`` may write (instruction bodies included).

    Args:
        p: the proc.

    Returns:
        The argument indices written.
    """
    memo = {} if _memo is None else _memo
    if id(p) in memo:
        return memo[id(p)]
    root: dict[Sym, Sym] = {}
    out: set[Sym] = set()
    for s in walk_stmts(p.body):
        match s:
            case WindowStmt():
                root[s.sym] = root.get(s.rhs.sym, s.rhs.sym)
            case Assign() | Reduce():
                out.add(root.get(s.sym, s.sym))
            case Call():
                cw = written_args(s.proc, memo)
                for i, a in enumerate(s.args):
                    if i in cw and isinstance(a, Read | WindowExpr):
                        out.add(root.get(a.sym, a.sym))
            case _:
                pass
    result = frozenset(i for i, a in enumerate(p.args) if a.sym in out)
    memo[id(p)] = result
    return result
