"""Typed views of a run record: :class:`RunRecord` and its parts (:class:`Effect`, :class:`FirstStage`,
:class:`Heldout`, ...), each a frozen dataclass read from the record's dict and written back to it.

The record (``Run.record``, the JSON of ``dmlcore fit --json``, the run store's and a study's rows) stays the
stored form and its field names the contract; these classes are how code reads it. Every part is built
*from* a dict (``from_dict``), so a record stored by an older version loads as it is, and ``to_dict()``
gives that dict back: the same keys in the same order, the same values (``tests/test_typed_results.py``
checks it on every method's kept record). A key a class does not name is kept in ``extra`` and written
back in its place; a key the dict lacks reads as None and is not written.

Names are the record's: ``run.effect.debiased.ci_lower`` is ``record["effect"]["debiased"]["ci_lower"]``.
:meth:`RunRecord.summary` is the record as text (in the spirit of linearmodels' ``res.summary``) and
:meth:`RunRecord.conf_int` the headline interval; :class:`dmlcore.runs.Run` hands both on.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from dmlcore.errors import DMLCoreError
from dmlcore.estimators.nuisance_target import CRITERIA, OWN, TARGET
from dmlcore.estimators.settings import SETTINGS
from dmlcore.inference.effect_notes import clusters_note, identification_note, spread_note
from dmlcore.inference.linear_iv import set_text

LINEAR_HEADS = ("2SLS", "LIML", "Fuller", "GMM")     # how a linear IV method's closed-form interval begins


def _part(cls, **more):
    """A field holding a record part read as ``cls`` (None when absent)."""
    return field(default=None, metadata={"part": cls, **more})


def _parts(cls):
    """A field holding a list of record parts, each read as ``cls``."""
    return field(default=None, metadata={"part": cls, "many": "list"})


def _by_name(cls):
    """A field holding a dict of record parts by name (a band's kind, a nuisance's role), each read as ``cls``."""
    return field(default=None, metadata={"part": cls, "many": "dict"})


@dataclass(frozen=True, kw_only=True)
class Part:
    """A part of a run record, read from its dict.

    Each field is the record key of the same name; ``extra`` holds the keys the class does not name and
    ``keys`` the dict's keys in their order (None: a part built in code, written in field order).
    """

    extra: Mapping = field(default_factory=dict, repr=False)
    keys: tuple | None = field(default=None, repr=False)

    @classmethod
    def _named(cls) -> dict:
        return {f.name: f for f in dataclasses.fields(cls) if f.name not in ("extra", "keys")}

    @classmethod
    def from_dict(cls, d: Mapping | None):
        """The typed view of ``d`` (a record part as stored); None for None."""
        if d is None:
            return None
        if not isinstance(d, Mapping):
            raise DMLCoreError(f"{cls.__name__}.from_dict reads a run record's dict; got {type(d).__name__} "
                               f"{d!r:.60}.")
        named = cls._named()
        values = {name: _read(named[name], value) for name, value in d.items() if name in named}
        return cls(**values, extra={k: v for k, v in d.items() if k not in named}, keys=tuple(d))

    def to_dict(self) -> dict:
        """The record part as stored: the dict this view was read from (a copy), keys in their order."""
        named = self._named()
        order = self.keys if self.keys is not None else (
            *(n for n in named if getattr(self, n) is not None), *self.extra)
        return {key: _write(named[key], getattr(self, key)) if key in named else copy.deepcopy(self.extra[key])
                for key in order}

    def __bool__(self) -> bool:
        """False for a part read from an empty dict, as the dict was (``if run.heldout:``)."""
        if self.keys is not None:
            return bool(self.keys)
        return bool(self.extra) or any(getattr(self, n) is not None for n in self._named())

    def get(self, key: str, default=None):
        """The stored value of ``key`` (as ``to_dict()`` writes it), ``default`` when absent: for keys named at
        run time (a table's columns, a study's settings)."""
        if not self.has(key):
            return default
        named = self._named()
        return _write(named[key], getattr(self, key)) if key in named else copy.deepcopy(self.extra[key])

    def has(self, key: str) -> bool:
        """Whether the record part holds ``key`` (a field read as None may be absent or None)."""
        return key in (self.keys if self.keys is not None else self.to_dict())

    def updated(self, **values):
        """A copy with these keys set, as ``{**part, key: value}`` would set them in the stored dict: a key the
        part holds keeps its place, a new one goes last (``dataclasses.replace`` keeps the old key order and
        would drop it). A value may be a part or its dict."""
        stored = self.to_dict()
        stored.update({key: value.to_dict() if isinstance(value, Part) else value for key, value in values.items()})
        return type(self).from_dict(stored)


def _read(f: dataclasses.Field, value):
    cls, many = f.metadata.get("part"), f.metadata.get("many")
    if cls is None or value is None:
        return value
    if many == "list":
        return [cls.from_dict(v) if isinstance(v, Mapping) else v for v in value]
    if many == "dict":
        return {k: cls.from_dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
    return cls.from_dict(value) if isinstance(value, Mapping) else value


def _write(f: dataclasses.Field, value):
    if isinstance(value, Part):
        return value.to_dict()
    if isinstance(value, list):
        return [v.to_dict() if isinstance(v, Part) else copy.deepcopy(v) for v in value]
    if isinstance(value, dict):
        return {k: v.to_dict() if isinstance(v, Part) else copy.deepcopy(v) for k, v in value.items()}
    return copy.deepcopy(value)


# ----------------------------------------------------------------- the effect

@dataclass(frozen=True, kw_only=True)
class Interval(Part):
    """One interval of the effect (an entry of ``effect.intervals``, or ``effect.plug_in``): ``interval`` says
    how it was made; ``set`` and ``kind`` an Anderson-Rubin set's pieces and shape; ``source`` "debiased" for the
    debiased effect's entry; ``refused`` a closed form refused under clustering; ``covered`` whether it holds the
    truth (simulations)."""

    interval: str | None = None
    estimate: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    estimand: str | None = None
    source: str | None = None
    weakly_identified: bool | None = None
    set: list | None = None
    kind: str | None = None
    refused: bool | None = None
    covered: bool | None = None

    @property
    def is_anderson_rubin(self) -> bool:
        return (self.interval or "").startswith("Anderson-Rubin")


@dataclass(frozen=True, kw_only=True)
class SieveDimension(Part):
    """The sieve effect of data-driven dimension beside the debiased effect (``effect.debiased.sieve_dimension``;
    :func:`dmlcore.inference.sieve_dimension.sieve_effect`): its estimate, standard error and interval, its
    plug-in, the chosen ``rung`` of the ladder, its ``basis`` and ``functions`` and ``why`` it was chosen; on
    proximal data, ``unchecked`` says why the data cannot check the additive bridge (None when they can)."""

    estimate: float | None = None
    std_error: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    plug_in: float | None = None
    strength: float | None = None
    weakly_identified: bool | None = None
    unchecked: str | None = None
    rung: int | None = None
    basis: str | None = None
    functions: list | None = None
    why: str | None = None
    interval: str | None = None


@dataclass(frozen=True, kw_only=True)
class Debiased(Part):
    """The debiased effect (``effect.debiased``; :func:`dmlcore.inference.debiased_effect.debiased_effect`):
    plug-in ``uncorrected`` + ``correction``, its ``std_error`` and interval, the representer's ``strength``
    and ``basis``, the weak-identification flag with its reason and the first-stage F it read, the ``rungs``
    of bases tried and the cross-fit ``variants``; the sieve effect of data-driven dimension beside it
    (``sieve_dimension``) and the flag that compares the two (``sieve_flag``, ``sieve_flag_reason``, read on
    ``sieve_gap`` and ``sieve_se_ratio``)."""

    estimate: float | None = None
    std_error: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    sieve_estimate: float | None = None
    sieve_std_error: float | None = None
    uncorrected: float | None = None
    correction: float | None = None
    strength: float | None = None
    weakly_identified: bool | None = None
    basis: str | None = None
    folds: int | None = None
    rungs: list | None = None
    variants: list | None = None
    interval: str | None = None
    f_hat: str | None = None
    clusters: dict | None = None
    weak_reason: str | None = None
    first_stage_f: float | None = None
    first_stage_statistic: str | None = None
    unchecked_reason: str | None = None
    covered: bool | None = None
    sieve_dimension: SieveDimension | None = _part(SieveDimension)
    sieve_flag: bool | None = None
    sieve_flag_reason: str | None = None
    sieve_gap: float | None = None
    sieve_se_ratio: float | None = None
    sieve_dimension_error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Spread(Part):
    """The debiased effect across specifications (``effect.spread``): ``low`` to ``high`` over
    ``specifications``, ``range_over_se`` and whether that is ``sensitive`` by ``rule``."""

    rule: str | None = None
    estimate: float | None = None
    std_error: float | None = None
    specifications: list | None = None
    low: float | None = None
    high: float | None = None
    range_over_se: float | None = None
    sensitive: bool | None = None
    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class EffectClusters(Part):
    """How the effect's intervals treat the clusters of ``column`` (``effect.clusters``)."""

    column: str | None = None
    count: int | None = None
    intervals: list | None = None
    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class Bootstrap(Part):
    """The bootstrap of the effect (``effect.bootstrap``): ``refits`` (``failed`` of them), their ``sd`` and
    ``percentile`` interval, whether whole clusters were resampled."""

    refits: int | None = None
    failed: int | None = None
    sd: float | None = None
    percentile: list | None = None
    clustered: bool | None = None
    interval: str | None = None


@dataclass(frozen=True, kw_only=True)
class Effect(Part):
    """The treatment's average effect or derivative (``record["effect"]``,
    :func:`dmlcore.runs.average_effect.effect_record`): the headline ``estimate`` with its interval
    (``ci_lower``, ``ci_upper`` at ``level``; ``interval`` says how, or why there is none), every interval
    computed (``intervals``), the ``plug_in`` and the ``debiased`` effect, the flag, the spread, how clusters
    are treated, the bootstrap; ``error`` when the data has no effect; ``truth`` (simulations)."""

    estimand: str | None = None
    treatment: str | None = None
    estimate: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    level: float | None = None
    interval: str | None = None
    intervals: list[Interval] | None = _parts(Interval)
    bootstrap: Bootstrap | None = _part(Bootstrap)
    plug_in: Interval | None = _part(Interval)
    debiased: Debiased | None = _part(Debiased)
    weakly_identified: bool | None = None
    debiased_error: str | None = None
    spread: Spread | None = _part(Spread)
    warning: str | None = None
    clusters: EffectClusters | None = _part(EffectClusters)
    error: str | None = None
    truth: float | None = None
    covered: bool | None = None

    @property
    def headline_is_debiased(self) -> bool:
        """Whether the headline is the debiased effect (else the method's own: 2SLS's coefficient, a plug-in)."""
        return bool(self.debiased) and self.estimate == self.debiased.estimate

    @property
    def anderson_rubin(self) -> Interval | None:
        """The Anderson-Rubin entry of ``intervals`` (linear IV methods), or None."""
        return next((e for e in self.intervals or [] if isinstance(e, Interval) and e.is_anderson_rubin), None)

    @property
    def linear_head(self) -> str | None:
        """The linear IV estimator whose closed-form interval is the headline ("2SLS", "LIML", "Fuller", "GMM"),
        or None (a debiased, bootstrap or delta-method interval, or none)."""
        interval = self.interval or ""
        return next((name for name in LINEAR_HEADS if interval.startswith(f"{name}:")), None)

    def how(self) -> str:
        """The headline interval's kind in a few words: "debiased", "bootstrap", "2SLS s.e., <covariance>",
        "delta method" (the CLI's summary line)."""
        interval = self.interval or ""
        kind = interval.split("(")[-1].split(", as ")[0].rstrip(")") if "(" in interval else ""
        linear = self.linear_head
        if self.headline_is_debiased:
            return "debiased"
        if self.bootstrap:
            return "bootstrap"
        if linear:
            return f"{linear} s.e., {kind}" if kind else f"{linear} s.e."
        return "delta method"

    def identification_note(self) -> str:
        """Whether the weak-identification flag fired, with the numbers it read
        (:func:`dmlcore.inference.effect_notes.identification_note`)."""
        return identification_note(self.to_dict())

    def spread_note(self) -> str:
        """The specification spread in a few words (:func:`dmlcore.inference.effect_notes.spread_note`)."""
        return spread_note(self.to_dict())

    def clusters_note(self) -> str:
        """How the intervals treat clusters (:func:`dmlcore.inference.effect_notes.clusters_note`)."""
        return clusters_note(self.to_dict())

    def notes(self) -> dict[str, str]:
        """{"identification", "spread", "clusters"}: the three notes that go beside an effect
        (:mod:`dmlcore.inference.effect_notes`)."""
        return {"identification": self.identification_note(), "spread": self.spread_note(),
                "clusters": self.clusters_note()}


# ----------------------------------------------------------------- diagnostics

@dataclass(frozen=True, kw_only=True)
class Strength(Part):
    """The instruments' (or proxies') strength in one statistic (``diagnostics.strength``): ``statistic``
    names it ("first-stage F", "effective F (robust)", ...), ``f_stat`` its value, ``level`` the verdict word."""

    statistic: str | None = None
    f_stat: float | None = None
    level: str | None = None
    text: str | None = None
    caveat: str | None = None
    n_clusters: int | None = None


@dataclass(frozen=True, kw_only=True)
class Relevance(Part):
    """One endogenous column's first-stage regression (``diagnostics.treatments[column]``, and the outcome
    proxies'): its F with degrees of freedom and p-value, partial R²."""

    f_stat: float | None = None
    f_pvalue: float | None = None
    df_num: int | None = None
    df_denom: int | None = None
    partial_r2: float | None = None
    np_r2: float | None = None
    np_r2_covariates: float | None = None
    np_r2_gain: float | None = None


@dataclass(frozen=True, kw_only=True)
class Endogenous(Part):
    """One endogenous column's first stage under the covariance choice (``diagnostics.inference.endogenous[column]``,
    :func:`dmlcore.inference.linear_iv.first_stage_inference`): partial R², the instruments' Wald statistic ÷ their
    number (``f_stat_cov``) with its p-value and distribution, Sanderson-Windmeijer's F."""

    partial_r2: float | None = None
    f_stat_cov: float | None = None
    f_cov_pvalue: float | None = None
    f_cov_dist: str | None = None
    sanderson_windmeijer_f: float | None = None


@dataclass(frozen=True, kw_only=True)
class HypothesisTest(Part):
    """A test statistic with its p-value, degrees of freedom and null (an over-identification test of
    ``diagnostics.inference.overid[name]``, Kleibergen-Paap's rank test); ``robust_to`` what it is robust to."""

    stat: float | None = None
    pvalue: float | None = None
    df: float | None = None
    null: str | None = None
    robust_to: str | None = None


@dataclass(frozen=True, kw_only=True)
class FirstStageInference(Part):
    """The first stage's statistics under the covariance (``diagnostics.inference``): effective F,
    Kleibergen-Paap, over-identification, their notes; or ``error`` when they could not be computed."""

    cov_type: str | None = None
    cluster: str | None = None
    n_clusters: int | None = None
    n_instruments: int | None = None
    effective_f: float | None = None
    kleibergen_paap: HypothesisTest | None = _part(HypothesisTest)
    kleibergen_paap_f: float | None = None
    overid: dict[str, HypothesisTest] | None = _by_name(HypothesisTest)
    endogenous: dict[str, Endogenous] | None = _by_name(Endogenous)
    notes: list | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class FirstStage(Part):
    """The linear first-stage diagnostics of IV and PCL data (``record["diagnostics"]``,
    :func:`dmlcore.inference.first_stage.first_stage`), or ``error`` when they could not be computed."""

    problem: str | None = None
    n: int | None = None
    instruments: list | None = None
    covariates: list | None = None
    treatments: dict | None = _by_name(Relevance)
    outcome_proxies: dict | None = _by_name(Relevance)
    strength: Strength | None = _part(Strength)
    weak: bool | None = None
    warning: str | None = None
    note: str | None = None
    dropped: list | None = None
    dropped_note: str | None = None
    cragg_donald_f: float | None = None
    inference: FirstStageInference | None = _part(FirstStageInference)
    cov_type: str | None = None
    cluster: str | None = None
    absorb: list | None = None
    absorbed_df: int | None = None
    weights: str | None = None
    error: str | None = None


# ----------------------------------------------------------------- the rest of a record

@dataclass(frozen=True, kw_only=True)
class History(Part):
    """One model's loss curve in a fold (``fold_losses[k][model]``): the ``epoch`` numbers with their ``train``
    and ``val`` losses."""

    epoch: list | None = None
    train: list | None = None
    val: list | None = None


@dataclass(frozen=True, kw_only=True)
class FoldLosses(Part):
    """One fold's losses (an entry of ``record["fold_losses"]``): ``fold``, its ``rows``, the second stage's
    final ``second_stage_loss``, and each trained model's loss curve under its name ("s", "g", ...:
    :meth:`histories`)."""

    fold: int | None = None
    rows: int | None = None
    second_stage_loss: float | None = None

    def histories(self) -> dict[str, History]:
        """{model: its loss curve}, for every entry that is one (a dict with ``epoch``), in the record's order."""
        return {name: History.from_dict(value) for name, value in self.extra.items()
                if isinstance(value, Mapping) and "epoch" in value}


@dataclass(frozen=True, kw_only=True)
class Heldout(Part):
    """The held-out projected residual (``record["heldout"]``, :func:`dmlcore.runs.heldout_residual.heldout_score`):
    ``relative`` (÷ Var Y) with its standard error, the per-fold ``folds``; or ``error``."""

    score: float | None = None
    relative: float | None = None
    std_error: float | None = None
    relative_std_error: float | None = None
    folds: list | None = None
    k: int | None = None
    what: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Band(Part):
    """One band of f (``record["bands"][kind]``, :func:`dmlcore.runs.bands.band_summary`): its ``level``,
    ``mean_width`` and, against a truth, ``coverage`` over ``n_points`` points."""

    what: str | None = None
    level: float | None = None
    points: str | None = None
    n_points: int | None = None
    mean_width: float | None = None
    coverage: float | None = None
    clusters: str | None = None


@dataclass(frozen=True, kw_only=True)
class NuisanceChoice(Part):
    """An ``"auto"`` nuisance's choice (``record["nuisances"][role]``, :mod:`dmlcore.learners.select`): the
    ``candidates``, their ``heldout_loss``, the ``choice`` (and per fold)."""

    candidates: list | None = None
    heldout_loss: dict | None = None
    choice: str | None = None
    choice_per_fold: list | None = None
    loss: str | None = None
    inner_folds: int | None = None
    scored_folds: int | None = None
    rows_scored: int | None = None
    criterion: str | None = None        # "target" when DML-CMR's target chose (nuisance_choice); absent: own loss
    target_loss: dict | None = None
    target_pair: str | None = None
    target_what: str | None = None


def nuisances_chosen(nuisances: Mapping | None) -> str | None:
    """The ``"auto"`` nuisances' choice and how it was made, in the one wording of the CLI's summary line, the
    Results page and :meth:`RunRecord.summary`: ``"outcome model gb-small, distribution model nn, chosen by their
    own held-out losses"`` (or ``"by DML-CMR's target (...)"`` when ``nuisance_choice="target"`` chose:
    :data:`~dmlcore.estimators.nuisance_target.CRITERIA`). ``nuisances``: a record's ``nuisances`` by role, as
    :class:`NuisanceChoice` views or dicts; None without an auto nuisance."""
    chosen = {role: part if isinstance(part, NuisanceChoice) else NuisanceChoice.from_dict(part)
              for role, part in (nuisances or {}).items() if part}
    if not chosen:
        return None
    target = any(part.criterion == TARGET for part in chosen.values())
    pair = ", ".join(f"{_NUISANCE_NAMES.get(role, role)} {part.choice}" for role, part in chosen.items())
    return f"{pair}, chosen {CRITERIA[TARGET if target else OWN]}"


_NUISANCE_NAMES = {"s": "outcome model", "g": "distribution model"}   # a record's nuisances by role


@dataclass(frozen=True, kw_only=True)
class LinearFit(Part):
    """A linear IV fit's extras (``record["linear"]``): R², the t's degrees of freedom, k-class ``kappa``,
    clusters, the covariance in words."""

    r2: float | None = None
    df_t: int | None = None
    kappa: float | None = None
    n_clusters: int | None = None
    covariance: str | None = None


@dataclass(frozen=True, kw_only=True)
class CLR(Part):
    """The conditional likelihood-ratio set (``record["clr"]``, :func:`dmlcore.inference.linear_iv.clr_set`),
    or ``error``."""

    pieces: list | None = None
    kind: str | None = None
    text: str | None = None
    level: float | None = None
    robust_to: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class WildBootstrap(Part):
    """The wild cluster bootstrap of ``fit --wild-bootstrap B`` (``record["wild_bootstrap"]``,
    :func:`dmlcore.inference.wild_bootstrap.wild_cluster_bootstrap`)."""

    beta0: float | None = None
    t: float | None = None
    pvalue: float | None = None
    interval: list | None = None
    draws: int | None = None
    weights: str | None = None
    n_clusters: int | None = None
    seed: int | None = None
    method: str | None = None


@dataclass(frozen=True, kw_only=True)
class DataSource(Part):
    """Where a run's data came from (``config.data``, read with ``DataSource.from_dict(config.data)``): a ``csv``
    file, a real ``dataset`` by name, a ``formula``; a simulation's options are kept in ``extra``."""

    csv: str | None = None
    dataset: str | None = None
    formula: str | None = None


@dataclass(frozen=True, kw_only=True)
class Config(Part):
    """The run's configuration (``record["config"]``): the ``method``, every setting as used (``settings``,
    also read as attributes: ``config.cov_type``) and the data set's options ``data``."""

    method: str | None = None
    data: dict | None = None

    @property
    def settings(self) -> Mapping:
        """Every setting of the fit by name (the nuisances as used included), in the record's order."""
        return self.extra

    def __getattr__(self, name: str):
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        if name in SETTINGS:          # a setting declared after the record was stored
            return None
        raise AttributeError(f"the run's config has no setting {name!r}; it holds {', '.join(extra) or 'none'}")



@dataclass(frozen=True, kw_only=True)
class RunRecord(Part):
    """A whole run record, typed (``Run.record``, a stored run's, a ``fit --json`` file's): the fields of
    :func:`dmlcore.runs.fit_run`'s record (docs/cli.md, "The run record")."""

    method: str | None = None
    dataset: str | None = None
    n: int | None = None
    seed: int | None = None
    folds: int | None = None
    learner: str | None = None
    mse: float | None = None
    metrics: dict | None = None
    seconds: float | None = None
    fold_losses: list[FoldLosses] | None = _parts(FoldLosses)
    second_stage_history: dict | None = None
    problem: str | None = None
    roles: dict | None = None
    categorical: list | None = None
    f_model: str | None = None
    reps_crossfit: int | None = None
    bands: dict[str, Band] | None = _by_name(Band)
    band_coverage: float | None = None
    band_width: float | None = None
    config: Config | None = _part(Config)
    nuisances: dict[str, NuisanceChoice] | None = _by_name(NuisanceChoice)
    device: str | None = None
    truth: str | None = None
    metric_help: dict | None = None
    machine: str | None = None
    created: str | None = None
    notes: list | None = None
    coefficients: dict | None = None
    std_errors: dict | None = None
    linear: LinearFit | None = _part(LinearFit)
    diagnostics: FirstStage | None = _part(FirstStage)
    clr: CLR | None = _part(CLR)
    heldout: Heldout | None = _part(Heldout)
    effect: Effect | None = _part(Effect)
    absorb: list | None = None
    weights: str | None = None
    wild_bootstrap: WildBootstrap | None = _part(WildBootstrap)
    curve: dict | None = None

    # -------------------------------------------------------- reading it

    @property
    def headline_band(self) -> Band | None:
        """The band that ``band_coverage`` and ``band_width`` summarise: the confidence band, else the spread of
        repeated cross-fits (:func:`dmlcore.runs.bands.band_summary`); None without a band."""
        bands = self.bands or {}
        return bands.get("confidence") or bands.get("split_spread")

    def role(self, name: str) -> list:
        """The columns of role ``name`` ("outcome", "treatment", "instrument", ...: ``roles[name]``); [] when the
        record names none."""
        return list((self.roles or {}).get(name) or [])

    @property
    def mse_fresh(self) -> float | None:
        """The MSE on fresh draws of the design (``metrics["mse_fresh"]``; None when the truth has none)."""
        return (self.metrics or {}).get("mse_fresh")

    @property
    def params(self) -> pd.Series:
        """A linear method's coefficients by column (the treatment's first), as linearmodels' ``params``."""
        return self._by_column(self.coefficients, "params", "coefficient")

    @property
    def bse(self) -> pd.Series:
        """A linear method's standard errors by column under its covariance, as linearmodels' ``std_errors``."""
        return self._by_column(self.std_errors, "bse", "std_error")

    def _by_column(self, values: dict | None, what: str, name: str) -> pd.Series:
        if not values:
            raise DMLCoreError(f"{what}: {self.method} has no coefficients (a linear IV method's record has them); "
                               f"read .effect for its average effect.")
        first = [c for c in (self.roles or {}).get("treatment", []) if c in values]
        order = [*first, *(c for c in values if c not in first)]
        return pd.Series([values[c] for c in order], index=order, name=name, dtype=float)

    def conf_int(self, level: float | None = None) -> pd.DataFrame:
        """The headline effect's interval: a one-row DataFrame (index: the treatment column; columns
        ``lower``, ``upper``; NaN where the record has no interval, as when weakly identified: ``effect.interval``
        says why). ``level`` is the record's own (the interval is stored, not recomputed); another is refused."""
        effect = self.effect
        if effect is None or effect.estimate is None:
            why = effect.error if effect is not None and effect.error else "the record has no effect"
            raise DMLCoreError(f"conf_int: no effect to give an interval for ({why}).")
        if level is not None and (effect.level is None or not math.isclose(level, effect.level)):
            raise DMLCoreError(f"conf_int(level={level!r}): this run's intervals were computed at "
                               f"{effect.level!r}; leave level out (intervals are stored with the run, not recomputed).")
        lower, upper = (math.nan if v is None else float(v) for v in (effect.ci_lower, effect.ci_upper))
        return pd.DataFrame({"lower": [lower], "upper": [upper]}, index=[effect.treatment or "effect"])

    def summary(self) -> str:
        """The run as text: what was fitted on what, the nuisances chosen, the effect with its interval, how it
        was made and its flag, the first stage's strength, the held-out residual, the MSE against a known truth,
        a linear method's coefficients."""
        return "\n".join(_summary_lines(self))

    def __str__(self) -> str:
        return self.summary()


def _num(value, fmt: str = ".4g") -> str:
    if value is None:
        return "n/a"
    try:
        return "n/a" if not math.isfinite(value) else format(value, fmt)
    except TypeError:
        return str(value)


def _summary_lines(rec: RunRecord) -> list[str]:
    width = 78
    rule, thin = "=" * width, "-" * width
    pairs = [("Method", rec.method), ("Data set", rec.dataset), ("Problem", (rec.problem or "").upper() or None),
             ("Rows", rec.n), ("Seed", rec.seed), ("Learner", rec.learner), ("Folds", rec.folds),
             ("Second stage", rec.f_model), ("MSE", _num(rec.mse) if rec.mse is not None else "no truth"),
             ("Seconds", _num(rec.seconds, ".1f") if rec.seconds is not None else None)]
    pairs = [(k, v) for k, v in pairs if v is not None]
    lines = ["Run summary".center(width), rule]
    for i in range(0, len(pairs), 2):
        left = f"{pairs[i][0] + ':':<14}{str(pairs[i][1]):<25}"
        right = f"{pairs[i + 1][0] + ':':<14}{pairs[i + 1][1]}" if i + 1 < len(pairs) else ""
        lines.append((left + right).rstrip())
    if rec.config is not None and rec.config.settings.get("cov_type"):
        cov = rec.config.settings["cov_type"]
        cluster = rec.config.settings.get("cluster")
        lines.append(f"{'Covariance:':<14}{cov}" + (f" by {cluster}" if cluster else ""))
    chosen = nuisances_chosen(rec.nuisances)
    if chosen:
        lines.append(f"{'Nuisances:':<14}auto: {chosen}")
    lines.append(thin)
    effect = rec.effect
    if effect is None:
        lines.append("Effect: not in the record")
    elif effect.estimate is None:
        lines.append(f"Effect: n/a ({effect.error})")
    else:
        level = f"{effect.level:.0%}" if effect.level is not None else "?"
        if effect.estimand:
            lines.append(f"Effect of {effect.treatment}: {effect.estimand}")
        lines.append(f"{'':<18}{'estimate':>12}{'std.err':>12}{'lower ' + level:>12}{'upper ' + level:>12}")
        se = (effect.debiased.std_error if effect.headline_is_debiased else
              (rec.std_errors or {}).get(effect.treatment) if effect.how().split(" s.e.")[0] in LINEAR_HEADS else None)
        rows = [("headline", effect.estimate, se, effect.ci_lower, effect.ci_upper)]
        if effect.plug_in is not None and effect.headline_is_debiased:
            rows.append(("plug-in", effect.plug_in.estimate, None, effect.plug_in.ci_lower, effect.plug_in.ci_upper))
        elif effect.debiased is not None:
            d = effect.debiased
            rows.append(("debiased", d.estimate, d.std_error, d.ci_lower, d.ci_upper))
        for name, *values in rows:
            lines.append(f"{name:<18}" + "".join(f"{_num(v):>12}" for v in values))
        interval = (effect.interval or "none").split(";")[0]
        lines.append(f"Interval: {effect.how() if effect.ci_lower is not None else interval}")
        ar = effect.anderson_rubin
        if ar is not None and ar.set is not None:
            lines.append(f"Anderson-Rubin set: {set_text(ar.set)} ({ar.kind})")
        if effect.debiased_error:
            lines.append(f"Debiased effect: {effect.debiased_error}")
        if effect.debiased:
            lines.append(f"Identification: {effect.identification_note()}")
            lines.append(f"Spread: {effect.spread_note()}")
        if effect.clusters:
            lines.append(f"Clusters: {effect.clusters_note()}")
        if effect.truth is not None:
            lines.append(f"True effect: {_num(effect.truth)}" + (
                "" if effect.covered is None else f" ({'inside' if effect.covered else 'outside'} the interval)"))
        if effect.warning and effect.warning != effect.interval:      # a weak headline's interval says it already
            lines.append(f"Warning: {effect.warning}")
    diagnostics = rec.diagnostics
    if diagnostics is not None:
        if diagnostics.error:
            lines.append(f"First stage: n/a ({diagnostics.error})")
        elif diagnostics.strength is not None:
            s = diagnostics.strength
            lines.append(f"First stage: {s.statistic or 'F'} {_num(s.f_stat, '.3g')} ({s.level})")
    held = rec.heldout
    if held is not None:
        lines.append(f"Held-out residual: n/a ({held.error})" if held.error else
                     f"Held-out residual: {_num(held.relative)} (s.e. {_num(held.relative_std_error)}; "
                     f"projected residual / Var(Y), lower is better)")
    if rec.band_width is not None:
        lines.append(f"Band: mean width {_num(rec.band_width)}, coverage {_num(rec.band_coverage, '.3f')}")
    if rec.coefficients:
        lines.append(thin)
        errors = rec.std_errors or {}
        lines.append(f"{'coefficient':<24}{'estimate':>12}{'std.err':>12}")
        params = rec.params
        for name, value in params.items():
            lines.append(f"{str(name)[:23]:<24}{_num(value):>12}{_num(errors.get(name)):>12}")
    lines.append(rule)
    return [wrapped for line in lines for wrapped in (textwrap.wrap(line, width, subsequent_indent="    ",
                                                                    break_on_hyphens=False) or [""])]


PARTS = (RunRecord, FoldLosses, History, Effect, Interval, Debiased, Spread, EffectClusters, Bootstrap, FirstStage, Strength, Relevance,
         FirstStageInference, Endogenous, HypothesisTest, Heldout, Band, NuisanceChoice, LinearFit, CLR, WildBootstrap, DataSource, Config)
