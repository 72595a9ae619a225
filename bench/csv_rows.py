"""Rows of a benchmark appended to its CSV: the file's rows so far, then the new ones (columns united)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def append(out: Path | str, rows: list[dict]) -> None:
    """Append ``rows`` to the CSV ``out`` (created when absent); a column only one side has is left empty."""
    out = Path(out)
    frame = pd.DataFrame(rows)
    if out.exists():
        frame = pd.concat([pd.read_csv(out), frame], ignore_index=True)
    frame.to_csv(out, index=False)
