"""Learn, tab Card (1995): a real-data exercise with its answers, the numbers computed here."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard import ui
from dashboard.learn.common import notebook_button, slow, strength_metric
from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F
from dmlcore.teaching import card, plausible, prepared


@st.cache_data(show_spinner="Computing the linear steps on 3,010 men...")
def steps():
    kept = prepared.load("card-linear")     # prepared before class (python -m dmlcore.teaching.prepared)
    return kept if kept is not None else card.linear_steps()


def f3(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def answer(question: str, text: str):
    st.markdown(f"*Ask:* {question}")
    with st.expander("Answer"):
        st.markdown(text)


def card_tab():
    s = steps()
    notebook_button("card")
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
        f"Growing up near a college goes with {f3(fs['coef'])} more years of school (given X; standard error "
        f"{f3(fs['se'])}), and with a log wage {f3(rf['coef'])} higher (about {100 * rf['coef']:.1f} %; standard "
        f"error {f3(rf['se'])}). If college proximity moves wages only "
        f"through schooling, each year of school is worth {f3(rf['coef'])} / {f3(fs['coef'])} = "
        f"**{f3(s['ratio'])}** in log wage: that ratio *is* the 2SLS estimate.")
    answer("Which assumption makes the ratio an effect of schooling, and can the data check it?",
           "Exclusion (nearc4 moves wages only through schooling) and independence given X (living near a college "
           "is as good as random once experience, race and region are held fixed). The data cannot establish either (with one instrument there is no overidentification test): "
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
        f"- First-stage F {s['f_stat']:.1f}: {card.strength_sentence(s['f_stat'])}\n"
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
           "Not guaranteed. With one instrument, 2SLS has no mean, so the question is not bias but the size of "
           "the test: the usual 5 % t-test keeps its size only for F above 104.7 (Lee et al. 2022), stated for "
           f"the effective F, here the robust first-stage F {s['effective_f']:.1f} (Andrews, Stock & Sun 2019 "
           "recommend it for one instrument). Lee et al.'s tF procedure widens the interval instead: below, "
           "section 2b. The Anderson–Rubin set is valid at any strength; it is similar in its lower end and "
           "longer at the top.")
    weak_robust_section(s)
    st.markdown("#### 3. DML-CMR: a flexible f with the same instrument")
    st.markdown(
        f"DML-CMR with gradient-boosting nuisances, K = {card.DML_SETTINGS['folds']} and a spline second stage, "
        "fitted on the same data; its effect is the *average derivative* of f in schooling. What can the data "
        "say about f? With one binary instrument the moment restriction gives one equation per value of nearc4 "
        "(given X): enough for one number about schooling, a straight-line slope. A function f that bends in "
        "schooling is **not identified**: many curves meet the restriction equally well. Two estimates follow:\n"
        "- the **plug-in**, f̂'s own average slope, is the spline penalty's choice among curves the data cannot "
        "tell apart; its delta-method interval holds the nuisances and that choice fixed;\n"
        "- the **debiased** effect adds a correction, the mean of a weight ξ̂(C) times the residual Y − f̂(A, X). "
        "The weight is a function of C = (nearc4, X), not of schooling. When f is linear in schooling (basis "
        "1, educ, X, instruments 1, nearc4, X) it is ñ / Cov(ñ, educ), ñ being nearc4 residualised on X: the "
        "weight 2SLS puts on each man (the sieve representer of Chen & Pouzo 2015). So the debiased effect "
        "estimates the same linear slope as 2SLS, and it is the average derivative of f only if the return to "
        "schooling is linear.\n\n"
        "The tool's *weakly identified* flag judges that linear weight. One of its rules fires when the linear "
        f"first stage's F is below {WEAK_FIRST_STAGE_F:g}: the smallest bar at which the debiased intervals of "
        "the fits it leaves silent covered at least 90 % pooled over the coverage study's sweep of instrument "
        "strengths, though not on each of its designs: no bar does that (docs/coverage.md). Here F is "
        f"{s['f_stat']:.1f}, "
        + ("below the bar: the flag fires and the debiased effect is printed without an interval; read the "
           "Anderson–Rubin set instead. " if s["f_stat"] < WEAK_FIRST_STAGE_F else
           "above the bar. The flag has two more checks: the representer's strength, and the sieve check (the "
           "standard error of the sieve effect of data-driven dimension against the debiased one's; docs/"
           "coverage.md); the result below gives each with its bar. ")
        + "No flag can say that the curvature of f is not identified. The slowest step of this tab; its "
        "result is shared with everyone on this server.")
    notebook_button("card-dml-cmr")
    dml = slow("card-dml-cmr", "Fit DML-CMR on Card's data", lambda cb: card.dml_cmr())
    if dml is not None:
        plug = dml["plug_in"]
        headline = (f"95 % interval [{f3(dml['lower'])}, {f3(dml['upper'])}]" if dml["lower"] is not None
                    else "no interval")
        st.markdown(
            f"- DML-CMR, debiased: **{f3(dml['coef'])}**, {headline} ({dml['interval']}"
            + (f"; {dml['why_not']}" if dml.get("why_not") else "") + ").\n"
            + (f"- The weak-identification flag: {dml['identification']}.\n" if dml.get("identification") else "")
            + f"- Its plug-in: {f3(plug['estimate'])}"
            + (f", delta-method interval [{f3(plug['ci_lower'])}, {f3(plug['ci_upper'])}]"
               if plug["ci_lower"] is not None else "") + f".\n- Fitted in {dml['seconds']:.0f} s.")
        if "Riesz representer" in dml["interval"]:
            st.caption("In the run record's words above, X stands for all of f's inputs (here schooling and the "
                       "covariates), and the bases in brackets are two: f's, named by the treatment (linear in "
                       "schooling), and ξ̂'s, functions of C (of the excluded variable nearc4, a 0/1 column, and of the "
                       "covariates). ξ̂ itself is a function of C only.")
        answer("Why do DML-CMR's plug-in and debiased effect differ, and why is the debiased one close to 2SLS?",
               "Both use the same f̂. The data identify only a linear slope in schooling, so f̂'s own slope (the "
               "plug-in) is whatever the spline's penalty and the shrunk nuisances made of the curvature the data "
               "cannot see; its interval ignores that. The correction's weight is a function of nearc4 and the "
               "covariates, in effect 2SLS's weight (residualised nearc4 over its covariance with schooling), so "
               "the debiased effect estimates the linear slope the instrument identifies: 2SLS's estimand, with "
               "flexible nuisances for the covariates. It is not evidence that the return is linear, and not the "
               "average derivative of a curved f. "
               + ("The honest summary: the data support a positive return (the AR set, 2SLS's and the debiased "
                  "interval exclude 0) but do not pin down its size, nor its shape." if dml["lower"] is not None
                  and min(ar["lower"], t["lower"], dml["lower"]) > 0 else
                  "The honest summary: the data support a positive return (the AR set and 2SLS's interval "
                  "exclude 0; the flagged debiased effect prints no interval) but do not pin down its size, nor "
                  "its shape." if dml["lower"] is None and min(ar["lower"], t["lower"]) > 0 else
                  "The honest summary: the data do not pin down the size of the return, nor its shape, and not "
                  "every interval excludes 0.")
               + (" Lee et al.'s tF interval (section 2b) does reach 0: how firm \"positive\" is depends on the "
                  "weak-instrument procedure chosen before looking." if s["tf"]["lower"] is not None
                  and s["tf"]["lower"] <= 0 <= s["tf"]["upper"] else ""))
    st.markdown("#### 4. What 2SLS estimates here, and for whom")
    st.markdown(
        "Effects of school differ from man to man. **Without covariates**, a binary instrument and a schooling "
        "that takes many values, 2SLS estimates a weighted average of the effects of one more year of school over "
        "the men whose schooling growing up near a college changed, weighted by how many of them it moved across "
        "each year (Angrist & Imbens 1995; needs monotonicity: nobody gets *less* school because a college is "
        "near). **With covariates entered linearly**, as here, 2SLS is in general *not* such a LATE: unless the "
        "specification is rich enough (saturated in the covariates), its estimand can also put weight on men "
        "the instrument did not move (always- and never-takers), some of it negative (Blandhol, Bonney, Mogstad "
        "& Torgovitsky 2022); Słoczyński (2020, arXiv:2011.06695, “When should we (not) interpret linear IV estimands as LATE?”) shows such negative weights with the same college-proximity instrument, for college attendance rather than years of school. And one covariate is tied to the treatment: *experience* is "
        "age − schooling − 6 (the *Data* page says so), so comparing men with the same experience and one more "
        "year of school compares men one year older; Card instrumented experience with age for this reason, "
        "which the exercise above does not (*not simulated here*).")
    ret = f"{s['tsls']['coef']:.2f}"
    answer(f"For whom is {ret} the return to schooling?",
           "At best for the compliers: men who got more schooling because a college was near and would have got "
           "less otherwise (plausibly men for whom cost or distance was the obstacle), averaged with weights over "
           "the years of school the instrument moved. Not the return for the average man (the ATE), nor for those "
           "who went to college anyway. With the covariates entered linearly even that reading needs more: "
           "unless the specification is saturated in the covariates, the weights can reach men the instrument did "
           f"not move and can be negative, so {ret} is a weighted sum of effects whose weights need not be positive "
           "and are not in the analyst's control. A policy that builds "
           "colleges acts on men like the compliers, which is why this number can still matter.")
    plausible_section(t)
    st.page_link(ui.DATA, label="Load Card's data on Data and fit the methods yourself", icon=":material/table:")


def weak_robust_section(s: dict):
    """2b. The weak-instrument toolbox beside 2SLS: Fuller, CLR and Lee et al.'s tF."""
    fl, clr, tf, t = s["fuller"], s["clr"], s["tf"], s["tsls"]
    st.markdown("#### 2b. Beside 2SLS: Fuller, CLR and tF")
    clr_text = (f"[{f3(clr['lower'])}, {f3(clr['upper'])}]" if clr["shape"] == "interval" else clr["shape"])
    tf_text = (f"[{f3(tf['lower'])}, {f3(tf['upper'])}]" if tf["lower"] is not None else "the whole line")
    st.markdown(
        f"- **LIML** equals 2SLS with one instrument; **Fuller** (α = 1), which has finite moments, gives "
        f"{f3(fl['coef'])} [{f3(fl['lower'])}, {f3(fl['upper'])}].\n"
        f"- **CLR** (Moreira 2003) 95 % set: {clr_text}; with one instrument it is the Anderson–Rubin test.\n"
        f"- **tF** (Lee, McCrary, Moreira & Porter 2022): the usual t-ratio with a critical value that depends on "
        f"F; at F {s['f_stat']:.1f} it is {tf['critical']:.2f} instead of 1.96, so the 95 % interval is "
        f"{tf['factor']:.2f} times as wide: **{tf_text}**.")
    ar = s["ar"]
    ar_excludes = ar["shape"] == "interval" and (ar["lower"] > 0 or ar["upper"] < 0)
    tf_excludes = tf["lower"] is not None and (tf["lower"] > 0 or tf["upper"] < 0)
    verb = lambda yes: "excludes" if yes else "does not exclude"  # noqa: E731
    answer(f"The Anderson–Rubin set {verb(ar_excludes)} 0 and the tF interval {verb(tf_excludes)} 0. Which do you "
           "report?",
           "Both are valid 5 % procedures at any strength; they are different tests. tF keeps 2SLS's symmetric "
           "interval and pays for the weak first stage with a larger critical value everywhere; AR inverts a "
           "test that does not use the estimate's standard error and is shorter here. Report one chosen "
           "before looking (with one instrument AR is the usual choice: uniformly most powerful among "
           "unbiased tests, Moreira 2009), not whichever excludes 0.")


@st.cache_data(show_spinner=False)
def sensitivity():
    return plausible.card_sensitivity()


def plausible_section(tsls: dict):
    """5. What if nearc4 also raises wages directly (Conley, Hansen & Rossi 2012)?"""
    r = sensitivity()
    notebook_button("card-plausible")
    st.markdown("#### 5. What if growing up near a college also raises wages directly?")
    st.markdown(
        "Exclusion says nearc4 moves wages only through schooling. Suppose instead log wage = β·schooling + "
        "γ·nearc4 + …, with a small direct effect γ ≥ 0 (families near colleges live in cities with better-paid "
        "jobs). Then 2SLS converges to β + γ / π, π the first-stage slope "
        f"({f3(r['first_stage'])}): each 0.01 of direct effect adds {f3(0.01 / r['first_stage'])} to the estimate. "
        "Conley, Hansen & Rossi (2012) give two intervals for β when γ is only *plausibly* zero:\n"
        "- **union of intervals**: γ anywhere in [0, δ]; the union of the usual 95 % intervals of the 2SLS of "
        "lwage − γ·nearc4 over that range (valid whatever γ in the range is true);\n"
        "- **local to zero**: γ random, here normal with the mean δ/2 and variance δ²/12 of the uniform on [0, δ]; "
        "the estimate is shifted by −δ/(2π) and its variance grows by Var(γ)/π² (Conley, Hansen & Rossi 2012, "
        "local-to-zero approximation).")
    t = r["table"]
    # three columns, each interval in one cell (as docs/teaching.md prints it): whole at 1,024 pixels
    table = pd.DataFrame({
        "δ (largest direct effect)": [f"{d:g}" for d in t["delta"]],
        "union of 95 % intervals": [f"[{f3(lo)}, {f3(hi)}]" for lo, hi in zip(t["union lower"], t["union upper"])],
        "local to zero: estimate [95 %]": [f"{f3(e)} [{f3(lo)}, {f3(hi)}]" for e, lo, hi in zip(
            t["local-to-zero estimate"], t["local-to-zero lower"], t["local-to-zero upper"])]})
    st.dataframe(table, hide_index=True, key=state.LEARN_CARD_PLAUSIBLE)
    st.markdown(
        f"- δ = 0 gives back 2SLS and its interval [{f3(tsls['lower'])}, {f3(tsls['upper'])}].\n"
        f"- The union of intervals reaches 0 at δ = **{r['breakdown_union']:.4f}**, the local-to-zero interval at "
        f"δ = **{r['breakdown_local']:.4f}**; the reduced form (nearc4's whole association with log wage, given X) "
        f"is {f3(r['reduced_form'])}.")
    answer("How large a direct effect of growing up near a college would overturn \"schooling raises wages\"?",
           f"A direct effect of about {100 * r['breakdown_union']:.1f} % of wage ({r['breakdown_union']:.4f} in log "
           f"wage, about {r['breakdown_union'] / r['reduced_form']:.0%} of the reduced form) makes the union of "
           f"intervals include 0; under the local-to-zero prior, about {100 * r['breakdown_local']:.1f} %. The "
           "instrument is moderately strong, so the direct effect is divided by a small first stage "
           f"({f3(r['first_stage'])} years): a violation too small to detect moves the estimate a lot. Whether "
           "such a direct effect is plausible is a question about the world (local labour markets, family "
           "background), not one the data can answer; the exercise says how much it would take.")
    answer("Why is the union of intervals wider than the local-to-zero interval at the same δ?",
           "The union protects against the worst γ in the range: its ends are those of the intervals at γ = 0 and "
           "γ = δ, so the shift δ/π is added to the sampling margin. The local-to-zero interval treats γ as random "
           "and adds its variance to the sampling variance (Conley, Hansen & Rossi 2012): the standard deviations "
           "combine as √(s.e.² + Var(γ)/π²), less than their sum, and the centre moves only by the prior mean over π, δ/(2π). It "
           "is narrower, but only as good as the prior.")
