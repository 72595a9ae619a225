"""What a browser session keeps: its data, roles, estimator choices and background jobs.

Everything that must survive a page switch lives in ``st.session_state``. Background fits run in
one :class:`dmlcore.jobs.JobRegistry` per server process (fits in worker processes); a session
knows its jobs by an owner token. The token is kept in a browser cookie (``dmlcore_owner``), never
in the address: a reload of the same browser reattaches, while someone who types the address
shown on a projector gets a session of their own. The cookie lasts ``DMLCORE_OWNER_DAYS`` days
(default 30, renewed at each visit; 0: until the browser closes), so a browser restart finds its
stored runs and studies again; ``forget_browser()`` gives the browser a new, empty owner.
"""

from __future__ import annotations

import gc
import os
import re
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from dmlcore.data.roles import ALLOWED, CausalData
from dmlcore.data.simulate import GroundTruth
from dmlcore.errors import DMLCoreError
from dmlcore.jobs import JobRegistry, JobSnapshot, server_registry
from dmlcore.store import RunStore
from dmlcore.jobs.study_jobs import Studies

# Role widgets: one key per role, plus the problem.
SINGLE_ROLES = ("outcome", "treatment")
MULTI_ROLES = ("instrument", "treatment_proxy", "outcome_proxy", "covariates", "inputs", "conditioning")
ROLE_KEYS = {role: f"role_{role}" for role in (*SINGLE_ROLES, *MULTI_ROLES)}
PROBLEM_KEY = "role_problem"
CATEGORICAL_KEY = "role_categorical"
MAX_REMEMBERED = 200           # sessions whose data and choices survive a browser reload
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_BATCH = re.compile(r"^#(\d+) ")
OWNER_COOKIE = "dmlcore_owner"
OWNER_DAYS = 30                # how long a browser keeps its owner cookie (DMLCORE_OWNER_DAYS)
# Sent to this site only; with a max-age, it outlives a browser restart.
_KEEP_OWNER = """<script>
document.cookie = "%s=%s; path=/; SameSite=Strict%s" + (location.protocol === "https:" ? "; Secure" : "");
</script>"""


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
    """The one job registry of this server process (see dmlcore.jobs.server_registry)."""
    reg = server_registry()
    _freeze_loaded_objects()
    return reg


def _freeze_loaded_objects() -> None:
    """Exempt what the imports created (about 300,000 objects) from garbage collection.

    A full collection then visits only what the pages create, so Streamlit's collection after
    each script run (``runner.postScriptGC``) costs next to nothing (docs/class.md).
    """
    import plotly.graph_objects  # noqa: F401  (the pages' heaviest imports, loaded before freezing)
    import dmlcore.plots  # noqa: F401
    gc.collect()
    gc.freeze()


def store() -> RunStore:
    return registry().store


@st.cache_resource(show_spinner=False)
def studies() -> Studies:
    """The studies this server runs in the background (their fits go through the registry)."""
    return Studies(registry())


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
            CATEGORICAL_KEY, *ESTIMATOR_DEFAULTS]


def remember() -> None:
    """Keep this session's data and choices for its owner, so that a browser reload finds them."""
    ss = st.session_state
    if "owner" in ss:
        memory().save(ss["owner"], {k: ss[k] for k in _remembered_keys() if k in ss})


# --------------------------------------------------------------------- init
def browser_token() -> str | None:
    """The owner token the browser sent in its cookie (None: a new browser, or a bad value)."""
    token = st.context.cookies.get(OWNER_COOKIE)
    return token if isinstance(token, str) and _TOKEN.match(token) else None


def init() -> None:
    """Create the session's state (owner token, defaults).

    A new session from a browser that holds an owner token (a reload) gets back that owner's
    jobs, data and choices. An owner token in the address (old links) is ignored and removed.
    """
    if PagesManager.uses_pages_directory and isinstance(st.context.headers.get("Host"), str):
        # A fresh server's first visit from a browser to a page's own address (a reload after a
        # restart): Streamlit runs that page alone, as for an app without st.navigation (no menu,
        # no sidebar). Tell it that app.py navigates, and run again through app.py. (AppTest runs
        # pages alone on purpose, and sends no headers.)
        PagesManager.uses_pages_directory = False
        st.rerun()
    ss = st.session_state
    if "owner" not in ss:
        token = browser_token()
        ss["owner"] = token or uuid.uuid4().hex
        for key, value in memory().load(ss["owner"]).items():
            ss[key] = list(value) if isinstance(value, list) else value
    studies()   # the server's first session continues the studies a restart interrupted (dmlcore.jobs.study_jobs)
    ss.setdefault("dataset", None)
    ss.setdefault("causal", None)
    ss.setdefault("loaded_runs", {})
    ss.setdefault(PROBLEM_KEY, "iv")
    for role, key in ROLE_KEYS.items():
        ss.setdefault(key, None if role in SINGLE_ROLES else [])
    ss.setdefault(CATEGORICAL_KEY, [])
    from dashboard.plan import ESTIMATOR_DEFAULTS
    for key, value in ESTIMATOR_DEFAULTS.items():
        ss.setdefault(key, value)
    for key in ("owner", "jobs"):
        if key in st.query_params:
            del st.query_params[key]


def owner_days() -> int:
    """Days a browser keeps its owner cookie: ``DMLCORE_OWNER_DAYS`` (default 30; 0: until it closes)."""
    raw = os.environ.get("DMLCORE_OWNER_DAYS", "").strip()
    if not raw:
        return OWNER_DAYS
    if not raw.isdigit():
        raise DMLCoreError(f"DMLCORE_OWNER_DAYS={raw!r} is not valid; give a whole number of days (0: until the "
                         "browser closes).")
    return int(raw)


def keep_owner_in_browser() -> None:
    """Have the browser keep the owner token in a cookie for ``owner_days()`` days (written at each run,
    so each visit renews it)."""
    days = owner_days()
    expiry = f"; max-age={days * 86400}" if days else ""
    st.html(_KEEP_OWNER % (OWNER_COOKIE, owner(), expiry), unsafe_allow_javascript=True)


def forget_browser() -> None:
    """Give this browser a new, empty owner (its cookie is replaced at the next run): the runs and
    studies of the old owner stay in the run store but are no longer listed here."""
    ss = st.session_state
    ss["owner"] = uuid.uuid4().hex
    ss.pop("study_id", None)


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
    ss[CATEGORICAL_KEY] = list(sug.categorical) if sug is not None else []
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
    used = {c for v in kwargs.values() for c in ([v] if isinstance(v, str) else v)} - {kwargs.get("outcome")}
    kwargs["categorical"] = [c for c in ss.get(CATEGORICAL_KEY) or [] if c in used]
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
def forget_jobs(ids: list[str]) -> None:
    """Take ended jobs off the session's list (their runs stay in the store)."""
    registry().dismiss(ids, owner())


def snapshots() -> list[JobSnapshot]:
    """The owner's runs that the server holds, oldest first (not the fits of studies)."""
    return [snap for snap in registry().list(owner())[::-1] if snap.group is None]


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
