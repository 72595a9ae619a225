"""A job's state as callers see it (:class:`JobSnapshot`) and its thinned loss series."""

from __future__ import annotations

from dataclasses import dataclass, field

from dmlcore.runs import Run

ENDED = ("done", "failed", "cancelled")
MAX_LOSS_POINTS = 400


@dataclass(frozen=True)
class JobSnapshot:
    """A job's state at one moment."""

    id: str
    owner: str
    label: str
    status: str
    progress: float
    stage: str
    fold: int | None
    losses: dict
    error: str | None
    run: Run | None
    run_id: str | None
    created: float
    started: float | None
    finished: float | None
    cancel_requested: bool
    cost: float | None = None
    position: int | None = None
    starts_in: float | None = None
    ends_in: float | None = None
    restored: bool = False
    group: str | None = None
    result: object = None

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@dataclass
class LossSeries:
    """One model's losses on one fold, thinned to at most MAX_LOSS_POINTS evenly spaced epochs."""

    epoch: list = field(default_factory=list)
    train: list = field(default_factory=list)
    val: list = field(default_factory=list)
    seen: int = 0
    stride: int = 1

    def add(self, epoch: int, train: float, val: float | None) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        self.epoch.append(epoch)
        self.train.append(train)
        self.val.append(val)
        if len(self.epoch) > MAX_LOSS_POINTS:
            self.epoch, self.train, self.val = self.epoch[::2], self.train[::2], self.val[::2]
            self.stride *= 2

    def copy(self) -> dict:
        return {"epoch": list(self.epoch), "train": list(self.train), "val": list(self.val)}
