"""What a browser session keeps: its data, roles, estimator choices and background jobs.

Everything that must survive a page switch lives in ``st.session_state``. Background fits run in
one :class:`dmlcore.jobs.JobRegistry` per server process; a session keeps only an owner token and
its job ids, mirrored in the URL (``?owner=...&jobs=...``) so that a browser reload reattaches.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from dmlcore.data.roles import ALLOWED, CausalData
from dmlcore.data.simulate import GroundTruth
from dmlcore.jobs import JobRegistry, JobSnapshot
from dmlcore.store import RunStore, default_store_path

# Role widgets: one key per role, plus the problem.
SINGLE_ROLES = ("outcome", "treatment")
MULTI_ROLES = ("instrument", "treatment_proxy", "outcome_proxy", "covariates", "inputs", "conditioning")
ROLE_KEYS = {role: f"role_{role}" for role in (*SINGLE_ROLES, *MULTI_ROLES)}
PROBLEM_KEY = "role_problem"
MAX_JOBS_KEPT = 40
MAX_REMEMBERED = 200           # sessions whose data and choices survive a browser reload
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_BATCH = re.compile(r"^#(\d+) ")


@dataclass
class Dataset:
    """The table a session works on, where it came from, and its suggested roles."""

    name: str
    source: str                      # "simulated", "upload" or "real"
    table: pd.DataFrame
    suggested: CausalData | None     # roles filled in (simulations, real data); None for uploads
    truth: GroundTruth | None = None
    params: dict = field(default_factory=dict)
    title: str = ""
    caveat: str | None = None
    description: str = ""

    @property
    def has_images(self) -> bool:
        return bool(self.suggested is not None and self.suggested.image_columns)

    @property
    def scalar_columns(self) -> list[str]:
        """Columns that are not image pixels."""
        pixels = set(self.suggested.image_columns) if self.suggested is not None else set()
        return [str(c) for c in self.table.columns if c not in pixels]


# ------------------------------------------------------------------ registry
@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry:
    """The one job registry of this server process (two workers: one per core here)."""
    workers = int(os.environ.get("DMLCORE_WORKERS", "2"))
    return JobRegistry(workers=max(1, workers), store=RunStore(default_store_path()))


def store() -> RunStore:
    return registry().store


class _Memory:
    """What each owner had loaded and chosen, kept in the server process (bounded, newest kept)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._items: OrderedDict[str, dict] = OrderedDict()

    def save(self, owner: str, values: dict) -> None:
        with self._lock:
            self._items[owner] = values
            self._items.move_to_end(owner)
            while len(self._items) > MAX_REMEMBERED:
                self._items.popitem(last=False)

    def load(self, owner: str) -> dict:
        with self._lock:
            return dict(self._items.get(owner, {}))


@st.cache_resource(show_spinner=False)
def memory() -> _Memory:
    return _Memory()


def _remembered_keys() -> list[str]:
    from dashboard.plan import ESTIMATOR_DEFAULTS
    return ["dataset", "causal", "follow_batch", "loaded_runs", PROBLEM_KEY, *ROLE_KEYS.values(),
            *ESTIMATOR_DEFAULTS]


def remember() -> None:
    """Keep this session's data and choices for its owner, so that a browser reload finds them."""
    ss = st.session_state
    if "owner" in ss:
        memory().save(ss["owner"], {k: ss[k] for k in _remembered_keys() if k in ss})


# --------------------------------------------------------------------- init
def init() -> None:
    """Create the session's state (owner token, job ids, defaults) and mirror it in the URL.

    A new session whose URL carries an owner token (a browser reload) gets back that owner's
    jobs, data and choices.
    """
    ss = st.session_state
    if "owner" not in ss:
        token = st.query_params.get("owner", "")
        ss["owner"] = token if _TOKEN.match(token or "") else uuid.uuid4().hex
        ids = [j for j in (st.query_params.get("jobs", "") or "").split(",") if _TOKEN.match(j)]
        ss["job_ids"] = ids[-MAX_JOBS_KEPT:]
        for key, value in memory().load(ss["owner"]).items():
            ss[key] = list(value) if isinstance(value, list) else value
    ss.setdefault("dataset", None)
    ss.setdefault("causal", None)
    ss.setdefault("loaded_runs", {})
    ss.setdefault(PROBLEM_KEY, "iv")
    for role, key in ROLE_KEYS.items():
        ss.setdefault(key, None if role in SINGLE_ROLES else [])
    from dashboard.plan import ESTIMATOR_DEFAULTS
    for key, value in ESTIMATOR_DEFAULTS.items():
        ss.setdefault(key, value)
    sync_url()


def sync_url() -> None:
    """Put the owner token and the job ids in the URL (only when they changed)."""
    ss = st.session_state
    wanted = {"owner": ss["owner"], "jobs": ",".join(ss["job_ids"])}
    for key, value in wanted.items():
        if value and st.query_params.get(key) != value:
            st.query_params[key] = value
        elif not value and key in st.query_params:
            del st.query_params[key]


def owner() -> str:
    return st.session_state["owner"]


# --------------------------------------------------------------------- data
def dataset() -> Dataset | None:
    return st.session_state.get("dataset")


def causal() -> CausalData | None:
    """The data with validated roles, or None when roles are missing or invalid."""
    return st.session_state.get("causal")


def set_dataset(ds: Dataset) -> None:
    """Make ``ds`` the session's data; its suggested roles (if any) fill the role widgets."""
    ss = st.session_state
    ss["dataset"] = ds
    sug = ds.suggested
    ss[PROBLEM_KEY] = sug.problem if sug is not None else "iv"
    for role, key in ROLE_KEYS.items():
        values = list(getattr(sug, role)) if sug is not None else []
        if role == "outcome":
            ss[key] = sug.outcome if sug is not None else None
        elif role == "treatment":
            ss[key] = values[0] if values and not ds.has_images else None
        else:
            ss[key] = values if not ds.has_images else []
    ss["causal"] = sug
    ss.pop("roles_error", None)


def roles_from_widgets() -> dict:
    """Keyword arguments of CausalData from the role widgets, only the roles the problem uses."""
    ss = st.session_state
    problem = ss[PROBLEM_KEY]
    kwargs = {}
    for role in ALLOWED[problem]:
        value = ss.get(ROLE_KEYS[role])
        if role in SINGLE_ROLES:
            kwargs[role] = value or ("" if role == "outcome" else [])
        else:
            kwargs[role] = list(value or [])
    return {"problem": problem, **kwargs}


def truth() -> GroundTruth | None:
    """The ground truth, when the data is simulated and the roles are the simulator's."""
    ds, data = dataset(), causal()
    if ds is None or ds.truth is None or data is None or ds.suggested is None:
        return None
    if data.problem == ds.suggested.problem and data.roles() == ds.suggested.roles():
        return ds.truth
    return None


# --------------------------------------------------------------------- jobs
def job_ids() -> list[str]:
    return list(st.session_state["job_ids"])


def add_jobs(ids: list[str]) -> None:
    st.session_state["job_ids"] = (st.session_state["job_ids"] + list(ids))[-MAX_JOBS_KEPT:]
    sync_url()


def forget_jobs(ids: list[str]) -> None:
    st.session_state["job_ids"] = [j for j in st.session_state["job_ids"] if j not in set(ids)]
    sync_url()


def snapshots() -> list[JobSnapshot]:
    """The session's jobs that this server still knows, oldest first."""
    reg, who = registry(), owner()
    out = []
    for jid in job_ids():
        snap = reg.get(jid, who)
        if snap is not None:
            out.append(snap)
    return out


def lost_job_ids() -> list[str]:
    """The session's job ids this server no longer knows (it restarted, or they were dropped)."""
    reg, who = registry(), owner()
    return [jid for jid in job_ids() if reg.get(jid, who) is None]


def batch_of(label: str) -> int | None:
    """The batch number in a job label such as '#3 DML-CMR · nn'."""
    match = _BATCH.match(label or "")
    return int(match.group(1)) if match else None


def next_batch() -> int:
    numbers = [batch_of(s.label) for s in snapshots()]
    numbers += [batch_of(r["label"]) for r in stored_runs()]
    return 1 + max([n for n in numbers if n is not None], default=0)


def stored_runs(safe: bool = True) -> list[dict]:
    """Summaries of this session's runs in the store, newest first.

    With ``safe`` a store that cannot be read gives an empty list (for counters); the Results
    page passes ``safe=False`` and shows the error.
    """
    try:
        return store().list(owner())
    except Exception:
        if not safe:
            raise
        return []
