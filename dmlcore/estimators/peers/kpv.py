"""Kernel proxy variable regression, KPV (Mastouri et al. 2021), with random features.

The outcome bridge h(a, w, x) = phi(a, x)' Theta chi(w) solves E[Y - h(A, W, X) | A, Z, X] = 0.
Stage 1 (one half of the rows) learns the conditional mean embedding of the outcome proxy,
E[chi(W) | a, z, x] ~ V'psi(a, z, x), by ridge regression; stage 2 (the other half) regresses
the outcome on phi(a, x) (x) V'psi(a, z, x), a ridge regression in the tensor-product features,
solved in whichever of its primal (features) or dual (rows) forms is smaller. Kernels are
products of one Gaussian per column with bandwidth sqrt(scale) x the column's median distance
(the KPV code's column-wise kernels), approximated by random Fourier features.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from dmlcore.estimators.peers.base import Columns, PeerEstimator, Scale
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.peers.kernels import check_memory, columnwise_features, feature_dim
from dmlcore.learners.base import check_fraction, check_positive


class KPV(PeerEstimator):
    """Kernel proxy variable regression with random Fourier (or Nystroem) features.

    Parameters
    ----------
    n_features : int, default 100
        Features per kernel: of (treatment, covariates), of the outcome proxies and of the
        conditioning variables; stage 2 has n_features^2 tensor-product features.
    approximation : "rff" (default) or "nystrom"
    split : float, default 0.5, share of the rows for stage 1
    lam1, lam2 : float, default 0.001 each (the DML-CMR paper's settings for KPV)
    scale : float, default 0.5, bandwidth^2 as a multiple of the squared median distance
    center : bool, default True
        Fit h to the centred outcome (its mean is not shrunk). False: shrink towards 0, as the
        KPV code behind the DML-CMR paper's numbers did (docs/peers.md).
    seed : int, default 0
    """

    title, problem = "KPV", "pcl"
    images_instead = "Use NMMR, which reads images with a CNN."

    def __init__(self, n_features: int = 100, approximation: str = "rff", split: float = 0.5,
                 lam1: float = 1e-3, lam2: float = 1e-3, scale: float = 0.5, center: bool = True, seed: int = DEFAULTS.seed):
        self.n_features = n_features
        self.approximation = approximation
        self.split = split
        self.lam1 = lam1
        self.lam2 = lam2
        self.scale = scale
        self.center = center
        self.seed = seed

    def _fit_peer(self, data, monitor):
        check_positive("n_features", self.n_features, integer=True)
        check_fraction("split", self.split, allow_zero=False, allow_one=False)
        for name in ("lam1", "lam2", "scale"):
            check_positive(name, getattr(self, name))
        blocks = BridgeBlocks(data, self.center)
        n, d = len(data.table), int(self.n_features)
        n2 = n - min(max(int(round(self.split * n)), 2), n - 2)
        check_memory(self.title, n, lambda m: _bytes(m, feature_dim(d, self.approximation, m), self.split),
                     "fewer features (n_features)")
        monitor.stage("KPV: features", start=0.0, end=0.1)
        ax, w, c, y = blocks.ax, blocks.w, blocks.c, blocks.y
        rng = np.random.default_rng([self.seed, 37])
        perm = rng.permutation(n)
        one, two = np.sort(perm[:n - n2]), np.sort(perm[n - n2:])
        phi = columnwise_features(ax[one], d, self.approximation, self.scale, self.seed)
        chi = columnwise_features(w[one], d, self.approximation, self.scale, self.seed + 1)
        psi = columnwise_features(c[one], d, self.approximation, self.scale, self.seed + 2)

        monitor.stage("KPV: stage 1, E[chi(W) | A, Z, X]", start=0.1, end=0.4)
        p1, p2 = psi.transform(c[one]), psi.transform(c[two])
        g = p1.T @ p1
        g[np.diag_indices_from(g)] += len(one) * self.lam1
        v = np.linalg.solve(g, p1.T @ chi.transform(w[one]))
        mu2 = p2 @ v
        stage1 = float(np.mean(np.sum((chi.transform(w[two]) - mu2) ** 2, axis=1)))
        monitor.check()

        monitor.stage("KPV: stage 2, outcome on phi(A, X) x E[chi(W) | A, Z, X]", start=0.4, end=1.0)
        f2 = phi.transform(ax[two])
        self.theta_ = _tensor_ridge(f2, mu2, y[two], len(two) * self.lam2)
        resid = y[two] - np.sum((f2 @ self.theta_) * mu2, axis=1)
        self.features_, self.blocks_ = (phi, chi), blocks
        self.input_columns_ = list(data.input_columns)
        self.fold_losses_ = [{"fold": 0, "rows": int(n), "stage1_rows": int(len(one)), "stage2_rows": int(len(two)),
                              "stage1_loss": stage1, "second_stage_loss": float(np.mean(resid ** 2))}]
        self.second_stage_history_ = {}

    def _predict(self, x):
        ax, w = self.blocks_.split(x)
        phi, chi = self.features_
        return self.blocks_.scale.back(np.sum((phi.transform(ax) @ self.theta_) * chi.transform(w), axis=1))


def _bytes(rows: int, dim: int, split: float) -> int:
    """Planned peak memory of a fit on ``rows`` rows with ``dim`` features per kernel."""
    stage2 = rows - int(split * rows)
    return 8 * (10 * rows * dim + 2 * min(dim * dim, stage2) ** 2 + 4 * dim ** 2)


def _tensor_ridge(a: np.ndarray, b: np.ndarray, y: np.ndarray, penalty: float, chunk: int = 2048) -> np.ndarray:
    """Theta minimising sum_i (y_i - a_i' Theta b_i)^2 + penalty |Theta|^2, in its primal form
    (a.shape[1] * b.shape[1] unknowns, rows accumulated ``chunk`` at a time) or its dual form
    (len(y) unknowns), whichever is smaller."""
    n, p, q = len(y), a.shape[1], b.shape[1]
    if p * q <= n:
        g, rhs = np.zeros((p * q, p * q)), np.zeros(p * q)
        for i in range(0, n, chunk):
            z = (a[i:i + chunk, :, None] * b[i:i + chunk, None, :]).reshape(-1, p * q)
            g += z.T @ z
            rhs += z.T @ y[i:i + chunk]
        g[np.diag_indices_from(g)] += penalty
        return np.linalg.solve(g, rhs).reshape(p, q)
    g = (a @ a.T) * (b @ b.T)
    g[np.diag_indices_from(g)] += penalty
    alpha = cho_solve(cho_factor(g, lower=True, overwrite_a=True), y)
    return a.T @ (alpha[:, None] * b)


class BridgeBlocks:
    """The columns of a proximal problem as the kernel proxies use them: (treatment, covariates)
    and outcome proxies (the bridge's inputs), (treatment, treatment proxies, covariates) (the
    conditioning variables), each prepared by :class:`Columns`, and the standardized outcome
    (centred unless ``center`` is False)."""

    def __init__(self, data, center: bool = True):
        arr = data.cmr()
        names = arr.input_names
        self.ax_pos = [names.index(col) for col in data.treatment + data.covariates]
        self.w_pos = [names.index(col) for col in data.outcome_proxy]
        sub = data.table
        self.ax_cols = Columns(data, [names[j] for j in self.ax_pos]).fit(sub[[names[j] for j in self.ax_pos]].to_numpy(float))
        self.w_cols = Columns(data, data.outcome_proxy).fit(sub[data.outcome_proxy].to_numpy(float))
        self.c_cols = Columns(data, arr.conditioning_names).fit(arr.conditioning)
        self.scale = Scale(arr.y, center)
        self.ax, self.w = self.split(arr.inputs)
        self.c, self.y = self.c_cols(arr.conditioning), self.scale(arr.y)

    def split(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prepared (treatment, covariates) and outcome proxies of rows of f's inputs."""
        return self.ax_cols(inputs[:, self.ax_pos]), self.w_cols(inputs[:, self.w_pos])
