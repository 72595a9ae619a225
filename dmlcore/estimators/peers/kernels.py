"""Gaussian kernels for the kernel peers: median bandwidths, random Fourier and Nystroem features.

Every kernel here is a Gaussian k(x, x') = exp(-sum_j (x_j - x'_j)^2 / (2 l_j^2)): one bandwidth l
for the whole vector (KIV's median heuristic) or one per column (the column-wise kernels of the
KPV / PMMR code). Methods work with explicit features phi, phi(x)'phi(x') ~ k(x, x'):

* ``rff``: random Fourier features (Rahimi & Recht 2007), sqrt(2 / D) cos(omega'x / l + b) with
  omega ~ N(0, I), b ~ U(0, 2 pi); cost O(n D) whatever the rows.
* ``nystrom``: k(x, L) K_LL^(-1/2) at D landmark rows L drawn from the data. With D at least the
  number of rows every row is a landmark and the method is the exact kernel method, whose
  memory grows as n x n: :func:`check_memory` refuses what does not fit.
"""

from __future__ import annotations

import os

import numpy as np

from dmlcore.errors import DMLCoreError
from dmlcore.estimators.settings import DEFAULTS

APPROXIMATIONS = ("rff", "nystrom")
MEDIAN_ROWS = 2000      # rows whose pairwise distances give the median heuristic
MEMORY_SHARE = 0.5      # share of the available memory a kernel method may plan to use
EIGEN_FLOOR = 1e-10     # relative eigenvalue under which a Nystroem direction is dropped


def median_distance(x: np.ndarray, rng: np.random.Generator, rows: int = MEDIAN_ROWS) -> float:
    """Median Euclidean distance between distinct rows of ``x`` (of a random subset of ``rows``).

    Discrete columns often give a median of 0 (most pairs equal); then the median of the
    non-zero distances is used, and 1.0 when every row is the same.
    """
    x = np.asarray(x, dtype=float)
    if len(x) > rows:
        x = x[rng.choice(len(x), rows, replace=False)]
    sq = np.sum(x ** 2, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)
    d = np.sqrt(d2[np.triu_indices(len(x), k=1)])
    if d.size == 0:
        return 1.0
    med = float(np.median(d))
    if med > 0:
        return med
    positive = d[d > 1e-12]
    return float(np.median(positive)) if positive.size else 1.0


def columnwise_bandwidths(x: np.ndarray, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """One median-heuristic bandwidth per column, times sqrt(scale) (the KPV / PMMR code's ``scale``)."""
    return np.array([median_distance(x[:, [j]], rng) for j in range(x.shape[1])]) * np.sqrt(scale)


class GaussianFeatures:
    """Features whose inner products approximate a Gaussian kernel with bandwidth(s) ``bandwidth``.

    Parameters
    ----------
    bandwidth : float or array of one per column
    n_features : int, D (for ``nystrom`` at most the number of rows seen in ``fit``)
    approximation : "rff" or "nystrom"
    seed : int
    """

    def __init__(self, bandwidth, n_features: int, approximation: str = "rff", seed: int = DEFAULTS.seed):
        self.bandwidth = bandwidth
        self.n_features = n_features
        self.approximation = approximation
        self.seed = seed

    def fit(self, x: np.ndarray) -> "GaussianFeatures":
        if self.approximation not in APPROXIMATIONS:
            raise DMLCoreError(f"approximation must be one of {', '.join(APPROXIMATIONS)}; got {self.approximation!r}.")
        rng = np.random.default_rng(self.seed)
        x = np.asarray(x, dtype=float)
        self.scale_ = np.broadcast_to(np.asarray(self.bandwidth, dtype=float), (x.shape[1],)).copy()
        if np.any(~np.isfinite(self.scale_)) or np.any(self.scale_ <= 0):
            raise DMLCoreError(f"Kernel bandwidths must be positive; got {self.scale_}.")
        d = int(self.n_features)
        if self.approximation == "rff":
            self.omega_ = rng.standard_normal((x.shape[1], d))
            self.offset_ = rng.uniform(0.0, 2.0 * np.pi, d)
        else:
            rows = np.arange(len(x)) if d >= len(x) else np.sort(rng.choice(len(x), d, replace=False))
            self.landmarks_ = x[rows] / self.scale_
            values, vectors = np.linalg.eigh(_gauss(self.landmarks_, self.landmarks_))
            keep = values > EIGEN_FLOOR * max(values.max(), 1e-300)
            self.map_ = vectors[:, keep] / np.sqrt(values[keep])
        return self

    @property
    def dim(self) -> int:
        return self.omega_.shape[1] if self.approximation == "rff" else self.map_.shape[1]

    def transform(self, x: np.ndarray) -> np.ndarray:
        z = np.asarray(x, dtype=float) / self.scale_
        if self.approximation == "rff":
            return np.sqrt(2.0 / self.dim) * np.cos(z @ self.omega_ + self.offset_)
        return _gauss(z, self.landmarks_) @ self.map_


def _gauss(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """exp(-|a_i - b_j|^2 / 2) for rows already divided by their bandwidths."""
    d2 = np.sum(a ** 2, axis=1)[:, None] + np.sum(b ** 2, axis=1)[None, :] - 2.0 * a @ b.T
    return np.exp(-0.5 * np.maximum(d2, 0.0))


def feature_dim(n_features: int, approximation: str, rows: int) -> int:
    """Features a map will have on ``rows`` rows (Nystroem has at most one per row)."""
    return int(n_features) if approximation == "rff" else min(int(n_features), int(rows))


def available_memory() -> int:
    """Bytes of memory available to new allocations (MemAvailable), or the physical memory."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(method: str, rows: int, bytes_for, setting: str) -> None:
    """Raise unless ``bytes_for(rows)`` fits in MEMORY_SHARE of the available memory.

    ``bytes_for(m)`` is the planned peak for m rows (increasing in m); the message says how many
    rows would fit and which ``setting`` lowers the need.
    """
    budget = MEMORY_SHARE * available_memory()
    need = bytes_for(rows)
    if need <= budget:
        return
    lo, hi = 0, rows
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bytes_for(mid) <= budget else (lo, mid)
    raise DMLCoreError(f"{method} on {rows:,} rows needs about {need / 2**30:.1f} GiB, more than the "
                       f"{budget / 2**30:.1f} GiB it may use (half of the memory available now); about "
                       f"{lo:,} rows fit. Use fewer rows, or {setting}.")


def columnwise_features(x: np.ndarray, n_features: int, approximation: str, scale: float,
                        seed: int) -> GaussianFeatures:
    """Features of the product of one median-bandwidth Gaussian per column (times sqrt(scale)),
    fitted on ``x``."""
    rng = np.random.default_rng([seed, 53])
    return GaussianFeatures(columnwise_bandwidths(x, rng, scale), n_features, approximation, seed).fit(x)
