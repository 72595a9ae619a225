"""Linear two-stage least squares for E[Y - f(inputs) | conditioning] = 0.

f is linear in its inputs (``data.input_columns``) and the conditioning columns are the
instruments. Inputs that are also conditioning variables (covariates; the treatment in
PCL) instrument themselves, so for ``iv`` this is textbook 2SLS and for ``pcl`` it is the
linear proximal 2SLS of Tchetgen Tchetgen et al. (2020).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.linalg import solve_triangular

from dmlcore.stats.covariance import (CLUSTER_DF, FIXEF_K, check_covariance, cluster_codes, covariance_words,
                                         has_small_factor, is_clustered, lm_cov, n_clusters)
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator, check_fitted, input_matrix
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.stats.fixed_effects import counted_df, transform_of

_RANK_TOL = 1e-10


class TwoStageLeastSquares(CMREstimator):
    """Linear 2SLS with homoskedastic, heteroskedasticity-robust or clustered standard errors.

    Parameters
    ----------
    add_constant : bool, default True
        Add an intercept named ``"const"`` to the regressors and the instruments.
    drop_constant : bool, default True
        Leave out input and conditioning columns that are constant (with ``add_constant``; all
        zeros without it), such as image pixels that are blank in every row. Such a column is
        collinear with the intercept, so its coefficient is not identified; f then does not
        depend on it. The dropped columns are listed in ``dropped_columns_`` and ``notes_``.
        With False, a constant column is an error.
    max_columns : int, default 1000
        Most regressors or instruments accepted. Beyond it a fit takes minutes (on image data
        each pixel is a regressor: 4,098 of them on dsprites-pcl took about 10 minutes for
        5,000 rows) and ``fit`` raises a DMLCoreError that says what to use instead.
    cov_type : {"unadjusted", "robust", "clustered", "clustered-cr1"}, default "unadjusted"
        The standard errors: homoskedastic, heteroskedasticity-robust (HC0) or clustered by the
        column ``cluster``, CR0 or CR1 (:mod:`dmlcore.stats.covariance`); robust and clustered ones are
        ``linearmodels``' IV2SLS's with the same ``cov_type`` (``debiased=False``; CR1: ``True``); "robust-hc1"
        is HC1, linearmodels' robust ``debiased=True``.
    cluster : str, optional
        The column whose values group the rows (two, "a,b": two-way), with a clustered ``cov_type`` only.
    small : bool, default False
        Stata's ``small``: the small-sample factor in the covariance (n/(n-k): HC1 when robust; CR1,
        G/(G-1) (n-1)/(n-k), when clustered) and t critical values with n - k degrees of freedom (clustered:
        G - 1, G the smaller of two-way clusters) in the interval and the Anderson-Rubin set; ``df_`` holds them.
        Without it the intervals use the normal.
    fixef_k : {"full", "nested"}, default "full"
        Which absorbed levels count in k of a clustered covariance's small-sample factor: all (Stata's
        ``areg``, ivreg2 with dummies) or all but those of absorbed columns nested in a cluster column
        (fixest's and reghdfe's default, fixest's ``fixef.K``). Only with absorbed columns and CR1 or ``small``.
    cluster_df : {"conventional", "min"}, default "conventional"
        Two-way clustering's G/(G-1): each of the three terms its own G (linearmodels, ivreg2), or the
        smaller G for all (fixest's ``cluster.df = "min"``, its default). Only with two cluster columns and
        CR1 or ``small``.

    Attributes
    ----------
    coef_ : pandas.Series
        Coefficients keyed by input column (and ``"const"``); dropped columns are left out.
    std_errors_ : pandas.Series
        Standard errors ``sqrt(diag(s2 (Xh'Xh)^-1))`` with ``s2 = e'e / n`` and ``Xh`` the
        first-stage fitted regressors, as ``linearmodels`` ``IV2SLS.fit(cov_type="unadjusted")``.
        With ``cov_type`` "robust" or "clustered", linearmodels' of that covariance. Always finite:
        when they cannot be computed, ``fit`` raises a DMLCoreError.
    cov_type_, cluster_ : str, str or None
        The covariance the standard errors use, and the cluster column.
    input_columns_ : list of str
        Every input column of f (``predict`` takes them all, the dropped ones included).
    levels_ : dict
        Levels of each categorical column (``data.categorical``); such a column enters as dummies
        ``col=level`` (the first level left out when there is an intercept).
    dropped_columns_ : list of str
        Input and conditioning columns left out because they are constant.
    notes_ : list of str
        What the user should know about the fit (dropped columns); empty otherwise.
    n_ : int
        Number of rows used.
    kappa_ : float
        The k-class kappa (1 for 2SLS; LIML's and Fuller's estimated one).
    absorb_, weights_ : list of str, str or None
        The absorbed columns and the weights column of the fit.
    fold_losses_ : list
        Always empty (no cross-fitting).

    Notes
    -----
    The data's ``absorb`` and ``weights`` (:mod:`dmlcore.stats.fixed_effects`) act on every number: the
    rows are demeaned within the absorbed groups (no ``"const"`` then; ``offset_`` holds the fixed
    effects' weighted mean, which ``predict`` adds) and weighted by the square root of the weights.

    Examples
    --------
    >>> from dmlcore import TwoStageLeastSquares, load_dataset
    >>> card = load_dataset("card").data
    >>> est = TwoStageLeastSquares(cov_type="robust").fit(card)
    >>> est.coef_["educ"], est.std_errors_["educ"]
    """

    capabilities = frozenset({"linear_functional", "anderson_rubin", "absorb_weights"})
    title = "2SLS"
    k_class = False         # kappa estimated (LIML, Fuller) rather than 1
    efficient_gmm = False   # two-step GMM weighting (GMMIV)

    def __init__(self, add_constant=True, drop_constant=True, max_columns=1000, cov_type=DEFAULTS.cov_type,
                 cluster=None, small=DEFAULTS.small, fixef_k=DEFAULTS.fixef_k, cluster_df=DEFAULTS.cluster_df):
        self.add_constant = add_constant
        self.drop_constant = drop_constant
        self.max_columns = max_columns
        self.cov_type = cov_type
        self.cluster = cluster
        self.small = small
        self.fixef_k = fixef_k
        self.cluster_df = cluster_df

    def _fit(self, data: CausalData, monitor) -> None:
        """Estimate the coefficients of f on ``data``; ``monitor`` is only checked for cancellation."""
        check_covariance(self.cov_type, self.cluster, data.table)
        self._check_settings(data)
        transform = transform_of(data)
        check_conventions(self.cov_type, self.cluster, self.small, self.fixef_k, self.cluster_df, transform.absorb)
        monitor.stage(self.title)
        all_inputs, all_cond = data.input_columns, data.conditioning_columns
        if self.add_constant and "const" in all_inputs + all_cond:
            raise DMLCoreError("A column is named 'const', which clashes with the intercept that "
                               "add_constant=True adds. Rename the column or pass add_constant=False.")
        check_identified(data, all_inputs, all_cond)
        self.levels_ = {c: np.unique(data.table[c].to_numpy(dtype=float)) for c in data.categorical
                        if c in set(all_inputs) | set(all_cond)}
        table = with_dummies(data.table, self.levels_, self.add_constant)
        expanded_inputs, expanded_cond = (dummy_columns(cols, self.levels_, self.add_constant)
                                          for cols in (all_inputs, all_cond))
        dropped = (constant_columns(table, list(dict.fromkeys(expanded_inputs + expanded_cond)), self.add_constant)
                   if self.drop_constant else [])
        inputs = [c for c in expanded_inputs if c not in dropped]
        cond = [c for c in expanded_cond if c not in dropped]
        if not inputs and not self.add_constant:
            raise DMLCoreError(f"Every input of f is all zeros ({', '.join(all_inputs)}); there is nothing "
                               f"to estimate. Choose other input columns.")
        if not inputs and transform.codes:
            raise DMLCoreError(f"{self.title} has no input of f left to estimate beside the absorbed fixed effects; "
                               f"choose other input columns.")
        y = table[data.outcome].to_numpy(dtype=float)
        x = table[inputs].to_numpy(dtype=float)
        z = table[cond].to_numpy(dtype=float)
        x_names, z_names = list(inputs), list(cond)
        intercept = self.add_constant and not transform.codes      # absorbed fixed effects replace it
        if intercept:
            x, z = _with_constant(x), _with_constant(z)
            x_names, z_names = ["const"] + x_names, ["const"] + z_names
        pixels = [c for c in data.image_columns if c in set(inputs) | set(cond)]
        for a, what in ((x, "regressors"), (z, "instruments")):
            if a.shape[1] > self.max_columns:
                some = f", {len(pixels)} of them image pixels" if pixels else ""
                raise DMLCoreError(
                    f"2SLS would have {a.shape[1]} {what}{some}: more than max_columns="
                    f"{self.max_columns}, and a fit that takes minutes. "
                    + (_IMAGE_HINT if pixels else "Use fewer columns, a method with a learner "
                       "(DML-CMR), or TwoStageLeastSquares(max_columns=...) from Python."))
        check_enough_rows(x, "regressors (inputs of f)", self.add_constant, pixels, transform.df)
        check_enough_rows(z, "instruments (conditioning columns)", self.add_constant, pixels, transform.df)
        raw_x, raw_y = x, y
        if transform.active:
            y, x, z = transform.apply(y), transform.apply(x), transform.apply(z)
            if transform.codes:
                check_not_absorbed(raw_x, x, x_names, transform.absorb)
                check_not_absorbed(table[cond].to_numpy(dtype=float), z, z_names, transform.absorb)
        hint = _IMAGE_HINT if pixels else None
        check_full_rank(x, x_names, "inputs of f (regressors)", hint=hint)
        check_full_rank(z, z_names, "conditioning columns (instruments)", hint=hint)
        q, _ = np.linalg.qr(z)
        x_hat = q @ (q.T @ x)
        check_full_rank(x_hat, x_names, "first-stage projections of the inputs of f",
                        hint="The instruments do not move these inputs independently: the model is "
                             "not identified. Use stronger or more instruments.")
        n = len(y)
        clusters = cluster_codes(data.table, self.cluster) if self.cluster else None
        se_df = counted_df(transform, clusters, self.fixef_k)
        if not (self.k_class or self.efficient_gmm) and self.cov_type == "unadjusted" and not self.small:
            # (Xh'Xh)^-1 = R^-1 R^-T from Xh = QR: its diagonal is a sum of squares, never negative
            q_hat, r = np.linalg.qr(x_hat)
            beta = solve_triangular(r, q_hat.T @ y)
            resid = y - x @ beta
            r_inv = solve_triangular(r, np.eye(r.shape[0]))
            with np.errstate(over="ignore", invalid="ignore"):
                std_errors = np.sqrt(resid @ resid / n * np.sum(r_inv ** 2, axis=1))
            self.kappa_ = 1.0
        else:
            beta, std_errors, self.kappa_ = linear_fit(y, x, z, x_names, z_names, self.cov_type, clusters,
                                                       transform.df, gmm=self.efficient_gmm, k_class=self.k_class,
                                                       fuller_alpha=getattr(self, "alpha", None),
                                                       small=self.small, se_df=se_df, cluster_df=self.cluster_df)
        if not (np.all(np.isfinite(beta)) and np.all(np.isfinite(std_errors))):
            raise DMLCoreError(f"{self.title} could not compute finite coefficients and standard errors: the "
                               "regressors or instruments are nearly collinear. Drop near-duplicate "
                               "columns, or use a method with a learner (DML-CMR).")
        self.coef_ = pd.Series(beta, index=x_names, name="coef")
        self.std_errors_ = pd.Series(std_errors, index=x_names, name="std_error")
        self.cov_type_, self.cluster_, self.small_ = self.cov_type, self.cluster, bool(self.small)
        self.df_ = t_df(self.cov_type, clusters, n, len(x_names), transform.df) if self.small else None
        self.absorb_, self.weights_ = list(transform.absorb), transform.weights_column
        # with absorbed fixed effects, f's level is their (weighted) mean: predict adds it
        w = np.ones(n) if transform.weights is None else transform.weights
        self.offset_ = float(np.average(raw_y - raw_x @ beta, weights=w)) if transform.codes else 0.0
        # R^2 as Stata's ivregress and the regression with the fixed effects' dummies: 1 - RSS / (weighted) TSS
        resid = y - x @ beta
        self.r2_ = float(1.0 - resid @ resid / np.sum(w * (raw_y - np.average(raw_y, weights=w)) ** 2))
        self.n_clusters_ = n_clusters(clusters)
        self.input_columns_ = list(all_inputs)
        self.dropped_columns_ = dropped
        self.notes_ = [_dropped_note(dropped)] if dropped else []
        self.n_ = n
        self.fold_losses_ = []

    def record_fields(self) -> dict:
        return {**super().record_fields(), "notes": list(self.notes_),
                "coefficients": {str(k): float(v) for k, v in self.coef_.items()},
                "std_errors": {str(k): float(v) for k, v in self.std_errors_.items()},
                "linear": {"r2": self.r2_, "df_t": self.df_, "kappa": self.kappa_, "n_clusters": self.n_clusters_,
                           "covariance": covariance_words(self).split(", as linearmodels")[0]}}

    def _check_settings(self, data: CausalData) -> None:
        """Raise for settings this method cannot honour (see subclasses)."""

    def predict(self, X) -> np.ndarray:
        """f at the rows of ``X`` (DataFrame with the input columns, or an array in their order)."""
        check_fitted(self, "coef_")
        x = input_matrix(X, self.input_columns_, type(self).__name__)
        frame = with_dummies(pd.DataFrame(x, columns=self.input_columns_), self.levels_, self.add_constant,
                             owner=type(self).__name__)
        kept = [c for c in frame.columns if c in self.coef_.index]
        return (frame[kept].to_numpy() @ self.coef_[kept].to_numpy() + self.coef_.get("const", 0.0)
                + getattr(self, "offset_", 0.0))

    def effect_functional(self, plan) -> tuple[float, float]:
        """The treatment's coefficient (its dummy's, for a categorical 0/1 treatment) and standard
        error, times the distance between the two values of a binary treatment: the effect
        ``plan`` (:class:`dmlcore.runs.average_effect.Contrast`) asks for, f being linear."""
        check_fitted(self, "coef_")
        name = plan.treatment
        values = np.unique(plan.points[name])
        scale = float(values[-1] - values[0]) if len(values) == 2 else 1.0
        if name not in self.coef_.index and name in getattr(self, "levels_", {}):
            name, scale = f"{name}={values[-1]:g}", 1.0
        if name not in self.coef_.index:
            raise DMLCoreError(f"{self.title} has no coefficient for the treatment '{plan.treatment}' (it was left out "
                               f"as constant), so it gives no effect.")
        return float(self.coef_[name]) * scale, float(self.std_errors_[name]) * abs(scale)

    def interval_how(self, z: float) -> str:
        extra = "".join(f", {t}" for t in linear_options_words(self))
        return f"{self.title}: the coefficient -/+ {z:.2f} x its standard error ({covariance_words(self)}{extra})"


def check_conventions(cov_type: str, cluster, small, fixef_k, cluster_df, absorb) -> None:
    """Refuse, in one line, a small-sample convention that cannot act on this covariance (module notes of
    :mod:`dmlcore.stats.covariance`)."""
    if not isinstance(small, (bool, np.bool_)):
        raise DMLCoreError(f"small must be True or False (Stata's small); got {small!r}.")
    for name, value, choices in (("fixef_k", fixef_k, FIXEF_K), ("cluster_df", cluster_df, CLUSTER_DF)):
        if value not in choices:
            raise DMLCoreError(f"Unknown {name} {value!r}; choose one of {', '.join(choices)}.")
    factor = has_small_factor(cov_type, small)
    if fixef_k != "full" and not (absorb and is_clustered(cov_type) and factor):
        raise DMLCoreError(f"fixef_k={fixef_k!r} sets which absorbed levels count in a clustered covariance's "
                           f"small-sample factor: it needs absorbed columns, a clustered covariance and CR1 or small "
                           f"(got absorb {list(absorb) or 'none'}, cov {cov_type!r}, small {bool(small)}).")
    if cluster_df != "conventional":
        two_way = is_clustered(cov_type) and len([c for c in str(cluster or "").split(",") if c.strip()]) == 2
        if not (two_way and factor):
            raise DMLCoreError(f"cluster_df={cluster_df!r} sets the G/(G-1) of two-way clustering: it needs two "
                               f"cluster columns and CR1 or small (got cov {cov_type!r}, cluster {cluster!r}, "
                               f"small {bool(small)}).")


def t_df(cov_type: str, clusters, n: int, k: int, absorbed: int = 0) -> int:
    """The degrees of freedom of Stata's ``small`` t and F: G - 1 when clustered (G the smaller of two-way
    clusters, as Stata and fixest), else n - k - absorbed levels."""
    if is_clustered(cov_type):
        return int(n_clusters(clusters)) - 1
    return int(n - k - absorbed)


def linear_fit(y, x, z, x_names, z_names, cov_type, clusters, extra_df=0, *, gmm=False, k_class=False,
               fuller_alpha=None, small=DEFAULTS.small, se_df=None, cluster_df=DEFAULTS.cluster_df):
    """``(coefficients, standard errors, kappa)`` of linearmodels' IV2SLS, IVLIML (``k_class``: LIML, or Fuller
    with ``fuller_alpha``) or IVGMM (``gmm``) on the (already transformed) arrays, in the order of
    ``x_names``: regressors that are also instruments are exogenous, the others endogenous. ``cov_type``
    as :mod:`dmlcore.stats.covariance` (CR1: ``debiased=True``); ``extra_df`` absorbed levels count in every
    small-sample factor (Fuller's kappa, CR1), as they would with their dummies entered."""
    from linearmodels.iv import IV2SLS, IVGMM, IVLIML
    exog = [j for j, c in enumerate(x_names) if c in z_names]
    endog = [j for j, c in enumerate(x_names) if c not in z_names]
    excluded = [j for j, c in enumerate(z_names) if c not in x_names]
    frame = lambda a, cols, names: pd.DataFrame(a[:, cols], columns=[names[j] for j in cols]) if cols else None  # noqa: E731
    parts = (pd.Series(y, name="y"), frame(x, exog, x_names), frame(x, endog, x_names), frame(z, excluded, z_names))
    clustered = is_clustered(cov_type)
    kind_cov = lm_cov(cov_type)
    se_df = extra_df if se_df is None else se_df
    debiased = has_small_factor(cov_type, small)
    n, k = len(y), len(x_names)
    # two-way with the smaller G for every term (fixest's cluster.df="min"): CR0 times one scalar factor
    scalar = None
    if debiased and clustered and np.ndim(clusters) == 2 and cluster_df == "min":
        g = n_clusters(clusters)
        scalar, debiased = g / (g - 1) * (n - 1) / (n - k - se_df), False
    kwargs = {"clusters": clusters} if clustered else {}
    kappa = 1.0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if gmm:
            try:
                fit = IVGMM(*parts, weight_type=kind_cov, **kwargs).fit(cov_type=kind_cov, debiased=debiased, **kwargs)
            except ValueError as exc:       # a singular weight matrix (fewer clusters than moments)
                raise DMLCoreError(f"Efficient GMM cannot weight the moments: {str(exc).splitlines()[0]}") from None
            cov = fit.cov.loc[x_names, x_names].to_numpy()
            if debiased and se_df:     # IVGMM's n/(n-k) or (n-1)/(n-k) does not take extra_df: rescale it
                cov = cov * (n - k) / (n - k - se_df)
            if scalar is not None:
                cov = cov * scalar
            return fit.params[x_names].to_numpy(), np.sqrt(np.diag(cov)), kappa
        if not k_class:
            model = IV2SLS(*parts)
        else:
            try:
                kappa = float(IVLIML(*parts).fit(cov_type="unadjusted").kappa)
            except (ValueError, np.linalg.LinAlgError):   # linearmodels: the residuals' cross product is singular
                raise DMLCoreError("LIML's kappa cannot be estimated: the instruments and covariates fit the outcome "
                                   "and the treatment jointly without error (their residuals are linearly "
                                   "dependent). Check for an outcome computed from the other columns, or use "
                                   "2sls.") from None
            if fuller_alpha is not None:  # Fuller (1977): kappa - alpha / (n - instruments), absorbed levels counted
                kappa -= fuller_alpha / (len(y) - z.shape[1] - extra_df)
            model = IVLIML(*parts, kappa=kappa)
        fit = model.fit(cov_type=kind_cov, debiased=debiased, extra_df=se_df, **kwargs)
    std_errors = fit.std_errors[x_names].to_numpy()
    return fit.params[x_names].to_numpy(), std_errors * np.sqrt(scalar) if scalar is not None else std_errors, kappa


def check_not_absorbed(raw: np.ndarray, demeaned: np.ndarray, names: list[str], absorb: list[str]) -> None:
    """Raise for a column the fixed effects absorb (constant within their groups)."""
    scale = np.maximum(np.abs(raw).max(axis=0), 1e-300)
    gone = np.abs(demeaned).max(axis=0) <= 1e-9 * scale
    if gone.any():
        name = names[int(np.flatnonzero(gone)[0])]
        raise DMLCoreError(f"Column '{name}' is constant within the groups of {' and '.join(map(repr, absorb))} "
                           f"(absorbed), so the fixed effects already hold it and its coefficient is not "
                           f"identified. Leave it out of the roles or absorb fewer columns.")


def linear_options_words(estimator) -> list[str]:
    """The fit's absorbed fixed effects and weights in words (empty when there are none)."""
    out = []
    if getattr(estimator, "absorb_", None):
        out.append("fixed effects of " + " and ".join(f"'{c}'" for c in estimator.absorb_) + " absorbed")
    if getattr(estimator, "weights_", None):
        out.append(f"weighted by '{estimator.weights_}'")
    return out


def dummy_columns(columns: list[str], levels: dict, drop_first: bool) -> list[str]:
    """``columns`` with each categorical one replaced by its dummies' names ``col=level``."""
    out = []
    for c in columns:
        out += [f"{c}={v:g}" for v in levels[c][int(drop_first):]] if c in levels else [c]
    return out


def with_dummies(table: pd.DataFrame, levels: dict, drop_first: bool, owner: str | None = None) -> pd.DataFrame:
    """``table`` with a 0/1 column ``col=level`` for each level of each categorical column present
    (the first level left out when ``drop_first``: the intercept stands for it). With ``owner``
    (at predict time) a level not seen in training is an error."""
    extra = {}
    for c, values in levels.items():
        if c not in table:
            continue
        column = table[c].to_numpy(dtype=float)
        unseen = ~np.isin(column, values)
        if owner and unseen.any():
            raise DMLCoreError(f"{owner}.predict: categorical column '{c}' has the value {column[unseen][0]:g}, "
                               f"a level not seen in training. Predict only at levels present in the data.")
        for v in values[int(drop_first):]:
            extra[f"{c}={v:g}"] = (column == v).astype(float)
    return table.assign(**extra) if extra else table


_IMAGE_HINT = ("The image pixels have fixed roles, so they cannot be left out: 2SLS, linear in every "
               "pixel, does not suit this data. Use DML-CMR or the naive plug-in with the "
               "neural-network learner, which reads the image with a small network.")


def constant_columns(table: pd.DataFrame, columns: list[str], add_constant: bool = True) -> list[str]:
    """The ``columns`` that are constant (with an intercept) or all zeros (without one)."""
    out = []
    for col in columns:
        values = table[col].to_numpy(dtype=float)
        if len(values) and (np.all(values == values[0]) if add_constant else not np.any(values)):
            out.append(col)
    return out


def _dropped_note(dropped: list[str]) -> str:
    shown = ", ".join(dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    return (f"2SLS left out {len(dropped)} constant column(s) ({shown}): a constant column is collinear "
            f"with the intercept, so its coefficient is not identified; f does not depend on it.")


def check_enough_rows(a: np.ndarray, what: str, intercept: bool, pixels: list[str], absorbed: int = 0) -> None:
    """Raise unless ``a`` has more rows than columns and ``absorbed`` fixed-effect levels."""
    n, p = a.shape
    if p + absorbed < n:
        return
    parts = (["the intercept"] if intercept else []) + [f"{p - intercept} column(s)"]
    parts += [f"{absorbed} absorbed fixed-effect levels"] if absorbed else []
    p += absorbed
    some = f", {len(pixels)} of them image pixels" if pixels else ""
    todo = (f"Simulate at least {p + 1} rows, or use DML-CMR or the naive plug-in with the "
            f"neural-network learner, which reads the image with a small network." if pixels else
            f"Load more rows, or use fewer columns.")
    raise DMLCoreError(f"2SLS needs more rows than {what}: there are {p} ({' and '.join(parts)}{some}) "
                       f"but only {n} rows. {todo}")


def _with_constant(a: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(a)), a])


def check_identified(data: CausalData, inputs: list[str] | None = None,
                     cond: list[str] | None = None) -> None:
    """Raise unless there are at least as many excluded instruments as endogenous inputs.

    ``inputs`` and ``cond`` default to the data's input and conditioning columns.
    """
    inputs = data.input_columns if inputs is None else inputs
    cond = data.conditioning_columns if cond is None else cond
    endog = [c for c in inputs if c not in cond]
    excluded = [c for c in cond if c not in inputs]
    if len(excluded) < len(endog):
        raise DMLCoreError(
            f"The model is under-identified: {len(endog)} endogenous input(s) of f "
            f"({', '.join(endog)}) but only {len(excluded)} excluded instrument(s) "
            f"({', '.join(excluded) or 'none'}). Add instruments (conditioning columns that are "
            f"not inputs of f) or drop endogenous inputs.")


def check_full_rank(a: np.ndarray, names: list[str], what: str, hint: str | None = None) -> None:
    """Raise a DMLCoreError naming the first column of ``a`` spanned by the columns before it."""
    norms = np.linalg.norm(a, axis=0)
    if np.any(norms == 0):
        raise DMLCoreError(f"Among the {what}, column '{names[int(np.argmin(norms))]}' is all "
                           f"zeros. " + (hint or "Drop it."))
    if a.shape[1] > a.shape[0]:
        raise DMLCoreError(f"The {what} are {a.shape[1]} columns but there are only {a.shape[0]} rows, "
                           f"so they are collinear. " + (hint or "Use more rows or fewer columns."))
    scaled = a / norms
    r = np.linalg.qr(scaled, mode="r")
    small = np.flatnonzero(np.abs(np.diag(r)) < _RANK_TOL * max(1, a.shape[0]) ** 0.5)
    if small.size == 0:
        return
    j = int(small[0])
    weights, *_ = np.linalg.lstsq(scaled[:, :j], scaled[:, j], rcond=None)
    partners = [names[i] for i in np.flatnonzero(np.abs(weights) > 1e-8)]
    raise DMLCoreError(
        f"The {what} are perfectly collinear: column '{names[j]}' is a linear combination of "
        f"{', '.join(repr(p) for p in partners)}. "
        + (hint or "Drop one of these columns."))
