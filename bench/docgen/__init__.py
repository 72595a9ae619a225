"""The docs generator's renderers (``python bench/docs.py``); importing this registers them all."""

from . import authors, classload, cli, cli_examples, clustered, coverage, gpu, linear_iv, nuisance, peers, raw, readme, session_walk, sieve, speed, teaching, today  # noqa: F401  (registers their blocks)
from .registry import BLOCKS, FIGURES, FILES

__all__ = ["BLOCKS", "FIGURES", "FILES"]
