"""Wild cluster bootstrap of the 2SLS coefficient of one endogenous column: Davidson & MacKinnon's (2010)
restricted efficient bootstrap (WRE), the one Stata's ``boottest`` runs after ``ivregress``.

No maintained Python package bootstraps IV this way (``wildboottest`` on PyPI bootstraps OLS only), so it is
written here. For the null beta = b0, on the linear IV model of the data (exogenous columns partialled out;
fixed effects absorbed and weights applied as everywhere, :mod:`dmlcore.stats.fixed_effects`):

1. the restricted structural residuals ``u = y - b0 d`` (the exogenous columns already partialled out);
2. the efficient reduced form: d regressed on the instruments Z and u; ``pi`` its coefficients on Z and
   ``v = d - Z pi`` (which keeps u's part, as DM's ``v-tilde``);
3. each draw multiplies every cluster's u and v by one weight w_g (Rademacher +-1, or Webb's six-point
   weights, better with few clusters), builds ``d* = Z pi + v w``, ``y* = b0 d* + u w``, refits 2SLS and
   forms the cluster-robust t statistic of b0 (CR1's factor cancels in the comparison);
4. the p-value is the share of draws with |t*| >= |t| (symmetric).

The interval is the set of b0 not rejected at the level, found by bisection from the Wald interval outward
(the draws' weights are fixed across b0, as boottest does). Draws are vectorised: every draw's 2SLS is a
few matrix products.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.sparse import csr_matrix

from dmlcore.stats.covariance import cluster_codes, cluster_columns
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.inference.linear_iv import linear_iv, partialled_parts

WEIGHT_TYPES = ("auto", "rademacher", "webb")
FEW_FOR_RADEMACHER = 12     # below it Rademacher weights give at most 2^G distinct draws: Webb's instead
_WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])


def _parts(data: CausalData, cluster: str):
    if data.problem != "iv" or len(data.treatment) != 1:
        raise DMLCoreError("The wild cluster bootstrap is for the 2SLS coefficient of one treatment column of an "
                           "IV problem.")
    if len(cluster_columns(cluster)) != 1:
        raise DMLCoreError("The wild cluster bootstrap clusters by one column (--cluster COLUMN); name one.")
    model = linear_iv(data)
    if model.endog.shape[1] != 1:
        raise DMLCoreError(f"The wild cluster bootstrap needs one endogenous column; '{data.treatment[0]}' enters "
                           f"as {model.endog.shape[1]} dummies. Recode it as 0/1.")
    y, d, z, _ = partialled_parts(model)
    x = model.exog.to_numpy()
    codes = cluster_codes(data.table, cluster)
    return y, d, z, x, codes


class _Draws:
    """The bootstrap of one data set: projections and the fixed cluster weights of every draw."""

    def __init__(self, y, d, z, x, codes, draws, weights, seed):
        self.y, self.d, self.x = y, d, x
        self.q, _ = np.linalg.qr(z)
        self.z = z
        g = int(codes.max() + 1)
        self.sums = csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(g, len(codes)))
        rng = np.random.default_rng(seed)
        w = (rng.choice([-1.0, 1.0], size=(g, draws)) if weights == "rademacher"
             else rng.choice(_WEBB, size=(g, draws)))
        self.w = w[codes]                      # (n, draws): each row's cluster weight
        self.xx = np.linalg.pinv(x.T @ x) if x.shape[1] else None
        self.n_clusters = g

    def _partial(self, a):
        return a - self.x @ (self.xx @ (self.x.T @ a)) if self.xx is not None else a

    def t_stat(self, y, d, b0):
        """2SLS estimate and cluster-robust (CR0) t statistic of ``b0`` for each column of y and d."""
        pd_ = self.q @ (self.q.T @ d)
        beta = np.sum(pd_ * y, axis=0) / np.sum(pd_ * d, axis=0)
        resid = y - beta * d
        scores = self.sums @ (pd_ * resid)
        var = np.sum(scores ** 2, axis=0) / np.sum(pd_ * pd_, axis=0) ** 2
        return beta, (beta - b0) / np.sqrt(var)

    def pvalue(self, b0: float) -> tuple[float, float]:
        """The bootstrap p-value of ``b0`` and the data's t statistic."""
        _, t = self.t_stat(self.y[:, None], self.d[:, None], b0)
        return float(np.mean(np.abs(self.draw_t(b0)) >= abs(t[0]))), float(t[0])

    def draw_t(self, b0: float) -> np.ndarray:
        """Every draw's t statistic of ``b0`` (steps 1-3 of the module notes)."""
        u = self.y - b0 * self.d
        design = np.column_stack([self.z, u])
        coef = np.linalg.lstsq(design, self.d, rcond=None)[0]
        fitted = self.z @ coef[:-1]
        v = self.d - fitted
        d_star = fitted[:, None] + self._partial(v[:, None] * self.w)
        y_star = b0 * d_star + self._partial(u[:, None] * self.w)
        return self.t_stat(y_star, d_star, b0)[1]


def wild_cluster_bootstrap(data: CausalData, cluster: str, *, beta0: float = 0.0, draws: int = 999,
                           weights: str = "auto", seed: int = DEFAULTS.seed, level: float = 0.95,
                           interval: bool = True) -> dict:
    """WRE wild cluster bootstrap test of ``beta0`` for the 2SLS coefficient, and (``interval``) its
    ``level`` interval by test inversion (module notes). ``weights``: "rademacher", "webb", or "auto"
    (Webb's below :data:`FEW_FOR_RADEMACHER` clusters, as MacKinnon & Webb advise, else Rademacher).

    Returns ``{"beta0", "t", "pvalue", "interval": [lo, hi] or None, "draws", "weights", "n_clusters",
    "seed", "method"}``; ``interval`` is None when the set is not one bounded interval within 1,000
    standard errors of the estimate (weak instruments: report the Anderson-Rubin set instead).
    """
    if weights not in WEIGHT_TYPES:
        raise DMLCoreError(f"Bootstrap weights are {' or '.join(WEIGHT_TYPES)}; got {weights!r}.")
    if not isinstance(draws, (int, np.integer)) or not 99 <= draws <= 99_999:
        raise DMLCoreError(f"The wild bootstrap takes 99 to 99,999 draws (999 is usual); got {draws!r}.")
    y, d, z, x, codes = _parts(data, cluster)
    if weights == "auto":
        weights = "webb" if codes.max() + 1 < FEW_FOR_RADEMACHER else "rademacher"
    boot = _Draws(y, d, z, x, codes, int(draws), weights, seed)
    pvalue, t = boot.pvalue(beta0)
    out = {"beta0": float(beta0), "t": t, "pvalue": pvalue, "interval": None, "draws": int(draws),
           "weights": weights, "n_clusters": boot.n_clusters, "seed": seed,
           "method": "wild restricted efficient cluster bootstrap (Davidson & MacKinnon 2010)"}
    if interval:
        out["interval"] = _invert(boot, 1.0 - level)
    return out


def _invert(boot: _Draws, alpha: float):
    """The bounded interval of b0 with p-value above ``alpha``, or None."""
    beta, t = boot.t_stat(boot.y[:, None], boot.d[:, None], 0.0)
    centre, se = float(beta[0]), abs(float(beta[0]) / float(t[0])) if t[0] != 0 else 1.0
    excess = lambda b: boot.pvalue(b)[0] - alpha - 1e-12   # noqa: E731  (> 0 inside)
    if excess(centre) <= 0:
        return None
    ends = []
    for sign in (-1.0, 1.0):
        step = 2.0 * se
        while excess(centre + sign * step) > 0:
            step *= 2.0
            if step > 1000 * se:
                return None
        ends.append(brentq(excess, *sorted((centre + sign * step / 2 if step > 2 * se else centre,
                                            centre + sign * step)), xtol=1e-6 * se))
    return [float(min(ends)), float(max(ends))]
