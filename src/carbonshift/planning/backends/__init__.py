"""Solver back ends, one module each; only :mod:`.highs` imports its solver."""
