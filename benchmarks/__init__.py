"""Benchmarks and evaluation studies, run from the repository root as `python -m benchmarks.NAME` (each module's
docstring says what it measures and the command that produced the README's figures)."""
