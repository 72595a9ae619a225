"""One fit from a configuration to a run record (:func:`fit_run`): shared by the CLI, the benchmarks and the dashboard.

A run record is a JSON-ready dict with the fields of the CLI contract: ``method``, ``dataset``,
``n``, ``seed``, ``folds`` (the folds the fit used: K when it cross-fits, 1 when its nuisances saw
every row; None for a method without nuisances), ``learner``, ``mse`` (None without ground truth),
``seconds`` (wall time of the fit), ``fold_losses`` (one entry per fold), ``coefficients`` and
``std_errors`` (linear methods), plus ``metrics``, ``config``, ``roles``, ``categorical`` (the columns
read as category codes) and ``second_stage_history``; and
``bands`` (see :func:`dmlcore.runs.bands.band_summary`) with the headline ``band_coverage`` and ``band_width``
(None when the estimator gives no band). :meth:`dmlcore.runs.Run.curve` adds the band a curve can show
(:func:`dmlcore.runs.bands.curve_band`). ``effect`` is the treatment's average effect or derivative with its
interval (:func:`dmlcore.runs.average_effect.effect_record`), ``heldout`` the held-out projected residual
(:func:`dmlcore.runs.heldout_residual.heldout_score`, None when not computed) and, for IV data,
``diagnostics`` the linear first stage (:func:`dmlcore.inference.first_stage.first_stage`).
"""

from __future__ import annotations

import platform
import time
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

from dmlcore.stats.covariance import check_covariance, cluster_columns, is_clustered
from dmlcore.data.roles import CausalData
from dmlcore.device import resolve_device
from dmlcore.process import default_threads
from dmlcore.data.simulate import GroundTruth
from dmlcore.inference.debiased_effect import EFFECT_FOLDS, CrossFitted, check_effect_folds, score_effect
from dmlcore.inference.first_stage import first_stage
from dmlcore.runs.average_effect import bootstrap_effect, check_bootstrap, contrast, effect_record
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators import (METHODS, FitSettings, for_estimator, get_method, make_estimator,
                                record_learner, refuse_unread)
from dmlcore.estimators.settings import DEFAULTS, SETTINGS
from dmlcore.inference.linear_iv import clr_set
from dmlcore.runs.bands import band_summary
from dmlcore.runs.heldout_residual import HELDOUT_FOLDS, check_folds, fold_refits, heldout_score, start_refits
from dmlcore.runs.result import Run


BANDS_NOT_CLUSTERED = ("not clustered: the band's variance takes rows as independent; read the effect's "
                       "clustered interval, not this band, for the uncertainty")


def fit_run(data: CausalData, method: str, settings: FitSettings | None = None, *, truth: GroundTruth | None = None,
            dataset: str | None = None, data_params: dict | None = None, callback=None, should_stop=None,
            **changes) -> Run:
    """Fit ``method`` on ``data`` with ``settings`` and score it (and its bands) against ``truth`` when given.

    ``settings`` (a :class:`~dmlcore.estimators.settings.FitSettings`; default every declared default)
    changed by ``changes`` (settings by name, e.g. ``learner="gb"``) hold the estimator's settings and
    the run's; a setting ``method`` does not read, given a value other than its default, is refused in
    one line. The record's ``config`` holds every setting; ``config.device`` is the device asked for,
    ``device`` the torch device the fit's networks ran on (None when the method has none of dmlcore's
    torch models).

    ``effect`` is the treatment's average effect or derivative with an interval
    (:mod:`dmlcore.runs.average_effect`); ``bootstrap`` B adds an interval from B refits on resampled rows,
    run on ``executor`` ("local" or "ray") with ``jobs`` workers (Ray at ``address``); so are the held-out
    residual's and the debiased effect's refits, started before the fit so that they run beside it (local with
    ``jobs`` = 1, the default: one after another in this process after the fit; the record is the same).
    ``heldout`` is the held-out projected residual (:mod:`dmlcore.runs.heldout_residual`) from
    ``heldout_folds`` refits; None computes it with 2 folds when there is no ``truth`` (real
    data: nothing else compares the methods) and not otherwise, 0 never. The debiased effect
    (:mod:`dmlcore.inference.debiased_effect`) corrects f-hat cross-fitted over ``effect_folds`` refits (None: the
    held-out residual's, reused, or 2 when there is none; 0 corrects the full-sample fit);
    ``debias=False`` switches it off: no refits for it, the plug-in stays the headline and
    ``effect.debiased_error`` says so. IV and
    PCL records carry the linear first-stage ``diagnostics`` (:func:`dmlcore.inference.first_stage.first_stage`;
    PCL without its linearmodels ``inference``, which costs tens of seconds on wide tables) under the
    covariance ``cov_type`` ("unadjusted", "robust", "clustered" by the column ``cluster``), which
    2SLS's standard errors and Anderson-Rubin set use too. ``outcome_learner`` / ``sampler`` set
    one nuisance of the DML-CMR family (``"auto"``: chosen by cross-fitted held-out loss, the default with
    ``learner`` nn or gb; ``nuisances`` then records the candidates' losses and the choice); the record's
    ``config`` names the nuisances as used.

    ``time_limit`` (seconds, a run setting): the fit with every refit (held-out, debiased effect,
    bootstrap) stops once it has run that long, checked where a cancel is (between epochs and stages),
    and fails with a DMLCoreError that names the limit.

    Parameters
    ----------
    data : CausalData
        The data with its roles.
    method : str
        A registered method (``dmlcore.METHODS``: "dml-cmr", "ce-dml-cmr", "naive", "2sls", "liml",
        "fuller", "gmm-iv", "sieve-2sls", "regression" and the peers).
    settings : FitSettings, default None
        Every setting of the fit and the run (``dmlcore.estimators.settings``); None: the declared
        defaults.
    truth : GroundTruth, default None
        A simulation's ground truth: the record then has ``mse`` (and the other ``metrics``), the
        bands' coverage and each interval's ``covered``.
    dataset : str, default None
        The data set's registry name, for the record; ``data_params`` its options (N, seed, ...).
    data_params : dict, default None
        See ``dataset``.
    callback : callable, default None
        Called with each progress event of the fit (``dmlcore.progress``).
    should_stop : callable, default None
        Polled during the fit; returning True raises ``FitCancelled``.
    **changes
        Settings by name that change ``settings`` (``learner="gb"``, ``folds=5``, ``seed=1``,
        ``cov_type="robust"``, ``bootstrap=200``, ``debias=False``, ...).

    Returns
    -------
    Run
        The fitted estimator with its JSON-serialisable record.

    Examples
    --------
    >>> from dmlcore import fit_run, load_dataset
    >>> sim = load_dataset("demand-iv", n=1000, seed=0)
    >>> run = fit_run(sim.data, "dml-cmr", truth=sim.truth, learner="gb", folds=5)
    >>> run.mse, run.conf_int(), run.nuisances        # typed views of run.record (dmlcore.runs.typed)
    """
    s = FitSettings.of(settings, **changes)
    if s.time_limit is None:
        return _fit_run(data, method, s, truth=truth, dataset=dataset, data_params=data_params, callback=callback,
                        should_stop=should_stop)
    SETTINGS["time_limit"].check(s.time_limit)
    deadline = time.monotonic() + s.time_limit

    def stop() -> bool:
        return time.monotonic() > deadline or bool(should_stop and should_stop())

    try:
        return _fit_run(data, method, s, truth=truth, dataset=dataset, data_params=data_params, callback=callback,
                        should_stop=stop)
    except FitCancelled:
        if should_stop is not None and should_stop():
            raise
        raise DMLCoreError(f"The fit went over its time limit of {s.time_limit} s (time_limit, with every refit); "
                           "raise the limit or leave it out.") from None


def _fit_run(data: CausalData, method: str, s: FitSettings, *, truth: GroundTruth | None = None,
             dataset: str | None = None, data_params: dict | None = None, callback=None, should_stop=None) -> Run:
    """:func:`fit_run` with its settings resolved and no time limit of its own (``should_stop`` carries it)."""
    get_method(method)
    resolve_device(s.device)          # every method: a CUDA device torch cannot see is refused first
    refuse_unread(s, method)
    check_covariance(s.cov_type, s.cluster, data.table)   # before any fit
    if s.bootstrap is not None:
        check_bootstrap(s.bootstrap)
        contrast(data)                # refused before any fit when there is no effect to bootstrap
    score_folds = (HELDOUT_FOLDS if truth is None else 0) if s.heldout_folds is None else s.heldout_folds
    if score_folds:
        check_folds(score_folds)
    linear_only = data.linear_options()        # absorbed fixed effects / weights: the linear IV methods only
    if is_clustered(s.cov_type) and len(cluster_columns(s.cluster)) == 2:
        linear_only["cluster"] = _two_way(method, s.cluster)
    if linear_only:
        score_folds = _linear_only_folds(linear_only, s.heldout_folds, s.effect_folds)
    if not isinstance(s.debias, bool):
        raise DMLCoreError(f"debias is True (the debiased effect, the default) or False (the plug-in only); "
                           f"got {s.debias!r}.")
    if not s.debias and s.effect_folds is not None:
        check_effect_folds(s.effect_folds)              # a bad value is refused even when it goes unused
    crossfit = (_effect_crossfit(data, s.effect_folds, score_folds) if _debiased(method, s.debias) and not linear_only
                else None)
    own_refits = crossfit.wanted if crossfit is not None and crossfit.wanted != score_folds else 0
    extra = (s.bootstrap or 0) + score_folds + own_refits      # refits after the fit, for the progress bar
    share = 1.0 / (1.0 + extra)
    estimator = make_estimator(method, for_estimator(s, method))
    started = _start_refits(data, method, s, score_folds, own_refits)   # None: they run here after the fit
    with _beside(started):       # until the workers are done: this process's threads limited, then the workers closed
        start = time.perf_counter()
        estimator.fit(data, callback=_scaled(callback, 0.0, share), should_stop=should_stop)
        seconds = time.perf_counter() - start
        metrics = truth.score(estimator) if truth is not None else {}
        bands = band_summary(estimator, data, truth)
        headline = bands.get("confidence") or bands.get("split_spread") or {}
        fields = estimator.record_fields()
        record = {
            "method": method,
            "dataset": dataset or data.name,
            "n": int(len(data.table)),
            "seed": int(s.seed),
            "folds": fields["folds"],
            "learner": record_learner(method, s.learner),
            "mse": metrics.get("mse"),
            "metrics": metrics,
            "seconds": seconds,
            "fold_losses": fields["fold_losses"],
            "second_stage_history": fields["second_stage_history"],
            "problem": data.problem,
            "roles": data.roles(),
            "categorical": list(data.categorical),
            "f_model": fields["f_model"],
            "reps_crossfit": int(s.reps_crossfit),
            "bands": bands,
            "band_coverage": headline.get("coverage"),
            "band_width": headline.get("mean_width"),
            "config": {"method": method, **_config(s), **(fields["nuisance_learners"] or {}),
                       "data": data_params or {}},
            "nuisances": fields["nuisances"],
            "device": fields["device"],
            "truth": truth.description if truth is not None else None,
            "metric_help": dict(truth.metric_help) if truth is not None else {},
            "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        _stage(callback, "first-stage diagnostics and the effect's interval", share)
        record["notes"] = fields["notes"]
        record.update({key: fields[key] for key in ("coefficients", "std_errors", "linear") if key in fields})
        if data.problem in ("iv", "pcl"):
            record["diagnostics"] = _first_stage(data, s.cov_type, s.cluster)
        record.update(_clr(method, data))
        done = share
        boot = None
        if s.bootstrap is not None:
            _stage(callback, f"bootstrap: 0 of {s.bootstrap} refits on resampled rows", done)
            boot = bootstrap_effect(data, method, s, s.bootstrap, seed=s.seed, executor=s.executor, jobs=s.jobs,
                                    address=s.address, callback=_scaled(callback, done, s.bootstrap * share),
                                    should_stop=should_stop)
            done += s.bootstrap * share
        record["heldout"] = None
        if score_folds:
            _stage(callback, f"held-out residual: {score_folds} refits on part of the rows", done)
            shared = crossfit.add if crossfit is not None and crossfit.wanted == score_folds else None
            try:
                record["heldout"] = heldout_score(data, method, s, score_folds, seed=s.seed,
                                                  callback=_refit_events(callback, done, score_folds * share),
                                                  should_stop=should_stop, on_fold=shared, started=started)
            except (DMLCoreError, FitDiverged) as exc:   # the fit itself went fine: keep it, say why
                record["heldout"] = {"error": f"no held-out residual: {exc}"}
            done += score_folds * share
        if own_refits:
            _stage(callback, f"debiased effect: {own_refits} refits on part of the rows", done)
            try:
                for _, held, refit in fold_refits(data, method, s, own_refits, seed=s.seed,
                                                  callback=_refit_events(callback, done, own_refits * share),
                                                  should_stop=should_stop, label="debiased effect's cross-fit",
                                                  started=started):
                    crossfit.add(held, refit)
            except (DMLCoreError, FitDiverged) as exc:   # the fit itself went fine: correct it as it is, say why
                crossfit.error = f"its refits failed: {exc}"
    strength = (record.get("diagnostics") or {}).get("strength") or {}
    record["effect"] = effect_record(estimator, data, bootstrap=boot, crossfit=crossfit,
                                     debias=s.debias and not linear_only,
                                     cluster=s.cluster if is_clustered(s.cov_type) else None,
                                     first_stage_f=strength.get("f_stat"),
                                     first_stage_statistic=strength.get("statistic"),
                                     first_stage_error=(record.get("diagnostics") or {}).get("error"))
    if linear_only:
        record["effect"]["debiased_error"] = LINEAR_ONLY_DEBIASED
    record.update(absorb=list(data.absorb), weights=data.weights)
    if is_clustered(s.cov_type):
        for band in bands.values():          # the spline sandwich takes rows as independent: say so
            band["clusters"] = BANDS_NOT_CLUSTERED
    if truth is not None and record["effect"].get("estimand") is not None:
        score_effect(record["effect"], truth, contrast(data))
    _stage(callback, "done", 1.0)
    return Run(record, estimator, data, truth)


LINEAR_ONLY_DEBIASED = ("not computed: the debiased effect and the held-out residual take no absorbed fixed effects, "
                        "weights or two-way clusters; the linear IV coefficient is the effect")


def _config(settings: FitSettings) -> dict:
    """A run record's ``config`` (less ``method`` and ``data``): every setting, learner objects by name; the
    executor, its jobs and address left out (where refits ran, not what they computed)."""
    config = settings.config()
    for name in ("executor", "jobs", "address"):
        config.pop(name)
    return config


def _clr(method: str, data: CausalData) -> dict:
    """``{"clr": ...}``: the conditional likelihood-ratio set of a linear IV method's coefficient on IV data
    with one treatment column (homoskedastic; :func:`dmlcore.inference.linear_iv.clr_set`), else {}."""
    if "absorb_weights" not in METHODS[method].cls.capabilities or data.problem != "iv" \
            or len(data.treatment) != 1 or data.image_columns:
        return {}
    try:
        return {"clr": clr_set(data)}
    except DMLCoreError as exc:
        return {"clr": {"error": f"no CLR set: {exc}"}}


def _two_way(method: str, cluster: str) -> str:
    """``cluster`` ("a,b") for a linear IV method; refuse two-way clustering for the others, whose folds,
    debiased effect and bootstrap keep whole the clusters of one column only."""
    if "absorb_weights" not in METHODS[method].cls.capabilities:
        takers = ", ".join(name for name, m in METHODS.items() if "absorb_weights" in m.cls.capabilities)
        raise DMLCoreError(f"Two-way clustering (cluster={cluster!r}) is for the linear IV methods ({takers}); "
                           f"{method} clusters by one column: give one.")
    return cluster


def _linear_only_folds(options: dict, heldout_folds, effect_folds) -> int:
    """0 held-out folds for data with absorbed fixed effects or weights; refuse the refit options that
    would ignore them (the held-out residual predicts without the fixed effects and weights; the
    debiased effect takes neither). The bootstrap refits 2SLS on resampled rows, which honours them."""
    what = " and ".join(f"--{k}" for k in options)
    for name, value in (("heldout_folds", heldout_folds), ("effect_folds", effect_folds)):
        if value:
            raise DMLCoreError(f"{name}={value} is not computed with {what} (its refits would ignore them); leave it "
                               f"out: the linear IV coefficient and its standard error are the effect.")
    return 0


def _debiased(method: str | None, debias: bool) -> bool:
    """Whether a fit of ``method`` computes the debiased effect: asked for, and not a method that
    ignores C on purpose (its effect is never corrected, so refits for it would be wasted)."""
    return debias and not (method in METHODS and "ignores_conditioning" in METHODS[method].cls.capabilities)


def fits_in_run(fit_kwargs: dict, has_truth: bool, method: str | None = None) -> int:
    """How many fits a ``fit_run`` of ``method`` with these keywords makes: the fit, its bootstrap
    refits, the held-out residual's refits (2 by default without a truth) and the debiased effect's
    (shared with the held-out residual's; else 2 by default; none with ``debias=False`` or for a
    method that ignores C) -- what its cost scales with."""
    folds = fit_kwargs.get("heldout_folds")
    folds = (0 if has_truth else HELDOUT_FOLDS) if folds is None else folds
    effect = fit_kwargs.get("effect_folds")
    effect = (folds or EFFECT_FOLDS) if effect is None else effect
    own = int(effect) if effect != folds and _debiased(method, fit_kwargs.get("debias", DEFAULTS.debias)) else 0
    return 1 + int(fit_kwargs.get("bootstrap") or 0) + int(folds) + own


def _stage(callback, stage: str, progress: float) -> None:
    """Tell ``callback`` that the run moved on to ``stage`` (a fit's own last stage says "done")."""
    if callback is not None:
        callback({"type": "stage", "stage": stage, "fold": None, "progress": progress})

def _effect_crossfit(data: CausalData, effect_folds: int | None, score_folds: int):
    """The collector of the refits' f-hat for the debiased effect (its ``wanted`` folds), or None
    when there is no effect to debias, the data has images, or ``effect_folds`` is 0."""
    wanted = (score_folds or EFFECT_FOLDS) if effect_folds is None else check_effect_folds(effect_folds)
    if not wanted or data.image_columns or len(data.table) < 20 * wanted:
        return None
    try:
        return CrossFitted(data, contrast(data), wanted)
    except DMLCoreError:
        return None


def _start_refits(data: CausalData, method: str, s: FitSettings, score_folds: int, own_refits: int):
    """The held-out residual's and the debiased effect's refits started on ``s``' executor beside the fit
    (:func:`dmlcore.runs.heldout_residual.start_refits`; None with one local job: they run after the fit,
    here). The held-out residual's only when :func:`heldout_score` will take them (tabular data, 20 rows a fold)."""
    counts = [own_refits]
    if score_folds and not data.image_columns and len(data.table) >= 20 * score_folds:
        counts.append(score_folds)
    return start_refits(data, method, s, counts, seed=s.seed)


@contextmanager
def _beside(started):
    """The context of a fit with refits running in workers beside it, from the fit until the run has taken every
    refit: this process's BLAS and OpenMP threads limited to the workers' count (one each by default; restored
    after), so that it and its workers share the cores as a study's workers do (OpenBLAS's two threads on busy
    cores wait by spinning: on the shared 2-core machine 36 Gram products of 4,000 x 200 took 4.8-7.5 CPU s with
    two threads and 0.3 s with one; issue 45), then the workers closed, also when the fit fails or is cancelled.
    The numbers do not change with it (tests/test_concurrent_refits.py)."""
    if started is None:
        yield
        return
    try:
        with threadpool_limits(limits=default_threads()):
            yield
    finally:
        started.close()


def _refit_events(callback, start: float, width: float):
    """``callback`` for refits after the fit: progress mapped as :func:`_scaled`, their loss
    events dropped (the run's loss curves are the fit's own)."""
    scaled = _scaled(callback, start, width)
    if scaled is None:
        return None
    return lambda event: None if event.get("type") == "loss" else scaled(event)


def _scaled(callback, start: float, width: float):
    """``callback`` with each event's progress mapped from [0, 1] to [start, start + width]."""
    if callback is None:
        return None
    return lambda event: callback({**event, "progress": start + width * float(event.get("progress", 0.0))})


def _first_stage(data: CausalData, cov_type: str = DEFAULTS.cov_type, cluster: str | None = None) -> dict:
    """The linear first-stage diagnostics of an IV or PCL problem, or {"error": why} when they cannot
    be computed (e.g. blank pixel covariates): the fit itself went fine."""
    if data.image_columns and data.problem == "pcl":
        return {"error": "no proxy diagnostics with an image treatment"}
    try:
        return first_stage(data, nonparametric=False, cov_type=cov_type, cluster=cluster,   # PCL: robust F when asked
                           inference=data.problem == "iv" or cov_type != "unadjusted")
    except DMLCoreError as exc:
        return {"error": str(exc)}
