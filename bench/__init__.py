"""Benchmark scripts and the docs generator; run them from the repository root as ``python -m bench.NAME``."""
