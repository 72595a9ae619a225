"""What the peer methods share: role checks, column preparation and the fitted-model plumbing."""

from __future__ import annotations

import numpy as np

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator, check_data, check_fitted, input_matrix
from dmlcore.learners.encoding import encode_image_spec, encoder_for, image_spec
from dmlcore.progress import Monitor


def _peers(problem: str) -> str:
    """The peer methods of ``problem`` ("KIV, DFIV or DeepGMM" for IV), from their classes' own ``problem``."""
    titles = list(dict.fromkeys(cls.title for cls in _subclasses(PeerEstimator) if cls.problem == problem))
    return f"{', '.join(titles[:-1])} or {titles[-1]}" if len(titles) > 1 else "".join(titles)


def _subclasses(cls) -> list:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def check_problem(data: CausalData, title: str, kind: str) -> None:
    """Raise unless ``data`` suits a peer of ``kind`` ("iv": IV or a general CMR with an excluded
    conditioning column; "pcl": proximal roles)."""
    check_data(data, title)
    if kind == "iv":
        if data.problem == "pcl":
            raise DMLCoreError(f"{title} is an IV method, but the data are set up as a proximal (PCL) problem "
                               f"(no instrument). Use {_peers('pcl')} for PCL, or assign IV roles.")
        if not [c for c in data.conditioning_columns if c not in data.input_columns]:
            raise DMLCoreError(f"{title} needs an instrument: a conditioning column that is not an input of f; "
                               f"every conditioning column ({', '.join(data.conditioning_columns)}) is an input. "
                               f"Add an instrument.")
    elif data.problem != "pcl":
        problem = {"iv": "an IV", "cmr": "a general CMR"}[data.problem]
        raise DMLCoreError(f"{title} is a proximal (PCL) method: it needs treatment and outcome proxies, but the "
                           f"data are set up as {problem} problem. Use {_peers('iv')} for IV, or assign PCL roles.")


def check_kernel_tabular(data: CausalData, title: str, instead: str) -> None:
    """Kernel peers compare raw columns with Gaussian kernels: refuse image pixel columns."""
    if data.image_columns:
        raise DMLCoreError(f"{title} compares rows with Gaussian kernels on their columns, which does not suit "
                           f"the {len(data.image_columns):,} image pixel columns of this data. {instead}")


class Columns:
    """Columns as a method sees them: categories one-hot (0/1), continuous columns standardized
    with the training mean and standard deviation, image pixels as they are (one common scale).

    ``image`` is (pixel positions, shape) in the prepared layout, or None.
    """

    def __init__(self, data: CausalData, names: list[str]):
        self.names = list(names)
        self.encoder = encoder_for(data, self.names, "nn")
        self.image = encode_image_spec(image_spec(data, self.names), self.encoder)
        n_kept = len(self.encoder.kept) if self.encoder is not None else len(self.names)
        pixels = set(self.image[0]) if self.image else set()
        self.scaled = [j for j in range(n_kept) if j not in pixels]

    def fit(self, values: np.ndarray, standardize: bool = True) -> "Columns":
        """Learn each column's mean and standard deviation (``standardize=False``: keep raw values)."""
        z = self._encode(values)
        self.mean_ = z[:, self.scaled].mean(axis=0) if standardize else np.zeros(len(self.scaled))
        self.std_ = np.maximum(z[:, self.scaled].std(axis=0), 1e-12) if standardize else np.ones(len(self.scaled))
        return self

    def _encode(self, values):
        values = np.asarray(values, dtype=float)
        return values if self.encoder is None else self.encoder.transform(values)

    def __call__(self, values: np.ndarray) -> np.ndarray:
        z = self._encode(values).copy()
        z[:, self.scaled] = (z[:, self.scaled] - self.mean_) / self.std_
        return z


class Scale:
    """The outcome's mean and standard deviation: methods fit on (y - mean) / std.

    ``center=False`` leaves the mean in (mean 0): a ridge penalty then shrinks f towards 0
    rather than towards the outcome's mean, as the KPV / PMMR code did (docs/peers.md);
    ``scale=False`` leaves the standard deviation in (std 1).
    """

    def __init__(self, y: np.ndarray, center: bool = True, scale: bool = True):
        self.mean = float(np.mean(y)) if center else 0.0
        self.std = (float(np.std(y)) or 1.0) if scale else 1.0

    def __call__(self, y):
        return (np.asarray(y, dtype=float) - self.mean) / self.std

    def back(self, t):
        return np.asarray(t, dtype=float) * self.std + self.mean


class PeerEstimator(CMREstimator):
    """fit/predict plumbing of the peers: ``_fit(data, monitor)`` sets ``input_columns_`` and
    ``_predict(x)`` maps the raw input matrix to f on the outcome's scale.

    Subclasses set ``title``, ``problem`` ("iv" or "pcl") and, when they cannot read images,
    ``images_instead`` (what to use instead).
    """

    title = "peer"
    problem = "iv"
    images_instead: str | None = None

    @classmethod
    def check_roles(cls, data: CausalData) -> None:
        """Raise a DMLCoreError when ``data`` does not suit this method (problem, images)."""
        check_problem(data, cls.title, cls.problem)
        if cls.images_instead:
            check_kernel_tabular(data, cls.title, cls.images_instead)

    def _fit(self, data: CausalData, monitor: Monitor) -> None:
        """The base's fit path for every peer: each implements ``_fit_peer(data, monitor)``."""
        self.notes_ = []
        self.device_ = "cpu"     # where it ran; the networks set their torch device's name
        self._fit_peer(data, monitor)
        monitor.stage("done", start=1.0)

    def _fit_peer(self, data: CausalData, monitor: Monitor) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _fit_peer(data, monitor).")

    def record_fields(self) -> dict:
        return {**super().record_fields(), "device": self.device_, "notes": list(self.notes_),
                "second_stage_history": self.second_stage_history_}

    def predict(self, X) -> np.ndarray:
        """f at the rows of ``X`` (a DataFrame with the input columns, or an array in their order)."""
        check_fitted(self, "input_columns_")
        return np.asarray(self._predict(input_matrix(X, self.input_columns_, type(self).__name__)),
                          dtype=float).ravel()

    def _predict(self, x):
        raise NotImplementedError(f"{type(self).__name__} must implement _predict(x).")


def check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise DMLCoreError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}.")
