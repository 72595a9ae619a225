"""Finished runs as the Results page sees them: live (in the job registry) or read from the store.

A live run has its fitted estimator and data; a stored run has its record, predictions and
curve only. :class:`ResultItem` gives both the same face. A live run computes its curve once
(:meth:`Run.curve` keeps it); predictions are computed once per session and cached in
``st.session_state``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dashboard import state
from dmlcore.errors import DMLCoreError
from dmlcore.runs import METHOD_TITLES, Run
from dmlcore.store import StoredRun

_CACHE = "result_cache"


@dataclass
class ResultItem:
    key: str                  # the store's run id when saved, else the job id
    label: str
    record: dict
    run: Run | None = None
    stored: StoredRun | None = None

    @property
    def method(self) -> str:
        return self.record.get("method", "")

    @property
    def batch(self) -> int | None:
        return state.batch_of(self.label)

    @property
    def has_truth(self) -> bool:
        return self.record.get("truth") is not None

    @property
    def title(self) -> str:
        return self.label or METHOD_TITLES.get(self.method, self.method)

    def _cached(self, what: str, make):
        cache = st.session_state.setdefault(_CACHE, {})
        key = (self.key, what)
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def curve(self) -> pd.DataFrame | None:
        """Run.curve() (estimate and truth); None when the run has no curve to draw."""
        if self.stored is not None:
            return self.stored.curve

        try:
            return self.run.curve()      # computed once per run (Run caches it)
        except DMLCoreError:
            return None

    def predictions(self) -> pd.DataFrame:
        if self.stored is not None:
            return self.stored.predictions

        def make():
            frame = self.run.predictions()
            return frame.drop(columns=self.run.data.image_columns, errors="ignore")
        return self._cached("predictions", make)

    def to_json(self) -> str:
        if self.run is not None:
            return self.run.to_json()
        return json.dumps(self.record, indent=2, default=str)


def collect() -> list[ResultItem]:
    """The session's finished runs: live ones first (oldest first), then loaded stored runs."""
    items: list[ResultItem] = []
    seen: set[str] = set()
    for snap in state.snapshots():
        if snap.status == "done" and snap.run is not None:
            key = snap.run_id or snap.id
            items.append(ResultItem(key, snap.label, snap.run.record, run=snap.run))
            seen.add(key)
    for run_id, stored in st.session_state.get("loaded_runs", {}).items():
        if run_id not in seen:
            items.append(ResultItem(run_id, stored.label, stored.record, stored=stored))
    return items


def load_stored(run_id: str) -> StoredRun | None:
    """Read one of this session's runs from the store into the session."""
    stored = state.store().load(run_id, state.owner())
    if stored is not None:
        st.session_state.setdefault("loaded_runs", {})[run_id] = stored
    return stored


def metrics_table(items: list[ResultItem]) -> pd.DataFrame:
    """One row per run: what ran and how well (MSE against the truth, when known) and how long;
    with "band coverage" and "band width" when any run has a band (``record["bands"]``)."""
    rows = []
    for item in items:
        rec = item.record
        metrics = rec.get("metrics") or {}
        rows.append({
            "run": item.title,
            "method": METHOD_TITLES.get(rec.get("method"), rec.get("method")),
            "learner": rec.get("learner"),
            "K": str(rec.get("folds")) if rec.get("method") == "dml-cmr" else "—",
            "n": rec.get("n"),
            "seed": rec.get("seed"),
            "MSE": rec.get("mse"),
            "MSE (fresh draws)": metrics.get("mse_fresh"),
            "seconds": rec.get("seconds"),
            "band coverage": rec.get("band_coverage"),
            "band width": rec.get("band_width"),
        })
    frame = pd.DataFrame(rows)
    if not any(item.record.get("bands") for item in items):
        frame = frame.drop(columns=["band coverage", "band width"], errors="ignore")
    if not frame.empty and frame["MSE (fresh draws)"].isna().all():
        frame = frame.drop(columns=["MSE (fresh draws)"])
    return frame


def band_notes(items: list[ResultItem]) -> list[str]:
    """One line per run with a band: which band it is, where it was measured and how it did."""
    notes = []
    for item in items:
        bands = item.record.get("bands") or {}
        for entry in (bands.get("confidence"), bands.get("split_spread")):
            if not entry:
                continue
            covered = ("" if entry.get("coverage") is None
                       else f", contains the truth at {entry['coverage']:.0%} of them")
            notes.append(f"**{item.title}** — {entry['what']}. Evaluated at: {entry['points']}; mean width "
                         f"{entry['mean_width']:.3g}{covered}.")
    return notes
