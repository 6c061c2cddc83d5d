"""Instruction libraries and their memories, one package per platform (``x86``)."""
