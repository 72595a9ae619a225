"""Every setting of a fit, declared once: its default, its constraints and where it applies.

:class:`FitSettings` is the one typed object a fit's settings travel in, from the CLI
(:meth:`FitSettings.from_args`), a study's config (:meth:`FitSettings.from_config`) or the
dashboard's plan, to :func:`~dmlcore.estimators.make_estimator` and :func:`~dmlcore.runs.fit_run`.
Each field's declaration (:class:`Setting`, in the field's metadata) gives the CLI flag, the study key,
the check of a value and the help text; the method registry's ``settings`` say which methods read it.

Scopes: a ``"method"`` setting is read by the methods whose registry entry lists it, and refused in one
line (:func:`~dmlcore.estimators._registry.refuse_unread`) for any other when it is given a value other than
its default;
a ``"run"`` setting (the seed, the covariance, the effect's refits, the executor) applies to every fit.

Groups: every setting is in one ``group``: ``"estimator"`` (what the method fits: the learner, K, the
draws, ...), ``"run"`` (what is computed around the fit: the seed, the covariance, the effect's refits) or
``"infrastructure"`` (where it runs: the device, the executor, the jobs); ``--help`` lists the flags in
those three sections.

Adding a setting: a field here, its name in the ``settings`` of the registry entries that read it
(dmlcore/estimators/_registry.py) and the constructor argument of the same name in the classes that
use it. The CLI flag (:func:`add_setting_flags`, in every command its ``commands`` name), the study key,
the check, the run record's ``config`` and the refusal follow.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

from dmlcore.errors import DMLCoreError
from dmlcore.executors import EXECUTORS, JOBS
from dmlcore.stats.covariance import (CLUSTER_DF, CLUSTER_DF_DEFAULT, COV_CHOICES, COV_DEFAULT, FIXEF_K, FIXEF_K_DEFAULT,
                                     SMALL_DEFAULT)
from dmlcore.stats.resample import SEED
from dmlcore.estimators.second_stage import SECOND_STAGES
from dmlcore.learners.registry import LEARNER_REGISTRY
from dmlcore.learners.select import AUTO   # outcome_learner / sampler chosen by cross-fitted held-out loss
from dmlcore.learners.tabular import learner_name


DECLARED = type("Declared", (), {"__repr__": lambda self: "DECLARED"})()   # a flag's default: the declared one


@dataclass(frozen=True)
class Setting:
    """The declaration of one setting (a field of :class:`FitSettings`).

    ``kind``: "int", "text", "learner" (a name of the learner registry or an object), "nuisance" (the
    same or ``"auto"``), "dict", "bool"; ``choices``: the named values a text setting takes; ``minimum``: the smallest integer;
    ``pattern``: a regular expression a text value matches (``expects`` says it in words); ``scope``:
    "method", "run" or "every" (the seed: every estimator takes it; module notes);
    ``study``: a key of a study grid (and, in ``study``, a flag that takes a comma list of values);
    ``later``: added after stores held fits, so left out of a stored config's key while unset;
    ``keeps_none``: None is a value of its own (the learner's own, no cap), not "the default";
    ``label``: what a user reads for it in tables and forms (study tables' column headers).

    Its flag (:func:`add_setting_flags`): ``commands``, the commands that have it ("fit", "bench",
    "study"; none: no flag); ``group``, its section of ``--help`` ("estimator", "run", "infrastructure");
    ``option``: the flag's name where it is not the setting's with dashes (``cov``), also argparse's name of it;
    ``grid_dest``: argparse's name of the study's comma list where not the setting's; ``metavar``;
    ``cli_default``: the flag's default where the command chooses one at run time (None; by default the
    declared default); ``helps``: (command, text) pairs where a command's flag says more than ``help`` or
    means that command's own thing (``--jobs`` of a study: fits at once). A ``bool`` setting that is True by
    default is switched off by ``--no-NAME``; one that is False by default is ``--NAME`` (or ``--NAME false``).
    """

    name: str
    default: Any
    help: str
    kind: str = "text"
    choices: Any = None
    minimum: int | None = None
    pattern: str | None = None
    expects: str | None = None
    scope: str = "method"
    study: bool = True
    commands: tuple = ("fit", "bench", "study")
    later: bool = False
    keeps_none: bool = False
    label: str = ""
    group: str = "estimator"
    option: str | None = None
    grid_dest: str | None = None
    metavar: str | None = None
    cli_default: Any = DECLARED
    helps: tuple = ()

    @property
    def cli(self) -> bool:
        """Whether some command has a flag for it."""
        return bool(self.commands)

    @property
    def dest(self) -> str:
        """argparse's name of its flag (``args.cov`` for ``cov_type``)."""
        return self.option or self.name

    @property
    def negated(self) -> bool:
        """A switch that is on by default: its flag is ``--no-NAME``."""
        return self.kind == "bool" and self.default is True

    @property
    def flag(self) -> str:
        name = "--" + self.dest.replace("_", "-")
        return "--no-" + name[2:] if self.negated else name

    def flag_default(self):
        """The default of its flag in ``fit`` and ``bench``: the declared one unless the command chooses."""
        return self.default if self.cli_default is DECLARED else self.cli_default

    def help_for(self, command: str) -> str:
        return dict(self.helps).get(command, self.help)

    def named_values(self) -> tuple | None:
        """The named values it takes (None: any value of its kind)."""
        if self.kind == "learner":
            return tuple(LEARNER_REGISTRY)
        if self.kind == "nuisance":
            return (*LEARNER_REGISTRY, AUTO)
        return self.choices

    def check(self, value) -> None:
        """Raise a one-line DMLCoreError unless ``value`` is allowed (None always is: the default)."""
        if value is None:
            return
        named = self.named_values()
        if named is not None and isinstance(value, str) and value not in named:
            raise DMLCoreError(f"Unknown {self.name} {value!r}; choose one of {', '.join(named)}.")
        if self.kind == "int" and self.minimum is not None and value < self.minimum:
            what = "folds (K)" if self.name == "folds" else self.name
            raise DMLCoreError(f"{what} must be at least {self.minimum}; got {value}.")
        if self.pattern is not None and not re.fullmatch(self.pattern, str(value)):
            raise DMLCoreError(f"{self.name} must be {self.expects}; got {value!r}.")

    def example(self):
        """A value other than the default (for the tests and the docs that show the setting at work)."""
        named = self.named_values()
        if named is not None:
            return next(v for v in named if v != self.default)
        if self.kind == "int":
            return (self.default or self.minimum or 1) + 1
        if self.kind == "dict":
            return {"example": 1}
        if self.kind == "bool":
            return not self.default
        return "cpu" if self.name == "device" else "example"

    def text(self, value) -> str:
        """``value`` as its flag takes it (a dict as JSON)."""
        return json.dumps(value) if self.kind == "dict" else str(value)

    def unset(self, value) -> bool:
        """Whether ``value`` leaves the setting as it is by default."""
        if value is None or value is self.default:
            return True
        if self.kind == "dict" and value == {}:
            return True
        return isinstance(value, (str, int, float, bool)) and value == self.default


# what the executor flags mean in a study (and bench): where the fits run, not a fit's refits
_STUDY_EXECUTOR = "local processes, or Ray tasks (a cluster with --address, else a local instance)"
_STUDY_JOBS = "fits at once: worker processes (local, default 1) or the CPUs of a local Ray instance (default: all)"
_STUDY_ADDRESS = "a running Ray cluster: host:port, ray://host:port or auto"


def _declare(default, help: str, **kw):
    return field(default=default, metadata={"setting": (help, kw)})


@dataclass(frozen=True)
class FitSettings:
    """The settings of one fit (module notes); every field's default is its one declared default.

    Make one with ``FitSettings(learner="gb", folds=5)``, change one with ``settings.replace(n_draws=4)``
    (unknown names are refused in one line, listing the known ones).
    """

    # read by the methods whose registry entry lists them (CLI flags and study keys, in this order)
    learner: Any = _declare("nn", "nuisance learner", kind="learner", label="Learner")
    folds: int = _declare(10, "K for DML-CMR cross-fitting", kind="int", minimum=2, label="K (folds)")
    epochs: int | None = _declare(None, "maximum epochs (boosting stages) per model", kind="int", minimum=1,
                                  keeps_none=True, label="Epochs at most")
    n_draws: int = _declare(8, "draws per row to estimate E[f(X)|c]", kind="int", minimum=1, label="Draws per row")
    f_model: str | None = _declare(None, "second stage f (default: the learner's own; sieve gives confidence bands)",
                                   choices=tuple(SECOND_STAGES), keeps_none=True, label="Second stage f")
    reps_crossfit: int = _declare(1, "repeat the fit R times with seeds seed..seed+R-1 (median f-hat, split-spread "
                                     "band)", kind="int", minimum=1, label="Cross-fits R")
    device: str = _declare("auto", "where the networks run: auto (CUDA when torch sees one, else the CPU), cpu, "
                                   "cuda or cuda:N", pattern=r"auto|cpu|cuda(:\d+)?",
                          expects="auto, cpu, cuda or cuda:N", label="Device", group="infrastructure",
                          grid_dest="devices")
    outcome_learner: Any = _declare(None, "the outcome model s(c) = E[Y|C] of dml-cmr, ce-dml-cmr (default: auto with "
                                          "--learner nn or gb, else --learner's); auto: gb or gb-small, and nn too with --learner nn (nn alone on images), "
                                          "whichever has the lower cross-fitted held-out loss (recorded in the run's "
                                          "nuisances); name a learner (nn) to keep it alone", kind="nuisance",
                                    later=True, keeps_none=True, label="Outcome model s(c)")
    sampler: Any = _declare(None, "the distribution model of the treatment given C (DML family; default: auto with "
                                  "--learner nn or gb, else --learner's); auto: gb or gb-small, and nn too with --learner nn (nn alone on images), by "
                                  "cross-fitted energy score", kind="nuisance", later=True, keeps_none=True,
                            label="Distribution model")
    nuisance_choice: str = _declare("own", "how DML-CMR's auto nuisances are chosen: own (each by its own held-out "
                                           "loss, the default) or target (the pair whose pilot second stage has the "
                                           "lowest held-out projected residual; a pilot, dmlcore.estimators."
                                           "nuisance_target)", choices=("own", "target"), later=True,
                                    label="Nuisance choice")
    n_knots: int | None = _declare(None, "interior knots of Sieve 2SLS's splines (default: chosen by validation on the "
                                         "training rows)", kind="int", minimum=0, later=True, keeps_none=True,
                                   label="Interior knots (Sieve 2SLS)")
    # the linear IV methods' small-sample conventions (docs/linear-iv.md, "Conventions")
    small: bool = _declare(SMALL_DEFAULT, "Stata's small: the n/(n-k) factor (HC1; clustered: CR1) and t / F with n - k or "
                                  "G - 1 degrees of freedom in intervals, stars and the Anderson-Rubin set "
                                  "(linear IV methods)",
                           kind="bool", later=True, label="small (t, F)")
    fixef_k: str = _declare(FIXEF_K_DEFAULT, "absorbed levels counted in a clustered CR1 / small factor's k: full (Stata areg, "
                                    "ivreg2 with dummies) or nested (not those nested in a cluster column: fixest, "
                                    "reghdfe)", choices=FIXEF_K, later=True, label="Fixed effects' k")
    cluster_df: str = _declare(CLUSTER_DF_DEFAULT, "two-way clustering's G/(G-1) under CR1 / small: conventional (each "
                                               "term its own G: linearmodels, ivreg2) or min (the smaller G: fixest)",
                               choices=CLUSTER_DF, later=True, label="Two-way G")
    # the learners' and the second stage's own settings (a dict each; no flag, no study key)
    nuisance_params: dict | None = _declare(None, "settings of the named learner (its DEFAULTS), a JSON object: "
                                                  "'{\"lr\": 0.001}'", kind="dict", study=False, commands=("fit",),
                                            metavar="JSON")
    f_params: dict | None = _declare(None, "settings of the second stage, or a peer's or Fuller's own, a JSON "
                                           "object: '{\"alpha\": 4}'", kind="dict", study=False,
                                     commands=("fit",), metavar="JSON")
    # every fit: what is computed around it (group "run") and where it runs ("infrastructure")
    seed: int = _declare(SEED, "seeds the fit (and draws a simulation's data)", kind="int", scope="every", study=False,
                         commands=("fit",), group="run")
    cov_type: str = _declare(COV_DEFAULT, "covariance of 2SLS's standard errors, Anderson-Rubin set and first-stage "
                                           "F: unadjusted (homoskedastic, default), robust (heteroskedasticity-robust) "
                                           "or clustered (with --cluster)", choices=COV_CHOICES,
                             scope="run", study=False, commands=("fit", "study"), group="run", option="cov")
    cluster: str | None = _declare(None, "the column that groups rows, with --cov clustered", scope="run",
                                   study=False, commands=("fit", "study"), group="run", metavar="COLUMN")
    bootstrap: int | None = _declare(None, "add a bootstrap interval of the effect from B refits on resampled rows "
                                           "(e.g. 200)", kind="int", scope="run", study=False, commands=("fit",),
                                     group="run", metavar="B")
    heldout_folds: int | None = _declare(None, "folds of the held-out residual (default: 2 without a known truth, "
                                               "else off; 0: off)", kind="int", scope="run", study=False,
                                         commands=("fit",), group="run", metavar="K")
    effect_folds: int | None = _declare(None, "refits that cross-fit f-hat for the debiased effect (default: the "
                                              "held-out residual's, else 2; 0: correct the full-sample fit, measured "
                                              "biased)", kind="int", scope="run", study=False, commands=("fit",),
                                        group="run", metavar="K")
    debias: bool = _declare(True, "skip the debiased effect: no refits of the method for it (2 on simulated data; on "
                                  "real data it shares the held-out residual's); the effect is then the plug-in, "
                                  "with no debiased interval", kind="bool", scope="run", study=False, group="run")
    time_limit: int | None = _declare(None, "seconds a fit may take with every refit (None: no limit); a fit over "
                                      "it stops and fails", kind="int", minimum=1, scope="run", study=False,
                                      commands=("study",), group="run", metavar="SECONDS",
                                      label="Time limit per fit (s)",
                                      helps=(("study", "a fit (with every refit) that runs longer stops and fails; a "
                                                       "study key (time_limit) that leaves the fits' store keys "
                                                       "alone"),))
    executor: str = _declare(EXECUTORS[0], "where a run's refits run (bootstrap, held-out residual, debiased effect): "
                                      "local processes or a Ray cluster", choices=EXECUTORS, scope="run",
                             study=False, group="infrastructure",
                             helps=(("bench", _STUDY_EXECUTOR), ("study", _STUDY_EXECUTOR)))
    jobs: int = _declare(JOBS, "refits run at once (more than 1: in worker processes, beside the fit)", kind="int",
                         scope="run", study=False, group="infrastructure", cli_default=None,
                         helps=(("fit", "refits run at once in worker processes, the held-out residual's and the "
                                        "debiased effect's beside the fit (default {fit_jobs}, or the cores when "
                                        "fewer; 1: one after another in this process); the numbers are the same"),
                                ("bench", _STUDY_JOBS), ("study", _STUDY_JOBS)))
    address: str | None = _declare(None, "Ray cluster address for --executor ray (default: a local Ray)",
                                   scope="run", study=False, group="infrastructure",
                                   helps=(("bench", _STUDY_ADDRESS), ("study", _STUDY_ADDRESS)))

    def replace(self, **changes) -> "FitSettings":
        """A copy with ``changes``; a name that is not a setting is refused in one line."""
        unknown = [name for name in changes if name not in SETTINGS]
        if unknown:
            raise DMLCoreError(f"Unknown fit setting(s) {', '.join(map(repr, unknown))}; known: "
                               f"{', '.join(SETTINGS)}.")
        return replace(self, **changes) if changes else self

    @classmethod
    def of(cls, settings: "FitSettings | None" = None, **changes) -> "FitSettings":
        """``settings`` (default: every default) with ``changes``."""
        if settings is not None and not isinstance(settings, FitSettings):
            raise DMLCoreError(f"settings must be a FitSettings; got {type(settings).__name__}.")
        return (settings or DEFAULTS).replace(**changes)

    def changed(self) -> dict:
        """The settings set to something other than their defaults."""
        return {name: getattr(self, name) for name, s in SETTINGS.items() if not s.unset(getattr(self, name))}

    def config(self) -> dict:
        """The settings as a run record's ``config`` holds them (learner objects by name)."""
        out = {}
        for name, s in SETTINGS.items():
            value = getattr(self, name)
            out[name] = learner_name(value) if s.kind in ("learner", "nuisance") and value is not None else value
        return out

    @classmethod
    def from_config(cls, config: dict) -> "FitSettings":
        """The settings of a study's config (:mod:`dmlcore.studies.spec`): a setting the config leaves None
        takes its default unless None is a value of its own (``keeps_none``)."""
        changes = {name: config[name] for name, s in SETTINGS.items()
                   if name in config and (config[name] is not None or s.keeps_none)}
        return DEFAULTS.replace(**changes)

    @classmethod
    def from_args(cls, args) -> "FitSettings":
        """The settings of parsed command-line ``args`` (the flags :func:`add_setting_flags` adds); an option the
        command does not have keeps its default."""
        changes = {name: getattr(args, s.dest) for name, s in SETTINGS.items() if hasattr(args, s.dest)}
        return DEFAULTS.replace(**changes)


def as_settings(value) -> FitSettings:
    """``value`` as a :class:`FitSettings`: itself, or a dict of settings by name (None: the defaults)."""
    if isinstance(value, FitSettings):
        return value
    if value is not None and not isinstance(value, dict):
        raise DMLCoreError(f"Fit settings are a FitSettings or a dict of them by name; got {type(value).__name__}.")
    return DEFAULTS.replace(**(value or {}))


def _declarations() -> dict[str, Setting]:
    out = {}
    for f in fields(FitSettings):
        help, kw = f.metadata["setting"]
        out[f.name] = Setting(f.name, None if f.default is MISSING else f.default, help, **kw)
    return out


SETTINGS: dict[str, Setting] = _declarations()
DEFAULTS = FitSettings()
# the settings a study grid lists values of, with their defaults (those of `python -m dmlcore fit`)
STUDY_SETTINGS: dict[str, Any] = {name: s.default for name, s in SETTINGS.items() if s.study}


GROUPS = {"estimator": "estimator settings (what the method fits)",
          "run": "run settings (what is computed around the fit)",
          "infrastructure": "infrastructure (where it runs)"}


def setting_group(parser, group: str):
    """The argparse argument group of ``parser`` that lists the flags of settings in ``group`` (made once)."""
    groups = parser.__dict__.setdefault("_setting_groups", {})
    if group not in groups:
        groups[group] = parser.add_argument_group(GROUPS[group])
    return groups[group]


def add_setting_flags(parser, command: str = "fit", *, grid: bool = False, declared: dict | None = None,
                      **values) -> None:
    """Add to an argparse parser a flag for every declared setting whose ``commands`` name ``command``
    (``--learner``, ``--folds``, ``--seed``, ``--cov``, ``--jobs``, ...), each in its group's section of
    ``--help``: typed, with its choices and default; with ``grid`` (``study``), a study key's flag takes a comma
    list of values checked by the study spec. ``declared``: the declarations (default :data:`SETTINGS`);
    ``values``: what a help text's ``{name}`` stands for (``fit_jobs``)."""
    declared = SETTINGS if declared is None else declared
    for group in GROUPS:           # the sections in this order: estimator, run, infrastructure
        if any(command in s.commands and s.group == group for s in declared.values()):
            setting_group(parser, group)
    for s in declared.values():
        if command not in s.commands:
            continue
        target = setting_group(parser, s.group)
        help = s.help_for(command)
        for key, value in values.items():
            help = help.replace("{" + key + "}", str(value))
        named = s.named_values()
        if grid and s.study:
            choices = f": {', '.join(named)}" if named is not None else ""
            default = "" if s.default is None else f" (default {s.default})"
            target.add_argument(s.flag, dest=s.grid_dest or s.name, help=f"{help}{choices}{default}; a comma list",
                                metavar=s.name.upper())
            continue
        kwargs = {"dest": s.dest, "help": help, "default": s.flag_default()}
        if s.negated:
            target.add_argument(s.flag, action="store_false", **kwargs)
            continue
        if s.metavar:
            kwargs["metavar"] = s.metavar
        if s.kind == "int":
            kwargs["type"] = int
        if s.kind == "bool":       # --small alone is True; --small false / true as well
            kwargs.update(type=parse_bool, nargs="?", const=True)
        if s.kind == "dict":
            kwargs["type"] = parse_object
        if named is not None:
            kwargs["choices"] = named
        target.add_argument(s.flag, **kwargs)


def parse_bool(text) -> bool:
    """A command line's true / false (1 / 0, yes / no)."""
    value = str(text).strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise ValueError(f"not true or false: {text!r}")


def parse_object(text) -> dict:
    """A command line's JSON object (a dict setting's value)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object such as '{{\"lr\": 0.001}}': {text!r}")
    return value
