"""One precision per scan loop: what ``split_scan``, ``tree_scan`` and ``split_online`` need.

Their builders copy the running value into per-chunk (per-class) values and read them back
into the outputs; the copies are typed by the running value. A loop mixing precisions (a
running value ``set_precision`` made f64 over f32 data, say) would need a conversion at each
of those places, and its rounding would depend on where the chunks fall, so the primitives
refuse it instead: schedule the scan first, or give the data one precision.
"""

from __future__ import annotations

from cursched.ir.nodes import Assign, ProcDef, Read, Reduce, Stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import walk_exprs, walk_stmts
from cursched.ir.types import DataType, TensorType, Type
from cursched.primitives.exprs.expr_common import decl_type


def _data_type(t: Type | None) -> DataType | None:
    if isinstance(t, TensorType):
        return t.elem
    return t if isinstance(t, DataType) else None


def mixed_precision(ir: ProcDef, body: tuple[Stmt, ...]) -> str | None:
    """Say which two data precisions ``body`` mixes (reads and written buffers), or None."""
    # keyed by the stored type: R is stored as f32 and mixes with it without a conversion
    seen: dict[str, tuple[DataType, Sym]] = {}
    for e in walk_exprs(body):
        if isinstance(e, Read) and isinstance(e.type, DataType):
            seen.setdefault(e.type.numpy, (e.type, e.sym))
    # each written buffer's declaration looked up once (decl_type walks the proc)
    written = dict.fromkeys(s.sym for s in walk_stmts(body) if isinstance(s, Assign | Reduce))
    for sym in written:
        t = _data_type(decl_type(ir, sym))
        if t is not None:
            seen.setdefault(t.numpy, (t, sym))
    if len(seen) < 2:
        return None
    (t1, s1), (t2, s2) = list(seen.values())[:2]
    return f"{s1.name} is {t1} and {s2.name} is {t2}"
