"""Learn, sections of the Weak IV and Invalid IV tabs: the effective F and the robust Anderson-Rubin set
under heteroskedastic or clustered errors; a test of overidentifying restrictions with three instruments.
The experiments are dmlcore.teaching.robust's, computed by the library's linear-IV inference."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard.learn.common import cover, mc_se, notebook_button, num, pct, slow
from dmlcore.inference.first_stage import WEAK_F
from dmlcore.stats.covariance import FEW_CLUSTERS
from dmlcore.teaching import robust

LEVEL = robust.LEVEL
DESIGN_TITLES = {"heteroskedastic": "noise that grows with the fuel cost", "clustered": "markets that share shocks"}


def _text(pieces) -> str:
    """An AR set in the page's numbers: pieces with two decimals, ∞ for an open end."""
    if not pieces:
        return "empty"
    ends = lambda v, sign: ("−∞" if sign < 0 else "+∞") if v is None else num(v)   # noqa: E731
    return " ∪ ".join(f"[{ends(lo, -1)}, {ends(hi, 1)}]" for lo, hi in pieces)


def robust_section():
    st.markdown("#### Heteroskedastic or clustered errors: the effective F and the robust Anderson-Rubin set")
    st.markdown(
        "The F and the AR sets above assume homoskedastic errors: every row's noise has the same variance and "
        "the rows are independent. Here they are not. One instrument, the truth −1; each data set is handed to "
        "dmlcore's linear-IV inference twice, with the homoskedastic covariance and with a robust one.")
    errors = st.radio("Errors", list(robust.ERRORS), horizontal=True, key=state.LEARN_ROBUST_ERRORS,
                      persist_state="session", format_func=lambda v: DESIGN_TITLES[v],
                      help="Noise that grows with |fuel cost| (500 rows): heteroskedastic. Forty markets of 25 rows "
                           "whose fuel cost is one value per market and whose noise has a market-wide part: "
                           "clustered by market.")
    exp = slow(f"robust-{errors}", "Run the 60 data sets",
               lambda cb: robust.robust_inference(errors, callback=cb))
    if exp is None:
        st.caption("60 data sets, each one's effective F and AR set computed under both covariances by "
                   "dmlcore.inference.linear_iv.")
        return
    notebook_button("robust", errors=errors)
    s = exp.summary.set_index("covariance")
    draws, p = int(exp.params["draws"]), exp.params
    homo, rob = s.index[0], s.index[1]
    table = pd.DataFrame({
        "covariance": s.index, "median effective F": [num(v, 1) for v in s["median effective F"]],
        f"effective F < {WEAK_F:g}": [pct(v) for v in s[f"share effective F < {WEAK_F:g}"]],
        "AR covers −1, % (s.e.)": [f"{100 * v:.1f} ({100 * mc_se(v, draws):.1f})" for v in s["AR coverage"]],
        "AR bounded": [pct(v) for v in s["AR bounded"]]})
    st.dataframe(table, hide_index=True, key=state.LEARN_ROBUST_TABLE)
    example = p["example"]
    size = (f"{p['clusters']} markets of {p['n'] // p['clusters']} rows, clustered by market" if p["clusters"]
            else f"{p['n']} rows")
    st.caption(f"{draws} data sets of {size}. The first one: 2SLS {num(p['tsls'])}; effective F "
               f"{num(example[homo]['effective F'], 1)} ({homo}) and {num(example[rob]['effective F'], 1)} ({rob}); "
               f"95 % AR set {_text(example[homo]['AR pieces'])} ({homo}) and {_text(example[rob]['AR pieces'])} "
               f"({rob}).")
    f0, f1 = s.loc[homo, "median effective F"], s.loc[rob, "median effective F"]
    c0, c1 = s.loc[homo, "AR coverage"], s.loc[rob, "AR coverage"]
    short = c0 + 2 * mc_se(c0, draws) < LEVEL
    lines = [
        f"With the homoskedastic covariance the effective F is the usual first-stage F: median {num(f0, 1)}. "
        f"With the {rob} covariance it is {num(f1, 1)}"
        + (f", {f0 / f1:.1f} times smaller: the usual F overstates how strong the instrument is. " if f1 < f0 else ". ")
        + "The effective F of Montiel Olea & Pflueger (2013) is the first-stage strength statistic for errors "
          "that are not homoskedastic (with one instrument it equals the robust first-stage F); Andrews, Stock & "
          "Sun (2019) recommend reading it rather than the homoskedastic F.",
        f"The homoskedastic AR set contains −1 in {cover(c0, draws)} of the data sets, the {rob} one in "
        f"{cover(c1, draws)}. "
        + ("The homoskedastic set is too short: AR is robust to a weak instrument, not to a wrong covariance. "
           if short else "")
        + f"With the {rob} covariance the AR test is robust to both, its level holding approximately (a large-"
          "sample χ² test, not an exact one; Andrews, Stock & Sun 2019)."
        + (f" Its sets are bounded less often ({pct(s.loc[rob, 'AR bounded'])} against "
           f"{pct(s.loc[homo, 'AR bounded'])}): honest about how little the data say."
           if s.loc[rob, "AR bounded"] < s.loc[homo, "AR bounded"] else ""),
    ]
    if p["clusters"]:
        lines.append(f"The clustered statistics rest on {p['clusters']} markets, not {p['n']} rows; with fewer "
                     f"than about {FEW_CLUSTERS} clusters they are themselves unreliable (Cameron & Miller 2015).")
    st.markdown("\n".join(f"- {line}" for line in lines))


def overid_section():
    st.markdown("#### Several instruments: a test of the overidentifying restrictions")
    st.markdown(
        "With one instrument no statistic reveals a direct effect. With three, each instrument alone gives its "
        "own estimate; if all are valid they estimate the same −1, and a test of the overidentifying "
        "restrictions asks whether they disagree by more than chance. **Sargan's** (1958) test assumes "
        "homoskedastic errors; **Hansen's J** (1982), from efficient GMM with a heteroskedasticity-robust weight "
        "matrix, does not. Three instruments, each moving the price by π = 0.3; at 5 %.")
    exp = slow("overid", "Run the 60 data sets", lambda cb: robust.overidentification(callback=cb))
    if exp is None:
        st.caption("20 data sets of 500 rows for each of three designs, tested by "
                   "dmlcore.inference.linear_iv.first_stage_inference.")
        return
    notebook_button("overid")
    p, s = exp.params, exp.summary.set_index("design")
    draws, delta, pi = int(p["draws"]), p["delta"], p["pi"]
    what = {"valid": "no direct effect", "invalid": f"fuel3 moves sales by δ = {delta:g}",
            "all invalid": f"each moves sales by δ = {delta:g}"}
    table = pd.DataFrame({
        "design": [f"{d}: {what[d]}" for d in s.index], "Sargan rejects": [pct(v) for v in s["Sargan rejects"]],
        "Hansen J rejects": [pct(v) for v in s["Hansen J rejects"]],
        "median 2SLS": [num(v) for v in s["median 2SLS"]],
        "large-sample 2SLS": [num(v) for v in s["large-sample 2SLS"]]})
    st.dataframe(table, hide_index=True, key=state.LEARN_OVERID_TABLE)
    st.caption(f"{draws} data sets of {p['n']} rows per design; a share of {draws} has a Monte-Carlo s.e. of up to "
               f"{100 * mc_se(0.5, draws):.0f} percentage points. J has {3 - 1} degrees of freedom (three "
               "instruments, one price).")
    valid, invalid, alike = (s.loc[d] for d in robust.OVERID_DESIGNS)
    st.markdown("\n".join(f"- {line}" for line in (
        f"All valid: Sargan rejects in {pct(valid['Sargan rejects'])} and J in {pct(valid['Hansen J rejects'])} of "
        "the data sets; at 5 % a valid set of instruments is rejected about 5 % of the time.",
        f"One invalid: fuel3 alone points to −1 + δ / π = {num(robust.BETA + delta / pi)}, the other two to −1; "
        f"Sargan rejects in {pct(invalid['Sargan rejects'])}, J in {pct(invalid['Hansen J rejects'])}. A "
        "rejection says that the instruments disagree: some instrument is invalid, or the linear model with one "
        "effect for everyone is wrong (valid instruments can estimate different LATEs); it does not say which.",
        f"All invalid alike: each instrument alone points to −1 + δ / π = {num(robust.BETA + delta / pi)}, so they "
        f"agree: Sargan rejects in {pct(alike['Sargan rejects'])}, J in {pct(alike['Hansen J rejects'])}, while "
        f"2SLS's median is {num(alike['median 2SLS'])}. The test asks whether the instruments agree, not whether "
        "they are valid (Parente & Santos Silva 2012): not rejecting is no proof of validity. With as many "
        "instruments as treatments there is nothing to test.")))
