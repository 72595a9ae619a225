"""Nuisances chosen by their cross-fitted held-out loss: ``outcome_learner="auto"`` / ``sampler="auto"``.

Each candidate learner (gradient boosting with its defaults and ``gb-small``, boosting with smaller
trees at half the rate, on tabular inputs, and the network too when it is the run's learner; the network
on images: CANDIDATES, :func:`candidates_for`) fits fold models on training sets it is given. Fold model
k of a cross-fitted estimator never saw the rows of fold k (the complement of its training set), so each
candidate has a held-out loss on those rows that needs no truth:

* outcome model: the squared error (y - s_k(c))^2;
* distribution model: the energy score of DRAWS draws from fold model k at the row's observed
  inputs x (each column divided by its sd over all rows), mean_j ||X_j - x|| - mean_{j != j'}
  ||X_j - X_j'|| / 2: a proper scoring rule, lowest in expectation for the true conditional law,
  that compares a mixture density network with a mean-plus-residuals sampler on equal terms.

Only the first PILOT fold models of each candidate are fitted to be scored (the held-out rows of those
folds), and every fold model then uses the candidate with the lowest loss over those rows: its fold
models are fitted for every fold, in one call as if there had been no choice (a tabular candidate keeps its
PILOT scored fold models, which are the ones that call would fit, and fits the other K - PILOT: the same
numbers, 2 of 10 fits fewer; :func:`dmlcore.learners.tabular.same_leading_sets`), so a run whose choice is
the one the rule before 2026-11-27 evening made (every candidate fitted and scored on every fold, fold
model k given the lowest loss over the *other* folds' rows; the coverage studies' and benchmarks' rows
were made so) gives the same nuisances, at PILOT fold fits per losing candidate instead of K. The choice
of a pilot fold's model is thereby scored partly on that fold's own rows, and every fold's choice
depends on outcomes its models trained on: a choice among two or three candidates. Giving each pilot
fold the choice of the other pilot folds' rows instead (one fold's rows with PILOT = 2) gave single folds
a candidate that scoring every fold ranked lower (docs/benchmarks.md, "The default fit's time",
bench/pilot_selection.py: how often each rule makes the every-fold rule's choice). With one candidate,
or no more folds than PILOT, every fold model is fitted once, scored, and fold model k given the lowest
loss over the other folds' rows. With one training set (CE-DML-CMR, the naive plug-in: no held-out
rows) the candidates are fitted on all INNER inner folds of it for their losses, and the one with the
lowest pooled loss is then fitted on the whole set: for a while on 2026-11-27 two of the inner folds
were scored, which changed the choice of 4 of 20 seeds at IV strength 0.4 and made CE-DML-CMR's and the
naive plug-in's error higher on all four (docs/benchmarks.md), for a method whose fit is not the slow one.

``selection_`` records the candidates' held-out losses (per row scored), the choice per fold, what the
loss is, how many folds were scored (``scored_folds``) and how many rows (``rows_scored``); the run
record carries it (``nuisances``). Why: with a noisy outcome the network's early stopping halts the
outcome model near its mean (shrunk), and a shrunk s-hat shrinks f-hat (docs/error-budget.md); the
held-out loss sees this without knowing the truth.

``fit`` is ``fit_pilot`` (the scored fits and their own losses; ``scored_`` holds each candidate's pilot fold
models) then ``finish`` (the choice, fitted on every training set). DML-CMR's ``nuisance_choice="target"``
(:mod:`dmlcore.estimators.nuisance_target`) calls the two halves itself and hands ``finish`` the candidate of
the pair its criterion chose; the record then also holds ``criterion``, ``target_loss`` and ``target_pair``.
"""

from __future__ import annotations

import copy

import numpy as np

from dmlcore.learners.base import ConditionalSampler, OutcomeLearner
from dmlcore.learners.registry import is_network
from dmlcore.learners.tabular import same_leading_sets
from dmlcore.progress import Monitor
from dmlcore.stats import resample

AUTO = "auto"
# the candidates of "auto": name -> (learner, settings that replace the learner's defaults). gb-small was
# added after seeds 100-103 of demand-iv (docs/error-budget.md): its held-out loss was the lowest there.
CANDIDATES = {"nn": ("nn", {}), "gb": ("gb", {}),
              "gb-small": ("gb", {"max_leaf_nodes": 7, "learning_rate": 0.05, "max_iter": 1000})}
# which of them auto fits. On demand-iv's tabular inputs the network was never the choice of either nuisance in
# the measured selections (bench/results/nuisance-benchmark-demand-iv*.csv, docs/benchmarks.md) and costs
# more than the two boosters together, so with the boosters as the learner it is not fitted;
# boosting on pixels is no candidate, so on image data the network is the only one (fitted once).
TABULAR_CANDIDATES = ("gb", "gb-small")
IMAGE_CANDIDATES = ("nn",)
# ... except with the network as the learner: the network is a candidate too. On demand-pcl both nuisances'
# held-out losses chose it, and without it the boosters' fits had several times the network's MSE
# (docs/benchmarks.md, "The defaults re-measured"): what won on one design is no rule for another.
NETWORK_CANDIDATES = ("nn", *TABULAR_CANDIDATES)


def candidates_for(learner, image: bool) -> tuple[str, ...]:
    """The candidates ``auto`` fits for a nuisance of a run whose learner is ``learner``: the network alone
    on images, the network and the boosters with the network as the learner, else the boosters."""
    if image:
        return IMAGE_CANDIDATES
    return NETWORK_CANDIDATES if is_network(learner) else TABULAR_CANDIDATES


# the learners whose nuisances are "auto" by default (outcome_learner / sampler not set): those auto chooses
# among. rf, linear and a regressor object are not candidates, so naming one of them keeps it for the nuisances.
AUTO_BY_DEFAULT = ("nn", "gb")
INNER = 5           # folds of the inner cross-fit when there is one training set
PILOT = 2           # fold models of each candidate fitted to be scored (the rest only for the chosen one)
DRAWS = 16          # draws per row for the energy score
FINAL_STAGE = "the choice, {}, on every fold"   # the progress stage of the chosen candidate's fit after the pilot


def nuisance_default(value, learner, settings=None):
    """A nuisance's learner: ``value`` when set, else the default: ``"auto"`` when ``learner`` is one auto
    chooses among (AUTO_BY_DEFAULT), the learner itself otherwise, and also when ``settings`` (the learner's
    ``nuisance_params``) are given for the network, so that they act rather than sit on a candidate auto may
    not choose (the boosters' settings reach both booster candidates).
    Naming the learner (``outcome_learner="nn"``) keeps the nuisance that learner's alone."""
    if value is not None:
        return value
    if not (isinstance(learner, str) and learner in AUTO_BY_DEFAULT):
        return learner
    if settings and all(CANDIDATES[label][0] != learner for label in TABULAR_CANDIDATES):
        return learner
    return AUTO


def held_out_sets(n: int, train_sets: list[np.ndarray]) -> list[np.ndarray] | None:
    """The rows each fold model never saw, when they partition the rows (K-fold); else None."""
    held = [np.setdiff1d(np.arange(n), rows) for rows in train_sets]
    if len(held) < 2 or any(len(h) == 0 for h in held) or sum(len(h) for h in held) != n:
        return None
    return held


def inner_folds(rows: np.ndarray, folds: int, seed: int) -> list[np.ndarray]:
    """The sorted ``rows`` of each of ``folds`` inner folds of one training set: the resampler's
    ``"selection"`` folds (:mod:`dmlcore.stats.resample`) of its positions."""
    rows = np.asarray(rows)
    return [np.sort(rows[part]) for part in resample.folds(len(rows), folds, seed, "selection")]


def energy_score(draws: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per row, the energy score of draws (rows, m, d) at the observations x (rows, d); lower is better."""
    near = np.linalg.norm(draws - x[:, None, :], axis=-1).mean(1)
    m = draws.shape[1]
    spread = np.linalg.norm(draws[:, :, None, :] - draws[:, None, :, :], axis=-1).sum((1, 2)) / (m * (m - 1))
    return near - 0.5 * spread


class _Selection:
    """Fits the candidates, scores them on held-out rows and keeps the choice per fold model."""

    role = ""
    loss_short = ""     # the loss in a few words (:func:`describe`)
    loss_name = ""

    def __init__(self, candidates: dict, seed: int = resample.SEED, pilot: int | None = PILOT):
        self.candidates = candidates
        self.seed = seed
        self.pilot = pilot     # K-fold: fold models scored; None: every one (the rule before; bench/pilot_selection.py)

    @property
    def name(self) -> str:
        return "auto (" + " or ".join(self.candidates) + ")"

    def __repr__(self) -> str:       # a run record's config names the object by it
        return f"{type(self).__name__}(candidates={list(self.candidates)})"

    def _losses(self, learner, C, target, held, k, scale, rng) -> np.ndarray:
        raise NotImplementedError

    def _fit_candidates(self, C, target, train_sets, monitor, unfitted, span, given=None, stage="candidate {}"):
        """Fit each of ``unfitted`` on ``train_sets``, each with a monitor of its own; ``given`` ({name: (its
        pilot fit, the pilot's training sets, the pilot's monitor)}) lends a candidate that ``reuses_folds``
        the pilot's fold models where the training sets are the same (the first PILOT of K folds), with their
        loss histories: the same fold models and losses as fitting them again. ``stage`` names each candidate's
        progress stage (``{}``: its name)."""
        fitted, sub = {}, {}
        lo, hi = span
        for i, (name, learner) in enumerate(unfitted.items()):
            if hasattr(monitor, "stage"):
                monitor.stage(f"{self.role}: {stage.format(name)}", start=lo + (hi - lo) * i / len(unfitted),
                              end=lo + (hi - lo) * (i + 1) / len(unfitted))
            sub[name] = Monitor(should_stop=getattr(monitor, "should_stop", None))
            pilot, sets, seen = (given or {}).get(name, (None, (), None))
            count = same_leading_sets(sets, train_sets) if getattr(learner, "reuses_folds", False) else 0
            if count:
                for (model, fold), history in seen.histories.items():   # the taken fold models' losses
                    if fold is not None and fold < count:
                        sub[name].histories[(model, fold)] = copy.deepcopy(history)
                fitted[name] = learner.fit(C, target, train_sets, sub[name], given=(pilot, count))
            else:
                fitted[name] = learner.fit(C, target, train_sets, sub[name])
        return fitted, sub

    def fit(self, C, target, train_sets, monitor):
        """Fit the candidates, choose by their own held-out loss and fit the choice on every training set."""
        return self.fit_pilot(C, target, train_sets, monitor).finish(monitor)

    def fit_pilot(self, C, target, train_sets, monitor):
        """The first part of :meth:`fit`: the scored fits and their held-out losses (``scored_``: each
        candidate's fitted pilot fold models, when they are apart from the kept ones); :meth:`finish` then
        chooses. A caller that judges the candidates otherwise (DML-CMR's target criterion,
        :mod:`dmlcore.estimators.nuisance_target`) passes its choice to :meth:`finish`."""
        n = len(C)
        scale = np.std(target.reshape(n, -1), axis=0)
        scale = np.where(scale > 1e-12, scale, 1.0)
        rng = np.random.default_rng([self.seed, 43])
        held = held_out_sets(n, train_sets)
        names = list(self.candidates)
        lo, hi = getattr(monitor, "span", (0.0, 1.0))
        score = lambda fitted, parts: np.array([[self._losses(fitted[name], C, target, part, j, scale, rng).sum()
                                                 for name in names] for j, part in enumerate(parts)])
        # with one candidate, or K folds no more than the pilot, every fold model of every candidate is the
        # nuisance's anyway: they are fitted once and scored where there are held-out rows; otherwise the
        # scored fits (the pilot's folds, or every inner fold of one training set) are apart from the kept ones
        pilot = held is not None and self.pilot is not None and len(train_sets) > self.pilot
        apart = len(names) > 1 and (held is None or pilot)
        chosen = sub = scored = None
        mid = hi
        if not apart:
            chosen, sub = self._fit_candidates(C, target, train_sets, monitor, self.candidates, (lo, hi))
            scored_rows = held or []
            per_fold = score(chosen, held) if held is not None else None
        else:
            if held is None:   # one training set: its INNER inner folds are scored
                rows = train_sets[0]
                scored_rows = inner_folds(rows, INNER, self.seed)
                scored_sets = [np.setdiff1d(rows, part) for part in scored_rows]
            else:
                scored_sets, scored_rows = train_sets[:self.pilot], held[:self.pilot]
            share = len(scored_sets) * len(names)
            mid = lo + (hi - lo) * share / (share + len(train_sets))
            scored, scored_sub = self._fit_candidates(C, target, scored_sets, monitor,
                                                      {k: copy.deepcopy(v) for k, v in self.candidates.items()},
                                                      (lo, mid))
            per_fold = score(scored, scored_rows)
            # the chosen candidate's pilot fold models are fold models 0..PILOT-1 of its fit on every fold
            given = {name: (scored[name], scored_sets, scored_sub[name]) for name in names} if pilot else None
        self.scored_ = scored
        self._state = dict(C=C, target=target, train_sets=train_sets, held=held, names=names, pilot=pilot,
                           apart=apart, chosen=chosen, sub=sub, per_fold=per_fold, scored_rows=scored_rows,
                           span=(mid, hi), given=given if apart else None)
        return self

    def own_choice(self) -> str | None:
        """The candidate with the lowest held-out loss over the pilot's scored rows (None: nothing scored)."""
        per_fold, names = self._state["per_fold"], self._state["names"]
        return None if per_fold is None else names[int(np.argmin(per_fold.sum(0)))]

    def finish(self, monitor, choice: str | None = None, criterion: dict | None = None):
        """Choose (``choice``, a candidate's name, else by the candidates' own held-out loss) and fit the
        choice on every training set; ``criterion`` (what judged the choice, when not the own loss) goes into
        ``selection_``."""
        st = self._state
        C, target, train_sets, held, names = st["C"], st["target"], st["train_sets"], st["held"], st["names"]
        per_fold, pilot, apart, chosen, sub = st["per_fold"], st["pilot"], st["apart"], st["chosen"], st["sub"]
        if choice is not None:
            if choice not in names:
                raise ValueError(f"choice {choice!r} is not a candidate ({', '.join(names)})")
            choices = [choice] * len(train_sets)
        elif per_fold is None:
            choices = names * len(train_sets)
        elif held is None or pilot:   # every fold model: the lowest loss over the scored rows
            choices = [names[int(np.argmin(per_fold.sum(0)))]] * len(train_sets)
        else:   # every fold scored: fold model k the lowest loss over the other folds' rows
            total = per_fold.sum(0)
            choices = [names[int(np.argmin(total - per_fold[k]))] for k in range(len(train_sets))]
        if apart:   # the chosen candidates' fold models, every fold in one call
            wanted = {name: self.candidates[name] for name in names if name in choices}
            chosen, sub = self._fit_candidates(C, target, train_sets, monitor, wanted, st["span"], st["given"],
                                               FINAL_STAGE)
        self.fitted_ = {name: chosen[name] for name in set(choices)}   # the others are not kept
        self.choices_ = choices
        for k, name in enumerate(choices):     # the chosen fold model's loss history is the nuisance's,
            for (model, fold), history in sub[name].histories.items():   # replayed so the stream shows it too
                if fold == k and hasattr(monitor, "loss"):
                    for epoch, train, val in zip(history["epoch"], history["train"], history["val"]):
                        monitor.loss(model, fold, epoch, train, val)
        scored_rows = st["scored_rows"]
        rows_scored = sum(len(part) for part in scored_rows)
        losses = per_fold.sum(0) / rows_scored if per_fold is not None else [None] * len(names)
        self.selection_ = {
            "candidates": names,
            "heldout_loss": {name: None if v is None else float(v) for name, v in zip(names, losses)},
            "choice": max(set(choices), key=choices.count),
            "choice_per_fold": choices,
            "loss": self.loss_name,
            "inner_folds": INNER if held is None and per_fold is not None else None,
            "scored_folds": len(per_fold) if per_fold is not None else None,
            "rows_scored": rows_scored if per_fold is not None else None,
        }
        if criterion is not None:     # the choice was judged by another criterion (recorded only then)
            self.selection_.update(criterion)
        self.scored_ = None
        del self._state
        return self

    def to(self, device):
        """Move the kept candidates' networks and their data to ``device`` (boosters stay as they are)."""
        for model in self.fitted_.values():
            if hasattr(model, "to"):
                model.to(device)
        return self


class SelectedOutcome(_Selection, OutcomeLearner):
    """s(c) by the candidate with the lowest cross-fitted held-out squared error (module notes)."""

    role = "outcome model s(c)"
    loss_short = "mean squared error"
    loss_name = ("held-out mean squared error of s-hat(c) against y, on the rows of the scored (pilot) folds, "
                 "each by the fold model that never saw them")

    def _losses(self, learner, C, y, rows, k, scale, rng):
        return (y[rows] - learner.predict(k, C[rows])) ** 2

    def predict(self, k, C):
        return self.fitted_[self.choices_[k]].predict(k, C)


class SelectedSampler(_Selection, ConditionalSampler):
    """The distribution model by the candidate with the lowest cross-fitted energy score (module notes)."""

    role = "distribution model"
    loss_short = "energy score"
    loss_name = (f"held-out energy score of {DRAWS} draws at the observed inputs (each column divided by its sd), "
                 f"on the rows of the scored (pilot) folds, each by the fold model that never saw them")

    def _losses(self, learner, C, X, rows, k, scale, rng):
        draws = learner.sample(k, C[rows], DRAWS, rng)
        return energy_score(draws / scale, X[rows] / scale)

    def sample(self, k, C, n_draws, rng):
        return self.fitted_[self.choices_[k]].sample(k, C, n_draws, rng)


ROLES = {"s": SelectedOutcome, "g": SelectedSampler}   # a run record's nuisances by role


def describe(selection: dict, role: str) -> str:
    """One sentence on a recorded choice (a run record's ``nuisances[role]``, this module's ``selection_``)."""
    name, loss = ROLES[role].role, ROLES[role].loss_short
    per_fold = list(selection.get("choice_per_fold") or [])
    choice = selection["choice"]
    text = f"{name[0].upper()}{name[1:]}: auto chose {choice}"
    if len(set(per_fold)) > 1:
        text += f" for {per_fold.count(choice)} of {len(per_fold)} folds (" + ", ".join(
            f"{other} for {per_fold.count(other)}" for other in sorted(set(per_fold) - {choice})) + ")"
    losses = {k: v for k, v in (selection.get("heldout_loss") or {}).items() if v is not None}
    if not losses:
        return text + (" (its only candidate here)." if len(selection.get("candidates") or []) == 1 else ".")
    if selection.get("inner_folds"):
        where = f"{selection['inner_folds']} inner folds of the training rows"
    elif selection.get("scored_folds") and selection.get("rows_scored"):
        where = f"the {selection['rows_scored']:,} rows of the first {selection['scored_folds']} folds"
    else:
        where = "the rows each fold model never saw"
    ranked = sorted(losses.items(), key=lambda kv: kv[1])
    text += f"; held-out {loss} on {where}, lower is better: " + ", ".join(f"{k} {v:.4g}" for k, v in ranked) + "."
    target = selection.get("target_loss") or {}
    if selection.get("criterion") == "target" and target:   # DML-CMR's target chose (nuisance_choice="target")
        text = text.replace("auto chose", "auto (by DML-CMR's target) chose", 1)
        text += (f" Chosen by DML-CMR's target, not by that loss: the pair (outcome model | distribution model) "
                 f"{selection.get('target_pair')} had the lowest held-out projected residual / Var(Y) of a pilot "
                 f"second stage: " + ", ".join(f"{k} {v:.4g}" for k, v in sorted(target.items(), key=lambda kv: kv[1]))
                 + ".")
    return text
