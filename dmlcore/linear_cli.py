"""The linear IV options of ``python -m dmlcore fit`` (docs/linear-iv.md): ``--absorb``, ``--weights``,
``--formula`` and the regression table ``--table PATH`` (``--table-methods``)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from dmlcore.data.datasets import load_real_dataset
from dmlcore.data.io import load_table
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHODS
from dmlcore.inference.wild_bootstrap import wild_cluster_bootstrap
from dmlcore.regression_table import DEFAULT_METHODS, TABLE_METHODS, regression_table, table_format, write_table

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
    if args.method != "2sls" or not str(args.cov).startswith("clustered"):
        raise DMLCoreError(f"--wild-bootstrap bootstraps the 2SLS coefficient under clustering: use it with --method "
                           f"2sls and --cov clustered or clustered-cr1 (got --method {args.method}, --cov {args.cov}).")


def wild_bootstrap_record(args, data: CausalData) -> dict:
    """``{"wild_bootstrap": ...}`` of ``--wild-bootstrap B`` (empty without it)."""
    if args.wild_bootstrap is None:
        return {}
    return {"wild_bootstrap": wild_cluster_bootstrap(data, args.cluster, draws=args.wild_bootstrap, seed=args.seed)}


def table_from_args(args, data: CausalData) -> str:
    """Write the regression table of ``--table``; returns the line to print."""
    table = regression_table(data, _columns(args.table_methods), cov_type=args.cov, cluster=args.cluster)
    kind = write_table(table, args.table_path)
    return f"regression table ({kind}) written to {args.table_path}"
