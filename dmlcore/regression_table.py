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
from scipy.stats import norm, t as t_dist

from dmlcore.stats.covariance import COV_TITLES, FEW_CLUSTERS, check_covariance, cluster_columns, few_clusters_note
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.inference.first_stage import first_stage as diagnostics
from dmlcore.estimators import METHODS, make_estimator
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.export import Table
from dmlcore.inference.linear_iv import anderson_rubin_set, clr_set, set_text
from dmlcore.runs import fit_run
from dmlcore.runs.typed import (CLR, Config, Endogenous, FirstStage, FirstStageInference, LinearFit, RunRecord,
                                Strength)

TABLE_METHODS = ("ols", *(name for name, entry in METHODS.items() if entry.linear_iv))
DEFAULT_METHODS = ("ols", "2sls", "liml")
STARS = ((0.01, "***"), (0.05, "**"), (0.10, "*"))


def _exogenous(data: CausalData, outcome: str, columns: list[str]) -> CausalData:
    """The regression of ``outcome`` on ``columns``, each its own instrument (OLS), with the data's fixed
    effects, weights and categorical columns."""
    return CausalData(data.table, "cmr", outcome, inputs=columns, conditioning=columns, name=data.name,
                      categorical=[c for c in data.categorical if c in columns], absorb=data.absorb,
                      weights=data.weights)


def _stars(estimate: float, std_error: float, df=None) -> str:
    p = _p_value(estimate, std_error, df)
    return next((mark for bound, mark in STARS if p < bound), "")


def _fits(data, methods, cov_type, cluster, conventions=None):
    out = {}
    for method in methods:
        if method == "ols":
            est = TwoStageLeastSquares(cov_type=cov_type, cluster=cluster, **(conventions or {}))
            out[OLS_TITLE] = est.fit(_exogenous(data, data.outcome, data.input_columns))
        else:
            est = make_estimator(method, cov_type=cov_type, cluster=cluster, **(conventions or {})).fit(data)
            out[est.title] = est
    return out


def regression_table(data, methods=DEFAULT_METHODS, *, cov_type: str = DEFAULTS.cov_type,
                     cluster: str | None = None, first_stage: bool = True, digits: int = 3,
                     level: float = 0.95, small: bool = DEFAULTS.small, fixef_k: str = DEFAULTS.fixef_k,
                     cluster_df: str = DEFAULTS.cluster_df, **options) -> Table:
    """OLS, the first stage of each endogenous column and the linear IV ``methods`` side by side.

    ``data`` a list (or tuple) of models instead of one CausalData: :func:`models_table` of them (several
    specifications side by side; ``options`` are its keywords).

    ``methods``: from :data:`TABLE_METHODS` ("ols" and the registry's linear IV methods), in order;
    ``cov_type`` / ``cluster``: the standard errors (:mod:`dmlcore.stats.covariance`), named in the notes;
    ``small``, ``fixef_k``, ``cluster_df``: the small-sample conventions (:class:`~dmlcore.estimators.tsls.
    TwoStageLeastSquares`; with ``small`` the stars come from t and the Anderson-Rubin set from F);
    ``first_stage``: add a column per endogenous column (its regression on the instruments and
    covariates) and the first-stage rows (F under the covariance, effective F, partial R^2).
    Statistic rows: observations, fixed effects, weights, kappa (LIML, Fuller), the
    overidentification tests (each labelled with the errors it allows), the Anderson-Rubin set
    under the covariance choice and the conditional likelihood-ratio set (homoskedastic: with the unadjusted
    covariance only; one treatment). Stars: two-sided p-values below 0.10, 0.05, 0.01, normal or, with
    ``small``, t (the notes say which).
    """
    if isinstance(data, (list, tuple)):
        return models_table(data, digits=digits, level=level, **options)
    if options:
        raise DMLCoreError(f"Unknown regression_table option(s) {', '.join(map(repr, options))}.")
    if not isinstance(data, CausalData):
        raise DMLCoreError(f"regression_table takes a CausalData or a list of models; got {type(data).__name__}.")
    if data.problem not in ("iv", "pcl"):
        raise DMLCoreError("A regression table is for an IV or PCL problem (instruments or proxies); this data "
                           f"defines a '{data.problem}' problem.")
    methods = list(methods)
    unknown = [m for m in methods if m not in TABLE_METHODS]
    if unknown or not methods:
        raise DMLCoreError(f"Table methods must come from {', '.join(TABLE_METHODS)}; got "
                           f"{', '.join(map(repr, unknown)) or 'none'}.")
    check_covariance(cov_type, cluster, data.table)
    conventions = {"small": small, "fixef_k": fixef_k, "cluster_df": cluster_df}
    fits = _fits(data, methods, cov_type, cluster, conventions)
    iv_titles = [t for t in fits if t != OLS_TITLE]
    endogenous = data.modelled_columns
    stages = {}
    if first_stage:
        for column in endogenous:
            est = _fits(_exogenous(data, column, data.conditioning_columns), ["ols"], cov_type, cluster,
                        conventions)[OLS_TITLE]
            stages[f"First stage: {column}"] = est
    order = [OLS_TITLE] if OLS_TITLE in fits else []
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
                coef_row[title], se_row[title] = fmt.format(b) + _stars(b, s, est.df_), f"({fmt.format(s)})"
            else:
                coef_row[title] = se_row[title] = ""
        rows += [coef_row, se_row]
    diag = FirstStage.from_dict(diagnostics(data, nonparametric=False, cov_type=cov_type, cluster=cluster))
    stats = _statistics(data, models, columns, iv_titles, stages, cov_type, cluster, level, diag, small)
    frame = pd.DataFrame(rows + stats, columns=[""] + columns).fillna("")
    dfs = sorted({m.df_ for m in models.values() if m.df_})
    return Table(frame, caption=f"{_dependent(data)}: linear IV estimates ({data.name})",
                 notes=_notes(data, cov_type, cluster, dfs)
                 + list((diag.inference.notes if diag.inference is not None else None) or []) + _strength_notes(diag))


def _strength_notes(diag: FirstStage) -> list[str]:
    """The one strength statistic of the diagnostics (the one the CLI, the run record and the effect's flag
    read) and the covariates they left out, each in one line."""
    strength = diag.strength if diag.strength is not None else Strength()
    out = []
    if strength.f_stat is not None:
        out.append(f"Instrument strength as the diagnostics and the effect's flag read it: {strength.statistic} "
                   f"{strength.f_stat:.2f}" + (f" ({strength.caveat})." if strength.caveat else "."))
    if diag.dropped_note:
        out.append(diag.dropped_note[0].upper() + diag.dropped_note[1:] + ".")
    return out


def _dependent(data: CausalData) -> str:
    return f"Dependent variable {data.outcome}"


def _statistics(data, models, columns, iv_titles, stages, cov_type, cluster, level, diag, small=DEFAULTS.small) -> list[dict]:
    blank = {t: "" for t in columns}
    rows = [{"": "Observations", **{t: f"{models[t].n_:,}" for t in columns}},
            {"": "Fixed effects", **{t: ", ".join(data.absorb) or "no" for t in columns}},
            {"": "Weights", **{t: data.weights or "no" for t in columns}}]
    kappas = {t: models[t].kappa_ for t in iv_titles if not models[t].efficient_gmm}
    if any(models[t].k_class for t in iv_titles):
        rows.append({"": "kappa (k-class)", **blank, **{t: f"{k:.4f}" for t, k in kappas.items()}})
    inference = diag.inference if diag.inference is not None else FirstStageInference()
    if stages and not inference.error:
        relevance = diag.treatments if data.problem == "iv" else diag.outcome_proxies
        f_row, r2_row = {"": f"First-stage F ({cov_type})", **blank}, {"": "Partial R-squared", **blank}
        for title, column in zip(stages, data.modelled_columns):
            entry = (inference.endogenous or {}).get(column)
            f_row[title] = f"{entry.f_stat_cov:.2f}" if entry else ""
            r2_row[title] = f"{relevance[column].partial_r2:.4f}"
        rows += [f_row, r2_row]
        if inference.effective_f is not None:
            rows.append({"": "Effective F (Montiel Olea-Pflueger)", **blank,
                         list(stages)[0]: f"{inference.effective_f:.2f}"})
    overid = inference.overid or {}
    for name, label in OVERID_TESTS:
        test = overid.get(name)
        if test is not None:
            text = f"{test.stat:.2f} (p {test.pvalue:.3f})"
            rows.append({"": f"{label} overid. ({test.robust_to})", **blank, **{t: text for t in iv_titles}})
    if data.problem == "iv" and len(data.treatment) == 1 and iv_titles:
        try:
            ar = CLR.from_dict(anderson_rubin_set(data, cov_type, cluster, level, small=small))   # its pieces, as CLR's
            rows.append({"": f"Anderson-Rubin {level:.0%} set", **blank, **{t: set_text(ar.pieces) for t in iv_titles}})
            if cov_type == "unadjusted":       # CLR is homoskedastic only: never beside a robust or clustered AR
                clr = CLR.from_dict(clr_set(data, level))
                rows.append({"": f"CLR {level:.0%} set ({clr.robust_to.split(' (')[0]})", **blank,
                             **{t: set_text(clr.pieces) for t in iv_titles}})
        except DMLCoreError:
            pass
    return rows


def _notes(data, cov_type, cluster, dfs=()) -> list[str]:
    by = " and ".join(cluster_columns(cluster))
    kind = COV_TITLES[cov_type] + (f", by {by}" if by else "")
    if len(cluster_columns(cluster)) == 2:
        kind += " (two-way, Cameron-Gelbach-Miller)"
    reference = (f"t with {', '.join(map(str, dfs))} degrees of freedom, Stata's small" if dfs else "normal")
    notes = [f"Standard errors in parentheses: {kind}. * significant at 10 %, ** at 5 %, *** at 1 % "
             f"(two-sided, {reference})."]
    if cov_type != "unadjusted" and data.problem == "iv" and len(data.treatment) == 1:
        notes.append("The conditional likelihood-ratio set assumes homoskedastic errors (Moreira 2003): left out "
                     "under this covariance; the Anderson-Rubin set follows it.")
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


# ------------------------------------------------------------------ several models side by side
MODEL_KEYS = ("data", "method", "label")
CONSTANT, OUTCOME = "const", "outcome"      # the constant's coefficient name; the outcome's role
OLS_TITLE = "OLS"                           # the OLS column's title among a table's fits
OVERID_TESTS = (("hansen_j", "Hansen J"), ("sargan", "Sargan"), ("wooldridge", "Wooldridge score"))


def _ols_record(data: CausalData, settings: dict) -> dict:
    """A run-record-like dict of OLS (the inputs of f instrumenting themselves) under ``settings``."""
    est = TwoStageLeastSquares(**{k: v for k, v in settings.items() if k in _CONVENTIONS}).fit(
        _exogenous(data, data.outcome, data.input_columns))
    return {"method": "ols", "n": est.n_, "roles": {"outcome": [data.outcome], "treatment": list(data.treatment)},
            "coefficients": {str(k): float(v) for k, v in est.coef_.items()},
            "std_errors": {str(k): float(v) for k, v in est.std_errors_.items()},
            "linear": RunRecord.from_dict(est.record_fields()).linear.to_dict(), "config": dict(settings), "absorb": list(data.absorb),
            "weights": data.weights, "effect": {}, "diagnostics": None, "clr": None}


_CONVENTIONS = ("cov_type", "cluster", "small", "fixef_k", "cluster_df")


def _record_of(model) -> tuple[dict, str | None]:
    """``(run record, label)`` of one column: a run record (a dict, e.g. a ``--json`` file read back), a
    :class:`~dmlcore.runs.Run`, or a spec ``{"data": CausalData, "method": "ols" or a linear IV method,
    "label": ..., and fit settings (cov_type, cluster, small, fixef_k, cluster_df)}``, fitted here."""
    if hasattr(model, "record") and hasattr(model, "estimator"):
        return model.record, None
    if not isinstance(model, dict):
        raise DMLCoreError(f"A table column is a run record (dict), a Run or a spec {{'data': ..., 'method': ...}}; "
                           f"got {type(model).__name__}.")
    if "coefficients" in model:
        return model, model.get("label")
    if "data" not in model or "method" not in model:
        raise DMLCoreError(f"A table column's spec needs 'data' (a CausalData) and 'method'; got keys "
                           f"{', '.join(map(repr, model)) or 'none'}.")
    settings = {k: v for k, v in model.items() if k not in MODEL_KEYS}
    method = model["method"]
    if method not in TABLE_METHODS:
        raise DMLCoreError(f"A table column's method must come from {', '.join(TABLE_METHODS)}; got {method!r}.")
    if method == "ols":
        unknown = sorted(set(settings) - set(_CONVENTIONS))
        if unknown:
            raise DMLCoreError(f"OLS takes the settings {', '.join(_CONVENTIONS)}; got {', '.join(unknown)}.")
        return _ols_record(model["data"], settings), model.get("label")
    run = fit_run(model["data"], method, heldout_folds=0, debias=False, **settings)
    return run.record, model.get("label")


def _p_value(estimate: float, std_error: float, df) -> float:
    if not std_error > 0:
        return 1.0
    stat = abs(estimate / std_error)
    return float(2 * (t_dist.sf(stat, df) if df else norm.sf(stat)))


def _column_title(record: dict) -> str:
    method = RunRecord.from_dict(record).method
    return "OLS" if method == "ols" else METHODS[method].title if method in METHODS else str(method)


def models_table(models, *, labels: dict | None = None, digits: int = 3, caption: str | None = None,
                 level: float = 0.95, keep=None, titles=None) -> Table:
    """Several linear models side by side (pyfixest's ``etable``, Stata's ``esttab``): one column per model, a
    coefficient row with stars and its standard error below, then N, clusters, fixed effects, weights, R^2,
    kappa, each column's standard errors, the first-stage F under that covariance, and the Anderson-Rubin set
    under it; the conditional likelihood-ratio set (homoskedastic only) is shown for homoskedastic columns and
    left out, with a note, for robust or clustered ones.

    ``models``: run records (``fit --json`` files read back), :class:`~dmlcore.runs.Run` objects, or specs
    ``{"data": CausalData, "method": "ols" | "2sls" | "liml" | "fuller" | "gmm-iv", "label": "...", cov_type=...,
    cluster=..., small=..., fixef_k=..., cluster_df=...}`` fitted here. ``labels``: variable name -> label (rows);
    ``keep``: the coefficients to show, in order (the others are named in a note; default all); ``titles``: the
    columns' titles (default each spec's ``label`` or the method's title), numbered (1), (2), ...
    Stars: two-sided p-values below 0.10, 0.05, 0.01 from t(df) for a column with Stata's ``small`` (its
    degrees of freedom), else the normal; the notes say which.
    """
    models = list(models)
    if not models:
        raise DMLCoreError("A table of models needs at least one model.")
    records = [_record_of(m) for m in models]
    labels = dict(labels or {})
    if titles is not None and len(list(titles)) != len(records):
        raise DMLCoreError(f"Give one title per model: {len(records)} models, {len(list(titles))} titles.")
    titles = [f"({i + 1}) {t}" for i, t in enumerate(
        titles if titles is not None else [label or _column_title(record) for record, label in records])]
    records = [(RunRecord.from_dict(record), label) for record, label in records]
    treatments = list(dict.fromkeys(t for r, _ in records for t in r.role("treatment")))
    names = list(dict.fromkeys([*[t for t in treatments if any(t in r.coefficients for r, _ in records)],
                                *(n for r, _ in records for n in r.coefficients if n != CONSTANT)]))
    names += [CONSTANT] if any(CONSTANT in r.coefficients for r, _ in records) else []
    hidden = []
    if keep is not None:
        keep = list(keep)
        unknown = [k for k in keep if k not in names]
        if unknown:
            raise DMLCoreError(f"keep names coefficients no model has: {', '.join(map(repr, unknown))}; they are "
                               f"{', '.join(names)}.")
        hidden, names = [n for n in names if n not in keep], keep
    fmt = f"{{:.{digits}f}}"
    rows = []
    for name in names:
        coef_row, se_row = {"": labels.get(name, "Constant" if name == CONSTANT else name)}, {"": ""}
        for title, (record, _) in zip(titles, records):
            if name in record.coefficients:
                b, s = record.coefficients[name], record.std_errors[name]
                df_t = record.linear.df_t if record.linear is not None else None
                star = next((mark for bound, mark in STARS if _p_value(b, s, df_t) < bound), "")
                coef_row[title], se_row[title] = fmt.format(b) + star, f"({fmt.format(s)})"
            else:
                coef_row[title] = se_row[title] = ""
        rows += [coef_row, se_row]
    stats, notes = _model_statistics(records, titles, treatments, labels, level, digits)
    if hidden:
        shown = ", ".join(labels.get(n, "the constant" if n == CONSTANT else n) for n in hidden)
        notes.insert(1, f"Also in the models, not shown: {shown}.")
    frame = pd.DataFrame(rows + stats, columns=[""] + titles).fillna("")
    outcome = next((r.role(OUTCOME) for r, _ in records if r.role(OUTCOME)), None)
    outcome = outcome[0] if isinstance(outcome, list) else outcome
    dependent = labels.get(outcome, outcome) if outcome else "the outcome"
    return Table(frame, caption=caption or f"Dependent variable: {dependent}", notes=notes)


def _model_statistics(records, titles, treatments, labels, level, digits=3) -> tuple[list[dict], list[str]]:
    per = list(zip(titles, (r for r, _ in records)))          # (title, typed run record)
    config = {t: r.config if r.config is not None else Config() for t, r in per}
    linear = {t: r.linear if r.linear is not None else LinearFit() for t, r in per}
    cluster = {t: config[t].cluster for t, _ in per}
    rows = [{"": "Observations", **{t: f"{r.n:,}" for t, r in per}}]
    if any(cluster.values()):
        rows.append({"": "Clusters", **{t: (f"{linear[t].n_clusters:,} ({cluster[t]})"
                                            if cluster[t] and linear[t].n_clusters else "")
                                        for t, _ in per}})
    rows += [{"": "Fixed effects", **{t: ", ".join(r.absorb or []) or "no" for t, r in per}},
             {"": "Weights", **{t: r.weights or "no" for t, r in per}},
             {"": "R²", **{t: f"{linear[t].r2:.3f}" if linear[t].r2 is not None else "" for t, _ in per}}]
    k_class = {t: r.method in METHODS and METHODS[r.method].k_class for t, r in per}
    if any(k_class.values()):
        rows.append({"": "kappa (k-class)", **{t: f"{linear[t].kappa:.4f}" if k_class[t] else "" for t, _ in per}})
    rows.append({"": "Standard errors", **{t: _se_words(config[t], linear[t]) for t, _ in per}})
    for treatment in treatments:
        suffix = f" ({labels.get(treatment, treatment)})" if len(treatments) > 1 else ""
        row = {"": f"First-stage F{suffix}"}
        for t, r in per:
            value = _endogenous(r, treatment).f_stat_cov
            row[t] = f"{value:.2f}" if value is not None else ""
        rows.append(row)
    for treatment in treatments if len(treatments) > 1 else []:     # several endogenous: each one's conditional F
        row = {"": f"Sanderson-Windmeijer F ({labels.get(treatment, treatment)})"}
        for t, r in per:
            value = _endogenous(r, treatment).sanderson_windmeijer_f
            row[t] = f"{value:.2f}" if value is not None else ""
        rows.append(row)
    ar_row, clr_row, left_out = {"": f"Anderson-Rubin {level:.0%} set"}, {"": f"CLR {level:.0%} set"}, []
    for t, r in per:
        ar = next((e for e in (r.effect.intervals if r.effect is not None else None) or []
                   if e.is_anderson_rubin and e.set is not None), None)
        ar_row[t] = _set_text(ar.set, digits) if ar else ""
        pieces = r.clr.pieces if r.clr is not None else None
        if pieces is not None and (config[t].cov_type or DEFAULTS.cov_type) == "unadjusted":
            clr_row[t] = _set_text(pieces, digits)
        else:
            clr_row[t] = ""
            if pieces is not None:
                left_out.append(t.split(")")[0] + ")")
    if any(v for k, v in ar_row.items() if k):
        rows.append(ar_row)
    if any(v for k, v in clr_row.items() if k):
        rows.append(clr_row)
    smalls = sorted({linear[t].df_t for t, _ in per if linear[t].df_t})
    stars = ("two-sided p-values from t with each column's degrees of freedom (Stata's small) where the standard "
             "errors row says so, else from the normal" if smalls else "two-sided p-values from the normal")
    notes = [f"Standard errors in parentheses, under each column's covariance (the standard errors row: "
             f"homoskedastic; HC0 / HC1 heteroskedasticity-robust without / with n/(n-k); CR0 / CR1 cluster-robust "
             f"without / with G/(G-1) (n-1)/(n-k); t(df): Stata's small). "
             f"* p < 0.10, ** p < 0.05, *** p < 0.01: {stars}."]
    if left_out:
        notes.append(f"The conditional likelihood-ratio (CLR) set assumes homoskedastic errors (Moreira 2003): left "
                     f"out for columns {', '.join(left_out)}, whose standard errors are robust or clustered; their "
                     f"Anderson-Rubin set follows their covariance.")
    few = sorted({linear[t].n_clusters for t, _ in per if cluster[t] and linear[t].n_clusters
                  and linear[t].n_clusters < FEW_CLUSTERS})
    if few:
        notes.append(few_clusters_note(few[0]))
    if any(r.absorb for _, r in per):
        notes.append("Absorbed fixed effects: rows demeaned within their groups; the constant is absorbed with them.")
    return rows, notes


SE_SHORT = {"unadjusted": "homoskedastic", "robust": "HC0", "robust-hc1": "HC1", "clustered": "CR0",
            "clustered-cr1": "CR1"}


def _se_words(config: Config, linear: LinearFit) -> str:
    """A column's standard errors in a few words: "HC1", "CR1 by region, t(8)" (the notes spell them out)."""
    cov = config.cov_type or DEFAULTS.cov_type
    small = bool(config.small)
    short = SE_SHORT.get(cov, cov)
    if small and cov in SMALL_SHORT:
        short = SMALL_SHORT[cov]
    cluster = config.cluster
    if cluster:
        short += " by " + " and ".join(cluster_columns(cluster))
    if small and linear.df_t:
        short += f", t({linear.df_t})"
    return short


SMALL_SHORT = {"robust": "HC1", "clustered": "CR1"}      # a covariance's short name with Stata's small


def _endogenous(record: RunRecord, treatment: str) -> Endogenous:
    """The first stage of ``treatment`` under the run's covariance (empty when the record has none)."""
    inference = record.diagnostics.inference if record.diagnostics is not None else None
    entry = (inference.endogenous if inference is not None else None) or {}
    return entry.get(treatment) or Endogenous()


def _set_text(pieces, digits: int) -> str:
    """A confidence set's pieces with ``digits`` decimals, as the table's coefficients."""
    if not pieces:
        return "empty"
    fmt = lambda v, inf: inf if v is None else f"{v:.{digits}f}"     # noqa: E731
    return " U ".join(f"{'(' if lo is None else '['}{fmt(lo, '-inf')}, {fmt(hi, '+inf')}{')' if hi is None else ']'}"
                      for lo, hi in pieces)


__all__ = ["regression_table", "models_table", "write_table", "table_format", "TABLE_METHODS", "DEFAULT_METHODS"]
