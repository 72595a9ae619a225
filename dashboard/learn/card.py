"""Learn, tab Card (1995): a real-data exercise with its answers, the numbers computed here."""

import streamlit as st

from dashboard import ui
from dashboard.learn.common import slow, strength_metric
from dmlcore.teaching import card


@st.cache_data(show_spinner=False)
def steps():
    return card.linear_steps()


def f3(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def answer(question: str, text: str):
    st.markdown(f"*Ask:* {question}")
    with st.expander("Answer"):
        st.markdown(text)


def card_tab():
    s = steps()
    st.markdown(
        f"**The question.** What does a year of school do to a man's wage? Card (1995) uses {s['n']:,} men of "
        "the US National Longitudinal Survey of Young Men: log hourly wage in 1976 (*lwage*), years of schooling "
        "(*educ*), experience and its square, race and region (covariates X). Ability is the hidden *U*: it "
        "raises schooling and wages, so a regression of wage on schooling is suspect. The instrument: whether "
        "the man grew up near a four-year college (*nearc4*, 0 or 1). The same data can be loaded on *Data* "
        "(real data: Card); every number below is computed from it (covariates partialled out, homoskedastic standard "
        "errors, as the tool's 2SLS).")
    fs, rf = s["first_stage"], s["reduced_form"]
    st.markdown("#### 1. First stage and reduced form")
    c1, c2, c3 = st.columns(3)
    c1.metric("First stage: educ on nearc4", f3(fs["coef"]), help=f"standard error {f3(fs['se'])}")
    c2.metric("Reduced form: lwage on nearc4", f3(rf["coef"]), help=f"standard error {f3(rf['se'])}")
    c3.metric("Their ratio", f3(s["ratio"]))
    st.markdown(
        f"Growing up near a college goes with {fs['coef']:.2f} more years of school (given X), and with a log "
        f"wage {rf['coef']:.3f} higher (about {100 * rf['coef']:.1f} %). If college proximity moves wages only "
        f"through schooling, each year of school is worth {f3(rf['coef'])} / {f3(fs['coef'])} = "
        f"**{f3(s['ratio'])}** in log wage: that ratio *is* the 2SLS estimate.")
    answer("Which assumption makes the ratio an effect of schooling, and can the data check it?",
           "Exclusion (nearc4 moves wages only through schooling) and independence given X (living near a college "
           "is as good as random once experience, race and region are held fixed). The data cannot check either: "
           "families who live near colleges may differ in ways that also raise wages (Card discusses this; the "
           "region and urban covariates are there for it). Relevance can be checked: the first stage below.")
    st.markdown("#### 2. OLS, 2SLS and the strength of the instrument")
    t, ols, ar = s["tsls"], s["ols"], s["ar"]
    c1, c2, c3 = st.columns(3)
    c1.metric("OLS", f3(ols["coef"]), help=f"95 % interval [{f3(ols['lower'])}, {f3(ols['upper'])}]")
    c2.metric("2SLS", f3(t["coef"]), help=f"95 % interval [{f3(t['lower'])}, {f3(t['upper'])}]")
    strength_metric(c3, s["f_stat"])
    ar_text = (f"[{f3(ar['lower'])}, {f3(ar['upper'])}]" if ar["shape"] == "interval" else ar["shape"])
    st.markdown(
        f"- OLS: {f3(ols['coef'])}, 95 % interval [{f3(ols['lower'])}, {f3(ols['upper'])}].\n"
        f"- 2SLS: {f3(t['coef'])}, usual 95 % interval [{f3(t['lower'])}, {f3(t['upper'])}] "
        f"(standard error {f3(t['se'])}: {t['se'] / ols['se']:.0f} times OLS's).\n"
        f"- First-stage F {s['f_stat']:.1f}: {s['strength']['text']}\n"
        f"- Anderson–Rubin 95 % set: **{ar_text}**, valid whatever the instrument's strength (normal, "
        "homoskedastic errors)."
        + (" Its upper end lies further from the estimate than the usual interval's: with F this low, the data "
           "cannot rule out large returns." if ar["shape"] == "interval" and ar["upper"] > t["upper"] else ""))
    answer("2SLS is larger than OLS, while ability bias should make OLS too *large*. Name two explanations.",
           "(1) Measurement error in schooling biases OLS toward zero; 2SLS is not affected by it. (2) LATE: the "
           "men whose schooling college proximity changes (those for whom distance was the obstacle, often from "
           "poorer families) may gain more from school than the average man (see 4). (3) It may be noise: "
           + ("OLS's interval lies inside 2SLS's" if t["lower"] < ols["lower"] and ols["upper"] < t["upper"] else
              "the intervals overlap" if ols["upper"] > t["lower"] else "(here the intervals do not overlap)")
           + ", and the instrument is only moderately strong. A "
           "violated exclusion (families near colleges earn more for other reasons) would also push 2SLS up.")
    answer("F is above 10. Is the usual 2SLS interval then fine?",
           "Not quite. F above 10 rules out gross weak-instrument bias (Staiger & Stock), but the usual t-test's "
           "size is only guaranteed near 5 % for F above 104.7 with one instrument (Lee et al. 2022). The "
           "Anderson–Rubin set is the honest one here; it is similar in its lower end and longer at the top.")
    st.markdown("#### 3. DML-CMR: a flexible f with the same instrument")
    st.markdown(
        f"DML-CMR with gradient-boosting nuisances, K = {card.DML_SETTINGS['folds']} and a spline second stage "
        "(so that its plug-in has an interval too), fitted on the same data: the effect is the *average "
        "derivative* of f in schooling. The headline is the **debiased** effect: f̂'s own slope plus a correction "
        "made of the residuals Y − f̂(X), with its interval from the corrected score, or the words *weakly "
        "identified* where the instrument barely moves schooling in the directions f needs (docs/coverage.md). "
        "Beside it the plug-in, f̂'s own slope with the delta method's interval (nuisances held fixed). The "
        "slowest step of this tab; its result is shared with everyone on this server.")
    dml = slow("card-dml-cmr", "Fit DML-CMR on Card's data", lambda cb: card.dml_cmr())
    if dml is not None:
        plug = dml["plug_in"]
        headline = (f"95 % interval [{f3(dml['lower'])}, {f3(dml['upper'])}]" if dml["lower"] is not None
                    else "no interval")
        st.markdown(
            f"- DML-CMR: **{f3(dml['coef'])}**, {headline} ({dml['interval']}"
            + (f"; {dml['why_not']}" if dml.get("why_not") else "") + ").\n"
            f"- Its plug-in: {f3(plug['estimate'])}"
            + (f", delta-method interval [{f3(plug['ci_lower'])}, {f3(plug['ci_upper'])}]"
               if plug["ci_lower"] is not None else "") + f".\n- Fitted in {dml['seconds']:.0f} s.")
        answer("Why do DML-CMR's plug-in and debiased effect differ, and how do they compare with 2SLS?",
               "Both use the same f̂. DML-CMR lets f be any smooth function of schooling and the covariates; with "
               "one binary instrument such an f is barely identified in schooling (the instrument moves schooling "
               "in one way only), so the spline's penalty and the nuisances' shrinkage flatten f̂, and its own "
               "slope, the plug-in, reads small; its delta-method interval ignores that. The correction adds back "
               "what the residuals Y − f̂(X) say f̂ missed in the one direction the instrument identifies, a linear "
               "slope, which is why the debiased effect lands near 2SLS's. "
               + ("The honest summary: the data support a positive return (the AR set, 2SLS's and the debiased "
                  "interval exclude 0) but do not pin down its size." if dml["lower"] is not None
                  and min(ar["lower"], t["lower"], dml["lower"]) > 0 else
                  "The honest summary: the data do not pin down the size of the return, and not every interval "
                  "excludes 0."))
    st.markdown("#### 4. What LATE means here")
    st.markdown(
        "Effects of school differ from man to man. With a binary instrument and a treatment that takes many "
        "values, 2SLS estimates a weighted average of the effects of one more year of school, over the men whose "
        "schooling growing up near a college changed, weighted by how many of them it moved across each year "
        "(Angrist & Imbens 1995; *not simulated here*; tab *Instrumental variables* simulates the binary case). "
        "It says nothing about men who would have gone to college anyway, or never.")
    answer("For whom is 0.13 the return to schooling?",
           "For the compliers: men who got more schooling because a college was near, and would have got less "
           "otherwise (plausibly men for whom cost or distance was the obstacle). It is not the return for the "
           "average man (the ATE) nor for those who went to college anyway. A policy that builds colleges acts "
           "on exactly such men, which is why this LATE can still be the relevant number.")
    st.page_link(ui.DATA, label="Load Card's data on Data and fit the methods yourself", icon=":material/table:")
