"""Finished runs as the Results page sees them: live (in the job registry) or read from the store.

A live run has its fitted estimator and data; a stored run has its record, predictions and
curve only. :class:`ResultItem` gives both the same face. A live run computes its curve once
(:meth:`Run.curve` keeps it); predictions are computed once per session and cached in
``st.session_state``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property

import pandas as pd
import streamlit as st

from dashboard import fits, state
from dmlcore.inference.effect_coverage import coverage_note, measured_coverage
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHODS, METHOD_TITLES
from dmlcore.estimators._registry import LINEAR_REFERENCE, PAPER_METHOD, PLUG_IN_METHOD
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.process import one_blas_thread
from dmlcore.stats.covariance import COV_DEFAULT
from dmlcore.estimators.second_stage import SECOND_STAGES
from dmlcore.runs import Run
from dmlcore.runs.typed import (Debiased, Effect, EffectClusters, FirstStageInference, Heldout, Interval,
                                RunRecord)
from dmlcore.store import StoredRun, safe_filename

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".tab", ".parquet", ".pq")


@dataclass
class ResultItem:
    key: str                  # the store's run id when saved, else the job id
    label: str
    record: dict
    run: Run | None = None
    stored: StoredRun | None = None

    @cached_property
    def result(self) -> RunRecord:
        """The record, typed (:mod:`dmlcore.runs.typed`): what the renderers read (read once: an item lives for
        one run of the page's script, :func:`collect` makes them anew)."""
        return RunRecord.from_dict(self.record)

    @property
    def method(self) -> str:
        rec = self.result
        return rec.method if rec.has("method") else ""

    @property
    def batch(self) -> int | None:
        return state.batch_of(self.label)

    @property
    def has_truth(self) -> bool:
        return self.result.truth is not None

    @property
    def title(self) -> str:
        return self.label or METHOD_TITLES.get(self.method, self.method)

    def _cached(self, what: str, make):
        return state.cached(state.RESULT_CACHE, (self.key, what), make)

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
        elif snap.status == "done" and snap.run_id and snap.run_id not in st.session_state.get(state.LOADED_RUNS, {}):
            load_stored(snap.run_id)      # finished before a server restart: read back from the store
    for run_id, stored in st.session_state.get(state.LOADED_RUNS, {}).items():
        if run_id not in seen:
            items.append(ResultItem(run_id, stored.label, stored.record, stored=stored))
    return items


def load_stored(run_id: str) -> StoredRun | None:
    """Read one of this session's runs from the store into the session."""
    stored = state.store().load(run_id, state.owner())
    if stored is not None:
        st.session_state.setdefault(state.LOADED_RUNS, {})[run_id] = stored
    return stored


def metric_help(items) -> dict:
    """What each MSE column measures, from the runs' records (the first run that says)."""
    out = {}
    for it in items:
        for key, text in (it.result.metric_help or {}).items():
            out.setdefault(key, text)
    out.setdefault("mse", "Mean squared error against the truth (lower is better)")
    out.setdefault("mse_fresh", "Mean squared error at fresh draws from the data's distribution")
    return out


def metrics_table(items: list[ResultItem]) -> pd.DataFrame:
    """One row per run: what ran and how well (MSE against the truth, when known) and how long;
    with "band coverage" and "band width" when any run has a band (``record["bands"]``), and the
    held-out residual relative to Var(Y) with its standard error when any run has one."""
    rows = []
    for item in items:
        rec = item.result
        heldout = rec.heldout if rec.heldout is not None else Heldout()
        rows.append({
            "run": item.title,
            "method": METHOD_TITLES.get(rec.method, rec.method),
            "learner": rec.learner,
            "K": str(rec.folds) if "folds" in getattr(METHODS.get(rec.method), "settings", ()) else "—",
            "n": rec.n,
            "seed": rec.seed,
            "MSE": rec.mse,
            "MSE (fresh draws)": rec.mse_fresh,
            "seconds": rec.seconds,
            "band coverage": rec.band_coverage,
            "band width": rec.band_width,
            "held-out residual": heldout.relative,
            "held-out s.e.": heldout.relative_std_error,
        })
    frame = pd.DataFrame(rows)
    if not any(item.result.bands for item in items):
        frame = frame.drop(columns=["band coverage", "band width"], errors="ignore")
    if not any(item.result.heldout for item in items):
        frame = frame.drop(columns=["held-out residual", "held-out s.e."], errors="ignore")
    if not frame.empty and frame["MSE (fresh draws)"].isna().all():
        frame = frame.drop(columns=["MSE (fresh draws)"])
    return frame


BAND_KINDS = ("confidence", "split_spread")     # the bands a run may have, in the order their notes go


def band_notes(items: list[ResultItem]) -> list[str]:
    """One line per run with a band: which band it is, where it was measured and how it did."""
    notes = []
    for item in items:
        bands = item.result.bands or {}
        for kind in BAND_KINDS:
            entry = bands.get(kind)
            if not entry:
                continue
            covered = "" if entry.coverage is None else f", contains the truth at {entry.coverage:.0%} of them"
            notes.append(f"**{item.title}** — {entry.what}. Evaluated at: {entry.points}; mean width "
                         f"{entry.mean_width:.3g}{covered}.")
    return notes


def for_display(table: pd.DataFrame, items: list[ResultItem]) -> pd.DataFrame:
    """``table`` with its MSE and band coverage columns as text, "no truth" for runs without one,
    when any run has no truth (a number column would show None)."""
    if all(item.has_truth for item in items):
        return table
    out = table.copy()
    for col, digits in (("MSE", ".4g"), ("MSE (fresh draws)", ".4g"), ("band coverage", ".2f")):
        if col in out:
            out[col] = [("no truth" if not item.has_truth else "—" if pd.isna(v) else f"{v:{digits}}")
                        for item, v in zip(items, out[col])]
    return out


def effects_table(items: list[ResultItem], reference: Run | None = None, linear: tuple | None = None) -> pd.DataFrame:
    """One row per run with an effect: the headline estimate (debiased for every method that fits
    a nonlinear f, unless the run had it switched off or it could not be computed: then the plug-in,
    its kind saying so), its interval or "weakly identified" in words, its kind in a few words
    (:func:`interval_kind`; :func:`interval_descriptions` says each in full), the plug-in beside a
    debiased headline, the measured coverage of that kind of interval on the simulated designs
    (:func:`dmlcore.inference.effect_coverage.coverage_note`), the bootstrap's percentile interval and the
    Anderson-Rubin set where the run has them, the sieve effect of data-driven dimension beside a debiased
    effect (:data:`SIEVE_COLUMN`), or why there is no effect; beside each effect its
    weak-identification flag (with the sieve check's), specification spread and cluster treatment (:data:`NOTE_COLUMNS`,
    :mod:`dmlcore.inference.effect_notes`). 2SLS gets a second row for the debiased average derivative; the
    2SLS reference fit comes last when given.

    ``linear`` is the page's covariance choice: (data, :func:`linear_iv_inference` on it); the 2SLS runs
    fitted on that data show the interval, its kind and the Anderson-Rubin set under that choice
    (:func:`under_covariance`), the others as they were fitted."""
    from dmlcore.inference.linear_iv import set_text
    measured = measured_coverage()
    rows = []
    for title, rec in _records(items, reference, linear):
        effect = rec.effect
        level = effect.level or 0.95
        debiased = effect.debiased
        headline = effect.headline_is_debiased
        plug = effect.plug_in
        kind = interval_kind(effect.interval) if effect.estimate is not None else effect.error
        percentile = effect.bootstrap.percentile if effect.bootstrap is not None else None
        ar = effect.anderson_rubin
        rows.append({"run": title, "effect": effect.estimate, f"{level:.0%} interval": _interval_text(effect),
                     "kind": f"plug-in, {kind}" if plug_in_headline(rec) else flagged_kind(kind, debiased, headline),
                     **(_notes(effect) if headline or not (debiased or effect.anderson_rubin) else
                        _coefficient_notes(effect)),     # 2SLS's coefficient: its AR set, debiased effect or not
                     "plug-in": _with_interval(plug) if headline and plug is not None and plug.estimate is not None
                     else None,
                     COVERAGE_COLUMN: coverage_note(rec.to_dict(), measured),
                     "bootstrap percentile": f"{percentile[0]:.4g} to {percentile[1]:.4g}" if percentile else None,
                     "Anderson-Rubin set": set_text(ar.set) if ar is not None and ar.set is not None else None,
                     SIEVE_COLUMN: sieve_text(debiased)})
        if debiased and not headline:      # 2SLS: its coefficient, then the debiased average derivative
            as_fitted = effect.updated(clusters=debiased.clusters)   # as fitted: the page's choice moves 2SLS's alone
            rows.append({"run": f"{title}: debiased average derivative", "effect": debiased.estimate,
                         f"{level:.0%} interval": _interval_text(debiased, debiased.weakly_identified),
                         "kind": flagged_kind("debiased", debiased, True), **_notes(as_fitted),
                         SIEVE_COLUMN: sieve_text(debiased),
                         COVERAGE_COLUMN: coverage_note(
                             rec.updated(effect=effect.updated(estimate=debiased.estimate)).to_dict(), measured)})
    frame = pd.DataFrame(rows)
    if not len(frame):
        return frame
    frame = frame.dropna(axis=1, how="all")
    text = [c for c in frame.columns if c != "effect"]
    frame[text] = frame[text].fillna("—")
    return frame


SIEVE_COLUMN = "sieve effect (data-driven dimension)"
"""The effects table's column of the sieve effect beside the debiased one (:mod:`dmlcore.inference.sieve_dimension`):
the interval to read where the identification note says the sieve check flagged the effect."""


SIEVE_READ = ("; the interval to read where the identification note flags the debiased effect (its standard error "
              "far below this one's)")


SIEVE_FLAGGED = "flagged: read the sieve effect"
"""Appended to a row's kind when its interval is the debiased one and the sieve check flagged it, so that the row
itself, not only the line under the table, says that its interval is not the one to read."""


def flagged_kind(kind: str | None, debiased, is_debiased_row: bool) -> str | None:
    """The row's interval kind, with :data:`SIEVE_FLAGGED` when the row's interval is the debiased effect's and
    the sieve check flagged it."""
    if is_debiased_row and debiased is not None and debiased.sieve_flag and kind:
        return f"{kind} ({SIEVE_FLAGGED})"
    return kind


def sieve_text(debiased) -> str | None:
    """The sieve effect of data-driven dimension beside a debiased effect: "1.21 [0.8, 1.62]", "1.21 (weakly
    identified: no interval)" when it is, or None."""
    sieve = debiased.sieve_dimension if debiased else None
    if not sieve or sieve.estimate is None:
        return None
    if sieve.weakly_identified:
        return f"{sieve.estimate:.4g} (weakly identified: no interval)"
    return f"{sieve.estimate:.4g} [{sieve.ci_lower:.4g}, {sieve.ci_upper:.4g}]"


NOTE_COLUMNS = ("weak identification", "spread", "clusters")
"""The effects table's notes beside each effect: the flag, the specification spread, the clusters."""
COVERAGE_COLUMN = "measured coverage"
BESIDE_TABLE = (*NOTE_COLUMNS, COVERAGE_COLUMN)
"""The columns the Results page writes in words under its effects table (the frame and its CSV keep them)."""


def _notes(effect: Effect) -> dict:
    """The effect's weak-identification flag, specification spread and cluster treatment, as columns."""
    return dict(zip(NOTE_COLUMNS, (effect.identification_note(), effect.spread_note(), effect.clusters_note())))


def _coefficient_notes(effect: Effect) -> dict:
    """The notes of 2SLS's coefficient row: its Anderson-Rubin set holds however weak the instruments (without
    one, proximal 2SLS: the first stage's flag), its one specification is linear, its clusters follow its own
    interval (the page's choice)."""
    ar = effect.anderson_rubin
    weak = ("see the Anderson-Rubin set: it holds however weak" if ar is not None and ar.set is not None
            else effect.identification_note())
    return dict(zip(NOTE_COLUMNS, (weak, "one specification (linear)", effect.clusters_note())))


def _typed(record: dict | RunRecord) -> RunRecord:
    return record if isinstance(record, RunRecord) else RunRecord.from_dict(record)


def _records(items, reference, linear: tuple | None = None) -> list[tuple[str, RunRecord]]:
    """(title, typed record) of every run with an effect, the 2SLS reference last; a 2SLS run on the data of
    ``linear`` (data, inference) under that covariance choice."""
    entries = [(item.title, item.result, item.run.data if item.run is not None else None) for item in items]
    if reference is not None:
        entries.append(("2SLS (reference)", reference.result, reference.data))
    data, inference = linear if linear is not None else (None, None)
    return [(title, under_covariance(rec, inference) if data is not None and fitted_on is data else rec)
            for title, rec, fitted_on in entries if rec.effect]


def under_covariance(record: dict | RunRecord, inference: LinearIV | None) -> RunRecord:
    """``record`` (typed) with the interval of its coefficient (its kind and clusters) and its Anderson-Rubin set
    as the covariance choice of ``inference`` (:func:`linear_iv_inference` on the record's own data) gives them,
    when the run's headline is 2SLS's coefficient (another linear IV estimator keeps its own interval);
    otherwise, or without ``inference``, ``record`` itself."""
    rec = _typed(record)
    effect = rec.effect if rec.effect is not None else Effect()
    if (inference is None or not keeps_coefficient(rec.method) or effect.estimate is None
            or not (effect.interval or "").startswith(LINEAR_HEAD)):
        return rec
    wald, first = inference.wald, inference.first if inference.first is not None else FirstStageInference()
    clusters = (EffectClusters.from_dict({"column": first.cluster, "count": first.n_clusters,
                                          "intervals": [{"interval": LINEAR_HEAD, "treatment": "clustered"}]})
                if first.n_clusters is not None else None)
    chosen = {"ci_lower": wald.ci_lower, "ci_upper": wald.ci_upper, "interval": wald.interval}
    intervals = [entry.updated(**chosen, clusters=clusters) if entry.interval == effect.interval else entry
                 for entry in effect.intervals or [] if not entry.is_anderson_rubin]
    if inference.ar:
        intervals.append(inference.ar)
    return rec.updated(effect=effect.updated(**chosen, clusters=clusters, intervals=[e.to_dict() for e in intervals]))


LINEAR_HEAD = "2SLS"       # the interval of the coefficient that the page's covariance choice recomputes


def plug_in_headline(record: dict | RunRecord) -> bool:
    """Whether the run's headline effect is the plug-in: it has an effect, no debiased headline (switched
    off, not computed, or the regression that ignores C), and it is not 2SLS, whose coefficient stays."""
    rec = _typed(record)
    effect = rec.effect if rec.effect is not None else Effect()
    return effect.estimate is not None and not keeps_coefficient(rec.method) and not effect.headline_is_debiased


def keeps_coefficient(method: str | None) -> bool:
    """Whether ``method``'s headline effect is its coefficient, never the debiased effect (2SLS: its
    class declares the Anderson-Rubin set)."""
    entry = METHODS.get(method)
    return entry is not None and "anderson_rubin" in getattr(entry.cls, "capabilities", ())


def interval_kind(how: str | None) -> str:
    """An interval's description in a few words: "debiased", "2SLS s.e.", "delta method",
    "bootstrap (B = 50)", "weakly identified", "none"."""
    if not how or how.startswith("none"):
        return "none (ask for a bootstrap)"
    if how.startswith("bootstrap"):
        return "bootstrap" + (f" (B = {how.split(',')[1].split()[0]})" if "," in how else "")
    if how.startswith("2SLS"):
        return "2SLS s.e." + (f" ({how.split('(')[-1].split(', as ')[0].rstrip(')')})" if "(" in how else "")
    if how.startswith("weakly identified"):
        return "weakly identified"      # its reason: the flag's column and the warning under the table
    return "delta method" if how.startswith("delta") else how.split(":")[0]


def interval_descriptions(items: list[ResultItem], reference: Run | None = None,
                          linear: tuple | None = None) -> dict[str, str]:
    """{short kind: full description} of every interval kind in the effects table (under the covariance
    choice ``linear``, as :func:`effects_table`), the Anderson-Rubin sets' words and why a run has no
    debiased effect included (one line per reason, naming its runs)."""
    out, reasons = {}, {}
    for title, rec in _records(items, reference, linear):
        effect = rec.effect
        if effect.estimate is None:
            continue
        how = effect.interval or ""
        if plug_in_headline(rec):
            out.setdefault("plug-in", PLUG_IN)
        out.setdefault(interval_kind(how), how.removeprefix("none: ").removeprefix("debiased: "))
        if effect.debiased and not how.startswith("debiased"):
            out.setdefault("debiased", effect.debiased.interval.removeprefix("debiased: "))
        sieve = effect.debiased.sieve_dimension if effect.debiased else None
        if sieve and sieve.interval:
            out.setdefault(SIEVE_COLUMN, sieve.interval.split(": ", 1)[-1] + SIEVE_READ)
        if effect.debiased_error:
            reasons.setdefault(effect.debiased_error.removeprefix("no debiased effect: "), []).append(title)
        ar = effect.anderson_rubin
        if ar:
            out[f"Anderson-Rubin set, {title}"] = ar.interval.split(": ", 1)[-1]
    return {**out, **{f"no debiased effect, {', '.join(titles)}": reason for reason, titles in reasons.items()}}


PLUG_IN = ("the effect of f-hat itself (the mean of its slope, or of its difference between the two treatment "
           "values), not debiased: a shrunk f-hat reads as a small effect")


def _interval_text(part: Effect | Debiased, weak: bool | None = None) -> str:
    """"lower to upper", "weakly identified" in words, or None (no interval)."""
    weak = part.weakly_identified if weak is None else weak
    if weak or (part.interval or "").startswith("weakly identified"):
        return "weakly identified: no confident interval"
    return None if part.ci_lower is None else f"{part.ci_lower:.4g} to {part.ci_upper:.4g}"


def _with_interval(plug: Interval) -> str:
    text = f"{plug.estimate:.4g}"
    return text + (f" ({plug.ci_lower:.4g} to {plug.ci_upper:.4g})" if plug.ci_lower is not None else "")


def estimand(items: list[ResultItem]) -> str | None:
    """What the effect column measures, in words: the debiased effect's estimand (every method's
    but 2SLS's headline), else the first run's, 2SLS's (a weighted average of its own) last."""
    effects = [it.result.effect for it in sorted(items, key=lambda it: keeps_coefficient(it.method))
               if it.result.effect is not None and it.result.effect.estimand]
    for effect in effects:
        for entry in effect.intervals or []:
            if entry.source == DEBIASED_SOURCE and entry.estimand:
                return entry.estimand
    return effects[0].estimand if effects else None


DEBIASED_SOURCE = "debiased"      # an interval entry's ``source`` when it is the debiased effect's


def bootstrap_candidates(items: list[ResultItem]) -> list[ResultItem]:
    """Live runs with an effect and no bootstrap yet: they can be refitted on resampled rows."""
    return [it for it in items if it.run is not None and it.result.effect is not None
            and it.result.effect.estimate is not None and not it.result.effect.bootstrap]


REFIT_SETTINGS = ("learner", "folds", "seed", "epochs", "n_draws", "nuisance_params", "f_params", "f_model", "cov_type",
                  "cluster", "reps_crossfit", "device", "heldout_folds", "effect_folds", "debias")


def refit_kwargs(record: dict | RunRecord, refits: int) -> dict:
    """``fit_run`` keywords that redo the run of ``record`` with a bootstrap of ``refits``."""
    config = _typed(record).config
    if config is None:
        return {"data_params": {}, "bootstrap": refits}
    kwargs = {k: config.get(k) for k in REFIT_SETTINGS if config.has(k)}
    return {**kwargs, "data_params": config.data or {}, "bootstrap": refits}


def download_name(item: ResultItem) -> str:
    """``<data set>_<method>_<id>``, the data set without a file extension: card_dml-cmr_3c0b2e5e."""
    dataset = str(item.result.dataset or "data")
    stem = dataset.rsplit(".", 1)[0] if dataset.lower().endswith(TABLE_SUFFIXES) else dataset
    return safe_filename(f"{stem}_{item.method}_{item.key[:8]}")


@dataclass(frozen=True)
class LinearIV:
    """2SLS under the page's covariance choice (:func:`linear_iv_inference`): the Wald interval of the effect
    (``wald``), its Anderson-Rubin entry (``ar``, None without one), the coefficients with their standard errors
    ({column: (coefficient, standard error)}), the first stage's statistics (``first``) and the choice itself."""

    wald: Interval
    ar: Interval | None
    coefficients: dict
    first: FirstStageInference
    cov_type: str | None = None
    cluster: str | None = None


def linear_iv_inference(data, cov_type: str, cluster: str | None) -> LinearIV:
    """2SLS's Wald interval and Anderson-Rubin set of the effect, its coefficients with their standard errors,
    and the first stage, under the covariance choice (:class:`LinearIV`); raises DMLCoreError for a bad choice
    (a cluster column with one level, ...)."""
    with one_blas_thread():     # as fits.fit_now: the page's own run, beside the job workers (dmlcore.process)
        return _linear_iv_inference(data, cov_type, cluster)


def _linear_iv_inference(data, cov_type: str, cluster: str | None) -> LinearIV:
    from dmlcore.runs.average_effect import anderson_rubin_entry, closed_form, contrast
    from dmlcore.inference.linear_iv import first_stage_inference
    estimator = fits.fit_now(data, cov_type=cov_type, cluster=cluster, heldout_folds=0, debias=False).estimator
    plan = contrast(data)
    return LinearIV(wald=Interval.from_dict(closed_form(estimator, plan)),
                    ar=Interval.from_dict(anderson_rubin_entry(estimator, data, plan)),
                    coefficients={str(k): (float(v), float(estimator.std_errors_[k])) for k, v in estimator.coef_.items()},
                    first=FirstStageInference.from_dict(first_stage_inference(data, cov_type, cluster)),
                    cov_type=cov_type, cluster=cluster)


LINEAR_IV_CONVENTIONS = ("small", "fixef_k", "cluster_df")   # left at their defaults by linear_iv_inference


def linear_iv_from_record(record: dict | RunRecord, cov_type: str, cluster: str | None) -> LinearIV | None:
    """What :func:`linear_iv_inference` gives on a 2SLS run's own data, read off the run's record instead of
    refitting: when the run is 2SLS (the registry's ``LINEAR_REFERENCE``) fitted under this covariance choice, with
    the linear IV conventions (``LINEAR_IV_CONVENTIONS``) at their defaults as :func:`linear_iv_inference` fits,
    and its record holds the coefficient's interval, the Anderson-Rubin set and the first stage under that
    choice. None otherwise (then compute it).

    The fit already computed these numbers; the page computing them again cost the server about 2.5 s of CPU
    per Results page of the demo (2SLS, its first stage and the Anderson-Rubin grid: 16 linearmodels fits),
    20 of them at once in a class, beside the worker processes (issue 47)."""
    rec = _typed(record)
    config, effect, first = rec.config, rec.effect, rec.diagnostics
    if (rec.method != LINEAR_REFERENCE or config is None or effect is None or first is None
            or first.inference is None or not rec.coefficients or not rec.has("std_errors")):
        return None
    fitted = (config.cov_type or COV_DEFAULT, config.cluster or None)
    if fitted != (cov_type, cluster or None) or (first.inference.cov_type, first.inference.cluster or None) != fitted:
        return None
    if any(config.get(name, getattr(DEFAULTS, name)) != getattr(DEFAULTS, name) for name in LINEAR_IV_CONVENTIONS):
        return None
    if effect.estimate is None or not (effect.interval or "").startswith(LINEAR_HEAD):
        return None
    ar = next((entry for entry in effect.intervals or [] if entry.is_anderson_rubin), None)
    wald = Interval(estimate=effect.estimate, ci_lower=effect.ci_lower, ci_upper=effect.ci_upper,
                    interval=effect.interval)
    return LinearIV(wald=wald, ar=ar,
                    coefficients={str(k): (float(v), float(rec.std_errors[k])) for k, v in rec.coefficients.items()},
                    first=first.inference, cov_type=cov_type, cluster=cluster)


STANDARDIZED_SALES = ("demand-iv", "digits-iv")  # scored on sales in units of 158 tickets


def score_caption(record: dict | RunRecord) -> str | None:
    """How a run with a truth was scored, with the outcome's scale named in words."""
    rec = _typed(record)
    if not rec.truth:
        return None
    if rec.dataset in STANDARDIZED_SALES:
        return ("Scored as in the paper: the mean squared error of f-hat on the benchmark's 2,800 test points, "
                "with sales measured in units of 158 tickets (the benchmark's standardized sales).")
    return f"Scored by the {rec.truth}."


def loss_caption(f_model: str | None, f_curve: bool) -> str:
    """What the losses of a run's detail charts are: the nuisances' on the standardized scale, and the
    second stage's curve on the scale its class reports (``SecondStage.loss_scale``)."""
    text = ("Losses are on the standardized scale; g reports a negative log-likelihood (neural network) or a "
            "squared error (trees, linear). Each fold's nuisances are trained on the other folds; the "
            "second-stage loss of fold k uses only them.")
    if f_curve and getattr(SECOND_STAGES.get(f_model), "loss_scale", None) == "outcome":
        text += (" The second stage's own curve (f) is not standardized: the boosted f's mean squared error in "
                 "the outcome's units squared.")
    return text


def closest_notes(items: list[ResultItem]) -> list[str]:
    """Which run came closest to the truth and by how much, in words; with a plain-words note when
    the naive plug-in beat DML-CMR. Empty with fewer than two scored runs."""
    mse = {it.key: it.result.mse for it in items}
    scored = sorted((it for it in items if mse[it.key] is not None), key=lambda it: mse[it.key])
    if len(scored) < 2:
        return []
    best = scored[0]
    least = mse[best.key]
    others = ", ".join(f"{it.title} {mse[it.key] / least:.1f}×" if least > 0
                       else f"{it.title} {mse[it.key]:.3g}" for it in scored[1:])
    notes = [f"**Closest to the truth: {best.title}** (MSE {least:.4g}). The others' MSE, as a "
             f"multiple of that: {others}."]
    dml = [it for it in scored if it.method == PAPER_METHOD]
    if best.method == PLUG_IN_METHOD and dml:
        notes.append(
            f"Here the naive plug-in beat DML-CMR (MSE {least:.4g} against "
            f"{mse[dml[0].key]:.4g}). That is not a fault of the tool: the paper's guarantees for DML-CMR "
            "concern how its error shrinks as the data grow, under conditions, not a win on every data set. "
            "Learn shows what the score and cross-fitting protect against, and what this project measured on "
            "the paper's benchmarks (tabs Orthogonal score and Cross-fitting).")
    return notes
