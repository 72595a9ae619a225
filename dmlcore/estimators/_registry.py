"""The one registry of methods: what each is, what it reads, and how it is built.

Every list of methods in dmlcore, the CLI, the dashboard and the benchmarks reads :data:`METHODS`
(name -> :class:`Method`). Adding a method is one entry here plus its class (see
docs/architecture.md, "How to add a method").
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from dmlcore.data.roles import CausalData
from dmlcore.device import resolve_device
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator, several_treatments
from dmlcore.estimators.crossfit_reps import RepeatedCrossFit
from dmlcore.estimators.dml import CEDMLCMR, DMLCMR, NaivePlugIn
from dmlcore.estimators.kclass import LIML, Fuller, GMMIV
from dmlcore.estimators.peers.deepgmm import DeepGMM
from dmlcore.estimators.peers.dfiv import DFIV
from dmlcore.estimators.peers.kiv import KIV
from dmlcore.estimators.peers.kpv import KPV
from dmlcore.estimators.peers.nmmr import NMMR
from dmlcore.estimators.peers.pmmr import PMMR
from dmlcore.estimators.regression import OutcomeRegression
from dmlcore.estimators.settings import SETTINGS, FitSettings
from dmlcore.estimators.sieve import Sieve2SLS
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.learners import learner_name, uses_networks
from dmlcore.learners.select import nuisance_default

ALL_PROBLEMS = ("iv", "pcl", "cmr")
# the fit settings (dmlcore.estimators.settings) the DML-CMR family's estimators read
SECOND_STAGE_SETTINGS = frozenset({"learner", "folds", "epochs", "n_draws", "f_model", "reps_crossfit", "device",
                                   "outcome_learner", "sampler", "nuisance_params", "f_params", "cluster"})
LINEAR_IV_SETTINGS = frozenset({"cov_type", "cluster", "small", "fixef_k", "cluster_df"})


@dataclass(frozen=True)
class Method:
    """One method: its name (the CLI's ``--method``), title, help text and class, and what it reads.

    ``problems``: the roles it accepts ("iv", "pcl", "cmr"); the class's ``check_roles`` refines
    this for a given data set. ``uses_learner``: it fits the chosen nuisance
    learner (``nn``, ``rf``, ``gb``, ``linear`` or a scikit-learn regressor). ``second_stage``:
    the DML-CMR machinery (nuisances, then f; ``f_model``, ``n_draws`` and ``reps_crossfit``
    apply). ``networks``: whether it always trains torch networks (True), never does (False),
    or does when its learner or second stage is ``nn`` (None). ``record_learner``: what a run
    record's ``learner`` says for a method without a learner choice. ``settings``: the fit
    settings (:mod:`dmlcore.estimators.settings`) its estimator reads, by its constructor's argument
    names; any other given a value is refused in one line (the others are None in its study configs).
    ``colour``: its colour in every
    figure (None: a palette colour by position). ``peer``: a method the paper compares against
    (docs/peers.md), with its own learners and settings (``f_params``). ``build(entry, settings, seed)``: how
    :func:`make_estimator` makes it (default: the class called with the settings it reads).
    ``epochs_arg`` and ``fixed`` (peers): the constructor argument that ``epochs`` sets, and the
    arguments the method's name fixes. ``prose``: how running text names it ("the naive plug-in";
    None: its title). ``f_model``: the second stage f it always fits (a name of
    :mod:`dmlcore.estimators.second_stage`: "linear", "sieve"), None where f is chosen (``f_model``) or
    its own (peers).

    Facts derived from the entry (properties, so that no caller tests a method's name): ``linear_iv``,
    ``k_class``, ``cross_fits``, ``outcome_model``, ``noun``.
    """

    name: str
    title: str
    help: str
    cls: type
    build: Callable | None = None
    problems: tuple = ALL_PROBLEMS
    uses_learner: bool = False
    second_stage: bool = False
    networks: bool | None = False
    record_learner: str | None = None
    settings: frozenset = frozenset()
    colour: str | None = None
    peer: bool = False
    epochs_arg: str | None = None
    fixed: tuple = field(default=())
    plugin: str | None = None     # registered by register_method (the module it came from), not built in
    prose: str | None = None
    f_model: str | None = None

    @property
    def linear_iv(self) -> bool:
        """A linear IV estimator (2SLS and its k-class and GMM kin, docs/linear-iv.md): coefficients with
        standard errors, absorbed fixed effects, weights and the covariance choices."""
        return issubclass(self.cls, TwoStageLeastSquares)

    @property
    def k_class(self) -> bool:
        """A k-class estimator with an estimated kappa (LIML, Fuller): its tables show kappa."""
        return self.linear_iv and self.cls.k_class

    @property
    def cross_fits(self) -> bool:
        """It splits the rows into K folds (reads ``folds``)."""
        return "folds" in self.settings

    @property
    def outcome_model(self) -> bool:
        """It fits the outcome nuisance s(c) = E[Y | C] (reads ``outcome_learner``); the naive plug-in does not."""
        return "outcome_learner" in self.settings

    @property
    def noun(self) -> str:
        """Its name in a sentence: ``prose``, else its title."""
        return self.prose or self.title

    def refusal(self, data: CausalData) -> str | None:
        """Why this method cannot fit ``data`` (wrong problem, images for a kernel method), or None."""
        try:
            self.cls.check_roles(data)
        except DMLCoreError as err:
            return str(err)
        if data.problem not in self.problems:
            return (f"{self.title} does not take {data.problem.upper()} problems; it takes "
                    f"{', '.join(p.upper() for p in self.problems)}.")
        if several_treatments(data) and "absorb_weights" not in self.cls.capabilities:
            return f"{self.title}: {several_treatments(data)}"
        if data.linear_options() and "absorb_weights" not in self.cls.capabilities:
            return (f"{self.title} takes no absorbed fixed effects or weights (set on Roles, or by --absorb / "
                    f"--weights); only the linear IV methods do.")
        return None


def _construct(entry: Method, settings: FitSettings, seed: int):
    """The class called with the settings it reads (its registry entry's, by argument name) and the seed."""
    signature = inspect.signature(entry.cls).parameters
    kwargs = {name: getattr(settings, name) for name in entry.settings if name in signature}
    return entry.cls(**kwargs, **({"seed": seed} if "seed" in signature else {}))


def _second_stage(entry: Method, settings: FitSettings, seed: int):
    est = _construct(entry, settings, seed)
    return est if settings.reps_crossfit == 1 else RepeatedCrossFit(est, settings.reps_crossfit)


def _fuller(entry: Method, settings: FitSettings, seed: int):
    """Fuller with ``f_params`` {"alpha": a} (default 1)."""
    f_params = settings.f_params
    unknown = sorted(set(f_params or {}) - {"alpha"})
    if unknown:
        raise DMLCoreError(f"Unknown Fuller setting(s) {', '.join(map(repr, unknown))}; known: alpha.")
    return entry.cls(cov_type=settings.cov_type, cluster=settings.cluster, small=settings.small,
                     fixef_k=settings.fixef_k, cluster_df=settings.cluster_df, **(f_params or {}))


def _peer(entry: Method, settings: FitSettings, seed: int):
    """A peer with ``f_params`` (its constructor's settings), ``epochs`` (networks only) and, for
    the networks, ``device``."""
    f_params = settings.f_params
    if f_params is not None and not isinstance(f_params, dict):
        raise DMLCoreError(f"The settings of {entry.title} must be a dict; got {type(f_params).__name__}.")
    params = dict(f_params or {})
    signature = inspect.signature(entry.cls).parameters
    known = [p for p in signature if p not in ("seed", "device") and p not in dict(entry.fixed)]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise DMLCoreError(f"Unknown {entry.title} setting(s) {', '.join(map(repr, unknown))}; known: "
                           f"{', '.join(known)}.")
    if settings.epochs is not None and entry.epochs_arg:
        params.setdefault(entry.epochs_arg, settings.epochs)
    if "device" in signature:
        params["device"] = settings.device
    return entry.cls(seed=seed, **params, **dict(entry.fixed))


_FAMILY = dict(build=_second_stage, uses_learner=True, second_stage=True, networks=None)
_PEER_HELP = " Its own settings: docs/peers.md."


def _peer_entry(name, cls, title, learner, help, problems, epochs_arg=None, fixed=()):
    return Method(name, title, help + _PEER_HELP, cls, _peer, problems=problems, networks=learner == "nn",
                  record_learner=learner, peer=True,
                  settings=frozenset({"device", "f_params"} | ({"epochs"} if epochs_arg else set())),
                  epochs_arg=epochs_arg,
                  fixed=fixed)


_IV = ("iv", "cmr")
_ENTRIES = (
    Method("dml-cmr", "DML-CMR", "Orthogonal score + K-fold cross-fitting (the paper's Algorithm 1).", DMLCMR,
           settings=SECOND_STAGE_SETTINGS | {"nuisance_choice"}, colour="#1f77b4", **_FAMILY),
    Method("ce-dml-cmr", "CE-DML-CMR",
           "Orthogonal score, nuisances fitted once on all rows (cheaper, no cross-fitting).", CEDMLCMR,
           settings=SECOND_STAGE_SETTINGS - {"folds"}, colour="#17becf", **_FAMILY),
    Method("naive", "Naive plug-in",
           "Plugs the first stage straight into the second (DeepIV-style); biased when the first stage is off.",
           NaivePlugIn, settings=SECOND_STAGE_SETTINGS - {"folds", "outcome_learner"}, colour="#d62728",
           prose="the naive plug-in", **_FAMILY),
    Method("2sls", "2SLS", "Classical linear two-stage least squares, with standard errors.",
           TwoStageLeastSquares, record_learner="linear", settings=LINEAR_IV_SETTINGS, colour="#2ca02c",
           prose="linear 2SLS", f_model="linear"),
    # the other linear IV estimators (docs/linear-iv.md): same model, fixed effects, weights and covariances
    Method("liml", "LIML", "Limited-information maximum likelihood: linear IV, less biased than 2SLS with many or "
           "weak instruments; equal to 2SLS with one instrument.", LIML,
           record_learner="linear", settings=LINEAR_IV_SETTINGS, colour="#8c564b", f_model="linear"),
    Method("fuller", "Fuller", "Fuller's modified LIML (alpha=1; f_params {'alpha': a}): finite moments, nearly "
           "unbiased under weak instruments.", Fuller, _fuller, record_learner="linear",
           settings=LINEAR_IV_SETTINGS | {"f_params"},
           colour="#e377c2", f_model="linear"),
    Method("gmm-iv", "GMM (IV)", "Efficient two-step linear GMM, weighted under the covariance choice (robust or "
           "clustered); equal to 2SLS with homoskedastic errors.", GMMIV,
           record_learner="linear", settings=LINEAR_IV_SETTINGS, colour="#7f7f7f", f_model="linear"),
    Method("sieve-2sls", "Sieve 2SLS",
           "Spline (sieve) 2SLS: tensor-product B-splines (with many covariates, a spline in the treatment plus a "
           "term per covariate), knots and ridge chosen by validation on the training rows; a few seconds for "
           "5,000 rows.", Sieve2SLS, record_learner="linear", settings=frozenset({"n_knots"}), colour="#9467bd",
           f_model="sieve"),
    Method("regression", "Regression (ignores C)",
           "The outcome regressed on f's inputs with the learner, ignoring instruments and proxies: what "
           "confounding does to an estimate that does not correct for it.", OutcomeRegression,
           uses_learner=True, networks=None, settings=frozenset({"learner", "epochs", "device", "nuisance_params"}),
           colour="#ff7f0e", prose="the regression that ignores the instrument"),
    # the methods the paper compares against (docs/peers.md)
    _peer_entry("kiv", KIV, "KIV", "kernel",
                "Kernel IV (Singh et al. 2019): two kernel ridge regressions with 100 random Fourier features, "
                "penalties chosen by its two-sample validation; a second for 10,000 rows.", _IV),
    _peer_entry("dfiv", DFIV, "DFIV", "nn",
                "Deep feature IV (Xu et al. 2021): learned features, closed-form ridge in both stages, "
                "alternating updates.", _IV, epochs_arg="epochs"),
    _peer_entry("deepgmm", DeepGMM, "DeepGMM", "nn",
                "DeepGMM (Bennett et al. 2019): a min-max game between f and an adversary with optimistic "
                "Adam; minutes per fit.", _IV, epochs_arg="max_epochs"),
    _peer_entry("kpv", KPV, "KPV", "kernel",
                "Kernel proxy variables (Mastouri et al. 2021): two kernel ridge stages with random Fourier "
                "features.", ("pcl",)),
    _peer_entry("pmmr", PMMR, "PMMR", "kernel",
                "Proxy maximum moment restriction (Mastouri et al. 2021): closed-form kernel bridge with random "
                "Fourier features.", ("pcl",)),
    _peer_entry("nmmr", NMMR, "NMMR-U", "nn",
                "Neural maximum moment restriction (Kompa et al. 2022), U-statistic loss: a bridge network "
                "trained on a kernel moment risk.", ("pcl",), epochs_arg="epochs"),
    _peer_entry("nmmr-v", NMMR, "NMMR-V", "nn", "NMMR with the V-statistic loss (Kompa et al. 2022).", ("pcl",),
                epochs_arg="epochs", fixed=(("loss", "V"),)),
)
METHODS: dict[str, Method] = {m.name: m for m in _ENTRIES}
METHOD_TITLES: dict[str, str] = {name: m.title for name, m in METHODS.items()}

# The methods that notes, lessons and benchmarks name on purpose, by their role: their names live here only, and
# every other module asks the entries' facts above (tests/test_registry_facts.py finds a name tested elsewhere).
PAPER_METHOD = "dml-cmr"        # the paper's Algorithm 1 (the CLI's default): the bench tables' reference
PLUG_IN_METHOD = "naive"        # the plug-in that the orthogonal score corrects
LINEAR_REFERENCE = "2sls"       # the linear IV reference: the results page's reference fit, the wild bootstrap


_NAME = __import__("re").compile(r"[a-z0-9][a-z0-9._-]{0,39}")


def register_method(name: str, cls: type, *, title: str | None = None, help: str = "",
                    problems: tuple = ALL_PROBLEMS, settings=(), colour: str | None = None) -> Method:
    """Register your own method: ``cls``, a :class:`~dmlcore.estimators._base.CMREstimator` subclass, under
    ``name`` (lower case, e.g. "my-iv"), so that fit_run, studies, the CLI and the dashboard offer it beside
    the built-in ones. ``problems``: the roles it takes ("iv", "pcl", "cmr"); ``settings``: the fit settings
    (:mod:`dmlcore.estimators.settings`, e.g. "learner", "folds", "epochs") its constructor reads, by
    argument name, passed as the others' are (any other given a value is refused); ``seed`` is passed when
    the constructor takes it. Worker processes and the dashboard's server learn it from the module listed
    in ``DMLCORE_PLUGINS`` (:mod:`dmlcore.plugins`), which is how ``--plugin`` gives it to a study's workers.
    Returns the registry entry; a built-in name, a name taken by another class, or a bad argument is refused
    in one line."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DMLCoreError(f"A method's name must be 1-40 lower-case letters, digits, '-', '_' or '.', starting "
                           f"with a letter or digit; got {name!r}.")
    if not (isinstance(cls, type) and issubclass(cls, CMREstimator)):
        raise DMLCoreError(f"register_method({name!r}, ...) needs a subclass of dmlcore.CMREstimator; got {cls!r}.")
    old = METHODS.get(name)
    if old is not None and (old.plugin is None or (old.cls.__module__, old.cls.__qualname__)
                            != (cls.__module__, cls.__qualname__)):
        raise DMLCoreError(f"The method name {name!r} is taken (by {old.cls.__module__}.{old.cls.__qualname__}); "
                           "choose another.")
    problems = tuple(problems)
    if not problems or set(problems) - set(ALL_PROBLEMS):
        raise DMLCoreError(f"problems must be some of {', '.join(ALL_PROBLEMS)}; got {problems!r}.")
    settings = frozenset(settings)
    unknown = sorted(settings - set(SETTINGS))
    takes = set(inspect.signature(cls).parameters)
    missing = sorted(s for s in settings if s not in takes)
    if unknown or missing:
        raise DMLCoreError(f"settings of {name!r}: " + "; ".join(
            ([f"unknown {', '.join(unknown)} (known: {', '.join(SETTINGS)})"] if unknown else []) +
            ([f"{cls.__name__}() takes no argument {', '.join(missing)}"] if missing else [])) + ".")
    entry = Method(name, title or name, help or (cls.__doc__ or "").strip().split("\n")[0], cls, problems=problems,
                   uses_learner="learner" in settings, networks=None if "learner" in settings else False,
                   record_learner=None if "learner" in settings else "own", settings=settings, colour=colour,
                   plugin=cls.__module__)
    METHODS[name] = entry
    METHOD_TITLES[name] = entry.title
    return entry


def get_method(name: str) -> Method:
    """The registry entry of ``name``; a DMLCoreError listing the methods otherwise."""
    if name not in METHODS:
        raise DMLCoreError(f"Unknown method {name!r}; choose one of {', '.join(METHODS)}.")
    return METHODS[name]


def unread(settings: FitSettings, method: str, scope: tuple = ("method",)) -> list[str]:
    """The settings of ``scope`` ("method", "run") given a value that ``method``'s entry does not read."""
    reads = get_method(method).settings
    return [name for name in settings.changed() if SETTINGS[name].scope in scope and name not in reads]


def refuse_unread(settings: FitSettings, method: str, scope: tuple = ("method",)) -> None:
    """Refuse, in one line naming each with the methods that read it, the settings ``method`` does not read."""
    problems = []
    for name in unread(settings, method, scope):
        takers = [m for m, e in METHODS.items() if name in e.settings]
        value = getattr(settings, name)
        shown = learner_name(value) if SETTINGS[name].kind in ("learner", "nuisance") else value
        if not takers:
            problems.append(f"{name}={shown!r} is a setting of the run (fit_run), not of {method}'s estimator")
            continue
        where = f"{', '.join(takers[:-1])} and {takers[-1]}" if len(takers) > 1 else takers[0]
        problems.append(f"{name}={shown!r} applies to {where} only, not to {method}")
    if problems:
        raise DMLCoreError(f"{'; '.join(problems)}; leave {'it' if len(problems) == 1 else 'them'} out.")


def for_method(settings: FitSettings, method: str) -> FitSettings:
    """``settings`` with those ``method`` does not read set back to their defaults: for settings chosen once for
    several methods (a study grid, the dashboard's plan, a lesson), each method taking its own."""
    return settings.replace(**{name: SETTINGS[name].default for name in unread(settings, method)})


def for_estimator(settings: FitSettings, method: str) -> FitSettings:
    """``settings`` with every one ``method``'s estimator does not read (the run's included) set back to its
    default: what :func:`make_estimator` takes for the fit of a run and its refits."""
    return settings.replace(**{name: SETTINGS[name].default for name in unread(settings, method, ("method", "run"))})


def make_estimator(method: str, settings: FitSettings | None = None, *, seed: int | None = None, **changes):
    """The unfitted estimator for ``method`` with ``settings`` (a :class:`FitSettings`; default every
    setting's declared default) changed by ``changes`` (settings by name, e.g. ``learner="gb"``).

    The estimator gets the settings its registry entry reads (``Method.settings``); any other given a
    value other than its default is refused in one line naming the methods that read it. For the
    DML-CMR family ``reps_crossfit`` > 1 repeats the fit with seeds seed, seed + 1, ... (RepeatedCrossFit).
    ``device`` ("auto", "cpu", "cuda", "cuda:N") is checked for every method, so a CUDA device torch
    cannot see is refused here. For the peer methods (KIV, DFIV, DeepGMM, KPV, PMMR, NMMR:
    dmlcore.estimators.peers) ``f_params`` holds the method's own settings, e.g. {"n_features": 500};
    ``cov_type`` and ``cluster`` are the standard errors of the linear IV methods; ``cluster`` also
    keeps each cluster in one of DML-CMR's K folds. ``seed`` (default ``settings.seed``) seeds the fit.
    """
    settings = FitSettings.of(settings, **changes)
    resolve_device(settings.device)
    entry = get_method(method)
    refuse_unread(settings, method, scope=("method", "run"))
    return (entry.build or _construct)(entry, settings, settings.seed if seed is None else seed)


def trains_networks(config: dict) -> bool:
    """Whether a run config's fit trains a torch network: an nn nuisance or second stage of a
    method with a learner, or a neural peer method (DFIV, DeepGMM, NMMR)."""
    entry = METHODS.get(config.get("method") or PAPER_METHOD)
    if entry is None:
        return False
    if entry.networks is not None:
        return entry.networks
    learner = config.get("learner") or SETTINGS["learner"].default
    used = {learner, config.get("f_model") or learner, nuisance_default(config.get("outcome_learner"), learner),
            nuisance_default(config.get("sampler"), learner)}
    return any(uses_networks(name) for name in used)


def record_learner(method: str, learner) -> str:
    """The run record's ``learner``: the one used (a regressor object: its repr), or what the method
    uses instead of one."""
    entry = METHODS[method]
    return learner_name(learner) if entry.uses_learner else entry.record_learner
