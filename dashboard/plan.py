"""The estimator choices of the Estimators page and the fits they turn into.

Widget keys and defaults live here so that the home page's demo, the Estimators page and the
Train page agree. Defaults of the advanced settings are dmlcore's own (the learners'
``DEFAULTS`` and the second stages' ``NN_DEFAULTS`` / ``BOOST_DEFAULTS``); only values that
differ from them are passed as ``nuisance_params`` / ``f_params``, so a run's record shows
exactly what was changed. The same goes for the DML-CMR family's second stage (``f_model``)
and repeated cross-fits (``reps_crossfit``): passed only when they differ from the defaults;
and the torch ``device``, a setting offered only when torch sees a GPU (``device_choices``), and
the debiased effect, passed only when it is switched off (``debias=False``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from dmlcore.data.registry import dataset_options
from dmlcore.data.roles import CausalData
from dmlcore import device as torch_device
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.second_stage import BOOST_DEFAULTS, NN_DEFAULTS
from dmlcore.estimators.settings import DEFAULTS, SETTINGS
from dmlcore.estimators.splines import check_tabular
from dmlcore.estimators.dml import target_refusal
from dmlcore.estimators.nuisance_target import CRITERIA, CRITERION_OF_ONE, PILOT
from dmlcore.stats.resample import check_cluster_folds
from dmlcore.stats.covariance import check_covariance
from dmlcore.learners import LEARNER_REGISTRY, LEARNER_TITLES, LEARNERS
from dmlcore.learners.nn import DEFAULTS as NN_NUISANCE_DEFAULTS
from dmlcore.learners.select import AUTO, SelectedOutcome, SelectedSampler, nuisance_default
from dmlcore.learners.tabular import DEFAULTS as TABULAR_DEFAULTS
from dmlcore.estimators import METHOD_TITLES, METHODS

DEFAULT_DRAWS = DEFAULTS.n_draws

SAME = "same as above"
SECOND_STAGE_METHODS = [name for name, m in METHODS.items() if m.second_stage]  # a learner each may override
METHOD_HELP = {name: m.help for name, m in METHODS.items()}


@dataclass(frozen=True)
class Field:
    """One advanced setting: its dmlcore parameter, label, kind, default and allowed range.

    The range is ``low`` (inclusive, or exclusive with ``low_open``) to ``high`` (inclusive, or
    exclusive with ``high_open``); None is unbounded.
    """

    param: str
    label: str
    kind: str          # "int", "float", "optional_float" or "sizes"
    default: object
    help: str = ""
    low: float | None = 0.0
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def problem(self, value) -> str | None:
        """Why ``value`` is out of range (a message naming the setting), or None."""
        if value is None or self.kind == "sizes":
            return None
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"{self.label} must be a number; got {value!r}."
        below = self.low is not None and (number <= self.low if self.low_open else number < self.low)
        above = self.high is not None and (number >= self.high if self.high_open else number > self.high)
        if not (below or above) and number == number and abs(number) != float("inf"):
            return None
        parts = []
        if self.low is not None:
            parts.append(f"{'greater than' if self.low_open else 'at least'} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'less than' if self.high_open else 'at most'} {self.high:g}")
        return f"{self.label} must be {' and '.join(parts)}; got {value:g}. Change it or reset to the default."


def _positive(param, label, kind, default, help=""):
    """A setting that must be greater than 0 (learning rates, penalties that scale a step)."""
    return Field(param, label, kind, default, help, low=0.0, low_open=True)


def _count(param, label, default, help="", low=1):
    """A whole number of at least ``low``."""
    return Field(param, label, "int", default, help, low=low)


NUISANCE_FIELDS: dict[str, tuple[Field, ...]] = {
    "nn": (
        Field("hidden", "Hidden layer sizes", "sizes", NN_NUISANCE_DEFAULTS["hidden"],
              "Comma-separated widths of the MLP layers."),
        _positive("lr", "Learning rate", "float", NN_NUISANCE_DEFAULTS["lr"]),
        _count("batch_size", "Batch size", NN_NUISANCE_DEFAULTS["batch_size"]),
        Field("dropout", "Dropout", "optional_float", NN_NUISANCE_DEFAULTS["dropout"],
              "Empty: the paper's rule 1000 / (5000 + N), at most 0.5.", high=1.0, high_open=True),
        Field("weight_decay", "Weight decay (AdamW)", "float", NN_NUISANCE_DEFAULTS["weight_decay"]),
        _count("patience", "Early-stopping patience (epochs)", NN_NUISANCE_DEFAULTS["patience"], low=0),
        _count("components", "Mixture components of g", NN_NUISANCE_DEFAULTS["components"]),
    ),
    "gb": (
        _positive("learning_rate", "Learning rate", "float", TABULAR_DEFAULTS["gb"]["learning_rate"]),
        _count("max_leaf_nodes", "Leaves per tree", TABULAR_DEFAULTS["gb"]["max_leaf_nodes"], low=2),
        _count("min_samples_leaf", "Rows per leaf (minimum)", TABULAR_DEFAULTS["gb"]["min_samples_leaf"]),
        Field("l2_regularization", "L2 regularization", "float", TABULAR_DEFAULTS["gb"]["l2_regularization"]),
        _count("n_iter_no_change", "Early-stopping patience (stages)", TABULAR_DEFAULTS["gb"]["n_iter_no_change"]),
    ),
    "rf": (
        _count("n_estimators", "Trees", TABULAR_DEFAULTS["rf"]["n_estimators"]),
        _count("min_samples_leaf", "Rows per leaf (minimum)", TABULAR_DEFAULTS["rf"]["min_samples_leaf"]),
        Field("max_features", "Share of features per split", "float", TABULAR_DEFAULTS["rf"]["max_features"],
              low=0.0, low_open=True, high=1.0),
    ),
    "linear": (
        Field("alpha", "Ridge penalty", "float", TABULAR_DEFAULTS["linear"]["alpha"]),
    ),
}
F_FIELDS: dict[str, tuple[Field, ...]] = {
    "nn": (
        Field("hidden", "Hidden layer sizes", "sizes", NN_DEFAULTS["hidden"]),
        _positive("lr", "Learning rate", "float", NN_DEFAULTS["lr"]),
        _count("batch_size", "Batch size", NN_DEFAULTS["batch_size"]),
        Field("dropout", "Dropout", "float", NN_DEFAULTS["dropout"], high=1.0, high_open=True),
        Field("weight_decay", "Weight decay (AdamW)", "float", NN_DEFAULTS["weight_decay"]),
        _count("patience", "Early-stopping patience (epochs)", NN_DEFAULTS["patience"], low=0),
    ),
    "boost": (
        _positive("learning_rate", "Learning rate", "float", BOOST_DEFAULTS["learning_rate"]),
        _count("max_depth", "Tree depth", BOOST_DEFAULTS["max_depth"]),
        _count("min_samples_leaf", "Rows per leaf (minimum)", BOOST_DEFAULTS["min_samples_leaf"]),
        Field("subsample", "Row subsample per stage", "float", BOOST_DEFAULTS["subsample"],
              low=0.0, low_open=True, high=1.0),
        _count("patience", "Early-stopping patience (stages)", BOOST_DEFAULTS["patience"], low=0),
    ),
    "linear": (),
}
F_MODEL_OWN = "own"      # the widget's name of f_model None: the learner's own second stage
F_MODEL_CHOICES = {F_MODEL_OWN: "the learner's own",
                   "sieve": "spline basis (sieve): gives 95 % confidence bands"}
F_MODEL_HELP = ("The second stage f of DML-CMR, CE-DML-CMR and the naive plug-in. The learner's own: a "
                "network, boosted trees or a linear model, as the nuisance learner. Spline basis (sieve): f "
                "is a penalised B-spline (tensor-product; with many covariates, a spline in the treatment plus a "
                "term per covariate) fitted in closed form, with sandwich standard errors "
                "that give pointwise 95 % confidence bands; their coverage was measured by simulation and falls "
                "short where f-hat is biased (Results quotes the measured coverage; docs/coverage.md). Tabular "
                "inputs only.")
MAX_REPS = 20
REPS_HELP = ("Fit the whole estimator R times with seeds seed, seed + 1, ... (new folds, learner "
             "randomness and draws) and take the pointwise median of the R fits. Costs R times the fit. "
             "With the spline second stage the band also widens by the split-to-split spread; otherwise "
             "the results show the range of the R fits, which is not a confidence band.")
DEVICE_HELP = ("Where the neural networks train. Automatic: the first GPU torch sees, else the CPU. "
               "The same seed gives somewhat different numbers on the CPU and on a GPU (their dropout "
               "draws differ). Learners other than the neural network always run on the CPU.")
CLUSTER_HELP = ("A column whose values group rows whose errors may be correlated (a region, a school, a firm). "
                "Every method then keeps each group within one fold when it cross-fits, and every interval it "
                "reports (2SLS's, the debiased effect's, the diagnostics') sums the score by group, as the command "
                "line's --cov clustered --cluster COLUMN does; the spline second stage's delta-method interval, "
                "which cannot, is refused in one line. Empty: rows are taken as independent.")
DEBIAS_HELP = ("The effect of every method that fits a nonlinear f is debiased: the plug-in (the mean of f-hat's "
               "slope) plus a correction, so that a shrunk f-hat is not read as a small effect, with an interval "
               "from the corrected score and a warning when the effect is weakly identified. It costs 2 refits of "
               "each method on simulated data (the one-click demo's fits took 2.3-2.8 times as long with it: "
               "docs/class.md); on real data it shares the held-out residual's refits. Off: the Results show the "
               "plug-in effect, which reads a shrunk f-hat as a small effect, with no debiased interval (only "
               "2SLS and a spline f have an interval of their own; for the others ask for a bootstrap) and no "
               "weak-identification check; the curves and the MSE are unchanged.")
NUISANCE_CHOICE = SETTINGS["nuisance_choice"]
NUISANCE_CHOICE_READERS = [name for name, m in METHODS.items() if "nuisance_choice" in m.settings]
NUISANCE_CHOICE_LABEL = f"{NUISANCE_CHOICE.label} ({', '.join(map(METHOD_TITLES.get, NUISANCE_CHOICE_READERS))})"
NUISANCE_CHOICE_HELP = (f"{NUISANCE_CHOICE.help[0].upper()}{NUISANCE_CHOICE.help[1:]}. DML-CMR only: CE-DML-CMR "
                        f"and the naive plug-in fit their nuisances once on all rows, so there are no pilot folds "
                        f"to score, and keep their own choice. It needs auto nuisances (the learner nn or gb), K of "
                        f"at least {PILOT + 1} and tabular data; where it cannot apply, the reason is shown before "
                        f"any fit starts.")
EPOCH_DEFAULTS = (f"networks {NN_NUISANCE_DEFAULTS['max_epochs']} epochs, gradient boosting "
                  f"{TABULAR_DEFAULTS['gb']['max_iter']} stages, boosted f {BOOST_DEFAULTS['max_stages']} stages")


def nuisance_choice_unread(choice: str, methods) -> str | None:
    """Why the nuisance choice ``choice`` cannot act with ``methods`` (none of them reads it), in one line; None
    when it is the default, no method is chosen yet, or one of them reads it (the Estimators and Study pages)."""
    if choice == NUISANCE_CHOICE.default or not methods or any(m in NUISANCE_CHOICE_READERS for m in methods):
        return None
    takers = " and ".join(map(METHOD_TITLES.get, NUISANCE_CHOICE_READERS))
    return (f"Nuisance choice {choice!r} applies to {takers} only, which is not among the methods; add it, or set "
            f"the choice back to {NUISANCE_CHOICE.default!r}.")


def nuisance_choice_note(choice: str, methods) -> str | None:
    """What a non-default nuisance choice leaves as it is: the other methods with a second stage keep their own
    choice (they fit their nuisances once on all rows); None when there are none or the choice is the default."""
    others = [m for m in methods if m not in NUISANCE_CHOICE_READERS and METHODS[m].second_stage]
    if choice == NUISANCE_CHOICE.default or not others:
        return None
    one = len(others) == 1
    return (f"{', '.join(map(METHOD_TITLES.get, others))} keep{'s its' if one else ' their'} nuisances chosen "
            f"{CRITERIA[NUISANCE_CHOICE.default]}: {'it fits' if one else 'they fit'} them once on all rows, with no "
            "pilot folds to score.")


def nuisance_key(learner: str, param: str) -> str:
    return f"adv_{learner}_{param}"


def f_key(model: str, param: str) -> str:
    return f"adv_f_{model}_{param}"


def learner_override_key(method: str) -> str:
    return f"est_learner_{method}"


def device_choices() -> list[str]:
    """The options of the device setting; none (the setting is hidden) when torch sees no GPU."""
    count = torch_device.cuda_count()
    return ["auto", "cpu", *(f"cuda:{i}" for i in range(count))] if count else []


def _widget_default(fld: Field):
    if fld.kind == "sizes":
        return ", ".join(str(v) for v in fld.default)
    return fld.default


# The widgets of a fit setting: widget key -> the setting (dmlcore.estimators.settings), whose declared default is
# the widget's (f_model None shown as "own")
WIDGET_SETTINGS = {"est_learner": "learner", "est_folds": "folds", "est_seed": "seed", "est_draws": "n_draws",
                   "est_epochs": "epochs", "est_f_model": "f_model", "est_reps": "reps_crossfit",
                   "est_device": "device", "est_debias": "debias", "est_cluster": "cluster",
                   "est_nuisance_choice": "nuisance_choice"}


def setting_widget_default(key: str):
    """The declared default of the setting behind widget ``key``, as the widget holds it."""
    value = SETTINGS[WIDGET_SETTINGS[key]].default
    return F_MODEL_OWN if key == "est_f_model" and value is None else value


ESTIMATOR_DEFAULTS: dict[str, object] = {
    "est_methods": ["dml-cmr", "naive", "2sls"],
    **{key: setting_widget_default(key) for key in WIDGET_SETTINGS},
    **{learner_override_key(m): SAME for m in SECOND_STAGE_METHODS},
    **{nuisance_key(lr, f.param): _widget_default(f) for lr, fields in NUISANCE_FIELDS.items() for f in fields},
    **{f_key(m, f.param): _widget_default(f) for m, fields in F_FIELDS.items() for f in fields},
}

# What the one-click demo uses: fast on 2 cores, the three kinds of estimator and the confounded regression;
# without the debiased effect, whose refits made its fits 2.3-2.8 times as long (docs/class.md). The data set's
# other options and the settings not named here are the declared defaults.
_DEMAND_IV = dataset_options("demand-iv")
DEMO_DATA = dict(name="demand-iv", n=2000, seed=0, rho=_DEMAND_IV["rho"], iv_strength=_DEMAND_IV["iv_strength"])
DEMO_SETTINGS = {**{key: ESTIMATOR_DEFAULTS[key] for key in WIDGET_SETTINGS if key != "est_device"},
                 "est_methods": ["dml-cmr", "naive", "2sls", "regression"], "est_learner": "gb", "est_folds": 5,
                 "est_debias": False}


def _setting(state, key: str):
    """Widget ``key``'s value in ``state``, else its default."""
    return state.get(key, ESTIMATOR_DEFAULTS[key])


@dataclass(frozen=True)
class PlannedFit:
    method: str
    label: str
    learner: str | None
    kwargs: dict


def parse_sizes(text: str) -> tuple[int, ...]:
    """'128, 64, 32' -> (128, 64, 32); DMLCoreError for anything else."""
    parts = [p.strip() for p in str(text or "").replace(";", ",").split(",") if p.strip()]
    try:
        sizes = tuple(int(p) for p in parts)
    except ValueError:
        raise DMLCoreError(f"Hidden layer sizes must be whole numbers separated by commas, "
                           f"such as 128, 64, 32; got {text!r}.") from None
    if not sizes or any(s < 1 or s > 4096 for s in sizes):
        raise DMLCoreError(f"Give one to a few layer widths between 1 and 4096, such as 128, 64, 32; "
                           f"got {text!r}.")
    return sizes


def _changed(fields, key_of, state, errors) -> dict | None:
    out = {}
    for fld in fields:
        key = key_of(fld.param)
        value = state.get(key, _widget_default(fld))
        if fld.kind == "sizes":
            try:
                value = parse_sizes(value)
            except DMLCoreError as err:
                errors[key] = str(err)
                continue
            if tuple(value) != tuple(fld.default):
                out[fld.param] = value
            continue
        problem = fld.problem(value)
        if problem:
            errors[key] = problem
        elif value != fld.default:
            out[fld.param] = int(value) if fld.kind == "int" else value
    return out or None


def learner_for(method: str, state) -> str | None:
    """The nuisance learner of ``method`` (None for the linear methods)."""
    if not METHODS[method].uses_learner:
        return None
    if not METHODS[method].second_stage:
        return _setting(state, "est_learner")
    override = state.get(learner_override_key(method), SAME)
    return _setting(state, "est_learner") if override in (None, SAME) else override


def learners_in_use(state) -> list[str]:
    used = []
    for method in _setting(state, "est_methods"):
        learner = learner_for(method, state)
        if learner and learner not in used:
            used.append(learner)
    return used


def _refusal(errors: dict, key: str, data: CausalData, what: str, instead: str) -> None:
    """dmlcore's refusal of spline bases on image data, as the message of widget ``key``."""
    try:
        check_tabular(data, what, instead)
    except DMLCoreError as err:
        errors[key] = str(err)


def methods_for(data: CausalData | None) -> list[str]:
    """The methods that can fit ``data``: all of them without data; the IV peers (KIV, DFIV,
    DeepGMM) only for IV, the proximal ones (KPV, PMMR, NMMR) only for PCL, no kernel peer on images."""
    return [m for m in METHODS if data is None or METHODS[m].refusal(data) is None]


def build_plan(state, data: CausalData | None, batch: int = 1) -> tuple[list[PlannedFit], dict[str, str]]:
    """The fits the current choices describe, and the problems with them by widget key."""
    errors: dict[str, str] = {}
    methods = [m for m in _setting(state, "est_methods") if m in METHODS]
    if not methods:
        errors["est_methods"] = "Choose at least one method to compare."
    for method in (m for m in methods if data is not None):
        if METHODS[method].refusal(data) and "est_methods" not in errors:
            errors["est_methods"] = METHODS[method].refusal(data)
    neural = [m for m in methods if METHODS[m].second_stage]
    sieve_f = _setting(state, "est_f_model") == "sieve"
    if _setting(state, "est_f_model") not in F_MODEL_CHOICES:
        errors["est_f_model"] = (f"Unknown second stage {state.get('est_f_model')!r}; choose one of "
                                 f"{', '.join(F_MODEL_CHOICES.values())}.")
    elif sieve_f and neural and data is not None:
        _refusal(errors, "est_f_model", data, "The spline-basis (sieve) second stage",
                 "Choose the learner's own second stage (the neural network learner) on image data.")
    reps = _setting(state, "est_reps")
    if isinstance(reps, bool) or not isinstance(reps, numbers.Integral) or not 1 <= reps <= MAX_REPS:
        errors["est_reps"] = (f"Repeated cross-fits R must be a whole number from 1 to {MAX_REPS}; got "
                              f"{reps!r}. Set it back to 1 for a single fit.")
        reps = 1
    folds = int(_setting(state, "est_folds"))
    if any("folds" in METHODS[m].settings for m in methods) and data is not None:
        try:
            data.check_folds(folds)
        except DMLCoreError as err:
            errors["est_folds"] = str(err)
    epochs = _setting(state, "est_epochs")
    epochs = int(epochs) if epochs not in (None, 0) else None
    common = dict(folds=folds, seed=int(_setting(state, "est_seed")), n_draws=int(_setting(state, "est_draws")),
                  epochs=epochs)
    if not _setting(state, "est_debias"):
        common["debias"] = False
    cluster = _setting(state, "est_cluster")
    if cluster and data is not None:
        try:
            check_covariance("clustered", cluster, data.table)
            if any("folds" in METHODS[m].settings for m in methods):
                check_cluster_folds(data.table[cluster].nunique(), folds)
            common.update(cov_type="clustered", cluster=cluster)
        except DMLCoreError as err:
            errors["est_cluster"] = str(err)
    choice = _setting(state, "est_nuisance_choice")
    try:
        NUISANCE_CHOICE.check(choice)
        if choice != NUISANCE_CHOICE.default:
            common["nuisance_choice"] = choice
            if (unread := nuisance_choice_unread(choice, methods)):
                errors["est_nuisance_choice"] = unread
    except DMLCoreError as err:
        errors["est_nuisance_choice"] = str(err)
    device = _setting(state, "est_device")
    try:
        torch_device.resolve_device(device)
        if device != DEFAULTS.device:
            common["device"] = device
    except DMLCoreError as err:
        errors["est_device"] = str(err)
    fits = []
    for method in methods:
        learner = learner_for(method, state)
        title = METHOD_TITLES[method]
        if learner is None:
            fits.append(PlannedFit(method, f"#{batch} {title}", None, reads(method, common)))
            continue
        nuisance = _changed(NUISANCE_FIELDS[learner], lambda p, lr=learner: nuisance_key(lr, p), state, errors)
        kwargs = reads(method, dict(common, learner=learner, nuisance_params=nuisance))
        if kwargs.get("nuisance_choice", NUISANCE_CHOICE.default) != NUISANCE_CHOICE.default and data is not None:
            refusal = target_refusal(data, learner=learner, folds=folds, nuisance_params=nuisance)
            if refusal and "est_nuisance_choice" not in errors:
                errors["est_nuisance_choice"] = f"{METHOD_TITLES[method]} with learner {learner}: {refusal}"
        label = f"#{batch} {title} · {learner}"
        if not METHODS[method].second_stage:     # the regression baseline: no second stage, no cross-fits
            fits.append(PlannedFit(method, label, learner, kwargs))
            continue
        if sieve_f:
            kwargs["f_model"] = "sieve"
            label += " · sieve f"
        else:
            f_model = LEARNER_REGISTRY[learner].f_model
            kwargs["f_params"] = _changed(F_FIELDS[f_model], lambda p, m=f_model: f_key(m, p), state, errors)
        if reps > 1:
            kwargs["reps_crossfit"] = int(reps)
            label += f" · R = {reps}"
        fits.append(PlannedFit(method, label, learner, kwargs))
    return fits, errors


def reads(method: str, settings: dict) -> dict:
    """The ``settings`` (by name) that apply to ``method``: the run's, and those its registry entry reads (a setting
    chosen once for every method, such as K or the draws, is passed only to the methods that read it)."""
    return {name: value for name, value in settings.items()
            if SETTINGS[name].scope != "method" or name in METHODS[method].settings}


def describe(fit: PlannedFit) -> str:
    """A one-line summary of a planned fit."""
    k = fit.kwargs
    off = " · no debiased effect (the plug-in only)" if k.get("debias") is False else ""
    if k.get("cluster"):
        off = f" · intervals clustered by {k['cluster']}" + off
    if fit.learner is None:
        return METHOD_TITLES[fit.method] + off
    parts = [METHOD_TITLES[fit.method], f"learner {LEARNER_TITLES[fit.learner]}"]
    if "folds" in k:
        parts.append(f"K = {k['folds']}")
    if "n_draws" in k:
        parts.append(f"{k['n_draws']} draws")
    if k.get("epochs"):
        parts.append(f"at most {k['epochs']} epochs")
    if k.get("f_model") == "sieve":
        parts.append("second stage: spline basis (sieve) with 95 % confidence bands")
    if k.get("device"):
        parts.append(f"networks on {k['device']}")
    if k.get("reps_crossfit", DEFAULTS.reps_crossfit) > 1:
        parts.append(f"{k['reps_crossfit']} repeated cross-fits (median; {k['reps_crossfit']}× the time)")
    chosen = [selection.role for setting, selection in (("outcome_learner", SelectedOutcome), ("sampler", SelectedSampler))
              if setting in METHODS[fit.method].settings
              and nuisance_default(k.get(setting), fit.learner, k.get("nuisance_params")) == AUTO]
    if chosen:   # "auto" (the default with nn or gb): the learner is one candidate of those nuisances
        criteria = CRITERIA if len(chosen) > 1 else CRITERION_OF_ONE
        parts.append(f"{' and '.join(chosen)} chosen {criteria[k.get('nuisance_choice', NUISANCE_CHOICE.default)]} "
                     f"(auto)")
    changed = {**(k.get("nuisance_params") or {}), **{f"f.{a}": b for a, b in (k.get("f_params") or {}).items()}}
    if changed:
        parts.append("changed: " + ", ".join(f"{a}={b}" for a, b in changed.items()))
    return " · ".join(parts) + off


__all__ = ["ESTIMATOR_DEFAULTS", "DEMO_DATA", "DEMO_SETTINGS", "NUISANCE_FIELDS", "F_FIELDS", "Field",
           "F_MODEL_CHOICES", "F_MODEL_HELP", "NUISANCE_CHOICE_HELP", "NUISANCE_CHOICE_LABEL", "nuisance_choice_unread",
           "nuisance_choice_note", "CLUSTER_HELP", "MAX_REPS", "REPS_HELP", "DEVICE_HELP", "DEBIAS_HELP", "device_choices",
           "PlannedFit", "build_plan", "describe", "learner_for", "learners_in_use", "parse_sizes",
           "LEARNERS", "SAME", "METHOD_HELP", "methods_for"]
