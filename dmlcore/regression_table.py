"""The regression table of the linear IV model: OLS, the first stage and the linear IV estimators side by
side (stargazer's / pyfixest's ``etable`` layout: a coefficient row with significance stars, its standard
error in parentheses below, then the rows of model statistics), under one covariance choice, with the
absorbed fixed effects and weights of the data, as a :class:`dmlcore.export.Table` (Markdown, LaTeX).

Every number comes from the estimators of the registry (``2sls``, ``liml``, ``fuller``, ``gmm-iv``; OLS
and the first stage are the same linear estimator with the regressors instrumenting themselves) and from
:func:`dmlcore.inference.first_stage.first_stage` / :func:`dmlcore.inference.linear_iv.anderson_rubin_set`.
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import norm

from dmlcore.inference.covariance import COV_TITLES, check_covariance, cluster_columns
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.inference.first_stage import first_stage as diagnostics
from dmlcore.estimators import make_estimator
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.export import Table
from dmlcore.inference.linear_iv import anderson_rubin_set, clr_set, set_text

TABLE_METHODS = ("ols", "2sls", "liml", "fuller", "gmm-iv")
DEFAULT_METHODS = ("ols", "2sls", "liml")
STARS = ((0.01, "***"), (0.05, "**"), (0.10, "*"))


def _exogenous(data: CausalData, outcome: str, columns: list[str]) -> CausalData:
    """The regression of ``outcome`` on ``columns``, each its own instrument (OLS), with the data's fixed
    effects, weights and categorical columns."""
    return CausalData(data.table, "cmr", outcome, inputs=columns, conditioning=columns, name=data.name,
                      categorical=[c for c in data.categorical if c in columns], absorb=data.absorb,
                      weights=data.weights)


def _stars(estimate: float, std_error: float) -> str:
    p = 2 * norm.sf(abs(estimate / std_error)) if std_error > 0 else 1.0
    return next((mark for bound, mark in STARS if p < bound), "")


def _fits(data, methods, cov_type, cluster):
    out = {}
    for method in methods:
        if method == "ols":
            est = TwoStageLeastSquares(cov_type=cov_type, cluster=cluster)
            out["OLS"] = est.fit(_exogenous(data, data.outcome, data.input_columns))
        else:
            est = make_estimator(method, cov_type=cov_type, cluster=cluster).fit(data)
            out[est.title] = est
    return out


def regression_table(data: CausalData, methods=DEFAULT_METHODS, *, cov_type: str = "unadjusted",
                     cluster: str | None = None, first_stage: bool = True, digits: int = 3,
                     level: float = 0.95) -> Table:
    """OLS, the first stage of each endogenous column and the linear IV ``methods`` side by side.

    ``methods``: from :data:`TABLE_METHODS` ("ols" and the registry's linear IV methods), in order;
    ``cov_type`` / ``cluster``: the standard errors (:mod:`dmlcore.inference.covariance`), named in the notes;
    ``first_stage``: add a column per endogenous column (its regression on the instruments and
    covariates) and the first-stage rows (F under the covariance, effective F, partial R^2).
    Statistic rows: observations, fixed effects, weights, kappa (LIML, Fuller), the
    overidentification tests (each labelled with the errors it allows), the Anderson-Rubin set
    under the covariance choice and the conditional likelihood-ratio set (homoskedastic; one treatment). Stars: two-sided normal p-values below 0.10, 0.05, 0.01 (the notes say it in words, which LaTeX sets as written).
    """
    if data.problem not in ("iv", "pcl"):
        raise DMLCoreError("A regression table is for an IV or PCL problem (instruments or proxies); this data "
                           f"defines a '{data.problem}' problem.")
    methods = list(methods)
    unknown = [m for m in methods if m not in TABLE_METHODS]
    if unknown or not methods:
        raise DMLCoreError(f"Table methods must come from {', '.join(TABLE_METHODS)}; got "
                           f"{', '.join(map(repr, unknown)) or 'none'}.")
    check_covariance(cov_type, cluster, data.table)
    fits = _fits(data, methods, cov_type, cluster)
    iv_titles = [t for t in fits if t != "OLS"]
    endogenous = data.modelled_columns
    stages = {}
    if first_stage:
        for column in endogenous:
            est = _fits(_exogenous(data, column, data.conditioning_columns), ["ols"], cov_type, cluster)["OLS"]
            stages[f"First stage: {column}"] = est
    order = ["OLS"] if "OLS" in fits else []
    columns = order + list(stages) + iv_titles
    models = {**fits, **stages}
    names = list(dict.fromkeys(n for t in columns for n in models[t].coef_.index if n != "const"))
    names += ["const"] if any("const" in models[t].coef_.index for t in columns) else []
    fmt = f"{{:.{digits}f}}"
    rows = []
    for name in names:
        coef_row, se_row = {"": name}, {"": ""}
        for title in columns:
            est = models[title]
            if name in est.coef_.index:
                b, s = float(est.coef_[name]), float(est.std_errors_[name])
                coef_row[title], se_row[title] = fmt.format(b) + _stars(b, s), f"({fmt.format(s)})"
            else:
                coef_row[title] = se_row[title] = ""
        rows += [coef_row, se_row]
    diag = diagnostics(data, nonparametric=False, cov_type=cov_type, cluster=cluster)
    stats = _statistics(data, models, columns, iv_titles, stages, cov_type, cluster, level, diag)
    frame = pd.DataFrame(rows + stats, columns=[""] + columns).fillna("")
    return Table(frame, caption=f"{_dependent(data)}: linear IV estimates ({data.name})",
                 notes=_notes(data, cov_type, cluster) + list((diag.get("inference") or {}).get("notes") or [])
                 + _strength_notes(diag))


def _strength_notes(diag: dict) -> list[str]:
    """The one strength statistic of the diagnostics (the one the CLI, the run record and the effect's flag
    read) and the covariates they left out, each in one line."""
    strength = diag.get("strength") or {}
    out = []
    if strength.get("f_stat") is not None:
        out.append(f"Instrument strength as the diagnostics and the effect's flag read it: {strength['statistic']} "
                   f"{strength['f_stat']:.2f}" + (f" ({strength['caveat']})." if strength.get("caveat") else "."))
    if diag.get("dropped_note"):
        out.append(diag["dropped_note"][0].upper() + diag["dropped_note"][1:] + ".")
    return out


def _dependent(data: CausalData) -> str:
    return f"Dependent variable {data.outcome}"


def _statistics(data, models, columns, iv_titles, stages, cov_type, cluster, level, diag) -> list[dict]:
    blank = {t: "" for t in columns}
    rows = [{"": "Observations", **{t: f"{models[t].n_:,}" for t in columns}},
            {"": "Fixed effects", **{t: ", ".join(data.absorb) or "no" for t in columns}},
            {"": "Weights", **{t: data.weights or "no" for t in columns}}]
    kappas = {t: models[t].kappa_ for t in iv_titles if models[t].kind != "gmm"}
    if any(models[t].kind in ("liml", "fuller") for t in iv_titles):
        rows.append({"": "kappa (k-class)", **blank, **{t: f"{k:.4f}" for t, k in kappas.items()}})
    inference = diag.get("inference") or {}
    if stages and not inference.get("error"):
        key = "treatments" if data.problem == "iv" else "outcome_proxies"
        f_row, r2_row = {"": f"First-stage F ({cov_type})", **blank}, {"": "Partial R-squared", **blank}
        for title, column in zip(stages, data.modelled_columns):
            entry = (inference.get("endogenous") or {}).get(column) or {}
            f_row[title] = f"{entry['f_stat_cov']:.2f}" if entry else ""
            r2_row[title] = f"{diag[key][column]['partial_r2']:.4f}"
        rows += [f_row, r2_row]
        if inference.get("effective_f") is not None:
            rows.append({"": "Effective F (Montiel Olea-Pflueger)", **blank,
                         list(stages)[0]: f"{inference['effective_f']:.2f}"})
    overid = inference.get("overid") or {}
    for name, label in (("hansen_j", "Hansen J"), ("sargan", "Sargan"), ("wooldridge", "Wooldridge score")):
        test = overid.get(name)
        if test is not None:
            text = f"{test['stat']:.2f} (p {test['pvalue']:.3f})"
            rows.append({"": f"{label} overid. ({test['robust_to']})", **blank, **{t: text for t in iv_titles}})
    if data.problem == "iv" and len(data.treatment) == 1 and iv_titles:
        try:
            ar = anderson_rubin_set(data, cov_type, cluster, level)
            rows.append({"": f"Anderson-Rubin {level:.0%} set", **blank, **{t: set_text(ar["pieces"]) for t in iv_titles}})
            clr = clr_set(data, level)
            rows.append({"": f"CLR {level:.0%} set ({clr['robust_to'].split(' (')[0]})", **blank,
                         **{t: set_text(clr["pieces"]) for t in iv_titles}})
        except DMLCoreError:
            pass
    return rows


def _notes(data, cov_type, cluster) -> list[str]:
    by = " and ".join(cluster_columns(cluster))
    kind = COV_TITLES[cov_type] + (f", by {by}" if by else "")
    if len(cluster_columns(cluster)) == 2:
        kind += " (two-way, Cameron-Gelbach-Miller)"
    notes = [f"Standard errors in parentheses: {kind}. * significant at 10 %, ** at 5 %, *** at 1 % (two-sided, normal)."]
    if data.absorb:
        notes.append(f"Fixed effects of {', '.join(data.absorb)} absorbed (rows demeaned within their groups); the "
                     f"constant is absorbed with them.")
    if data.weights:
        notes.append(f"Weighted by {data.weights}.")
    return notes


def table_format(path: str) -> str:
    """"md" or "tex" from the ending of ``path``; raise for any other."""
    suffix = str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
    if suffix not in ("md", "tex"):
        raise DMLCoreError(f"--table writes Markdown (.md) or LaTeX (.tex); got {path!r}. Name the file with one of "
                           f"those endings.")
    return suffix


def write_table(table: Table, path: str) -> str:
    """Write ``table`` to ``path`` as Markdown (``.md``) or LaTeX (``.tex``); returns the format."""
    suffix = table_format(path)
    text = table.to_markdown() if suffix == "md" else table.to_latex(label="tab:linear-iv")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return suffix


__all__ = ["regression_table", "write_table", "table_format", "TABLE_METHODS", "DEFAULT_METHODS"]
