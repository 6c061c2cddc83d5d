"""Compatibility layers: ``cursched.compat.exo`` is Exo 1.0's API spelled as Exo."""
