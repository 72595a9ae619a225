"""The baseline that shows confounding: the outcome regressed on f's inputs, ignoring C.

``OutcomeRegression`` fits E[Y | inputs of f] with the chosen learner (``linear`` is OLS) and
never looks at the instruments or treatment proxies. Under confounding E[Y | X] is not f: the
gap between this baseline and the truth is the bias that IV and proximal methods remove, and
it grows with the strength of the hidden confounder.
"""

from __future__ import annotations

import time

import numpy as np

from dmlcore.data.roles import CausalData
from dmlcore.device import resolve_device
from dmlcore.estimators._base import CMREstimator, input_matrix
from dmlcore.learners import check_learner, make_outcome_learner
from dmlcore.learners.encoding import Encoded, encode_image_spec, encoder_for, image_spec
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.learners.registry import epochs_param


class OutcomeRegression(CMREstimator):
    """Regression of the outcome on f's inputs with ``learner`` (no instrument, no proxy)."""

    capabilities = frozenset({"ignores_conditioning"})

    fitted_attribute = "model_"

    def __init__(self, learner=DEFAULTS.learner, *, epochs: int | None = DEFAULTS.epochs,
                 nuisance_params: dict | None = None, seed: int = DEFAULTS.seed, device: str = DEFAULTS.device):
        self.learner = learner
        self.epochs = epochs
        self.nuisance_params = nuisance_params
        self.seed = seed
        self.device = device

    def record_fields(self) -> dict:
        return {**super().record_fields(), "device": self.device_}

    def _fit(self, data: CausalData, monitor) -> None:
        check_learner(self.learner)
        device = resolve_device(self.device)
        start = time.perf_counter()
        arr = data.cmr()
        params = dict(self.nuisance_params or {})
        key = epochs_param(self.learner)
        if self.epochs is not None and key:
            params.setdefault(key, self.epochs)
        enc = encoder_for(data, arr.input_names, self.learner)
        image = encode_image_spec(image_spec(data, arr.input_names), enc)
        monitor.stage("regression of the outcome on " + ", ".join(arr.input_names[:3]), start=0.0, end=1.0)
        # the learners' interface: one "fold" whose training rows are all rows (the learner
        # keeps its own validation split for early stopping)
        model = Encoded(make_outcome_learner(self.learner, params, self.seed, image, device), enc)
        model.fit(arr.inputs, arr.y, [np.arange(arr.n)], monitor)
        self.model_ = model
        self.input_columns_ = list(arr.input_names)
        self.fold_losses_ = [{"fold": 0, "rows": int(arr.n), **({"s": monitor.histories[("s", 0)]}
                                                                if ("s", 0) in monitor.histories else {})}]
        self.device_ = str(device)
        self.seconds_ = time.perf_counter() - start
        monitor.stage("done", start=1.0)

    def predict(self, X) -> np.ndarray:
        """E[Y | inputs] at the rows of X (a DataFrame with the input columns, or an array in that order)."""
        self._check_fitted()
        return np.asarray(self.model_.predict(0, input_matrix(X, self.input_columns_, "OutcomeRegression")),
                          dtype=float).ravel()
