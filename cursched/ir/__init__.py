"""The IR of cursched: nodes, types, symbols, memories, externs, traversal, printer, verifier.

This package imports nothing of cursched but ``cursched.errors``.
"""
