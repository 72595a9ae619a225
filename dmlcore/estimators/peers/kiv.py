"""Kernel instrumental variable regression, KIV (Singh, Sahani & Gretton 2019), with random features.

Stage 1 regresses the features of f's inputs, phi(x), on the features of the conditioning
variables, psi(c), by ridge regression on one half of the rows: E[phi(X) | c] ~ W'psi(c).
Stage 2 regresses the outcome on the predicted features W'psi(c) on the other half:
f(x) = phi(x)'alpha. Both kernels are Gaussian with the median-heuristic bandwidth (on
standardized columns, categories one-hot), approximated by 100 random Fourier features as in
the DML-CMR paper's comparison. The two penalties are chosen by the paper's own two-sample
validation: lambda minimises the stage-1 error on the stage-2 half, then xi minimises the
outcome's error on the stage-1 half.
"""

from __future__ import annotations

import numpy as np

from dmlcore.estimators.peers.base import Columns, PeerEstimator, Scale
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.peers.kernels import GaussianFeatures, check_memory, feature_dim, median_distance
from dmlcore.learners.base import check_fraction, check_positive

LAMBDA_GRID = tuple(10.0 ** np.linspace(-10, 0, 51))


class KIV(PeerEstimator):
    """Kernel IV regression with random Fourier (or Nystroem) features.

    Parameters
    ----------
    n_features : int, default 100
        Features per kernel (the DML-CMR paper's comparison used 100 random Fourier features).
        With ``approximation="nystrom"`` and at least as many features as rows, the exact KIV.
    approximation : "rff" (default) or "nystrom"
    split : float, default 0.5
        Share of the rows for stage 1 (the rest fit stage 2).
    lam1, lam2 : float, optional
        Stage-1 and stage-2 penalties; None (default) chooses each from ``grid`` by the
        two-sample validation.
    grid : sequence of float, default 10^-10 ... 10^0 (51 values)
    seed : int, default 0

    Attributes
    ----------
    lam1_ : float
        Stage 1's penalty, as used.
    lam2_ : float
        Stage 2's penalty, as used.
    fold_losses_ : list
        One entry with the validation losses of both stages (standardized outcome).
    """

    title = "KIV"
    images_instead = "Use DFIV or DeepGMM, which read images with a CNN."

    def __init__(self, n_features: int = 100, approximation: str = "rff", split: float = 0.5,
                 lam1: float | None = None, lam2: float | None = None, grid=LAMBDA_GRID, seed: int = DEFAULTS.seed):
        self.n_features = n_features
        self.approximation = approximation
        self.split = split
        self.lam1 = lam1
        self.lam2 = lam2
        self.grid = grid
        self.seed = seed

    def _fit_peer(self, data, monitor):
        check_positive("n_features", self.n_features, integer=True)
        check_fraction("split", self.split, allow_zero=False, allow_one=False)
        for name, value in (("lam1", self.lam1), ("lam2", self.lam2)):
            if value is not None:
                check_positive(name, value)
        arr = data.cmr()
        n, d = arr.n, int(self.n_features)

        def need(m):  # bytes of the largest arrays for m rows
            dim = feature_dim(d, self.approximation, m)
            return 8 * (8 * m * dim + 4 * dim ** 2)
        check_memory(self.title, n, need, "fewer features (n_features)")
        monitor.stage("KIV: features", start=0.0, end=0.1)
        xcols, ccols = Columns(data, arr.input_names), Columns(data, arr.conditioning_names)
        x, c = xcols.fit(arr.inputs)(arr.inputs), ccols.fit(arr.conditioning)(arr.conditioning)
        scale = Scale(arr.y)
        y = scale(arr.y)
        rng = np.random.default_rng([self.seed, 31])
        perm = rng.permutation(n)
        n1 = min(max(int(round(self.split * n)), 2), n - 2)
        one, two = np.sort(perm[:n1]), np.sort(perm[n1:])
        phi = GaussianFeatures(median_distance(x, rng), d, self.approximation, seed=self.seed).fit(x[one])
        psi = GaussianFeatures(median_distance(c, rng), d, self.approximation, seed=self.seed + 1).fit(c[one])
        f1, f2, p1, p2 = phi.transform(x[one]), phi.transform(x[two]), psi.transform(c[one]), psi.transform(c[two])

        monitor.stage("KIV: stage 1, E[phi(X) | C]", start=0.1, end=0.55)
        grid1 = [self.lam1] if self.lam1 is not None else list(self.grid)
        solve1 = _ridge_path(p1, p1.T @ f1)
        path1 = []
        for lam in grid1:
            w = solve1(len(one) * lam)
            path1.append(float(np.mean(np.sum((f2 - p2 @ w) ** 2, axis=1))))
            monitor.check()
        best1 = int(np.argmin(path1))
        self.lam1_ = float(grid1[best1])
        mu2 = p2 @ solve1(len(one) * self.lam1_)

        monitor.stage("KIV: stage 2, outcome on E[phi(X) | C]", start=0.55, end=1.0)
        grid2 = [self.lam2] if self.lam2 is not None else list(self.grid)
        solve2 = _ridge_path(mu2, mu2.T @ y[two])
        path2 = []
        for lam in grid2:
            alpha = solve2(len(two) * lam)
            path2.append(float(np.mean((y[one] - f1 @ alpha) ** 2)))
            monitor.check()
        best2 = int(np.argmin(path2))
        self.lam2_ = float(grid2[best2])
        self.alpha_ = solve2(len(two) * self.lam2_)
        self.features_, self.columns_, self.scale_ = phi, xcols, scale
        self.input_columns_ = list(arr.input_names)
        self.fold_losses_ = [{"fold": 0, "rows": int(n), "stage1_rows": int(len(one)), "stage2_rows": int(len(two)),
                              "lam1": self.lam1_, "lam2": self.lam2_, "stage1_loss": path1[best1],
                              "second_stage_loss": path2[best2],
                              "validation": {"lam1": [float(v) for v in grid1], "stage1": path1,
                                             "lam2": [float(v) for v in grid2], "stage2": path2}}]
        self.second_stage_history_ = {}
        how = "given" if self.lam1 is not None and self.lam2 is not None else "chosen by two-sample validation"
        self.notes_.append(f"KIV penalties lambda = {self.lam1_:.2g} (stage 1) and xi = {self.lam2_:.2g} (stage 2), "
                           f"{how}; {phi.dim} {self.approximation} features per kernel.")

    def _predict(self, x):
        return self.scale_.back(self.features_.transform(self.columns_(x)) @ self.alpha_)


def _ridge_path(a: np.ndarray, b: np.ndarray):
    """lam -> (a'a + lam I)^-1 b for many penalties from one eigendecomposition of a'a."""
    values, vectors = np.linalg.eigh(a.T @ a)
    values = np.maximum(values, 0.0)
    vb = vectors.T @ b

    def solve(lam: float) -> np.ndarray:
        return vectors @ (vb / (values + lam)[:, None] if vb.ndim == 2 else vb / (values + lam))
    return solve
