"""Measured coverage of f's bands (``--f-model sieve``): the shipped summary the dashboard quotes.

``bench/coverage.py`` measures the bands by simulation (JSON summaries in ``bench/results/``,
tables in docs/coverage.md); ``python bench/docs.py --write`` copies the lines the dashboard
needs into :data:`SHIPPED`, so no page quotes a band's coverage by hand.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "files" / "band-coverage.csv"
COLUMNS = ("design", "learner", "n", "seeds", "reps", "band", "cover", "note")


def measured_bands(path: Path = SHIPPED) -> pd.DataFrame:
    """The shipped summary (empty when it is missing)."""
    if not Path(path).exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path).fillna({"note": ""})


def band_caption(kinds: set[str], table: pd.DataFrame | None = None) -> str:
    """What the measured coverage says about the band kinds on screen ("confidence", "split_spread")."""
    table = measured_bands() if table is None else table
    if table.empty:
        return ""
    text = ""
    if "confidence" in kinds:
        conf = table[table["band"] == "outcome"]
        parts = [f"{r.design} with {r.learner} nuisances {r.cover * 100:.1f} % ({r.seeds} seeds, n = {r.n}{r.note})"
                 for r in conf.itertuples()]
        text += ("The confidence bands' coverage was measured by simulation (nominal 95 %; share of the test grid "
                 "whose band holds the true f, docs/coverage.md): " + "; ".join(parts) + ". A band covers well "
                 "only where f-hat's bias is small against its noise: it does not account for the nuisances' or "
                 "the spline's bias, and a weak instrument in part of the range leaves the band short there. ")
    if "split_spread" in kinds:
        split = table[table["band"] == "split spread"]
        if not split.empty:
            r = split.iloc[0]
            text += (f"The range of R cross-fits shows how much f-hat depends on the random folds and seeds with the "
                     f"data held fixed; it is not a confidence band (it covered {r.cover * 100:.1f} % on {r.design} with "
                     f"{r.learner} nuisances, R = {r.reps}, {r.seeds} seeds{r.note}).")
    return text.strip()
