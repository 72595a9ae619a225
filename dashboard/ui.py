"""Small Streamlit pieces several pages use: page paths, guards, messages, the sidebar status."""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager

import streamlit as st

from dashboard import state
from dashboard.plan import methods_for
from dmlcore.data.roles import ROLE_NAMES
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHOD_TITLES

logger = logging.getLogger("dashboard")

HOME = "pages/0_home.py"
DATA = "pages/1_data.py"
ROLES = "pages/2_roles.py"
ESTIMATORS = "pages/3_estimators.py"
TRAIN = "pages/4_train.py"
RESULTS = "pages/5_results.py"
LEARN = "pages/6_learn.py"
STUDY = "pages/7_study.py"
CLASS = "pages/8_class.py"

PROBLEM_TITLES = {"iv": "Instrumental variables (IV)", "pcl": "Proximal causal learning (PCL)",
                  "cmr": "General conditional moment restriction"}
ROLE_LABELS = {"outcome": "Outcome Y", "treatment": "Treatment A", "instrument": "Instrument(s) Z",
               "treatment_proxy": "Treatment proxies Z", "outcome_proxy": "Outcome proxies W",
               "covariates": "Covariates X (observed confounders)", "inputs": "Inputs of f",
               "conditioning": "Conditioning variables C"}
STRENGTH_COLORS = {"weak": "red", "moderate": "orange", "strong": "green"}  # dmlcore.inference.first_stage.strength_label
STATUS_ICONS = {"queued": ":gray[:material/schedule:]", "running": ":blue[:material/autorenew:]",
                "done": ":green[:material/check_circle:]", "failed": ":red[:material/error:]",
                "cancelled": ":gray[:material/cancel:]"}


def need_data() -> state.Dataset | None:
    """The session's data; None, with a pointer to the Data page, when there is none."""
    ds = state.dataset()
    if ds is None:
        st.info("No data loaded yet. Simulate a data set, upload a file or pick a real data set first.")
        st.page_link(DATA, label="Go to Data", icon=":material/table:")
    return ds


@contextmanager
def guarded(what: str):
    """Show a failure inside the block as a message, never as a traceback; the page goes on.

    DMLCoreError messages are shown as they are; anything else (a bug) is logged with its
    traceback and summarized. Streamlit's own rerun/stop signals are BaseExceptions and pass.
    """
    try:
        yield
    except DMLCoreError as err:
        st.error(str(err), icon=":material/error:")
    except Exception as err:
        logger.exception("Failed to %s", what)
        st.error(f"Could not {what}: {type(err).__name__}: {err}", icon=":material/error:")


def offending_role(message: str, roles: dict) -> str | None:
    """The role a CausalData validation message is about (to show it next to that widget)."""
    two = re.search(r"has two roles, (\w+) and (\w+)", message)
    if two:
        return two.group(2)
    for role in ROLE_NAMES:
        if f"role '{role}'" in message or f"(role {role})" in message:
            return role
    if message.startswith("Give one treatment column") or message.startswith("Treatment column"):
        return "treatment"
    if message.startswith("The outcome '"):
        return "outcome"
    column = re.search(r"[Cc]olumn '([^']+)'", message)
    if column:
        name = column.group(1)
        for role, value in roles.items():
            cols = [value] if isinstance(value, str) else list(value or [])
            if name in cols:
                return role
    return None


def show_problem(message: str) -> None:
    """A validation message: a to-do (missing role) as a warning, anything else as an error."""
    if "needs a column with the role" in message:
        st.warning(message, icon=":material/edit:")
    else:
        st.error(message, icon=":material/error:")


# On a projector's 1,024 x 768 (any window up to 1,100 pixels wide) the page gets the width: a narrower
# sidebar and the main column's side and top padding reduced (Streamlit's wide layout pads 5rem each side).
PROJECTOR_CSS = """<style>
@media (max-width: 1100px) {
  [data-testid="stSidebar"][data-collapsed="false"] { width: 190px !important; min-width: 190px !important;
                                                    max-width: 190px !important; }
  [data-testid="stMainBlockContainer"] { padding-left: 1.25rem !important; padding-right: 1.25rem !important;
                                         padding-top: 3.75rem !important; }
}
</style>"""


def projector_layout() -> None:
    """The page's CSS for narrow screens (:data:`PROJECTOR_CSS`), once per script run."""
    st.html(PROJECTOR_CSS)


def sidebar_status() -> None:
    """Where the session stands: data, roles, runs."""
    with st.sidebar:
        st.markdown("### Session")
        ds = state.dataset()
        if ds is None:
            st.caption("No data loaded.")
        else:
            st.markdown(f"**Data:** {ds.name} · {len(ds.table):,} rows")
            data = state.causal()
            if data is None:
                st.markdown("**Roles:** not valid yet")
            else:
                st.markdown(f"**Problem:** {data.problem.upper()} · "
                            f"{'truth known' if state.truth() is not None else 'truth unknown'}")
        snaps = state.snapshots()
        if snaps:
            counts = {}
            for s in snaps:
                counts[s.status] = counts.get(s.status, 0) + 1
            st.markdown("**Runs:** " + ", ".join(f"{STATUS_ICONS[k]} {v} {k}" for k, v in counts.items()))
        data = state.causal() if ds is not None else None
        methods = ", ".join(METHOD_TITLES[m] for m in methods_for(data))
        st.caption(f"Methods for this data: {methods}" if data is not None else f"Methods: {methods}")
