"""Safety analysis: affine arithmetic, effects, bounds and the SMT-backed checks.

``smt.py`` is the only module of cursched that imports pysmt.
"""
