"""Scan primitives: scan_fuse (running reductions fused with their rescaled consumers)."""

from cursched.primitives.scans.scan import scan_fuse

__all__ = [
    "scan_fuse",
]
