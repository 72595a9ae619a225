"""The linear IV options of ``python -m dmlcore fit`` (docs/linear-iv.md): ``--absorb``, ``--weights``,
``--formula`` and the regression table ``--table PATH`` (``--table-methods``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from dmlcore.data.datasets import load_real_dataset
from dmlcore.data.io import load_table
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHODS
from dmlcore.estimators._registry import LINEAR_REFERENCE
from dmlcore.inference.wild_bootstrap import wild_cluster_bootstrap
from dmlcore.regression_table import (DEFAULT_METHODS, TABLE_METHODS, models_table, regression_table, table_format,
                                      write_table)
from dmlcore.runs.typed import DataSource, RunRecord

ROLE_OPTIONS = ("outcome", "treatment", "instrument", "treatment_proxy", "outcome_proxy", "covariates", "inputs",
                "conditioning")


def add_linear_options(parser: argparse.ArgumentParser) -> None:
    """The options of this module, in one group."""
    group = parser.add_argument_group("linear IV (2sls, liml, fuller, gmm-iv; docs/linear-iv.md)")
    group.add_argument("--absorb", metavar="COL[,COL]",
                       help="absorb the fixed effects of one or two columns (linear IV methods and diagnostics)")
    group.add_argument("--weights", metavar="COL", help="a column of positive regression weights (linear IV methods)")
    group.add_argument("--formula", metavar="'y ~ 1 + x + [d ~ z]'",
                       help="the IV model as a formula (linearmodels' convention) on --csv or a real --dataset, "
                            "instead of the role options")
    group.add_argument("--table", dest="table_path", metavar="PATH.md|PATH.tex",
                       help="write a regression table (OLS, first stage, linear IV; diagnostics rows) as Markdown "
                            "(.md) or LaTeX (.tex), under --cov / --cluster")
    group.add_argument("--wild-bootstrap", type=int, metavar="B",
                       help="with --method 2sls and --cov clustered(-cr1): a wild cluster bootstrap (WRE, "
                            "Davidson-MacKinnon; B draws, e.g. 999) p-value of a zero effect and its interval")
    group.add_argument("--table-methods", default=",".join(DEFAULT_METHODS),
                       help=f"columns of --table, from {', '.join(TABLE_METHODS)} (default {','.join(DEFAULT_METHODS)})")


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def formula_data(args, real_names) -> CausalData:
    """The CausalData of ``--formula`` on ``--csv FILE`` or a real ``--dataset`` (all its columns)."""
    given = [f"--{r.replace('_', '-')}" for r in ROLE_OPTIONS if getattr(args, r, None)]
    if given:
        raise DMLCoreError(f"Give the model either by --formula or by the role options, not both ({given[0]} with "
                           f"--formula).")
    if args.problem != "iv":
        raise DMLCoreError(f"--formula writes an IV model (y ~ 1 + x + [d ~ z]); --problem {args.problem} takes the "
                           f"role options instead.")
    if args.csv:
        table, name = load_table(args.csv), Path(args.csv).name
    elif args.dataset in real_names:
        table, name = load_real_dataset(args.dataset).table, args.dataset
    else:
        raise DMLCoreError(f"--formula reads the columns of --csv FILE or of a real data set ({', '.join(real_names)}); "
                           f"{args.dataset} is simulated with fixed roles.")
    return CausalData.from_formula(args.formula, table, name=name, absorb=_columns(args.absorb),
                                   weights=args.weights)


def with_linear_options(args, data: CausalData) -> CausalData:
    """``data`` with ``--absorb`` and ``--weights`` (checked by CausalData); refused for a method that
    cannot honour them."""
    if not (args.absorb or args.weights):
        return data
    if "absorb_weights" not in METHODS[args.method].cls.capabilities:
        takers = [name for name, m in METHODS.items() if "absorb_weights" in m.cls.capabilities]
        given = " and ".join(f"--{k}" for k in ("absorb", "weights") if getattr(args, k))
        raise DMLCoreError(f"{given} applies to the linear IV methods ({', '.join(takers)}) only, not to "
                           f"{args.method}; leave it out or choose one of those methods.")
    return dataclasses.replace(data, absorb=_columns(args.absorb), weights=args.weights or None)


def check_table(args) -> None:
    """Refuse a bad ``--table`` before any fit."""
    if args.table_path:
        table_format(args.table_path)
        unknown = [m for m in _columns(args.table_methods) if m not in TABLE_METHODS]
        if unknown or not _columns(args.table_methods):
            raise DMLCoreError(f"--table-methods takes {', '.join(TABLE_METHODS)}; got "
                               f"{', '.join(map(repr, unknown)) or 'none'}.")
    elif args.table_methods != ",".join(DEFAULT_METHODS):
        raise DMLCoreError("--table-methods sets the columns of --table; give --table PATH too, or leave it out.")


def check_wild_bootstrap(args) -> None:
    """Refuse ``--wild-bootstrap`` where it does not apply, before any fit."""
    if args.wild_bootstrap is None:
        return
    if args.method != LINEAR_REFERENCE or not str(args.cov).startswith("clustered"):
        raise DMLCoreError(f"--wild-bootstrap bootstraps the 2SLS coefficient under clustering: use it with --method "
                           f"{LINEAR_REFERENCE} and --cov clustered or clustered-cr1 (got --method {args.method}, "
                           f"--cov {args.cov}).")


def wild_bootstrap_record(args, data: CausalData) -> dict:
    """``{"wild_bootstrap": ...}`` of ``--wild-bootstrap B`` (empty without it)."""
    if args.wild_bootstrap is None:
        return {}
    return {"wild_bootstrap": wild_cluster_bootstrap(data, args.cluster, draws=args.wild_bootstrap, seed=args.seed)}


def table_from_args(args, data: CausalData) -> str:
    """Write the regression table of ``--table``; returns the line to print."""
    table = regression_table(data, _columns(args.table_methods), cov_type=args.cov, cluster=args.cluster,
                             small=args.small, fixef_k=args.fixef_k, cluster_df=args.cluster_df)
    kind = write_table(table, args.table_path)
    return f"regression table ({kind}) written to {args.table_path}"


# ------------------------------------------------------------------ dmlcore table RUN.json ... (several models)
def add_table_command(sub) -> None:
    """``table``: several stored run records (``fit --json``) side by side."""
    table = sub.add_parser("table", help="several linear IV runs (fit --json files) side by side in one table: "
                                         "coefficients, N, clusters, fixed effects, weights, R², first-stage F, "
                                         "Anderson-Rubin set (docs/linear-iv.md)")
    table.add_argument("runs", nargs="+", metavar="RUN.json",
                       help="run records written by fit --json, one column each, in order; ols:RUN.json adds the "
                            "OLS regression of that run's data (its --csv file or real --dataset, roles, absorbed "
                            "columns and weights) under its covariance")
    table.add_argument("--out", metavar="PATH.md|PATH.tex", help="write the table here (default: print Markdown)")
    table.add_argument("--label", action="append", default=[], metavar="NAME=TEXT",
                       help="a variable's label in the rows (repeat for several)")
    table.add_argument("--title", action="append", metavar="TEXT", help="a column's title, one per run, in order")
    table.add_argument("--keep", metavar="COL[,COL]", help="the coefficients to show, in order (the rest are named "
                                                           "in a note)")
    table.add_argument("--caption", help="the table's caption (default: the dependent variable)")


def _record_file(path: str) -> dict:
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DMLCoreError(f"Cannot read the run record {path!r}: {exc}. Give a file written by fit --json.") from None
    if not isinstance(record, dict) or not RunRecord.from_dict(record).has("coefficients"):
        method = RunRecord.from_dict(record).method if isinstance(record, dict) else None
        raise DMLCoreError(f"{path} is not a linear IV run record (no coefficients{'; method ' + method if method else ''})"
                           f"; give files written by fit --json with --method 2sls, liml, fuller or gmm-iv.")
    return record


OLS_SETTINGS = ("cov_type", "cluster", "small", "fixef_k", "cluster_df")   # a run's settings its OLS column repeats
OUTCOME_ROLE = "outcome"


def data_of_record(record: dict, path: str) -> CausalData:
    """The CausalData a run record was fitted on: its --csv file or real --dataset with its roles, categorical
    columns, absorbed columns and weights; refused for a simulation or a formula."""
    rec = RunRecord.from_dict(record)
    source = DataSource.from_dict((rec.config.data if rec.config is not None else None) or {})
    if source.has("formula") or not (source.csv or source.dataset):
        raise DMLCoreError(f"ols:{path} needs a run of a --csv file or a real --dataset given by role options; this "
                           f"run's data ({source.to_dict() or 'simulated'}) cannot be read back.")
    table = load_table(source.csv) if source.csv else load_real_dataset(source.dataset).table
    roles = {k: list(v) for k, v in (rec.roles or {}).items() if k != OUTCOME_ROLE}
    data = CausalData(table, rec.problem or "iv", (rec.role(OUTCOME_ROLE) or [None])[0],
                      name=rec.dataset, categorical=list(rec.categorical or []),
                      absorb=list(rec.absorb or []), weights=rec.weights, **roles)
    if len(data.table) != rec.n:
        raise DMLCoreError(f"ols:{path}: its data now has {len(data.table)} rows, the run had {rec.n} "
                           f"(rows dropped with --dropna?); fit that OLS from Python (models_table) instead.")
    return data


def table_command(args) -> int:
    """``dmlcore table RUN.json ...``: the records side by side, printed or written to --out."""
    if args.out:
        table_format(args.out)
    models = []
    for item in args.runs:
        if item.startswith("ols:"):
            record = _record_file(item[4:])
            config = RunRecord.from_dict(record).config
            settings = {k: config.get(k) for k in OLS_SETTINGS if config is not None and config.get(k) is not None}
            models.append({"data": data_of_record(record, item[4:]), "method": "ols", **settings})
        else:
            models.append(_record_file(item))
    labels = {}
    for item in args.label:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise DMLCoreError(f"--label takes NAME=TEXT; got {item!r}.")
        labels[name.strip()] = text.strip()
    table = models_table(models, labels=labels, keep=_columns(args.keep) if args.keep else None,
                         titles=args.title, caption=args.caption)
    if args.out:
        kind = write_table(table, args.out)
        print(f"table of {len(models)} models ({kind}) written to {args.out}")
    else:
        print(table.to_markdown(), end="")
    return 0
