"""Proxy maximum moment restriction, PMMR (Mastouri et al. 2021), with random features.

The bridge h(a, w, x) = theta'phi(a, w, x) minimises the kernel maximum moment restriction
risk (1/n^2) sum_ij (y_i - h_i) k(c_i, c_j) (y_j - h_j) plus a ridge penalty, with k the kernel
of the conditioning variables c = (a, z, x). The closed form of the PMMR code,
alpha = (L W L + lam1 n L + lam2 n I)^-1 L W y with L and W the bridge and conditioning
kernel matrices and h = L alpha, becomes in features (L = Phi Phi', W = Psi Psi', S = Phi'Phi,
A = Psi'Phi): theta = S (B S + lam2 n I)^-1 A'Psi'y with B = A'A + lam1 n I, a system of the
features' size whatever the rows. Kernels: one Gaussian per column with bandwidth
sqrt(scale) x the column's median distance, by random Fourier features.
"""

from __future__ import annotations

import numpy as np

from dmlcore.estimators.peers.base import PeerEstimator
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.peers.kernels import check_memory, columnwise_features, feature_dim
from dmlcore.estimators.peers.kpv import BridgeBlocks
from dmlcore.learners.base import check_positive


class PMMR(PeerEstimator):
    """Proxy maximum moment restriction with random Fourier (or Nystroem) features.

    Parameters
    ----------
    n_features : int, default 100
        Features of the bridge's kernel and of the conditioning kernel.
    approximation : "rff" (default) or "nystrom"
    lam1, lam2 : float, default 0.01 each (the DML-CMR paper's settings for PMMR)
    scale : float, default 0.5, bandwidth^2 as a multiple of the squared median distance
    center : bool, default True
        Fit h to the centred outcome. False: shrink towards 0, as the PMMR code behind the
        DML-CMR paper's numbers did (docs/peers.md).
    seed : int, default 0
    """

    title, problem = "PMMR", "pcl"
    images_instead = "Use NMMR, which reads images with a CNN."

    def __init__(self, n_features: int = 100, approximation: str = "rff", lam1: float = 1e-2,
                 lam2: float = 1e-2, scale: float = 0.5, center: bool = True, seed: int = DEFAULTS.seed):
        self.n_features = n_features
        self.approximation = approximation
        self.lam1 = lam1
        self.lam2 = lam2
        self.scale = scale
        self.center = center
        self.seed = seed

    def _fit_peer(self, data, monitor):
        check_positive("n_features", self.n_features, integer=True)
        for name in ("lam1", "lam2", "scale"):
            check_positive(name, getattr(self, name))
        n, d = len(data.table), int(self.n_features)

        def need(m):  # bytes of the largest arrays for m rows
            dim = feature_dim(d, self.approximation, m)
            return 8 * (4 * m * dim + 6 * dim ** 2)
        check_memory(self.title, n, need, "fewer features (n_features)")
        monitor.stage("PMMR: features", start=0.0, end=0.3)
        blocks = BridgeBlocks(data, self.center)
        h_in = np.column_stack([blocks.ax, blocks.w])
        phi = columnwise_features(h_in, d, self.approximation, self.scale, self.seed)
        psi = columnwise_features(blocks.c, d, self.approximation, self.scale, self.seed + 1)
        big_phi, big_psi = phi.transform(h_in), psi.transform(blocks.c)
        monitor.stage("PMMR: closed-form bridge", start=0.3, end=1.0)
        a = big_psi.T @ big_phi
        s = big_phi.T @ big_phi
        b = a.T @ a
        b[np.diag_indices_from(b)] += self.lam1 * n
        m = b @ s
        m[np.diag_indices_from(m)] += self.lam2 * n
        self.theta_ = s @ np.linalg.solve(m, a.T @ (big_psi.T @ blocks.y))
        resid = blocks.y - big_phi @ self.theta_
        moment = big_psi.T @ resid / n
        self.features_, self.blocks_ = phi, blocks
        self.input_columns_ = list(data.input_columns)
        self.fold_losses_ = [{"fold": 0, "rows": int(n), "second_stage_loss": float(moment @ moment)}]
        self.second_stage_history_ = {}

    def _predict(self, x):
        ax, w = self.blocks_.split(x)
        return self.blocks_.scale.back(self.features_.transform(np.column_stack([ax, w])) @ self.theta_)
