"""Scan primitives: scan_fuse (running reductions fused with their rescaled consumers),
split_scan (chunked parallel scans), split_online (an online max-and-sum loop into strided
independent passes and a combine) and tree_scan (up-sweep/down-sweep form)."""

from cursched.primitives.scans.scan import scan_fuse
from cursched.primitives.scans.split_online import split_online
from cursched.primitives.scans.split_scan import split_scan
from cursched.primitives.scans.tree_scan import tree_scan

__all__ = [
    "scan_fuse",
    "split_online",
    "split_scan",
    "tree_scan",
]
