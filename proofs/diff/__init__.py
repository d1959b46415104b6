"""Proved differences between spec versions (``rtwo-vm prove --diff OLD NEW``).

declared.py reads what the diffs declare about instructions, compare.py puts one
instruction's models of two versions on one pre-state, run.py proves them equal or
characterises the difference with a witness replayed on the interpreter under both versions.
"""
