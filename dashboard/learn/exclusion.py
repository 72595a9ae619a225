"""Learn, tab Invalid instruments: a direct effect of the instrument, divided by the first stage."""

import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num
from dashboard.learn.robust import overid_section
from dmlcore.teaching import figures, iv


@st.cache_data(show_spinner=False, max_entries=50)
def exclusion_exp(pi: float):
    return iv.exclusion(pi=pi)


def exclusion_tab():
    st.markdown(
        "Now the fuel cost also moves sales **directly** by δ (say it signals the airline's finances to "
        "customers): the exclusion restriction fails. 200 data sets of 500 rows at each δ, confounding ρ = 0.5.")
    pi = st.slider("Instrument coefficient π (how much the fuel cost moves the price)", 0.2, 1.0, 0.5, 0.1,
                   key=state.LEARN_EXCL_PI, persist_state="session")
    exp = exclusion_exp(float(pi))
    notebook_button("exclusion", pi=float(pi))
    chart(figures.estimates_box(exp, "direct effect", x_title="direct effect δ of the instrument on sales",
                                          title="2SLS and OLS when the instrument is invalid"), key=state.LEARN_EXCL_PLOT)
    s = exp.summary
    tsls, ols = s[s["estimator"] == "2SLS"], s[s["estimator"] == "OLS"]
    mid = tsls.iloc[len(tsls) // 2]
    worse = [d for d, a, b in zip(tsls["direct effect"], tsls["median"], ols["median"])
             if abs(a - exp.truth) > abs(b - exp.truth)]
    st.markdown(
        f"2SLS tends to −1 + δ / π: the direct effect is divided by the instrument's effect on the price. At "
        f"δ = {mid['direct effect']:g} and π = {pi:g} the formula gives {num(mid['large-sample value'])}; the "
        f"simulated median is {num(mid['median'])}. The weaker the instrument, the more a small violation is "
        "magnified. "
        + (f"From δ = {min(worse):g} on, 2SLS is further from the truth than OLS. " if worse else "")
        + "No statistic can reveal the violation with one instrument: the first-stage F does not involve sales "
          "at all. Exclusion has to be argued from how the instrument works.")
    overid_section()
