"""``python -m dmlcore study``: the grid from flags or ``--spec FILE``, run, summarised, written.

Also the execution shared with ``bench`` (a study of one data set whose rows go to one CSV):
``--jobs``, ``--executor``, ``--address``, a line per finished fit, and the exit status: 0 when
every fit finished, 1 when some failed (their rows say why; a rerun retries them), 2 when all did.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dmlcore.data.io import load_table
from dmlcore.data.registry import DATA_OPTIONS, add_data_flags
from dmlcore.data.roles import CausalData
from dmlcore.data.tables import TABLE, keep_table
from dmlcore.errors import DMLCoreError
from dmlcore.studies.runner import StudyResult, run_study
from dmlcore.estimators.settings import DEFAULTS, SETTINGS, add_setting_flags, setting_group
from dmlcore.studies.spec import FIT_SETTINGS, StudySpec, check_size, load_spec, spec_from_flags
from dmlcore.studies.provenance import provenance_line
from dmlcore.studies.report import about, seeds_warning
from dmlcore.studies.summarize import compact, format_value, verdict_lines

# the study's data flags, argparse name -> data set option (--sizes: n), from the declarations
DATA_FLAGS = {option.grid_flag or name: name for name, option in DATA_OPTIONS.items() if option.cli}
# the argparse names of the study's grid flags of settings (a setting's grid_dest, where not its name)
SETTING_DESTS = {name: SETTINGS[name].grid_dest for name in FIT_SETTINGS if SETTINGS[name].grid_dest}
SETTING_FLAGS = tuple(SETTING_DESTS.get(name, name) for name in FIT_SETTINGS)
GRID_FLAGS = ("dataset", "methods", "seeds", *DATA_FLAGS, *SETTING_FLAGS)


ROLE_FLAGS = ("outcome", "treatment", "instrument", "treatment-proxy", "outcome-proxy", "covariates", "inputs",
              "conditioning")


def add_own_data_options(parser: argparse.ArgumentParser) -> None:
    """``--csv FILE`` with ``--problem``, the role options (comma-separated column names), ``--categorical``
    and ``--dropna``; every one is in OWN_DATA_OPTIONS (they apply with ``--csv`` only)."""
    own = parser.add_argument_group("own data")
    own.add_argument("--csv", help="a CSV or Parquet file of your own")
    own.add_argument("--problem", choices=("iv", "pcl", "cmr"), default="iv")
    for role in ROLE_FLAGS:
        own.add_argument(f"--{role}", help="column name(s), comma-separated")
    own.add_argument("--categorical", metavar="COL[,COL]",
                     help="columns whose numbers are codes of categories (2 to 50 levels): networks and linear "
                          "models see one 0/1 column per level, 2SLS dummies (recorded in the run's categorical)")
    own.add_argument("--dropna", action="store_true",
                     help="drop the rows with a missing value in a column the fit uses (its roles and --cluster), "
                          "saying how many; without it such rows are refused")


# the options of add_own_data_options (argparse's names): they apply to --csv only
OWN_DATA_OPTIONS = ("csv", "problem", *(r.replace("-", "_") for r in ROLE_FLAGS), "categorical", "dropna")
# options that name further columns a fit reads besides the roles (kept and checked by --dropna)
COLUMN_OPTIONS = ("cluster", "absorb", "weights")


def own_data(args) -> CausalData:
    """The CausalData of ``--csv FILE`` with the roles of the role options and ``--categorical``; with
    ``--dropna``, rows missing a value in a used column are dropped (a note on stderr says how many),
    without it they are refused in one line naming every such column."""
    table = load_table(args.csv)
    columns = lambda text: [c.strip() for c in text.split(",") if c.strip()] if text else []  # noqa: E731
    roles = {r: columns(getattr(args, r)) for r in ("treatment", "instrument", "treatment_proxy", "outcome_proxy",
                                                    "covariates", "inputs", "conditioning")}
    if not args.outcome:
        raise DMLCoreError("--outcome is required with --csv.")
    used = [args.outcome, *(c for cols in roles.values() for c in cols),
            *(c for o in COLUMN_OPTIONS for c in columns(getattr(args, o, None)))]
    table = _drop_missing(table, [c for c in dict.fromkeys(used) if c in table.columns], Path(args.csv).name,
                          getattr(args, "dropna", False))
    return CausalData(table, args.problem, args.outcome, name=Path(args.csv).name,
                      categorical=columns(getattr(args, "categorical", None)), **roles)


def _drop_missing(table, used: list[str], name: str, dropna: bool):
    """``table`` without the rows missing a value in ``used`` when ``dropna`` (saying how many on
    stderr); else refuse such rows, naming every column that has them."""
    missing = table[used].isna()
    counts = {c: int(n) for c, n in missing.sum().items() if n}
    if not counts:
        return table
    rows = int(missing.any(axis=1).sum())
    where = ", ".join(f"{c} ({n})" for c, n in counts.items())
    if not dropna:
        raise DMLCoreError(f"{name} has missing (NaN) values in {len(counts)} used column(s): {where}; {rows} of "
                           f"{len(table)} rows miss one. Pass --dropna to drop those rows, or fill them in.")
    print(f"note: --dropna dropped {rows} of {len(table)} rows with a missing value in {where}", file=sys.stderr)
    return table.loc[~missing.any(axis=1)].reset_index(drop=True)


def add_study_parser(sub) -> None:
    """The ``study`` subcommand: every grid flag takes a comma list."""
    p = sub.add_parser("study", help="a grid of fits in parallel, with summaries, paired comparisons and a report",
                       description="Every grid flag takes a comma list; the grid is every combination.")
    p.add_argument("--spec", help="a TOML or JSON grid (several data sets); replaces the grid flags")
    p.add_argument("--dataset", help="a simulated data set (default demand-iv), or a real one (rhc, card, ...): "
                                     "no truth, so effects and held-out residuals instead of the MSE")
    p.add_argument("--methods", help="default dml-cmr,ce-dml-cmr,naive")
    p.add_argument("--seeds", help="e.g. 0-19 or 0,3,5-9 (default 0-9)")
    p.add_argument("--out", help="write fits.csv, summary.csv, paired.csv, report.html and PNGs here")
    add_data_flags(p, "study")     # --sizes, --rho, ...: a comma list per declared data set option
    add_own_data_options(p)
    # a grid flag (a comma list) per study key, and the run's and infrastructure's flags of a study, in the
    # --help sections of their groups (dmlcore.estimators.settings)
    add_setting_flags(p, "study", grid=True)
    setting_group(p, "infrastructure").add_argument(
        "--threads", type=int, help="torch threads per fit (default 1, or DMLCORE_TORCH_THREADS)")
    p.add_argument("--yes", action="store_true", help="run a grid of more than 10,000 fits")
    p.add_argument("--fresh", action="store_true", help="run every fit again instead of reusing stored ones")


def study_spec(args) -> StudySpec:
    if args.csv:
        return _table_spec(args)
    own = [f"--{o.replace('_', '-')}" for o in OWN_DATA_OPTIONS[1:]
           if getattr(args, o, None) not in (None, False) and not (o == "problem" and args.problem == "iv")]
    if own:
        raise DMLCoreError(f"{', '.join(own)} appl{'ies' if len(own) == 1 else 'y'} to your own file only (--csv FILE); "
                           f"leave {'it' if len(own) == 1 else 'them'} out.")
    if args.spec:
        given = [f"--{name.replace('_', '-')}" for name in GRID_FLAGS if getattr(args, name) is not None]
        if given:
            raise DMLCoreError(f"Give the grid either by flags or by --spec FILE, not both ({given[0]} with --spec).")
        if args.cov != DEFAULTS.cov_type or args.cluster:
            raise DMLCoreError("With --spec FILE, give the covariance in the file (cov_type = \"robust\", "
                               "cluster = \"COLUMN\"), not by --cov or --cluster.")
        if not args.debias:
            raise DMLCoreError("With --spec FILE, switch the debiased effect off in the file (debias = false), "
                               "not by --no-debias.")
        if args.time_limit is not None:
            raise DMLCoreError("With --spec FILE, give the time limit in the file (time_limit = SECONDS), not by "
                               "--time-limit.")
        return load_spec(args.spec)
    settings = {name: getattr(args, SETTING_DESTS.get(name, name)) for name in FIT_SETTINGS}
    return spec_from_flags(args.dataset or "demand-iv", methods=args.methods, seeds=args.seeds,
                           data={option: getattr(args, flag) for flag, option in DATA_FLAGS.items()},
                           settings={**settings, **_run_settings(args)})


def _run_settings(args) -> dict:
    """The grid's run settings given by flags (--cov, --cluster, --no-debias, --time-limit): every declared
    setting of the run group with a flag of ``study`` (the infrastructure's go to the runner)."""
    return {name: getattr(args, s.dest) for name, s in SETTINGS.items()
            if "study" in s.commands and not s.study and s.group == "run"}


def _table_spec(args) -> StudySpec:
    """A study of the user's file (``--csv`` with its roles): its rows are fixed, seeds change the methods'
    randomness; the table is kept by its content hash (dmlcore.data.tables)."""
    given = [f"--{name.replace('_', '-')}" for name in ("spec", "dataset", *DATA_FLAGS) if getattr(args, name) is not None]
    if given:
        raise DMLCoreError(f"A study of your file (--csv) takes its roles, methods, seeds and fit settings; {given[0]} "
                           f"does not apply to it.")
    options = keep_table(own_data(args), Path(args.csv).name, [args.cluster] if args.cluster else None)
    settings = {name: getattr(args, SETTING_DESTS.get(name, name)) for name in FIT_SETTINGS}
    return spec_from_flags(TABLE, methods=args.methods, seeds=args.seeds, data={k: [v] for k, v in options.items()},
                           settings={**settings, **_run_settings(args)})


def study_command(args) -> int:
    spec = study_spec(args)
    result = run_cli_study(spec, args, out_dir=args.out, reuse=not args.fresh)
    narrow = ("method", "mse_fresh_median", "effect_q1", "effect_q3", "heldout_relative_q1", "heldout_relative_q3")
    for table, drop in ((result.summary, narrow), (result.paired, ())):
        if len(table):
            print(compact(table, result.fits, drop).to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep=""))
    for line in verdict_lines(result.paired, result.fits):       # the one standard's words (docs/benchmarks.md)
        print(f"verdict: {line}")
    if (warning := seeds_warning(result.paired, spec)):
        print(f"note: {warning}")
    if result.files:
        print(f"wrote {', '.join(str(p) for p in result.files.values())}")
    if result.png_error:
        print(f"note: {result.png_error}", file=sys.stderr)
    return exit_status(result)


def run_cli_study(spec: StudySpec, args, *, out_dir=None, reuse: bool = True, keep: bool = True,
                  on_fit=None) -> StudyResult:
    """Run ``spec`` with the executor flags of ``args``, printing one line per finished fit."""
    configs = spec.configs()
    check_size(len(configs), getattr(args, "yes", False))
    width = len(str(len(configs)))

    at_once = max(int(args.jobs or DEFAULTS.jobs), 1)
    paces: list[float] = []
    planned = {}

    def report(event: dict) -> None:
        if event["event"] == "start":
            where = args.executor + (f" at {args.address}" if args.address else "")
            jobs = f", {args.jobs} at once" if args.jobs else ""
            estimate = event.get("estimate_seconds")
            planned["seconds"] = estimate
            cost = (f"; estimated {about(estimate / at_once)} ({estimate:.0f} s of compute, from stored timings)"
                    if estimate is not None and event["to_run"] else
                    "; no estimate yet (no stored timings of these fits)" if event["to_run"] else "")
            print(f"study: {event['total']} fits, {event['reused']} stored, {event['to_run']} to run ({where}{jobs})"
                  f"{cost}", flush=True)
            return
        row = event["row"]
        design = " ".join(f"{k}={format_value(row[k])}" for k in ("n",) if row.get(k) is not None)
        what = " ".join(filter(None, (f"[{event['done']:>{width}}/{event['to_run']}]", row["dataset"], design,
                                      f"seed={row['seed']}", row["method"])))
        if row.get("worker_seconds") is not None:
            paces.append(float(row["worker_seconds"]))
        left_fits = event["to_run"] - event["done"]
        if left_fits <= 0:
            left = ""
        elif paces:
            left = f"; {about(left_fits * sum(paces) / len(paces) / at_once)} left"
        elif planned.get("seconds") is not None:
            left = f"; {about(planned['seconds'] * left_fits / max(event['to_run'], 1) / at_once)} left"
        else:
            left = ""
        if row["status"] == "done":
            refits = (f", {row['worker_seconds']:.1f} s with refits" if row.get("worker_seconds") is not None else "")
            print(f"{what}: {outcome_text(row)} ({row['seconds']:.1f} s{refits}{left})", flush=True)
        else:
            print(f"{what}: failed ({row['error']}){left}", file=sys.stderr, flush=True)
        if on_fit:
            on_fit(event)

    start = time.perf_counter()
    result = run_study(spec, out_dir, executor=args.executor, jobs=args.jobs, address=args.address,
                       threads=args.threads, reuse=reuse, keep=keep, callback=report)
    print(f"{result.message} in {time.perf_counter() - start:.1f} s", flush=True)
    if result.provenance:
        print(f"ran with: {provenance_line(result.provenance)}", flush=True)
    return result


def outcome_text(row: dict) -> str:
    """A finished fit in a few words: its MSE, else its effect [interval] and held-out residual."""
    if row.get("mse") is not None:
        return f"mse={row['mse']:.4f}"
    parts = []
    if row.get("effect_estimate") is not None:
        parts.append(f"effect={row['effect_estimate']:.4g}")
        if row.get("effect_ci_lower") is not None:
            parts[-1] += f" [{row['effect_ci_lower']:.4g}, {row['effect_ci_upper']:.4g}]"
    if row.get("heldout_relative") is not None:
        parts.append(f"heldout={row['heldout_relative']:.4g}")
    return " ".join(parts) or "done (no truth, effect or held-out residual)"


def exit_status(result: StudyResult) -> int:
    """0 when every fit finished; otherwise one line on stderr and 1 (some failed) or 2 (all did)."""
    if not result.failed:
        return 0
    first = result.fits.loc[result.fits["status"] == "failed", "error"].iloc[0]
    if result.failed == result.total:
        print(f"error: every fit failed; the first: {first}", file=sys.stderr)
        return 2
    print(f"error: {result.failed} of {result.total} fits failed (first: {first}); rerun the same command to "
          f"retry them", file=sys.stderr)
    return 1
