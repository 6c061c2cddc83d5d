"""Scan primitives: scan_fuse (running reductions fused with their rescaled consumers)."""

from cursched.primitives.scans.scan import scan_fuse
from cursched.primitives.scans.split_scan import split_scan

__all__ = [
    "scan_fuse",
    "split_scan",
]
