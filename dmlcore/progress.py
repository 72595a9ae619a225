"""Progress reporting and cancellation for long fits.

A fit receives a :class:`Monitor`. Learners call ``monitor.loss(...)`` once per epoch (or
boosting stage) with the training and validation loss, ``monitor.stage(...)`` when they start
a piece of work, and ``monitor.check()`` between steps; ``check`` raises
:class:`~dmlcore.errors.FitCancelled` when the user asked to stop.

Events passed to the user's callback are plain dicts:

* ``{"type": "stage", "stage": str, "fold": int | None, "progress": float}``
* ``{"type": "loss", "model": "s" | "g" | "f", "fold": int | None, "epoch": int,
  "train": float, "val": float | None, "progress": float}``

``progress`` runs from 0 to 1 over the whole fit. Losses are on the standardized scale.
"""

from __future__ import annotations

import math
from typing import Callable

from dmlcore.errors import FitCancelled, FitDiverged


class Monitor:
    """Collects loss histories, forwards events and checks for cancellation."""

    def __init__(self, callback: Callable[[dict], None] | None = None,
                 should_stop: Callable[[], bool] | None = None):
        self.callback = callback
        self.should_stop = should_stop
        self.histories: dict[tuple[str, int | None], dict[str, list]] = {}
        self.progress = 0.0
        self.span = (0.0, 1.0)

    def emit(self, event: dict) -> None:
        if self.callback is not None:
            self.callback(event)

    def stage(self, stage: str, fold: int | None = None, start: float | None = None,
              end: float | None = None) -> None:
        """Announce a piece of work covering the fraction [start, end] of the whole fit."""
        if start is not None:
            self.progress = float(start)
            self.span = (float(start), float(end if end is not None else start))
        self.emit({"type": "stage", "stage": stage, "fold": fold, "progress": self.progress})
        self.check()

    def loss(self, model: str, fold: int | None, epoch: int, train: float,
             val: float | None = None, of: int | None = None) -> None:
        """Record one epoch (or stage) of ``of`` at most; raise FitDiverged on a non-finite loss."""
        if not math.isfinite(train) or (val is not None and not math.isfinite(val)):
            raise FitDiverged(f"The {MODEL_NAMES.get(model, model)} diverged (loss {train}"
                              f"{'' if val is None else f', validation {val}'}) at epoch {epoch}"
                              f"{'' if fold is None else f' on fold {fold}'}. Try a smaller learning "
                              f"rate or standardized data.")
        hist = self.histories.setdefault((model, fold), {"epoch": [], "train": [], "val": []})
        hist["epoch"].append(int(epoch))
        hist["train"].append(float(train))
        hist["val"].append(None if val is None else float(val))
        if of:
            lo, hi = self.span
            self.progress = max(self.progress, lo + (hi - lo) * min(1.0, (epoch + 1) / of))
        self.emit({"type": "loss", "model": model, "fold": fold, "epoch": int(epoch),
                   "train": float(train), "val": None if val is None else float(val),
                   "progress": self.progress})

    def check(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise FitCancelled("The fit was cancelled.")


MODEL_NAMES = {"s": "outcome model s(c) = E[Y|C]",
               "g": "conditional distribution model of the inputs given C",
               "f": "second-stage model f"}
