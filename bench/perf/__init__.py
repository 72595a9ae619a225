"""Speed and resource micro-benchmarks (docs/benchmarks.md, docs/peers.md, docs/studies.md, docs/class.md);
run from the repository root as ``python -m bench.perf.NAME``."""
