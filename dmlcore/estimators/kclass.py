"""LIML, Fuller and efficient two-step GMM: the linear IV estimators beside 2SLS (``liml``, ``fuller``,
``gmm-iv``), fitted by linearmodels' IVLIML and IVGMM on the same model, roles, fixed effects, weights
and covariance choice as :class:`~dmlcore.estimators.tsls.TwoStageLeastSquares`.

LIML is the k-class estimator with kappa the smallest root of the LIML eigenproblem; Fuller's
estimator subtracts ``alpha / (n - L)`` from it (L instruments, the constant and absorbed levels
counted; ``alpha=1`` has finite moments and is nearly unbiased, Fuller 1977); with one instrument per
endogenous column all three equal 2SLS. The GMM estimator weights the moments by the inverse of their
covariance estimated at 2SLS, under the covariance choice (homoskedastic: it is 2SLS; robust;
clustered), and reports the covariance of that choice (linearmodels' IVGMM ``weight_type`` =
``cov_type``).
"""

from __future__ import annotations

from dmlcore.stats.covariance import cluster_columns
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.tsls import TwoStageLeastSquares


class LIML(TwoStageLeastSquares):
    """Limited-information maximum likelihood (k-class, kappa estimated): linear IV, less biased than
    2SLS with many or weak instruments, equal to 2SLS with one instrument. Attributes as
    ``TwoStageLeastSquares``'s, with the estimated kappa in ``kappa_``.

    Parameters
    ----------
    add_constant : bool, default True
        Add an intercept named ``"const"`` to the regressors and the instruments.
    drop_constant : bool, default True
        Leave out constant input and conditioning columns (listed in ``dropped_columns_``).
    max_columns : int, default 1000
        Most regressors or instruments accepted.
    cov_type : {"unadjusted", "robust", "clustered", "clustered-cr1"}, default "unadjusted"
        The standard errors (as ``TwoStageLeastSquares``).
    cluster : str, default None
        The column whose values group the rows (two, "a,b": two-way), with a clustered ``cov_type``
        only.

    Examples
    --------
    >>> from dmlcore import LIML, load_dataset
    >>> card = load_dataset("card").data
    >>> est = LIML(cov_type="robust").fit(card)
    >>> est.coef_["educ"], est.std_errors_["educ"]
    >>> est.kappa_
    """

    title, k_class = "LIML", True


class Fuller(TwoStageLeastSquares):
    """Fuller's modified LIML, kappa = LIML's - ``alpha`` / (n - L) (L: the instruments, the constant and
    absorbed levels counted): with ``alpha=1`` finite moments, nearly unbiased under weak instruments.
    Attributes as ``TwoStageLeastSquares``'s, with kappa in ``kappa_``.

    Parameters
    ----------
    add_constant : bool, default True
        Add an intercept named ``"const"`` to the regressors and the instruments.
    drop_constant : bool, default True
        Leave out constant input and conditioning columns (listed in ``dropped_columns_``).
    max_columns : int, default 1000
        Most regressors or instruments accepted.
    cov_type : {"unadjusted", "robust", "clustered", "clustered-cr1"}, default "unadjusted"
        The standard errors (as ``TwoStageLeastSquares``).
    cluster : str, default None
        The column whose values group the rows (two, "a,b": two-way), with a clustered ``cov_type``
        only.
    alpha : float, default 1.0
        Fuller's constant.

    Examples
    --------
    >>> from dmlcore import Fuller, load_dataset
    >>> card = load_dataset("card").data
    >>> est = Fuller(alpha=4).fit(card)
    >>> est.coef_["educ"], est.std_errors_["educ"]
    """

    title, k_class = "Fuller", True

    def __init__(self, add_constant=True, drop_constant=True, max_columns=1000, cov_type=DEFAULTS.cov_type,
                 cluster=None, small=DEFAULTS.small, fixef_k=DEFAULTS.fixef_k, cluster_df=DEFAULTS.cluster_df,
                 alpha=1.0):
        super().__init__(add_constant, drop_constant, max_columns, cov_type, cluster, small, fixef_k, cluster_df)
        self.alpha = alpha

    def _check_settings(self, data) -> None:
        if not isinstance(self.alpha, (int, float)) or not self.alpha > 0:
            raise DMLCoreError(f"Fuller's alpha must be a positive number (1 is the usual choice); got {self.alpha!r}.")


class GMMIV(TwoStageLeastSquares):
    """Efficient two-step linear GMM, weighted under the covariance choice (robust or clustered);
    equal to 2SLS with homoskedastic errors. Attributes as ``TwoStageLeastSquares``'s.

    Parameters
    ----------
    add_constant : bool, default True
        Add an intercept named ``"const"`` to the regressors and the instruments.
    drop_constant : bool, default True
        Leave out constant input and conditioning columns (listed in ``dropped_columns_``).
    max_columns : int, default 1000
        Most regressors or instruments accepted.
    cov_type : {"unadjusted", "robust", "clustered", "clustered-cr1"}, default "unadjusted"
        The standard errors, and the weight matrix of the second step.
    cluster : str, default None
        The column whose values group the rows (one column: two-way clustering is refused), with a
        clustered ``cov_type`` only.

    Examples
    --------
    >>> from dmlcore import GMMIV, load_dataset
    >>> card = load_dataset("card").data
    >>> est = GMMIV(cov_type="robust").fit(card)
    >>> est.coef_["educ"], est.std_errors_["educ"]
    """

    title, efficient_gmm = "GMM", True

    def _check_settings(self, data) -> None:
        if len(cluster_columns(self.cluster)) > 1:
            raise DMLCoreError("Efficient GMM clusters by one column (linearmodels' IVGMM has no two-way weight "
                               "matrix); cluster by one column, or use 2sls, liml or fuller for two-way clustering.")
