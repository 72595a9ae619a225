"""DML-CMR (paper Algorithm 1), CE-DML-CMR (Algorithm 2) and the naive two-stage plug-in.

All three share one machinery:

1. split the rows into K folds (one "fold" holding every row when there is no cross-fitting): the
   resampler's ``"crossfit"`` folds (:mod:`dmlcore.stats.resample`);
2. fit the nuisances on each fold's complement (on all rows without cross-fitting): the
   outcome model s_k(c) = E[Y | C] and the conditional distribution of f's modelled inputs;
3. for every row i of fold k, compute the target t_i -- s_k(c_i) for the orthogonal score,
   y_i for the naive score -- and a bank of draws of f's inputs from the fold-k distribution;
4. fit f once on all rows by minimising mean_i (t_i - mean_j f(x_ij))^2
   (:mod:`dmlcore.estimators.second_stage`); with ``f_model="sieve"`` f is linear in a basis
   and ``predict_interval`` gives confidence bands.

Step 4 is the paper's second stage: each row's loss uses only nuisances that never saw that
row, and the rows of all folds are pooled exactly as Algorithm 1 alternates over folds.
Because the nuisance values are computed once, the second stage costs the same with or
without cross-fitting.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dmlcore.stats import resample
from dmlcore.stats.clusters import groups_of
from dmlcore.data.roles import CausalData
from dmlcore.device import resolve_device
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator
from dmlcore.estimators.second_stage import SECOND_STAGES
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators import nuisance_target
from dmlcore.estimators.splines import check_tabular
from dmlcore.learners import (AUTO, CANDIDATES, SelectedOutcome, SelectedSampler, check_learner, make_outcome_learner,
                              learner_name, make_sampler, uses_networks)
from dmlcore.learners.encoding import Encoded, EncodedStage, encode_image_spec, encoder_for, image_spec
from dmlcore.learners.base import check_positive
from dmlcore.learners.select import candidates_for, nuisance_default
from dmlcore.learners.registry import LEARNER_REGISTRY, epochs_param

F_MODEL_FOR = {name: entry.f_model for name, entry in LEARNER_REGISTRY.items()}   # f when f_model is not given
DRAW_BANK = 4  # the bank holds DRAW_BANK * n_draws draws per row


def make_folds(n: int, folds: int, seed: int, groups: np.ndarray | None = None) -> list[np.ndarray]:
    """A random partition of range(n) into ``folds`` sorted index arrays of near-equal size; with
    ``groups`` (the rows' cluster numbers) every cluster's rows in one fold: the resampler's
    ``"crossfit"`` folds (:mod:`dmlcore.stats.resample`)."""
    return resample.folds(n, folds, seed, "crossfit", groups)


def target_problem(s_name, g_name, folds: int, image: bool, arr) -> str | None:
    """Why ``nuisance_choice="target"`` cannot choose DML-CMR's nuisances here, in one line, or None: ``s_name`` /
    ``g_name`` the nuisances as they will be fitted (``"auto"`` or a learner), ``image`` whether C or f's inputs
    hold images, ``arr`` the data's :class:`~dmlcore.data.roles.CMRArrays` (read only when ``image`` is False; None:
    the settings alone are checked, as a study's grid is before its data are drawn)."""
    if not any(isinstance(name, str) and name == AUTO for name in (s_name, g_name)):
        return (f"nuisance_choice='target' chooses among auto's candidates, but the nuisances are named "
                f"(outcome_learner={learner_name(s_name)!r}, sampler={learner_name(g_name)!r}); leave one of them "
                f"'auto' (the default with learner nn or gb), or leave nuisance_choice out.")
    if image:
        return ("nuisance_choice='target' scores the pilot's f-hat by a regression on a spline basis of the "
                "conditioning columns, which cannot take image pixels; leave it out on image data.")
    if folds <= nuisance_target.PILOT:
        return (f"nuisance_choice='target' scores {nuisance_target.PILOT} pilot folds and needs more folds than "
                f"that; got folds={folds}.")
    if arr is None:
        return None
    if not arr.modelled_names:
        return ("nuisance_choice='target' judges pairs of an outcome model and a distribution model, but every "
                "input of f is among the conditioning columns here (no distribution model); leave it out.")
    if arr.conditioning.shape[1] != len(arr.conditioning_names):
        return ("nuisance_choice='target' needs numeric conditioning columns (one array column each); leave it out "
                "for this data.")
    return None


def target_refusal(data: CausalData, *, learner=DEFAULTS.learner, folds: int = DEFAULTS.folds,
                   outcome_learner=DEFAULTS.outcome_learner, sampler=DEFAULTS.sampler,
                   nuisance_params: dict | None = None) -> str | None:
    """Why DML-CMR with these settings cannot take ``nuisance_choice="target"`` on ``data`` (one line, the fit's
    own refusal), or None; asked before any fit by the dashboard's plan."""
    names = list(data.conditioning_columns)
    image = (image_spec(data, names) or image_spec(data, list(data.input_columns))) is not None
    return target_problem(nuisance_default(outcome_learner, learner, nuisance_params),
                          nuisance_default(sampler, learner, nuisance_params), folds, image,
                          None if image else data.cmr())


class _TwoStageCMR(CMREstimator):
    """Shared fit/predict of DML-CMR, CE-DML-CMR and the naive plug-in (subclasses set
    ``cross_fit`` and ``score``; module notes). The parameters, defaults and attributes are documented
    on the public classes, ``DMLCMR``, ``CEDMLCMR`` and ``NaivePlugIn``."""

    cross_fit = True
    score = "orthogonal"
    capabilities = frozenset({"predict_interval", "linear_functional"})
    fitted_attribute = "f_"

    # the defaults are the declared ones (dmlcore.estimators.settings)
    def __init__(self, learner=DEFAULTS.learner, folds: int = DEFAULTS.folds, *,
                 outcome_learner=DEFAULTS.outcome_learner, sampler=DEFAULTS.sampler,
                 f_model: str | None = DEFAULTS.f_model, n_draws: int = DEFAULTS.n_draws,
                 epochs: int | None = DEFAULTS.epochs, nuisance_params: dict | None = None,
                 f_params: dict | None = None, seed: int = DEFAULTS.seed, device: str = DEFAULTS.device,
                 cluster: str | None = None, nuisance_choice: str = DEFAULTS.nuisance_choice):
        self.learner = learner
        self.folds = folds
        self.outcome_learner = outcome_learner
        self.sampler = sampler
        self.f_model = f_model
        self.n_draws = n_draws
        self.epochs = epochs
        self.nuisance_params = nuisance_params
        self.f_params = f_params
        self.seed = seed
        self.device = device
        self.cluster = cluster
        self.nuisance_choice = nuisance_choice

    # ------------------------------------------------------------------ fit
    def _settings(self):
        check_learner(self.learner)
        for what in ("outcome_learner", "sampler"):
            if getattr(self, what) is not None:
                check_learner(getattr(self, what), what)
        if self.outcome_learner is not None and self.score != "orthogonal":
            raise DMLCoreError(f"{type(self).__name__} has no outcome model, so outcome_learner="
                               f"{learner_name(self.outcome_learner)!r} does not apply; leave it out (sampler= sets "
                               f"its distribution model).")
        if nuisance_target.check_choice(self.nuisance_choice) == nuisance_target.TARGET and not self.cross_fit:
            raise DMLCoreError(f"{type(self).__name__} fits its nuisances once on all rows, so nuisance_choice="
                               f"'target' (which scores the pilot folds' second stages) does not apply; leave it out "
                               f"(DMLCMR takes it).")
        if not self.cross_fit and self.folds != DEFAULTS.folds:
            raise DMLCoreError(f"{type(self).__name__} fits its nuisances once on all rows (no cross-fitting), so "
                               f"folds={self.folds!r} does not apply; leave it out (DMLCMR cross-fits over folds).")
        f_model = self.f_model or (F_MODEL_FOR[self.learner] if isinstance(self.learner, str) else "boost")
        if f_model not in SECOND_STAGES:
            raise DMLCoreError(f"Unknown f_model {f_model!r}; choose one of {', '.join(SECOND_STAGES)}.")
        check_positive("n_draws", self.n_draws, integer=True)
        fpar = dict(self.f_params or {})
        if self.epochs is not None:
            check_positive("epochs", self.epochs, integer=True)
            key = {"boost": "max_stages", "nn": "max_epochs"}.get(f_model)
            if key:  # closed-form second stages have no epochs
                fpar.setdefault(key, self.epochs)
        return f_model, fpar

    def _nuisance_params(self, learner) -> dict:
        """``nuisance_params`` belong to the main learner; an overriding learner gets only the epochs
        (named learners only: an object keeps its own settings)."""
        params = dict(self.nuisance_params or {}) if learner is self.learner or learner == self.learner else {}
        key = epochs_param(learner)
        if self.epochs is not None and key:
            params.setdefault(key, self.epochs)
        return params

    def _nuisance(self, role: str, name, data: CausalData, names: list[str], image, device, settings=None):
        """The unfitted outcome model (``role`` "s") or distribution model ("g") for ``name``; ``settings``
        (of an "auto" candidate) under the learner's own ``nuisance_params`` and ``epochs``."""
        if isinstance(name, str) and name == AUTO:
            labels = candidates_for(self.learner, image is not None)
            if self.nuisance_params and not any(CANDIDATES[label][0] == self.learner for label in labels):
                raise DMLCoreError(f"nuisance_params {sorted(self.nuisance_params)} set the {self.learner} nuisances, "
                                   f"but they are 'auto' ({' or '.join(labels)} here), the default; name them "
                                   f"(outcome_learner='{self.learner}', sampler='{self.learner}') to use the settings, "
                                   f"or leave the settings out.")
            parts = {label: self._nuisance(role, CANDIDATES[label][0], data, names, image, device, CANDIDATES[label][1])
                     for label in labels}
            return (SelectedOutcome if role == "s" else SelectedSampler)(parts, self.seed)
        enc = encoder_for(data, names, name)
        make = make_outcome_learner if role == "s" else make_sampler
        params = {**(settings or {}), **self._nuisance_params(name)}
        return Encoded(make(name, params, self.seed, encode_image_spec(image, enc), device), enc)

    def _check_target(self, s_name, g_name, image, arr) -> None:
        """Refuse ``nuisance_choice="target"`` where it has nothing to choose or cannot score, in one line."""
        problem = target_problem(s_name, g_name, self.folds, image is not None, arr)
        if problem:
            raise DMLCoreError(problem)

    def _choose_by_target(self, s_model, g_model, arr, folds, fit_f, monitor) -> None:
        """The pair of pilot nuisances whose second stage has the lowest held-out projected residual
        (:mod:`dmlcore.estimators.nuisance_target`); each "auto" nuisance then fits its part of the pair."""
        own = g_model.own_choice() if hasattr(g_model, "own_choice") else None
        s_opts = nuisance_target.options(s_model, None, "s")
        g_opts = nuisance_target.options(g_model, own, "g")
        excluded = [name for name in arr.conditioning_names if name not in arr.input_names]
        losses = nuisance_target.pair_losses(
            s_opts, g_opts, C=arr.conditioning, y=arr.y, inputs=arr.inputs, assemble=arr.assemble, held=folds,
            fit_f=fit_f, bank=DRAW_BANK * int(self.n_draws), names=list(arr.conditioning_names),
            excluded=excluded, seed=self.seed, should_stop=getattr(monitor, "should_stop", None))
        best = min(losses, key=losses.get)
        scale = float(np.var(arr.y)) or 1.0
        for role, model, label in (("s", s_model, best[0]), ("g", g_model, best[1])):
            if hasattr(model, "finish"):
                chosen = label if getattr(model, "scored_", None) is not None else None
                model.finish(monitor, choice=chosen, criterion=nuisance_target.record(losses, best, role, scale))

    def _fit(self, data: CausalData, monitor) -> None:
        f_model, f_params = self._settings()
        device = resolve_device(self.device)  # a CUDA device torch cannot see is refused before any work
        if f_model == "sieve":  # refused before any nuisance is trained
            check_tabular(data, "f_model 'sieve'", "Use f_model 'nn' (the neural-network learner's own) on image data.")
        if self.cross_fit:
            data.check_folds(self.folds)
        start = time.perf_counter()
        arr = data.cmr()
        n = arr.n
        groups = groups_of(data.table, self.cluster) if self.cross_fit else None
        folds = make_folds(n, self.folds, self.seed, groups) if self.cross_fit else [np.arange(n)]
        train_sets = [np.setdiff1d(np.arange(n), rows) for rows in folds] if self.cross_fit else folds
        image_c = image_spec(data, arr.conditioning_names)
        image_f = image_spec(data, arr.input_names)
        fold_of = np.empty(n, dtype=int)
        for k, rows in enumerate(folds):
            fold_of[rows] = k

        categorical_modelled = [c for c in arr.modelled_names if c in data.categorical]
        if categorical_modelled:
            raise DMLCoreError(f"{type(self).__name__} models the distribution of '{categorical_modelled[0]}' "
                               f"given the conditioning variables as a continuous variable, but it is marked "
                               f"categorical. Use 2SLS, or leave the column numeric (a 0/1 treatment works).")
        s_model = g_model = None
        s_name = nuisance_default(self.outcome_learner, self.learner, self.nuisance_params)   # not set: "auto"
        g_name = nuisance_default(self.sampler, self.learner, self.nuisance_params)          # for nn and gb
        by_target = self.nuisance_choice == nuisance_target.TARGET
        if by_target:
            self._check_target(s_name, g_name, image_c or image_f, arr)
        fit = lambda model: model.fit_pilot if by_target and hasattr(model, "fit_pilot") else model.fit
        if self.score == "orthogonal":
            monitor.stage("outcome model s(c)", start=0.0, end=0.35)
            s_model = self._nuisance("s", s_name, data, arr.conditioning_names, image_c, device)
            fit(s_model)(arr.conditioning, arr.y, train_sets, monitor)
        if arr.modelled_names:
            monitor.stage("conditional distribution of " + ", ".join(arr.modelled_names[:3]),
                          start=0.35, end=0.7)
            g_model = self._nuisance("g", g_name, data, arr.conditioning_names, image_c, device)
            fit(g_model)(arr.conditioning, arr.modelled, train_sets, monitor)
        f_model_stage = SECOND_STAGES[f_model]
        f_enc = encoder_for(data, arr.input_names, f_model)

        def fit_f(rows, targets, draws, sub):   # the run's second stage on ``rows`` (the target's pilot fits)
            f = f_model_stage(f_params, self.n_draws, self.seed, encode_image_spec(image_f, f_enc), device=device)
            extra = dict(outcome=arr.y[rows], names=arr.input_names) if f_model_stage.has_bands else {}
            return (EncodedStage(f, f_enc) if f_enc is not None else f).fit(targets, draws, arr.inputs[rows], sub,
                                                                             **extra)

        if by_target:
            monitor.stage("choosing the nuisances by DML-CMR's target (pilot second stages)", start=0.6, end=0.7)
            self._choose_by_target(s_model, g_model, arr, folds, fit_f, monitor)

        rng = np.random.default_rng([self.seed, 11])
        # a smaller bank when f reads images: their pixels repeat in every draw
        bank = (1 if image_f else DRAW_BANK) * int(self.n_draws) if g_model is not None else 1
        targets = arr.y.copy()
        draws = np.empty((n, bank, arr.inputs.shape[1]), dtype=np.float32)
        for k, rows in enumerate(folds):
            C = arr.conditioning[rows]
            if s_model is not None:
                targets[rows] = s_model.predict(k, C)
            if g_model is not None:
                draws[rows] = arr.assemble(C, g_model.sample(k, C, bank, rng))
            else:
                draws[rows] = arr.inputs[rows][:, None, :]

        monitor.stage("second stage f", start=0.7, end=1.0)
        stage = SECOND_STAGES[f_model]
        extra = dict(outcome=arr.y, names=arr.input_names) if stage.has_bands else {}
        enc = encoder_for(data, arr.input_names, f_model)
        f = stage(f_params, self.n_draws, self.seed, encode_image_spec(image_f, enc), device=device)
        f = (EncodedStage(f, enc) if enc is not None else f).fit(targets, draws, arr.inputs, monitor, **extra)

        per_row = f.score_per_row(targets, draws)
        y_scale = float(np.std(arr.y)) or 1.0
        self.fold_losses_ = []
        for k, rows in enumerate(folds):
            entry = {"fold": k, "rows": int(len(rows)),
                     "second_stage_loss": float(per_row[rows].mean() / y_scale ** 2)}
            for name in ("s", "g"):
                if (name, k) in monitor.histories:
                    entry[name] = monitor.histories[(name, k)]
            self.fold_losses_.append(entry)
        self.second_stage_history_ = monitor.histories.get(("f", None), {})
        self.folds_ = folds
        self.fold_of_ = fold_of
        self.s_model_, self.g_model_, self.f_ = s_model, g_model, f
        self.nuisance_selection_ = {role: model.selection_ for role, model in (("s", s_model), ("g", g_model))
                                    if getattr(model, "selection_", None) is not None}
        self.nuisance_learners_ = {"outcome_learner": learner_name(s_name) if s_model is not None else None,
                                   "sampler": learner_name(g_name) if g_model is not None else None}
        self.targets_, self.draws_ = targets, draws
        self.input_columns_ = list(arr.input_names)
        self.conditioning_columns_ = list(arr.conditioning_names)
        self.n_ = n
        networks = [f_model] + ([s_name] if s_model is not None else []) + ([g_name] if g_model is not None else [])
        self.device_ = str(device) if any(uses_networks(name) for name in networks) else "cpu"
        self.f_model_name_ = f_model
        self.seconds_ = time.perf_counter() - start
        monitor.stage("done", start=1.0)

    def record_fields(self) -> dict:
        return {**super().record_fields(), "folds": len(self.folds_), "f_model": self.f_model_name_,
                "nuisances": self.nuisance_selection_ or {}, "nuisance_learners": self.nuisance_learners_,
                "device": self.device_,
                "second_stage_history": self.second_stage_history_, "notes": list(self.f_.notes_)}

    def to(self, device) -> "_TwoStageCMR":
        """Move the fitted networks and their data to ``device`` (resolved like ``device``), e.g. to
        "cpu" before the fit travels to a process without CUDA; returns self."""
        self._check_fitted()
        device = resolve_device(device)
        movable = [part for part in (self.s_model_, self.g_model_, self.f_) if hasattr(part, "to")]
        for part in movable:
            part.to(device)
        if movable:
            self.device_ = str(device)
        return self

    # -------------------------------------------------------------- predict
    def predict(self, X) -> np.ndarray:
        """f-hat at the rows of X (a DataFrame with the input columns, or an array in that order)."""
        X = self._inputs(X)
        return self.f_.predict(X)

    def predict_interval(self, X, level: float = 0.95, *, variance: str | None = None, groups=None):
        """Pointwise ``level`` confidence band of f at the rows of X, as (lower, upper).

        Only for second stages with bands (``f_model="sieve"``: see
        :class:`~dmlcore.estimators.second_stage.SieveF` for ``variance`` and ``groups``).
        """
        X = self._inputs(X)
        if not self.has_bands:
            raise DMLCoreError(f"f_model {self.f_model_name_!r} gives no confidence bands; refit with "
                               f"f_model='sieve', or use repeated cross-fitting (RepeatedCrossFit, "
                               f"--reps-crossfit) for a band of the split-to-split spread.")
        return self.f_.predict_interval(X, level, variance, groups)

    @property
    def has_bands(self) -> bool:
        """Whether ``predict_interval`` works: the second stage gives confidence bands."""
        self._check_fitted()
        return self.f_.has_bands

    def supports(self, capability: str) -> bool:
        """Bands and the effect's closed-form interval come with a fitted sieve second stage only."""
        return super().supports(capability) and hasattr(self, "f_") and self.f_.has_bands

    def effect_functional(self, plan) -> tuple[float, float]:
        """(estimate, standard error) of the effect ``plan`` from the sieve second stage's sandwich."""
        self._check_fitted()
        x = plan.points[self.input_columns_].to_numpy(dtype=float)
        return self.f_.linear_functional(x, plan.weights)

    def interval_how(self, z: float) -> str:
        return (f"delta method on the spline second stage: estimate -/+ {z:.2f} x sqrt(d'Vd), V the sandwich "
                f"variance '{self.f_.variance_}' (knots, penalty and nuisances held fixed)")

    def _inputs(self, X) -> np.ndarray:
        """X as a float array of the input columns, checked. float32 (image frames) stays float32,
        half the bytes to copy and to send to a GPU: every second stage reads it exactly."""
        self._check_fitted()
        if isinstance(X, pd.DataFrame):
            missing = [c for c in self.input_columns_ if c not in X.columns]
            if missing:
                raise DMLCoreError(f"predict needs the columns {', '.join(missing)}.")
            X = X[self.input_columns_]
        try:
            X = np.asarray(X)
            X = X if X.dtype == np.float32 else np.asarray(X, dtype=float)
        except (TypeError, ValueError):
            raise DMLCoreError(f"predict needs numbers in the columns {', '.join(self.input_columns_)}.") from None
        if not np.isfinite(X).all():
            raise DMLCoreError("predict got missing (NaN) or infinite values; remove or impute them first.")
        if X.ndim != 2 or X.shape[1] != len(self.input_columns_):
            raise DMLCoreError(f"predict expects {len(self.input_columns_)} columns "
                               f"({', '.join(self.input_columns_)}); got shape {X.shape}.")
        return X


class DMLCMR(_TwoStageCMR):
    """DML-CMR: the Neyman-orthogonal score with K-fold cross-fitting (the paper's Algorithm 1).

    Fits the outcome model s(c) = E[Y | C] and the distribution of f's modelled inputs given C on
    the K - 1 training folds of each fold, then f minimises the orthogonal loss
    mean_i (s_k(c_i) - mean_j f(x_ij))^2 over the draws x_ij of fold k's distribution model.

    Parameters
    ----------
    learner : str or object, default "nn"
        Both nuisances: ``"nn"`` (an MLP and a mixture density network), ``"rf"``, ``"gb"``,
        ``"linear"`` (scikit-learn models; the distribution model is the conditional mean plus
        resampled out-of-sample residuals, ``dmlcore.learners.tabular``), or any scikit-learn
        regressor, e.g. ``HistGradientBoostingRegressor()``: the outcome model is that regressor and
        the distribution model its conditional mean plus residuals, both cloned per fold. With a
        regressor object f is fitted as with the tree learners: by gradient boosting of the score
        (``f_model="boost"``) unless ``f_model`` says otherwise.
    folds : int, default 10
        K of the K-fold cross-fitting: the nuisances of fold k are fitted on the other K - 1 folds.
        Each fold needs at least 10 rows (``CausalData.check_folds``).
    outcome_learner : str or object, default None ("auto" with learner "nn" or "gb")
        The outcome model s(c) = E[Y | C]. None: ``"auto"`` when ``learner`` is ``"nn"`` or ``"gb"``,
        else ``learner``'s own. The default before ``auto`` is kept by naming it
        (``outcome_learner="nn"``). Else a learner name, a regressor, a
        ``dmlcore.learners.base.OutcomeLearner`` (the per-fold interface), or ``"auto"``: the
        candidate with the lowest held-out squared error on the first two folds' rows (``gb``,
        ``gb-small``, and ``nn`` too with ``learner="nn"``), fitted for every fold.
    sampler : str or object, default None ("auto" with learner "nn" or "gb")
        The distribution model of f's modelled inputs given C. None: ``"auto"`` when ``learner`` is
        ``"nn"`` or ``"gb"``, else ``learner``'s own (rf, linear, a regressor: auto does not choose
        among them, nor nn when ``nuisance_params`` set it). The default before ``auto``, the learner's
        own, is kept by naming it (``sampler="nn"``). Else a learner name, a regressor, a
        ``dmlcore.learners.base.ConditionalSampler`` (the per-fold interface, e.g. an oracle that knows
        the true law), or ``"auto"``: the candidate (``gb``, ``gb-small`` on tabular inputs, and ``nn``
        too with ``learner="nn"``; ``nn`` alone on image data) with the lowest held-out energy score,
        fitted for every fold (``dmlcore.learners.select``); the choice and the losses are in
        ``nuisance_selection_``.
    f_model : {None, "nn", "boost", "linear", "sieve"}
        The second stage (``dmlcore.estimators.second_stage``). None: the learner's own (``"nn"`` for
        nn, ``"linear"`` for linear, ``"boost"`` otherwise). ``"sieve"`` gives ``predict_interval`` (a
        95 % confidence band) and a closed-form interval for the effect.
    n_draws : int, default 8
        Draws of f's inputs averaged per row in the second stage's loss.
    epochs : int, default None
        Maximum epochs (boosting stages) of the named nn / gb nuisances and of an nn or boost f;
        None: each learner's own default.
    nuisance_params : dict, default None
        Settings of the named learner (its ``DEFAULTS``).
    f_params : dict, default None
        Settings of the second stage.
    seed : int, default 0
        Seeds the fold split, the learners and the draws: the same seed gives the same numbers.
    device : str, default "auto"
        Where the torch models (nn nuisances, nn f) and their data live: ``"auto"`` (CUDA when torch
        sees one, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. A CUDA device torch cannot
        see is refused before any work.
    cluster : str, default None
        A column of the table whose values group the rows: the K folds keep each cluster whole.
    nuisance_choice : {"own", "target"}, default "own"
        How the ``"auto"`` nuisances are chosen. ``"own"``: each by its own held-out loss (above).
        ``"target"`` (a pilot, not the default): the pilot's candidate pairs (the outcome model's candidates
        times the network and the energy score's choice for the distribution model) judged by the
        held-out projected residual of a second stage fitted with each pair on one pilot fold's rows
        (``dmlcore.estimators.nuisance_target``); needs K > 2, tabular data and at least one ``"auto"``
        nuisance, and is recorded in ``nuisance_selection_`` (``criterion``, ``target_loss``,
        ``target_pair``).

    Attributes
    ----------
    f_ : object
        The fitted second stage.
    s_model_, g_model_ : object
        The fitted outcome and distribution models (None when unused).
    nuisance_selection_ : dict
        ``{"s": ..., "g": ...}``: the selection record of each ``"auto"`` nuisance.
    nuisance_learners_ : dict
        ``{"outcome_learner": ..., "sampler": ...}``: the nuisances' learners as used (None: no such model).
    fold_losses_ : list of dict
        Per fold: the rows, the second-stage loss and the nuisances' loss histories.
    device_ : str
        The device the fit's networks used (``"cpu"`` when it had none).
    second_stage_history_, folds_, fold_of_, targets_, draws_ : object
        As named.
    input_columns_, conditioning_columns_, n_, f_model_name_, seconds_ : object
        As named.

    Examples
    --------
    >>> from dmlcore import DMLCMR, simulate_demand_iv
    >>> sim = simulate_demand_iv(n=2000, seed=0)
    >>> est = DMLCMR(learner="gb", folds=5, seed=0).fit(sim.data)
    >>> f_hat = est.predict(sim.data.table[sim.data.input_columns])
    >>> sim.truth.score(est)          # {'mse': ..., 'mse_fresh': ...}
    >>> est.nuisance_selection_["s"]  # what "auto" chose for the outcome model, and the losses
    """

    cross_fit, score = True, "orthogonal"


class CEDMLCMR(_TwoStageCMR):
    """CE-DML-CMR: the orthogonal score with the nuisances fitted once on all rows (the paper's
    Algorithm 2; cheaper than DML-CMR, no cross-fitting).

    Parameters
    ----------
    learner : str or object, default "nn"
        Both nuisances: ``"nn"`` (an MLP and a mixture density network), ``"rf"``, ``"gb"``,
        ``"linear"`` (scikit-learn models; the distribution model is the conditional mean plus
        resampled out-of-sample residuals, ``dmlcore.learners.tabular``), or any scikit-learn
        regressor, e.g. ``HistGradientBoostingRegressor()``: the outcome model is that regressor and
        the distribution model its conditional mean plus residuals, both cloned per fold. With a
        regressor object f is fitted as with the tree learners: by gradient boosting of the score
        (``f_model="boost"``) unless ``f_model`` says otherwise.
    folds : int, default 10
        Not used: this method fits its nuisances once on all rows (no cross-fitting). A value other than
        the default is refused with a ``DMLCoreError`` (by the class, ``fit_run``, the command line and
        study grids).
    outcome_learner : str or object, default None ("auto" with learner "nn" or "gb")
        The outcome model s(c) = E[Y | C]. None: ``"auto"`` when ``learner`` is ``"nn"`` or ``"gb"``,
        else ``learner``'s own. The default before ``auto`` is kept by naming it
        (``outcome_learner="nn"``). Else a learner name, a regressor, a
        ``dmlcore.learners.base.OutcomeLearner`` (the per-fold interface), or ``"auto"``: the
        candidate with the lowest held-out squared error (with one training set the candidates are
        scored on five inner folds of it, and the winner is fitted on all rows).
    sampler : str or object, default None ("auto" with learner "nn" or "gb")
        The distribution model of f's modelled inputs given C. None: ``"auto"`` when ``learner`` is
        ``"nn"`` or ``"gb"``, else ``learner``'s own (rf, linear, a regressor: auto does not choose
        among them, nor nn when ``nuisance_params`` set it). The default before ``auto``, the learner's
        own, is kept by naming it (``sampler="nn"``). Else a learner name, a regressor, a
        ``dmlcore.learners.base.ConditionalSampler`` (the per-fold interface, e.g. an oracle that knows
        the true law), or ``"auto"``: the candidate (``gb``, ``gb-small`` on tabular inputs, and ``nn``
        too with ``learner="nn"``; ``nn`` alone on image data) with the lowest held-out energy score,
        fitted for every fold (``dmlcore.learners.select``); the choice and the losses are in
        ``nuisance_selection_``.
    f_model : {None, "nn", "boost", "linear", "sieve"}
        The second stage (``dmlcore.estimators.second_stage``). None: the learner's own (``"nn"`` for
        nn, ``"linear"`` for linear, ``"boost"`` otherwise). ``"sieve"`` gives ``predict_interval`` (a
        95 % confidence band) and a closed-form interval for the effect.
    n_draws : int, default 8
        Draws of f's inputs averaged per row in the second stage's loss.
    epochs : int, default None
        Maximum epochs (boosting stages) of the named nn / gb nuisances and of an nn or boost f;
        None: each learner's own default.
    nuisance_params : dict, default None
        Settings of the named learner (its ``DEFAULTS``).
    f_params : dict, default None
        Settings of the second stage.
    seed : int, default 0
        Seeds the fold split, the learners and the draws: the same seed gives the same numbers.
    device : str, default "auto"
        Where the torch models (nn nuisances, nn f) and their data live: ``"auto"`` (CUDA when torch
        sees one, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. A CUDA device torch cannot
        see is refused before any work.
    cluster : str, default None
        A column of the table whose values group the rows. This method splits no rows, so its fit does
        not use it (DML-CMR keeps each cluster in one fold); a run's clustered intervals follow
        ``fit_run``'s ``cov_type`` and ``cluster``.
    nuisance_choice : {"own"}, default "own"
        Only "own" (the default): the target choice scores DML-CMR's pilot folds, and this method has none;
        "target" is refused with a ``DMLCoreError``.

    Attributes
    ----------
    f_ : object
        The fitted second stage.
    s_model_, g_model_ : object
        The fitted outcome and distribution models (None when unused).
    nuisance_selection_ : dict
        ``{"s": ..., "g": ...}``: the selection record of each ``"auto"`` nuisance.
    nuisance_learners_ : dict
        ``{"outcome_learner": ..., "sampler": ...}``: the nuisances' learners as used (None: no such model).
    fold_losses_ : list of dict
        Per fold: the rows, the second-stage loss and the nuisances' loss histories.
    device_ : str
        The device the fit's networks used (``"cpu"`` when it had none).
    second_stage_history_, folds_, fold_of_, targets_, draws_ : object
        As named.
    input_columns_, conditioning_columns_, n_, f_model_name_, seconds_ : object
        As named.

    Examples
    --------
    >>> from dmlcore import CEDMLCMR, simulate_demand_iv
    >>> sim = simulate_demand_iv(n=2000, seed=0)
    >>> est = CEDMLCMR(learner="gb", seed=0).fit(sim.data)
    >>> sim.truth.score(est)          # {'mse': ..., 'mse_fresh': ...}
    """

    cross_fit, score = False, "orthogonal"


class NaivePlugIn(_TwoStageCMR):
    """The naive two-stage plug-in (DeepIV-style): f minimises mean_i (y_i - mean_j f(x_ij))^2, the
    observed outcome in place of the orthogonal score's s(c); biased when the first stage is off.

    Parameters
    ----------
    learner : str or object, default "nn"
        The distribution model (this method has no outcome model): ``"nn"`` (an MLP and a mixture
        density network), ``"rf"``, ``"gb"``,
        ``"linear"`` (scikit-learn models; the distribution model is the conditional mean plus
        resampled out-of-sample residuals, ``dmlcore.learners.tabular``), or any scikit-learn
        regressor, e.g. ``HistGradientBoostingRegressor()``: the outcome model is that regressor and
        the distribution model its conditional mean plus residuals, both cloned per fold. With a
        regressor object f is fitted as with the tree learners: by gradient boosting of the score
        (``f_model="boost"``) unless ``f_model`` says otherwise.
    folds : int, default 10
        Not used: this method fits its nuisances once on all rows (no cross-fitting). A value other than
        the default is refused with a ``DMLCoreError`` (by the class, ``fit_run``, the command line and
        study grids).
    outcome_learner : None, default None
        Must be left out: the naive score uses the observed outcome, so there is no outcome model, and
        a value is refused with a ``DMLCoreError`` (``sampler`` sets the distribution model).
    sampler : str or object, default None ("auto" with learner "nn" or "gb")
        The distribution model of f's modelled inputs given C. None: ``"auto"`` when ``learner`` is
        ``"nn"`` or ``"gb"``, else ``learner``'s own (rf, linear, a regressor: auto does not choose
        among them, nor nn when ``nuisance_params`` set it). The default before ``auto``, the learner's
        own, is kept by naming it (``sampler="nn"``). Else a learner name, a regressor, a
        ``dmlcore.learners.base.ConditionalSampler`` (the per-fold interface, e.g. an oracle that knows
        the true law), or ``"auto"``: the candidate (``gb``, ``gb-small`` on tabular inputs, and ``nn``
        too with ``learner="nn"``; ``nn`` alone on image data) with the lowest held-out energy score,
        fitted for every fold (``dmlcore.learners.select``); the choice and the losses are in
        ``nuisance_selection_``.
    f_model : {None, "nn", "boost", "linear", "sieve"}
        The second stage (``dmlcore.estimators.second_stage``). None: the learner's own (``"nn"`` for
        nn, ``"linear"`` for linear, ``"boost"`` otherwise). ``"sieve"`` gives ``predict_interval`` (a
        95 % confidence band) and a closed-form interval for the effect.
    n_draws : int, default 8
        Draws of f's inputs averaged per row in the second stage's loss.
    epochs : int, default None
        Maximum epochs (boosting stages) of the named nn / gb nuisances and of an nn or boost f;
        None: each learner's own default.
    nuisance_params : dict, default None
        Settings of the named learner (its ``DEFAULTS``).
    f_params : dict, default None
        Settings of the second stage.
    seed : int, default 0
        Seeds the fold split, the learners and the draws: the same seed gives the same numbers.
    device : str, default "auto"
        Where the torch models (nn nuisances, nn f) and their data live: ``"auto"`` (CUDA when torch
        sees one, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. A CUDA device torch cannot
        see is refused before any work.
    cluster : str, default None
        A column of the table whose values group the rows. This method splits no rows, so its fit does
        not use it (DML-CMR keeps each cluster in one fold); a run's clustered intervals follow
        ``fit_run``'s ``cov_type`` and ``cluster``.
    nuisance_choice : {"own"}, default "own"
        Only "own" (the default): the target choice scores DML-CMR's pilot folds, and this method has none;
        "target" is refused with a ``DMLCoreError``.

    Attributes
    ----------
    f_ : object
        The fitted second stage.
    s_model_, g_model_ : object
        The fitted outcome and distribution models (None when unused).
    nuisance_selection_ : dict
        ``{"s": ..., "g": ...}``: the selection record of each ``"auto"`` nuisance.
    nuisance_learners_ : dict
        ``{"outcome_learner": ..., "sampler": ...}``: the nuisances' learners as used (None: no such model).
    fold_losses_ : list of dict
        Per fold: the rows, the second-stage loss and the nuisances' loss histories.
    device_ : str
        The device the fit's networks used (``"cpu"`` when it had none).
    second_stage_history_, folds_, fold_of_, targets_, draws_ : object
        As named.
    input_columns_, conditioning_columns_, n_, f_model_name_, seconds_ : object
        As named.

    Examples
    --------
    >>> from dmlcore import NaivePlugIn, simulate_demand_iv
    >>> sim = simulate_demand_iv(n=2000, seed=0)
    >>> est = NaivePlugIn(learner="gb", seed=0).fit(sim.data)
    >>> sim.truth.score(est)          # {'mse': ..., 'mse_fresh': ...}
    """

    cross_fit, score = False, "naive"
