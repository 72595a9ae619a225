"""The machine's load beside a timing: what every timing row records, so that a time is never quoted
without the load it was measured under (docs/making.md).

``start()`` before the timed work, ``fields(start, other_work)`` after it: the 1-minute load average at
the start and at the end, the machine's cores, and what else was running as the person who ran the
bench said it (``--other-work``; "not stated" when they did not). A 1-minute load at or below the
cores counts as idle only when the row's recorded load says so; the docs read these fields.
"""

from __future__ import annotations

import os

from dmlcore.studies.provenance import load_1min

NOT_STATED = "not stated"


def start() -> float:
    """The 1-minute load average now (call before the timed work)."""
    return load_1min()


def fields(load_start: float, other_work: str | None = None) -> dict:
    """The load fields of a timing row: ``load_1min_start``, ``load_1min_end``, ``cores``, ``other_work``."""
    return {"load_1min_start": load_start, "load_1min_end": start(), "cores": os.cpu_count(),
            "other_work": other_work or NOT_STATED}
