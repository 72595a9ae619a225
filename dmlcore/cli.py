"""Command line: ``dmlcore`` (= ``python -m dmlcore``) ``fit ...``, ``study ...``, ``bench ...`` (a one-CSV
study) and ``list`` (the data sets and methods, from their registries).

Bad input exits with status 2 and one line naming the problem; no traceback reaches the user. An option
given on the command line that the data set or method does not use is refused, all such options named in
one line (:func:`refuse_unused_options`): an option is a data set's when it is declared beside its simulator
(a ``DataOption`` in the data registry's ``SIMULATORS``), a method's when it is in some registry entry's
``settings``, and your own file's when it is in ``OWN_DATA_OPTIONS``. The flags of settings and data options
are made from their declarations (:func:`~dmlcore.estimators.settings.add_setting_flags`,
:func:`~dmlcore.data.registry.add_data_flags`): declaring a new one is all it takes to have it parsed, listed
and checked.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from dmlcore.data.datasets import REAL_DATASETS
from dmlcore.data.registry import (DATA_OPTIONS, DATASET_OPTIONS, SIMULATED, add_data_flags, dataset_names,
                                   dataset_options, load_dataset, real_dataset_names)
from dmlcore.device import resolve_device
from dmlcore.errors import DMLCoreError, FitDiverged
from dmlcore.inference.linear_iv import set_text
from dmlcore.linear_cli import (add_linear_options, add_table_command, check_table, check_wild_bootstrap, formula_data,
                                table_command, table_from_args, wild_bootstrap_record, with_linear_options)
from dmlcore import plugins
from dmlcore.plugins import add_to_environment, load_plugins
from dmlcore.process import set_threads
from dmlcore.estimators import for_method
from dmlcore.estimators.settings import DEFAULTS, SETTINGS, FitSettings, add_setting_flags, setting_group
from dmlcore.estimators import METHODS
from dmlcore.runs import fit_run
from dmlcore.runs.typed import CLR, Config, Effect, FirstStage, Interval, RunRecord, nuisances_chosen
from dmlcore.studies.command import (OWN_DATA_OPTIONS, add_own_data_options, add_study_parser, exit_status,
                                    own_data, run_cli_study, study_command)
from dmlcore.studies.spec import FIT_SETTINGS, LATER_SETTINGS, refuse_unused, spec_from_dict


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def cli_datasets() -> list[str]:
    """The data sets ``--dataset`` names: the registry's, less ``table`` (a study's kept copy of a file)."""
    return [name for name in dataset_names() if name != "table"]


def _add_common(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--dataset", default="demand-iv", metavar="NAME",
                   help=f"built-in data set: {', '.join(cli_datasets())} (default demand-iv; `list datasets` "
                        f"gives each one's problem, rows, roles, source and options)")
    # --n (bench: --sizes, a comma list), --rho, ...: a flag per declared data set option (dmlcore.data.registry)
    add_data_flags(p, command, defaults={"n": "1000,2000,5000"})
    # --learner, --folds, --seed, --cov, --jobs, ...: a flag per declared setting of this command, in the
    # --help sections of their groups (dmlcore.estimators.settings)
    add_setting_flags(p, command, fit_jobs=FIT_JOBS)
    setting_group(p, "infrastructure").add_argument(
        "--threads", type=int, help="torch threads (default 1, or DMLCORE_TORCH_THREADS; 2 is faster on an idle "
                                    "2-core machine, much slower when other work shares the cores)")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other error of the CLI."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")

    def given(self, argv: list[str]) -> list[str]:
        """The options (not positionals) written in ``argv``, argparse's names in their order, even one equal
        to its default."""
        saved = {action: action.default for action in self._actions if action.option_strings}
        for action in saved:
            action.default = argparse.SUPPRESS
        try:
            return list(vars(self.parse_args(argv)))
        finally:
            for action, default in saved.items():
                action.default = default


FIT_JOBS = 2       # `fit`'s worker processes for a run's refits (the library's default is 1: in process)
# bench's comma list of an option under its own flag (--sizes: the data sets' option n), from the declarations
DATA_ALIASES = {option.grid_flag: name for name, option in DATA_OPTIONS.items() if option.grid_flag}


def _data_options(args) -> dict:
    """The data set options of parsed ``args`` by name (each declared option with a flag of this command;
    bench's comma lists, such as --sizes, are the caller's)."""
    return {name: getattr(args, name) for name, option in DATA_OPTIONS.items() if option.cli and hasattr(args, name)}


def refuse_unused_options(args, methods: list[str]) -> None:
    """Refuse, in one line naming them all, the options given (``args.given``) that the data set (or your
    own file) or every one of ``methods`` does not use: their registries say which (dmlcore.studies.spec.
    refuse_unused, the check a study makes); the own-data options apply with ``--csv`` only."""
    given = getattr(args, "given", [])
    data_names = {option for options in DATASET_OPTIONS.values() for option in options}
    command = getattr(args, "command", "fit")     # the method settings this command has flags of
    settings = [name for name, setting in SETTINGS.items() if setting.scope == "method" and command in setting.commands]
    flags = {option: _flag(dest) for dest, option in DATA_ALIASES.items() if hasattr(args, dest)}
    flags.update({DATA_ALIASES.get(d, d): _flag(d) for d in given})
    spell = lambda name: flags.get(name, _flag(name))  # noqa: E731
    problems = []
    if getattr(args, "csv", None):
        dataset = None
        if "dataset" in given:
            problems.append("--dataset does not apply with --csv (your own file); give one of the two.")
    else:
        dataset = args.dataset
        own = [spell(d) for d in given if d in OWN_DATA_OPTIONS]
        if own:
            problems.append(f"{', '.join(own)} appl{'ies' if len(own) == 1 else 'y'} to your own file only "
                            f"(--csv FILE), not to --dataset {dataset}; leave {'it' if len(own) == 1 else 'them'} out.")
    data = [DATA_ALIASES.get(d, d) for d in given if DATA_ALIASES.get(d, d) in data_names]
    try:
        if dataset is None or dataset in dataset_names():   # else load_dataset refuses it, listing the data sets
            refuse_unused(dataset, data, methods, [d for d in given if d in settings], spell, known=settings)
    except DMLCoreError as err:
        problems.append(str(err))
    if problems:
        raise DMLCoreError(" ".join(problems))


EXAMPLES = """examples (`{prog} COMMAND --help` gives every option of a command):
  {prog} list                          the data sets and methods, with what each takes
  {prog} fit --dataset card --method 2sls --cov robust
  {prog} fit --dataset card --method dml-cmr --learner gb
  {prog} fit --csv FILE --outcome Y --treatment D --instrument Z --covariates X1,X2 \\
      --method 2sls --cov clustered --cluster G --dropna
  {prog} bench --dataset demand-iv --sizes 1000,2000 --methods dml-cmr,naive --reps 10"""


def _prog() -> str:
    """How the user called us: the ``dmlcore`` console script, else ``python -m dmlcore``."""
    return "dmlcore" if Path(sys.argv[0]).name == "dmlcore" else "python -m dmlcore"


def build_parser() -> argparse.ArgumentParser:
    prog = _prog()
    parser = _Parser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
                     description="DML-CMR for IV regression and proximal causal learning.",
                     epilog=EXAMPLES.format(prog=prog))
    parser.add_argument("--plugin", action="append", metavar="FILE_OR_MODULE",
                        help="a module that registers your own methods (dmlcore.register_method), added to "
                             "DMLCORE_PLUGINS for this command and its workers; repeatable, and accepted after "
                             "the command too (docs/studies.md, 'Your own method')")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    shown = sub.add_parser("list", help="the data sets (problem, rows, roles, source, options) and methods "
                                        "(problems, settings)")
    shown.add_argument("what", nargs="?", choices=("datasets", "methods"), help="one of the two (default both)")

    fit = sub.add_parser("fit", help="fit one estimator and report its metrics")
    _add_common(fit, "fit")
    fit.add_argument("--method", default="dml-cmr", choices=METHODS)
    fit.add_argument("--json", help="write the full run record here")
    fit.add_argument("--predictions", help="write f-hat at every row here (CSV)")
    add_own_data_options(fit)
    add_linear_options(fit)      # --absorb, --weights, --formula, --table (dmlcore.linear_cli)

    bench = sub.add_parser("bench", help="repeat fits over sizes, seeds and methods")
    _add_common(bench, "bench")
    bench.add_argument("--methods", default="dml-cmr,ce-dml-cmr,naive",
                       help=f"comma-separated, from {', '.join(METHODS)} (default dml-cmr,ce-dml-cmr,naive)")
    bench.add_argument("--reps", type=int, default=10, help="repetitions (seeds 0..reps-1)")
    bench.add_argument("--seed-offset", type=int, default=0, help="first seed")
    bench.add_argument("--out", default="results.csv", help="CSV of every fit (appended as it runs)")
    add_study_parser(sub)
    add_table_command(sub)        # several fit --json records side by side (dmlcore.linear_cli)
    parser.commands = sub.choices
    return parser


def _fit(args) -> int:
    check_table(args)
    check_wild_bootstrap(args)
    refuse_unused_options(args, [args.method])
    if args.formula:
        data, truth = formula_data(args, real_dataset_names()), None
        dataset = Path(args.csv).name if args.csv else args.dataset
        params = {"csv": args.csv} if args.csv else {"dataset": args.dataset}
        params["formula"] = args.formula
    elif args.csv:
        data, truth, params, dataset = own_data(args), None, {"csv": args.csv}, Path(args.csv).name
    else:
        loaded = load_dataset(args.dataset, seed=args.seed, **_data_options(args))
        data, truth, params, dataset = loaded.data, loaded.truth, loaded.params, args.dataset
    data = with_linear_options(args, data)
    args.jobs = min(FIT_JOBS, os.cpu_count() or 1) if args.jobs is None else args.jobs
    settings = for_method(FitSettings.from_args(args), args.method)   # a flag the method does not read was refused
    run = fit_run(data, args.method, settings, truth=truth, dataset=dataset, data_params=params)
    run.record.update(wild_bootstrap_record(args, data))       # --wild-bootstrap B (dmlcore.linear_cli)
    result = run.result                                        # the record, typed (dmlcore.runs.typed)
    for line in _diagnostics_notes(result.diagnostics):
        print(line, file=sys.stderr)
    if args.json:
        Path(args.json).write_text(run.to_json())
    if args.predictions:
        run.predictions().to_csv(args.predictions, index=False)
    print(_summary_text(result))
    if args.table_path:
        print(table_from_args(args, data))
    return 0


def _diagnostics_notes(diagnostics: FirstStage | None) -> list[str]:
    """The first stage's warnings and notes for stderr: why there are none, a weak or moderate instrument, a
    dropped covariate, the covariance's notes."""
    if not diagnostics:
        return []
    lines = []
    if diagnostics.error:      # e.g. blank pixel covariates: the fit itself went fine
        lines.append(f"warning: no first-stage diagnostics: {diagnostics.error}")
    if diagnostics.warning:
        lines.append(f"warning: {diagnostics.warning}")
    elif diagnostics.strength and diagnostics.strength.level == "moderate":   # labels: diagnostics.strength_label
        lines.append(f"note: instrument strength {diagnostics.strength.text}")
    if diagnostics.dropped_note:      # a constant or collinear covariate: one line
        lines.append(f"note: {diagnostics.dropped_note}")
    lines += [f"note: {note}" for note in (diagnostics.inference.notes if diagnostics.inference else None) or []]
    return lines


def _summary_text(result: RunRecord) -> str:
    """What ``fit`` prints on stdout: the one-line summary, then a linear IV method's conditional
    likelihood-ratio set and the wild cluster bootstrap when asked for."""
    lines = [_summary_line(result)]
    clr, cov = result.clr or CLR(), (result.config.cov_type if result.config else None) or "unadjusted"
    if clr.pieces is not None and cov != "unadjusted":
        lines.append(f"conditional likelihood-ratio set: not shown under --cov {cov} ({clr.robust_to}); the "
                     f"Anderson-Rubin set above follows --cov")
    elif clr.pieces is not None:
        lines.append(f"conditional likelihood-ratio {clr.level:.0%} set {set_text(clr.pieces)} ({clr.robust_to})")
    wild = result.wild_bootstrap
    if wild:
        shown = "n/a (unbounded: see the Anderson-Rubin set)" if wild.interval is None else \
            f"[{wild.interval[0]:.4g}, {wild.interval[1]:.4g}]"
        lines.append(f"wild cluster bootstrap ({wild.draws} draws, {wild.weights}, {wild.n_clusters} clusters): "
                     f"p-value of a zero effect {wild.pvalue:.4g}, 95% interval {shown}")
    return "\n".join(lines)


def _summary_line(result: RunRecord) -> str:
    """The one-line summary of a run: method, data, rows (learner, folds, seed), MSE, seconds, then what the
    method estimates."""
    mse = "n/a (no ground truth)" if result.mse is None else f"{result.mse:.4f}"
    # a linear IV method's line says what it estimates: its coefficients, effect, intervals -- not the learner's
    # held-out residual, DML-CMR's debiased derivative or a spread, which stay in --json
    linear = "anderson_rubin" in METHODS[result.method].cls.capabilities
    extra = _coefficients_text(result)
    if result.band_width is not None:
        covered = "n/a" if result.band_coverage is None else f"{result.band_coverage:.3f}"
        extra += f" band_coverage={covered} band_width={result.band_width:.4g}"
    extra += _effect_text(result.effect, linear=linear)
    cluster = result.config.cluster if result.config else None
    if not linear and "cluster" in METHODS[result.method].settings and cluster:
        # the DML-CMR family's folds keep clusters whole: the clustering changes the fit, not only its intervals
        extra += f" folds=clusters of '{cluster}' kept whole (the estimate depends on --cluster)"
    for role, chosen in (result.nuisances or {}).items():   # "auto" nuisances: which candidate won, and how
        extra += f" {role}-hat=auto:{chosen.choice}"
    if chosen_text := nuisances_chosen(result.nuisances):   # the same in words, with the criterion that chose
        extra += f" nuisances=({chosen_text})"
    held = result.heldout
    if held and not linear:
        extra += (f" heldout=n/a ({held.error})" if held.has("error") else
                  f" heldout={held.relative:.4g} (projected residual / Var(Y))")
    folds = "" if result.folds is None else f", folds={result.folds}"
    if linear:
        shown_mse = "" if result.mse is None else f" mse={mse}"
        return f"{result.method} on {result.dataset} (n={result.n}):{shown_mse} seconds={result.seconds:.1f}{extra}"
    return (f"{result.method} on {result.dataset} (n={result.n}, learner={result.learner}{folds}, "
            f"seed={result.seed}): mse={mse} seconds={result.seconds:.1f}{extra}")


def _coefficients_text(result: RunRecord, most: int = 4) -> str:
    """A linear method's coefficients for the one-line summary, the treatment's first, each with its
    standard error under the covariance choice: `` coefficients (s.e. robust): educ=0.1323 (0.04923), ...``."""
    coefficients, errors = result.coefficients or {}, result.std_errors or {}
    if not coefficients:
        return ""
    names = list(result.params.index)[:most]          # the treatment's first
    config = result.config or Config()
    cov = config.cov_type or DEFAULTS.cov_type
    cov += f" by {config.cluster}" if config.cluster else ""
    cov += ", small" if config.small else ""
    shown = ", ".join(f"{c}={coefficients[c]:.4g}" + (f" ({errors[c]:.4g})" if c in errors else "") for c in names)
    more = f", ... ({len(coefficients) - most} more in --json)" if len(coefficients) > most else ""
    return f" coefficients (s.e. {cov}): {shown}{more}" if errors else f" coefficients {shown}{more}"


def _effect_text(effect: Effect, linear: bool = False) -> str:
    """The effect for the one-line summary: estimate [interval] (how), or why there is none; the
    plug-in beside a debiased headline, the debiased average derivative beside another method's f. ``linear``
    (a linear IV method): the coefficient's interval and Anderson-Rubin set only."""
    if effect.estimate is None:
        return f" effect=n/a ({effect.error})"
    text = f" effect={effect.estimate:.4g}"
    interval, debiased = effect.interval or "", effect.debiased
    if effect.ci_lower is not None:
        text += f" [{effect.ci_lower:.4g}, {effect.ci_upper:.4g}] ({effect.level:.0%}, {effect.how()})"
        # with an interval, the headline's own kind decides (as this line always has): a linear IV method whose
        # headline is its bootstrap interval goes on to the debiased average derivative, like any other method
        linear = effect.linear_head is not None
    elif interval.startswith("weakly identified"):
        text += f" ({interval})"            # weakly identified (its one-line reason): no interval
    else:
        text += " (no interval: add --bootstrap B)"
    for entry in effect.intervals or []:
        if entry.is_anderson_rubin and entry.set is not None:
            text += f" anderson_rubin={set_text(entry.set)} ({entry.kind})"
    if linear:
        return text
    plug = effect.plug_in or Interval()
    if effect.headline_is_debiased and plug.estimate is not None:
        text += f" plug-in={plug.estimate:.4g}"
    elif debiased:
        text += f" debiased average derivative={debiased.estimate:.4g} " + (
            "(weakly identified: no interval)" if debiased.weakly_identified else
            f"[{debiased.ci_lower:.4g}, {debiased.ci_upper:.4g}]")
    if effect.debiased_error:
        text += f" ({effect.debiased_error})"
    if debiased and not (effect.headline_is_debiased and debiased.weakly_identified):   # a flagged headline printed its reason
        text += f" identification={effect.identification_note()}"
    if effect.spread:
        text += f" spread={effect.spread_note()}"
    if effect.clusters:
        text += f" {effect.clusters_note()}"
    return text


def _list(args) -> int:
    """``list [datasets|methods]``: every built-in data set and method, read from their registries."""
    parts = [] if args.what == "methods" else [_datasets_text()]
    parts += [] if args.what == "datasets" else [_methods_text()]
    print("\n\n".join(parts))
    return 0


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _names(columns: list[str], most: int = 6) -> str:
    return ", ".join(columns[:most]) + (f" and {len(columns) - most} more" if len(columns) > most else "")


def _wrapped(text: str) -> str:
    return textwrap.fill(text, 100, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False)


def _datasets_text() -> str:
    """Each data set's problem, rows, roles, source and the options it takes; a simulation is drawn
    small to read its roles (a few seconds in all)."""
    lines = ["Data sets (fit --dataset NAME; options a data set does not take are refused):"]
    for name in cli_datasets():
        options = dataset_options(name)
        if name in REAL_DATASETS:
            info = REAL_DATASETS[name]
            problem, rows, roles, categorical = info.problem, f"{info.rows:,} rows", info.roles, []
            source = info.description.split("Source: ", 1)[-1]
            what = f"real data, no ground truth; shipped with {info.package}"
            title = info.title
        elif name == "replicate":
            problem, rows, roles, categorical = "iv", "the folder's rows", {}, []
            source, what, title = "your replicate folder (train.csv, val.csv)", "simulated, with ground truth", ""
        else:
            data = load_dataset(name, n=100, seed=0).data
            problem, roles, categorical = data.problem, data.roles(), data.categorical
            rows = f"--n rows (default {options['n']:,})" if "n" in options else f"{len(data.table):,} rows"
            source, what, title = SIMULATED[name], "simulated, with ground truth", ""
        lines += ["", f"{name}  {problem.upper()}  {rows}  {what}"]
        if title:
            lines.append(_wrapped(title))
        roles_text = "; ".join(f"{role.replace('_', ' ')} {_names([cols] if isinstance(cols, str) else list(cols))}"
                               for role, cols in roles.items())
        if categorical:
            roles_text += f"; categorical {_names(categorical)}"
        lines.append(_wrapped(f"roles: {roles_text or 'read from the folder'}"))
        lines.append(_wrapped(f"source: {source}"))
        lines.append(_wrapped(f"options: {', '.join(_flag(o) for o in options) or 'none'}"))
    lines += ["", _wrapped("Your own file instead: fit --csv FILE --outcome COL --treatment COL --instrument "
                           "COL[,COL] (or --problem pcl with --treatment-proxy and --outcome-proxy), --covariates, "
                           "--categorical, --dropna.").strip()]
    return "\n".join(lines)


def _methods_text() -> str:
    """Each method's name, title, problems, the fit settings it reads and what it is."""
    lines = ["Methods (fit --method NAME, bench --methods A,B; settings a method does not read are refused):"]
    for name, entry in METHODS.items():
        settings = ", ".join(_flag(s) for s, setting in SETTINGS.items() if setting.cli and setting.scope == "method"
                             and s in entry.settings) \
            or "none"
        lines += ["", f"{name}  {entry.title}  problems: {', '.join(p.upper() for p in entry.problems)}",
                  _wrapped(entry.help), _wrapped(f"settings: {settings}")]
    lines += ["", _wrapped("Every fit also takes --seed, --json, --predictions; --bootstrap, --heldout-folds, "
                           "--effect-folds and --no-debias set the effect's interval and the held-out residual; "
                           "--cov and --cluster the standard errors of 2SLS and the first-stage diagnostics of IV "
                           "and PCL data.").strip()]
    return "\n".join(lines)


def _csv_header(path: Path) -> list[str]:
    """The column names on the first line of the CSV file ``path``."""
    with path.open(newline="") as handle:
        return next(csv.reader(handle), [])


def _bench(args) -> int:
    """A study of one data set without the store (every fit runs now): rows appended to one CSV."""
    try:
        sizes = [int(s) for s in _columns(args.sizes)]
    except ValueError:
        raise DMLCoreError(f"--sizes must be comma-separated integers; got {args.sizes!r}.") from None
    methods = _columns(args.methods)
    for m in methods:
        if m not in METHODS:
            raise DMLCoreError(f"Unknown method {m!r} in --methods; choose from {', '.join(METHODS)}.")
    if args.reps < 1:
        raise DMLCoreError(f"--reps must be at least 1; got {args.reps}.")
    if args.dataset in real_dataset_names():
        raise DMLCoreError(f"bench scores methods against a known truth, and {args.dataset} is a real data set "
                           f"without one; use `python -m dmlcore study --dataset {args.dataset} --methods ...` "
                           f"for each method's effect and held-out residual.")
    refuse_unused_options(args, methods)
    data = {**_data_options(args), "n": sizes}
    spec = spec_from_dict({"dataset": args.dataset, "methods": methods,
                           "data": {k: v for k, v in data.items() if k in dataset_options(args.dataset)},
                           "seeds": list(range(args.seed_offset, args.seed_offset + args.reps)),
                           **{name: getattr(args, name) for name in FIT_SETTINGS if name in getattr(args, "given", ())},
                           "debias": args.debias})
    out = Path(args.out)
    design = [o for o in dataset_options(args.dataset) if o != "n"]   # which problem: every option the data set takes
    chosen = ["outcome_learner", "sampler", *(s for s in LATER_SETTINGS if s not in ("outcome_learner", "sampler")
                                              and getattr(args, s) is not None)]   # the nuisances as used: every table says
    fields = ["dataset", "n", "seed", "method", "learner", "folds", "mse", "mse_fresh", "seconds", *design, *chosen,
              *PAIR_COLUMNS]
    new = not out.exists() or out.stat().st_size == 0
    header = fields if new else _csv_header(out)
    missing = [f for f in fields if f not in header]
    if missing:
        print(f"note: {out} was started without the column(s) {', '.join(missing)}; its new rows leave them out "
              f"(write to a new file to record them)", file=sys.stderr)
    rows = []
    with out.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore")
        if new:
            writer.writeheader()

        def write(event: dict) -> None:
            result = RunRecord.from_dict(event["record"])      # the record, typed (dmlcore.runs.typed)
            if result is None:
                return
            row = {k: result.get(k) for k in fields}
            row["mse_fresh"] = result.mse_fresh
            row.update({o: (result.config.data or {}).get(o) for o in design})
            row.update({s: result.config.get(s) for s in chosen})
            row.update(nuisance_pairs(event["record"]))
            writer.writerow(row)
            handle.flush()
            rows.append(row)

        result = run_cli_study(spec, args, keep=False, on_fit=write)
    print(summarize(rows))
    return exit_status(result)


# a bench row's nuisances as fitted, and the pair the nuisances' own held-out losses rank first
PAIR_COLUMNS = ("nuisance_pair", "own_loss_pair")


def nuisance_pairs(record: dict) -> dict:
    """``nuisance_pair``: "outcome|distribution" as fitted (an auto nuisance's choice of most folds, else the
    named learner; "-" for a model the method does not fit); ``own_loss_pair``: the pair of candidates with
    the lowest own held-out loss each (the default choice, ``nuisance_choice="own"``; also recorded when
    DML-CMR's target chose otherwise), blank unless both nuisances were chosen by ``auto`` with scored losses.
    Both blank for a method without nuisances."""
    config = record.get("config") or {}
    learners = {key: config.get(key) for key in ("outcome_learner", "sampler") if config.get(key) is not None}
    if not learners:
        return dict.fromkeys(PAIR_COLUMNS, "")
    chosen = record.get("nuisances") or {}
    used = [(chosen.get(role) or {}).get("choice") or learners.get(key) or "-"
            for role, key in (("s", "outcome_learner"), ("g", "sampler"))]
    own = []
    for role in ("s", "g"):
        losses = {k: v for k, v in ((chosen.get(role) or {}).get("heldout_loss") or {}).items() if v is not None}
        own.append(min(losses, key=losses.get) if losses else None)
    return {"nuisance_pair": "|".join(used), "own_loss_pair": "|".join(own) if all(own) else ""}


def summarize(rows: list[dict]) -> str:
    """Median, quartiles, mean of the MSE and mean wall time per (n, method) cell."""
    lines = [f"{'n':>6} {'method':<12} {'reps':>4} {'median':>8} {'q1':>8} {'q3':>8} {'mean':>8} {'sec':>7}"]
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((int(r["n"]), r["method"]), []).append(r)
    for (n, method), cell in sorted(cells.items()):
        mse = np.array([float(r["mse"]) for r in cell])
        sec = np.mean([float(r["seconds"]) for r in cell])
        q1, med, q3 = np.quantile(mse, [0.25, 0.5, 0.75])
        lines.append(f"{n:>6} {method:<12} {len(cell):>4} {med:8.4f} {q1:8.4f} {q3:8.4f} {mse.mean():8.4f} {sec:7.1f}")
    return "\n".join(lines)


def _plugins(argv: list[str]) -> list[str]:
    """``argv`` without its ``--plugin X`` options (anywhere), after loading each X and adding it to
    DMLCORE_PLUGINS (so the methods are known before the options are checked, and to the workers)."""
    out, given, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--plugin" or arg.startswith("--plugin="):
            if arg == "--plugin":
                if i + 1 >= len(argv):
                    raise DMLCoreError("--plugin needs a value: a .py file or a module name.")
                value, i = argv[i + 1], i + 2
            else:
                value, i = arg.split("=", 1)[1], i + 1
            given.append(value)
            continue
        out.append(arg)
        i += 1
    for value in given:
        entry = str(Path(value).expanduser().resolve()) if value.endswith(".py") else value
        load_plugins(entry)
        add_to_environment(entry)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if plugins.failure:
        print(f"error: {plugins.failure}", file=sys.stderr)
        return 2
    try:
        argv = _plugins(argv)
    except DMLCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    args.given = parser.commands[args.command].given(argv[argv.index(args.command) + 1:])
    if getattr(args, "threads", None) is not None:
        if args.threads < 1:
            print(f"error: --threads must be at least 1; got {args.threads}.", file=sys.stderr)
            return 2
        set_threads(args.threads)
    try:
        resolve_device(getattr(args, "device", SETTINGS["device"].default))  # before any data is made
        return {"fit": _fit, "bench": _bench, "study": study_command, "list": _list,
                "table": table_command}[args.command](args)
    except (DMLCoreError, FitDiverged) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, but the user still gets one line
        print(f"error: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
