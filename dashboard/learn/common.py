"""What every Learn tab shares: number formatting, the slow experiments shared by a server's
sessions, and the first-stage strength metric."""

import streamlit as st

from dashboard import ui
from dashboard.training import one_openmp_thread
from dmlcore.diagnostics import strength_label
from dmlcore.errors import DMLCoreError


def num(x: float, digits: int = 2) -> str:
    """A number as the page writes it (a true minus sign)."""
    return f"{x:.{digits}f}".replace("-", "−")


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


@st.cache_resource
def shared_results() -> dict:
    """Results of the slow experiments, shared by every session of this server (a class sees a
    result the moment one student or the teacher has computed it)."""
    return {}


def slow(name: str, label: str, run):
    """A slow experiment: the shared result when there is one, else a button labelled ``label``
    that runs it (``run(progress)``) with a progress bar. Returns the result or None."""
    results = shared_results()
    if name in results:
        return results[name]
    if not st.button(label, key=f"learn_run_{name}", type="primary", icon=":material/play_arrow:"):
        return None
    bar = st.progress(0.0, text="Starting...")
    try:
        with one_openmp_thread():
            result = run(lambda fraction, text: bar.progress(min(1.0, fraction), text=text))
    except DMLCoreError as err:
        st.error(str(err))
        return None
    bar.empty()
    results[name] = result
    return result


def strength_metric(col, f_stat: float, n_instruments: int = 1, label: str = "First-stage F"):
    s = strength_label(f_stat, n_instruments)
    col.metric(label, f"{f_stat:,.1f}", delta=s.level, delta_color=ui.STRENGTH_COLORS[s.level], delta_arrow="off",
               help=s.text)
