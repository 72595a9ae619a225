"""Background fits for one server (see :mod:`dmlcore.jobs.registry`)."""

from dmlcore.jobs.registry import (ENDED, MAX_ATTEMPTS, MAX_LOSS_POINTS, QUANTUM, Channel, CostBook, FairQueue,
                                   FitSpec, JobFile, JobRegistry, JobSnapshot, Link, cost_key, server_registry)

__all__ = ["ENDED", "MAX_ATTEMPTS", "MAX_LOSS_POINTS", "QUANTUM", "Channel", "CostBook", "FairQueue", "FitSpec",
           "JobFile", "JobRegistry", "JobSnapshot", "Link", "cost_key", "server_registry"]
