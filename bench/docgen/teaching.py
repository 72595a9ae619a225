"""The Learn page's and the teaching docs' figures (docs/teaching.md, docs/class.md): the derived
table ``bench/results/teaching/measured.csv``. Blocks for those docs register here the same way
(``@block("teaching:...")`` reading bench/results/teaching/*.csv)."""

from __future__ import annotations

from dmlcore.teaching.measured import measured

from .registry import derived_file


@derived_file("bench/results/teaching/measured.csv")
def measured_csv(rows) -> str:
    """The Learn page's summary of the benchmark rows (dmlcore.teaching.measured), as bench/teaching.py writes it."""
    return measured(folder=rows.folder).to_csv(index=False)
