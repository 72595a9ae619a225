"""Run a study: every fit of its grid once, on an executor, reusing the fits already stored.

``run_fit_config(config) -> dict`` is the unit of work: it loads the data set named by the
config (``dmlcore.data.registry.load_dataset``), fits with ``dmlcore.runs.fit_run`` and returns
``{"status": "done"|"failed", "error", "mse", "mse_fresh", "effect_*", "heldout_*", "seconds"
(the fit's wall time), "rows", "worker_seconds" (data, fit and scoring), "record" (the full run
record)}``. It never raises: a failure is a row with its one-line error.

Every fit records the treatment's effect with its interval (the record's ``effect``:
``effect_estimate``, ``effect_ci_lower``, ``effect_ci_upper``, ``effect_level``,
``effect_interval`` (how it was computed), ``effect_estimand``; the plug-in and debiased effects
beside it: ``effect_plug_in`` with its ``_ci_lower``/``_ci_upper``, ``effect_debiased`` with its
``_se``, ``_ci_lower``, ``_ci_upper``, ``effect_strength``, ``effect_weak`` (1 when weakly
identified) and, on simulations, ``effect_truth``). A simulation is scored against
its truth (``mse``); a real data set has none, so its fits get the held-out residual instead (the
record's ``heldout``, 2 extra refits: ``heldout_relative``, the projected residual / Var(Y), and
``heldout_relative_se``) and ``mse`` is blank.

``run_study(spec, out_dir=None, *, executor="local", jobs=1, address=None, store=None,
callback=None, should_stop=None, ...) -> StudyResult`` looks every config up in the store by its
key (:func:`dmlcore.studies.spec.config_key`), runs only the missing ones and saves each as it
finishes, so an interrupted study loses nothing that finished and a rerun completes it. A failed
fit is recorded (status "failed", its error) and the study goes on; it is not stored, so a rerun
tries it again. ``callback(event)`` gets ``{"event": "start", "total", "to_run", "reused",
"estimate_seconds"}`` (the plan's compute estimate of the fits to run; None when unknown) and,
per finished fit, ``{"event": "fit", "done", "to_run", "total", "row", "record"}`` (``record``: the
run record, None when it failed); ``should_stop()`` is
checked between fits and cancels the rest (their rows say "cancelled").
"""

from __future__ import annotations

import functools
import json
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from dmlcore.data.registry import dataset_options, load_dataset
from dmlcore.device import gpus_needed
from dmlcore.estimators import FitSettings, trains_networks
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.errors import DMLCoreError, FitDiverged
from dmlcore.runs import fit_run
from dmlcore.runs.typed import Debiased, Effect, Heldout, Interval, RunRecord
from dmlcore.store import RunStore, default_store_path
from dmlcore.executors import Executor, get_executor
from dmlcore.studies.checks import check_study
from dmlcore.studies.spec import FIT_SETTINGS, INTEGER_SETTINGS, StudySpec, config_key, spec_from_dict
from dmlcore.studies.report import write_outputs
from dmlcore.studies.provenance import provenance, snapshot
from dmlcore.studies.summarize import EFFECT_FIELDS, OUTCOMES, add_arms, paired_table, summary_table


def run_fit_config(config: dict) -> dict:
    """One fit of a study from its plain JSON config; a failure comes back as a row, never raised."""
    start = time.perf_counter()
    try:
        loaded = _load(config["dataset"], json.dumps(config["data"], sort_keys=True), config["seed"])
        run = fit_run(loaded.data, config["method"], FitSettings.from_config(config), truth=loaded.truth,
                      dataset=config["dataset"], data_params=loaded.params)
        record = {**json.loads(run.to_json()), "curve": curve_points(run)}
        result = RunRecord.from_dict(record)
        return {"status": "done", "error": None, **record_outcomes(record), "seconds": result.seconds,
                "rows": result.n, "worker_seconds": time.perf_counter() - start, "record": record}
    except Exception as exc:  # one fit's failure is a row of the study, never the study's end
        return failed_row(exc, time.perf_counter() - start)


def curve_points(run) -> dict | None:
    """The fit's estimated causal function against the truth, as lists (``x``, ``estimate``, ``truth``,
    ``group``: ``Run.curve()``'s columns) for the study's curves-over-seeds figure; None without one."""
    try:
        frame = run.curve()
    except DMLCoreError:     # several treatments and no truth: no curve to draw
        return None
    points = {name: [None if isinstance(v, float) and not math.isfinite(v) else v for v in frame[name].tolist()]
              for name in ("x", "estimate", "truth", "group") if name in frame}
    return {**points, "treatment": ", ".join(run.data.treatment)}


def record_outcomes(record: dict) -> dict:
    """The fits.csv outcomes of a run record: MSE, effect with its interval, held-out residual (read through its
    typed view, :class:`dmlcore.runs.typed.RunRecord`)."""
    result = RunRecord.from_dict(record)
    effect, heldout = result.effect or Effect(), result.heldout or Heldout()
    plug, debiased = effect.plug_in or Interval(), effect.debiased or Debiased()
    weak = effect.weakly_identified
    return {"mse": result.mse, "mse_fresh": result.mse_fresh,
            "mse_where": result.truth if result.mse is not None else None,
            **{f"effect_{k}": effect.get(k) for k in EFFECT_FIELDS},
            "effect_plug_in": plug.estimate, "effect_plug_in_ci_lower": plug.ci_lower,
            "effect_plug_in_ci_upper": plug.ci_upper, "effect_debiased": debiased.estimate,
            "effect_debiased_se": debiased.std_error, "effect_debiased_ci_lower": debiased.ci_lower,
            "effect_debiased_ci_upper": debiased.ci_upper, "effect_strength": debiased.strength,
            "effect_weak": None if weak is None else int(weak), "effect_truth": effect.truth,
            "heldout_relative": heldout.relative, "heldout_relative_se": heldout.relative_std_error}


def failed_row(error: Exception | str, worker_seconds: float | None = None) -> dict:
    return {"status": "failed", "error": error if isinstance(error, str) else one_line(error),
            **dict.fromkeys(OUTCOMES), "seconds": None, "rows": None, "worker_seconds": worker_seconds,
            "record": None}


def one_line(exc: Exception) -> str:
    """A user-facing one-line message: ours as they are, anything else prefixed 'unexpected'."""
    message = " ".join(str(exc).split())
    if isinstance(exc, (DMLCoreError, FitDiverged)):
        return message
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@functools.lru_cache(maxsize=1)
def _load(dataset: str, data_json: str, seed: int):
    """The data of one cell and seed; kept while the methods of that seed are fitted in turn."""
    return load_dataset(dataset, seed=seed, **json.loads(data_json))


# ------------------------------------------------------------------ plan
@dataclass
class StudyPlan:
    """The fits of a study, which are stored already, and what the rest should cost."""

    configs: list
    keys: list
    stored: dict              # key -> stored row
    estimate_seconds: float | None   # fit time of the fits to run, from stored timings (None: no timing)
    estimated: int            # how many of the fits to run that estimate covers

    @property
    def total(self) -> int:
        return len(self.configs)

    @property
    def to_run(self) -> list[int]:
        return [i for i, key in enumerate(self.keys) if key not in self.stored]


def plan_study(spec, store: RunStore | None = None, *, reuse: bool = True) -> StudyPlan:
    """Expand ``spec`` and look its fits up in ``store`` (None: the default store)."""
    return _plan(as_spec(spec), store if store is not None else RunStore(default_store_path()), reuse)


def _plan(spec: StudySpec, store: RunStore | None, reuse: bool) -> StudyPlan:
    configs = spec.configs()
    keys = [config_key(c) for c in configs]
    stored = store.load_fits(keys) if store is not None and reuse else {}
    missing = [c for c, k in zip(configs, keys) if k not in stored]
    estimate = _timing_model(store) if store is not None and missing else (lambda config: None)
    estimates = [s for s in map(estimate, missing) if s is not None]
    return StudyPlan(configs, keys, stored, sum(estimates) if estimates else None, len(estimates))


def _timing_model(store: RunStore) -> Callable[[dict], float | None]:
    """A fit's seconds: the median of stored fits of the same config (any seed), else from stored fits
    of the same data set, method and learner at other N: a line a + b N through their medians per N
    when there are two N or more (a fit has a fixed cost besides its rows), else proportional to N;
    None without either."""
    by_config, by_method = {}, {}
    for item in store.fit_timings():
        cfg = item["config"]
        by_config.setdefault(_without_seed(cfg), []).append(item["seconds"])
        n = cfg.get("data", {}).get("n")
        if n:
            by_method.setdefault((cfg["dataset"], cfg["method"], cfg.get("learner")), {}).setdefault(n, []).append(
                item["seconds"])

    def estimate(config: dict) -> float | None:
        same = by_config.get(_without_seed(config))
        if same:
            return statistics.median(same)
        seen, n = by_method.get((config["dataset"], config["method"], config.get("learner"))), config["data"].get("n")
        return _scaled_by_rows(seen, n) if seen and n else None

    return estimate


def _scaled_by_rows(seen: dict, n: int) -> float:
    """Seconds at ``n`` rows from {rows: [seconds, ...]} at other sizes (see :func:`_timing_model`)."""
    sizes = sorted(seen)
    medians = [statistics.median(seen[size]) for size in sizes]
    if len(sizes) == 1:
        return medians[0] * n / sizes[0]
    slope, intercept = np.polyfit(sizes, medians, 1)
    slope = max(float(slope), 0.0)
    intercept = max(float(intercept), 0.0)
    return intercept + slope * n


def _without_seed(config: dict) -> str:
    return json.dumps({k: v for k, v in config.items() if k != "seed"}, sort_keys=True)


def as_spec(spec) -> StudySpec:
    if isinstance(spec, StudySpec):
        return spec
    if isinstance(spec, dict):
        return spec_from_dict(spec)
    raise DMLCoreError(f"A study spec is a StudySpec or a dict; got {type(spec).__name__}.")


# ------------------------------------------------------------------ run
@dataclass
class StudyResult:
    """Every fit of a study (one row each), the per-cell summary and the paired comparisons.

    Its counts come from the fits' own columns (those of fits.csv: ``status``, ``reused``), so the
    page, report.html and fits.csv say the same. ``planned``: the fits of the grid, when more than the
    rows so far (a study still running); None when every fit has its row."""

    fits: pd.DataFrame
    summary: pd.DataFrame
    paired: pd.DataFrame
    cancelled: bool = False
    study_id: str | None = None
    files: dict = field(default_factory=dict)
    png_error: str | None = None
    planned: int | None = None
    curves: dict = field(default_factory=dict)   # fit key -> its curve (runner.curve_points), where known
    fold_losses: dict = field(default_factory=dict)   # fit key -> its record's fold_losses, where known
    provenance: dict | None = None     # dmlcore.studies.provenance: where and with what it ran (None: not known)

    @property
    def total(self) -> int:
        return max(len(self.fits), self.planned or 0)

    def _count(self, status: str) -> int:
        return int((self.fits["status"] == status).sum()) if len(self.fits) else 0

    @property
    def reused(self) -> int:
        return int(self.fits["reused"].astype(bool).sum()) if len(self.fits) else 0

    @property
    def ran(self) -> int:
        """Fits run by this study (finished or failed), not reused from the store."""
        if not len(self.fits):
            return 0
        return int(((self.fits["status"] != "cancelled") & ~self.fits["reused"].astype(bool)).sum())

    @property
    def failed(self) -> int:
        return self._count("failed")

    @property
    def skipped(self) -> int:
        """Fits cancelled before they ran."""
        return self._count("cancelled")

    @property
    def pending(self) -> int:
        """Fits of the grid without a row yet (a study still running)."""
        return self.total - len(self.fits)

    @property
    def message(self) -> str:
        """'k of n fits run, m reused', and what failed, was cancelled or is still to run."""
        text = f"{self.ran} of {self.total} fits run, {self.reused} reused"
        for count, what in ((self.failed, "failed"), (self.skipped, "cancelled"), (self.pending, "still to run")):
            if count:
                text += f", {count} {what}"
        return text

    def failure_reasons(self, limit: int = 3) -> list[tuple[str, int]]:
        """The first ``limit`` distinct errors of failed fits, in the order they appear, with how many
        fits failed with each."""
        if not self.failed:
            return []
        errors = self.fits.loc[self.fits["status"] == "failed", "error"].fillna("no reason recorded")
        counts = errors.value_counts(sort=False)
        return [(text, int(counts[text])) for text in dict.fromkeys(errors)][:limit]

    def failure_text(self) -> str | None:
        """One paragraph on the failed fits: how many, and the first reasons; None when none failed."""
        if not self.failed:
            return None
        every = self.failed == self.ran and not self.reused
        head = (f"Every fit failed ({self.failed} of {self.total})" if every
                else f"{self.failed} of {self.total} fits failed")
        reasons = "; ".join(f"{text}" + (f" ({count} fits)" if count > 1 else "")
                            for text, count in self.failure_reasons())
        more = len(set(self.fits.loc[self.fits["status"] == "failed", "error"].fillna(""))) - 3
        tail = f"; and {more} other reason{'s' if more > 1 else ''} (fits.csv, column error)" if more > 0 else ""
        return (f"{head}. {'First reasons' if len(self.failure_reasons()) > 1 else 'Reason'}: {reasons}{tail}. "
                "Failed fits are not stored: fix the cause, then run the study again to retry them.")


def run_study(spec, out_dir: str | Path | None = None, *, executor: str | Executor = DEFAULTS.executor, jobs: int | None = DEFAULTS.jobs,
              address: str | None = None, store: RunStore | None = None, callback: Callable | None = None,
              should_stop: Callable | None = None, threads: int | None = None, reuse: bool = True,
              keep: bool = True, owner: str | None = None, label: str = "",
              fit_fn: Callable = run_fit_config, reused_keys=None) -> StudyResult:
    """Run ``spec`` (a StudySpec or its dict form) and, with ``out_dir``, write its files.

    ``executor``: "local" or "ray" (with ``jobs``, ``address``, ``threads`` as in
    :func:`~dmlcore.executors.get_executor`), or an executor object, which is left open.
    ``store``: the run store (None: ``$DMLCORE_HOME``'s); ``reuse=False`` runs every fit again,
    ``keep=False`` neither reads nor saves fits. With ``owner`` the study is remembered in the
    store for that owner (``result.study_id``). ``fit_fn`` replaces :func:`run_fit_config`
    (it must return the same kind of dict). ``reused_keys``: when a study is continued, the keys
    that were stored before it first started; stored fits outside them were run by the study
    itself and count as run, not reused (default: every fit stored now counts as reused).
    """
    spec = as_spec(spec)
    check_study(spec)
    started = snapshot()
    if keep:
        store = store if store is not None else RunStore(default_store_path())
    else:
        store = None
    if owner is not None and store is None:
        raise DMLCoreError("A study remembered for an owner needs the store; leave keep=True.")
    plan = _plan(spec, store, reuse)
    reused_keys = set(plan.stored) if reused_keys is None else set(reused_keys)
    rows = [_row(c, k, plan.stored[k], reused=k in reused_keys) if k in plan.stored else None
            for c, k in zip(plan.configs, plan.keys)]
    todo = plan.to_run
    if callback:
        callback({"event": "start", "total": plan.total, "to_run": len(todo), "reused": plan.total - len(todo),
                  "estimate_seconds": plan.estimate_seconds})
    ran, cancelled, curves, losses = 0, bool(should_stop and should_stop()), {}, {}
    if todo and not cancelled:
        runner = get_executor(executor, jobs, address, threads=threads) if isinstance(executor, str) else executor
        try:
            items = [plan.configs[i] for i in todo]
            available = getattr(runner, "gpus_available", lambda: None)()  # a Ray cluster's GPUs, else here
            gpus = max((gpus_needed(c.get("device", DEFAULTS.device), available, networks=trains_networks(c)) for c in items),
                       default=0)
            for j, result in runner.map(fit_fn, items, resources={"num_cpus": 1, "num_gpus": gpus}):
                i = todo[j]
                if isinstance(result, BaseException):
                    result = failed_row(result)
                record = result.get("record")
                rows[i] = _row(plan.configs[i], plan.keys[i], result, reused=False)
                if record and record.get("curve"):
                    curves[plan.keys[i]] = record["curve"]
                if record and record.get("fold_losses"):
                    losses[plan.keys[i]] = record["fold_losses"]
                if store is not None and rows[i]["status"] == "done":
                    store.save_fit(plan.keys[i], plan.configs[i], rows[i], record)
                ran += 1
                if callback:
                    callback({"event": "fit", "done": ran, "to_run": len(todo), "total": plan.total, "row": rows[i],
                              "record": record})
                if should_stop and should_stop():
                    cancelled = ran < len(todo)
                    break
        finally:
            if runner is not executor:
                runner.close()
    for i, row in enumerate(rows):
        if row is None:
            rows[i] = _row(plan.configs[i], plan.keys[i], {"status": "cancelled"}, reused=False)
    result = result_from_rows(rows)
    result.cancelled = cancelled
    result.curves = {**stored_curves(store, [k for k in plan.keys if k in plan.stored]), **curves}
    result.fold_losses = {**stored_fold_losses(store, [k for k in plan.keys if k in plan.stored]), **losses}
    result.provenance = provenance(started)
    if owner is not None:
        result.study_id = store.save_study(owner, label, spec.to_dict(), plan.keys, reused=sorted(reused_keys),
                                           status="cancelled" if cancelled else "done")
    if out_dir is not None:
        write_outputs(result, out_dir, spec=spec)
    return result


def result_from_rows(rows: list[dict]) -> StudyResult:
    """A StudyResult (fits with arms, summary, paired) from fits.csv-shaped rows (outcomes a row
    lacks, as in fits stored by an older dmlcore, are blank)."""
    frame = pd.DataFrame(rows)
    if len(frame):
        frame = frame.assign(**{name: None for name in OUTCOMES if name not in frame})
    fits = add_arms(_integers(frame))
    return StudyResult(fits=fits, summary=summary_table(fits), paired=paired_table(fits))


def _integers(fits: pd.DataFrame) -> pd.DataFrame:
    """Integer settings and options with gaps (a setting one method does not use) as integers, not 4.0."""
    names = {"seed", "rows", *INTEGER_SETTINGS}
    for dataset in fits["dataset"].unique() if "dataset" in fits else ():
        names |= {o for o, d in dataset_options(dataset).items() if type(d) is int}
    for name in names & set(fits.columns):
        fits[name] = pd.to_numeric(fits[name]).astype("Int64")
    return fits


def load_study(study_id: str, store: RunStore | None = None, owner: str | None = None) -> StudyResult | None:
    """A study remembered by ``run_study(owner=...)``, rebuilt from its stored fits (failed or
    cancelled fits were not stored and are left out); None for an unknown id or another owner's.
    A fit counts as reused when it was stored before the study first started (as the live study
    counted it); studies stored before that was kept count every fit as reused."""
    store = store if store is not None else RunStore(default_store_path())
    study = store.load_study(study_id, owner)
    if study is None:
        return None
    stored = store.load_fits(study["keys"])
    before = None if study.get("reused") is None else set(study["reused"])
    rows = [{**stored[k], "reused": before is None or k in before} for k in study["keys"] if k in stored]
    result = result_from_rows(rows)
    result.study_id = study_id
    result.curves = stored_curves(store, list(stored))
    result.fold_losses = stored_fold_losses(store, list(stored))
    return result


MAX_CURVES = 400   # stored fits whose curves a study reads back (the figure draws a few seeds per method)


def stored_curves(store: RunStore | None, keys: list[str]) -> dict:
    """The curves (:func:`curve_points`) of stored fits ``keys``, at most MAX_CURVES of them; fits
    stored before curves were kept have none."""
    out = {}
    for key in keys[:MAX_CURVES] if store is not None else ():
        curve = (store.fit_record(key) or {}).get("curve")
        if curve:
            out[key] = curve
    return out


MAX_LOSSES = 2000  # stored fits whose fold losses a study reads back (each a whole run record)


def stored_fold_losses(store: RunStore | None, keys: list[str]) -> dict:
    """The ``fold_losses`` of the run records of stored fits ``keys`` (at most MAX_LOSSES of them)."""
    out = {}
    for key in keys[:MAX_LOSSES] if store is not None else ():
        losses = (store.fit_record(key) or {}).get("fold_losses")
        if losses:
            out[key] = losses
    return out


def _row(config: dict, key: str, result: dict, *, reused: bool) -> dict:
    """A fits.csv row: every grid coordinate, then the outcome."""
    row = {"dataset": config["dataset"], **config["data"], "method": config["method"],
           **{name: config.get(name) for name in FIT_SETTINGS}, "seed": config["seed"]}
    for name in (*OUTCOMES, "seconds", "worker_seconds", "rows"):
        value = result.get(name)
        row[name] = None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value
    row.update(status=result.get("status", "failed"), error=result.get("error"), reused=reused, key=key)
    return row
