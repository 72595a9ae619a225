"""Learn, tab Ticket demand: the paper's IV benchmark, three fits, and DML-CMR's band as the
instrument weakens."""

import time

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num, pct, short, strength_metric
from dashboard.training import one_openmp_thread
from dmlcore import plots
from dmlcore.data.simulate import Y_STD
from dmlcore.inference.first_stage import strength_label
from dmlcore.errors import DMLCoreError
from dmlcore.teaching import demand, prepared


def demand_tab():
    st.fragment(demand_experiment)()


@st.cache_data(show_spinner=False, max_entries=100)
def demand_fits(strength: float, rho: float, n: int, seed: int, with_naive: bool) -> dict:
    kept = prepared.load(prepared.demand_key(strength, rho, n, seed, with_naive))   # prepared before class
    return kept if kept is not None else demand.demand_fits(strength, rho, n, seed, with_naive)


def demand_experiment():
    st.markdown(
        "The paper's IV benchmark: simulated ticket demand (Hartford et al. 2017) where f is nonlinear in price, "
        "season and customer type, with the authors' noise, so the hidden shock really confounds. How do a "
        "regression that ignores the instrument, linear 2SLS and a fast DML-CMR (small gradient-boosting "
        f"learners, K = {demand.FAST_GB['folds']}) react? The plot shows the **average demand curve**: expected sales if every customer "
        "were offered the same price.")
    c1, c2, c3, c4 = st.columns(4)
    strength = c1.slider("Instrument strength", 0.0, 3.0, prepared.DEMAND_DEFAULTS["strength"], 0.05, key=state.EXP_STRENGTH, persist_state="session",
                         help="How much the fuel price moves the ticket price.")
    rho = c2.slider("Confounding ρ", 0.0, 0.99, prepared.DEMAND_DEFAULTS["rho"], 0.01, key=state.EXP_RHO, persist_state="session",
                    help="How strongly the hidden demand shock drives both price and sales.")
    n = c3.select_slider("Rows", [500, 1000, 2000], value=1000, key=state.EXP_N, persist_state="session")
    seed = c4.number_input("Seed", min_value=0, max_value=10_000, value=prepared.DEMAND_DEFAULTS["seed"], step=1, key=state.EXP_SEED,
                           persist_state="session")
    with_naive = st.checkbox("also the naive plug-in (same learners)", key=state.EXP_NAIVE, persist_state="session")
    start = time.perf_counter()
    try:
        with st.spinner("Fitting..."), one_openmp_thread():
            result = demand_fits(float(strength), float(rho), int(n), int(seed), bool(with_naive))
        notebook_button("demand", strength=float(strength), rho=float(rho), n=int(n), seed=int(seed),
                        with_naive=bool(with_naive))
    except DMLCoreError as err:
        st.error(str(err))
        return
    seconds = time.perf_counter() - start
    fits = result["fits"]
    left, right = st.columns([3, 2], gap="large")
    with left:
        chart(plots.curve_figure([(name, f["curve"]) for name, f in fits.items()],
                                           methods=[f["key"] for f in fits.values()], x_title="price",
                                           y_title="average sales", title="Average demand curve",
                                           lines_in_view=True), key=state.EXP_CURVES)
    with right:
        chart(plots.bar_figure(list(fits), [f["mse"] for f in fits.values()],
                                         keys=[f["key"] for f in fits.values()], y_title="MSE vs truth",
                                         title="Error of f on the test grid (lower is better)"), key=state.EXP_MSE)
        strength_metric(st, result["f_stat"])
    st.markdown(f"**Price slope** of the average demand curve, in tickets per unit of price: truth "
                f"{num(result['true_slope'], 1)}; "
                + ", ".join(f"{name} {num(f['slope'], 1)}" for name, f in fits.items()) + ".")
    label = strength_label(result["f_stat"])
    best = min(fits, key=lambda name: fits[name]["mse"])
    notes = [f"Instrument, judged by the **linear** first stage: {label.text} That F says how well a straight "
             "line in the fuel price (with season and customer type) predicts the price. The thresholds were "
             "derived for linear 2SLS; a nonlinear f needs the instrument to move the price in many ways "
             "(completeness), and no single F measures that (*not simulated here*; the bands below show one "
             "consequence).",
             f"Closest to the truth on the test grid: **{best}**, MSE {fits[best]['mse']:.3g}. The MSE is on the "
             f"benchmark's standardized scale (sales divided by {Y_STD:g} tickets), unlike the slopes: it is a "
             f"root mean squared error of about {np.sqrt(fits[best]['mse']) * Y_STD:,.0f} tickets."]
    reg = fits[demand.REGRESSION]["slope"]
    notes.append(f"The regression's slope ({num(reg, 1)}) is {'above' if reg > result['true_slope'] else 'below'} "
                 f"the true {num(result['true_slope'], 1)}: set ρ = 0 and compare — what moves it is the hidden "
                 "shock.")
    for note in notes:
        st.markdown(f"- {note}")
    st.caption(f"Answered in {seconds:.2f} s (settings seen before come from a cache).")
    bands_section(float(strength), float(rho), int(n), int(seed))


@st.cache_data(show_spinner=False, max_entries=200)
def band_fit(strength: float, rho: float, n: int, seed: int) -> dict:
    kept = prepared.load(prepared.band_key(strength, rho, n, seed))                 # prepared before class
    return kept if kept is not None else demand.band_fit(strength, rho, n, seed)


def bands_section(strength: float, rho: float, n: int, seed: int):
    """The 95 % band of DML-CMR with a spline second stage, at the sliders' settings and across
    instrument strengths."""
    st.markdown("#### Confidence bands and instrument strength")
    st.markdown(
        "With a **spline second stage** (“spline basis (sieve)” on *Estimators*) DML-CMR also gives a band "
        "labelled *pointwise 95 %*: f̂ ± 1.96 standard errors from the sandwich variance of the spline "
        "coefficients, **given the fitted nuisances**. It leaves out the nuisances' own estimation error and "
        "the spline's bias, and it is not built to stay valid under a weak instrument (as the Anderson–Rubin "
        "set of tab *Weak IV* is). Its 95 % is a label, not a promise; what it delivered is measured "
        "below. First: the same fast DML-CMR with that second stage, on the data of the sliders above, and again "
        f"at instrument strengths {', '.join(f'{v:g}' for v in demand.BAND_STRENGTHS)}.")
    start = time.perf_counter()
    try:
        with st.spinner("Fitting the bands..."), one_openmp_thread():
            sweep = [band_fit(v, rho, n, seed) for v in demand.BAND_STRENGTHS]
            current = band_fit(strength, rho, n, seed)
    except DMLCoreError as err:
        st.error(str(err))
        return
    seconds = time.perf_counter() - start
    chart(plots.curve_figure([("DML-CMR, spline f", current["curve"])], methods=["dml-cmr"],
                                       x_title="price", y_title="average sales",
                                       title=f"Average demand curve with its 95 % band (strength {strength:g})"),
                    key=state.EXP_BAND_CURVE)
    chart(plots.sweep_figure(
        demand.BAND_STRENGTHS, [("mean width of the band of f", [r["width"] for r in sweep], None),
                         ("share of the true f inside it", [r["coverage"] for r in sweep], 0.95)],
        x_title="instrument strength", log_x=True, title="Across instrument strengths (same N, ρ, seed)",
        text=[f"first-stage F {r['f_stat']:,.1f}" for r in sweep]), key=state.EXP_BAND_SWEEP)
    table = pd.DataFrame({"instrument strength": demand.BAND_STRENGTHS,
                          "first-stage F": [r["f_stat"] for r in sweep],
                          "label": [strength_label(r["f_stat"]).level for r in sweep],
                          "band width (f, test grid)": [r["width"] for r in sweep],
                          "coverage (f, test grid)": [r["coverage"] for r in sweep],
                          "band width (average curve)": [r["curve_width"] for r in sweep],
                          "fit seconds": [r["seconds"] for r in sweep]})
    st.dataframe(table, key=state.EXP_BAND_TABLE, hide_index=True, column_config={
        "instrument strength": short("strength", "instrument strength", "%g"),
        "first-stage F": short("F", "first-stage F", "%.1f"), "label": short("label", "strength label"),
        "band width (f, test grid)": short("width f", "band width (f, test grid)", "%.3g"),
        "coverage (f, test grid)": short("coverage f", "coverage (f, test grid)", "%.2f"),
        "band width (average curve)": short("width curve", "band width (average curve)", "%.3g"),
        "fit seconds": short("s", "fit seconds", "%.2f")})
    st.markdown(
        "**Why the band widens.** The second stage can learn f only from the part of the price that the "
        "instrument moves: it regresses ŝ(c) on the spline basis *averaged over the price draws given c*. "
        "With a strong instrument those averaged basis functions differ a lot from one fuel price to the "
        "next, and each coefficient is pinned down by its own pattern. As the instrument weakens it "
        "explains less and less of the price (the first-stage F falls), the price draws look alike whatever "
        "the fuel price, and the averaged basis functions become almost copies of one another: nearly "
        "collinear. Solving for the coefficients then amplifies every bit of noise, so their variance, "
        "and with it the band, grows.")
    measured_coverage()
    st.caption(
        f"The spline penalty is held fixed here (ridge {demand.BAND_RIDGE:g}) so that only the instrument changes; "
        "on *Estimators* it is chosen by validation, so there the band's width also depends on the penalty "
        "chosen (a heavier penalty narrows it by adding bias). Width and coverage are those of the band of f on the "
        "2,800-point test grid (outcome scale); the average curve's band is narrower because averaging over "
        f"customers cancels noise. Here the bands contain the true f at {pct(min(r['coverage'] for r in sweep))} to "
        f"{pct(max(r['coverage'] for r in sweep))} of the grid points (one data set per strength; over many, below). "
        f"Answered in {seconds:.2f} s; each fit's own time is in the table (settings seen "
        "before come from a cache).")


def measured_coverage():
    """The band's coverage and width over many data sets at each strength (``python -m bench.teaching``)."""
    table = demand.measured_band_coverage()
    if table is None:
        st.caption("The band's coverage over many data sets (bench/results/teaching/demand-band-coverage.csv, "
                   "written by `python -m bench.teaching`) is not in this installation.")
        return
    fixed = table[table["ridge"] == demand.BAND_RIDGE]
    small = table[table["ridge"] != demand.BAND_RIDGE]
    st.markdown("**What the band delivered** over "
                f"{int(fixed['data sets'].iloc[0])} data sets at each strength (ρ = 0.9, 1,000 rows, the penalty "
                f"fixed at {demand.BAND_RIDGE:g}; bench/results/teaching/demand-band-coverage.csv):")
    st.dataframe(table, hide_index=True, key=state.EXP_BAND_COVERAGE,
                 column_config={"median first-stage F": short("median F", "median first-stage F", "%.1f"),
                                "mean coverage": short("coverage", "mean coverage", "%.3f"),
                                "coverage s.e.": short("s.e.", "coverage s.e. (Monte Carlo)", "%.3f"),
                                "lowest coverage": short("lowest", "lowest coverage", "%.3f"),
                                "mean width": short("width", "mean width", "%.4g"),
                                "ridge": st.column_config.NumberColumn(format="%.0e")})
    weakest = fixed.iloc[-1]
    se = (f" (Monte-Carlo s.e. at most {100 * fixed['coverage s.e.'].max():.1f} %)" if "coverage s.e." in fixed
          else " (Monte-Carlo s.e. not recorded)")
    lines = [f"The share of the true f inside the band, averaged over the data sets, was {100 * fixed['mean coverage'].min():.1f} % "
             f"to {100 * fixed['mean coverage'].max():.1f} %{se}, from F "
             f"{num(fixed['median first-stage F'].max(), 0)} down to F {num(weakest['median first-stage F'], 1)}: "
             + ("more than the nominal 95 % at every strength: wide enough, but no sign that the instrument "
                "became weak." if fixed["mean coverage"].min() > 0.95 else "not the nominal 95 % throughout.")]
    if len(small):
        row = small.iloc[0]
        lines.append(
            f"At the weakest strength the band is {row['mean width'] / weakest['mean width']:.0f} times wider with the "
            f"penalty {row['ridge']:.0e} instead of {demand.BAND_RIDGE:g} ({row['mean width']:,.0f} against "
            f"{weakest['mean width']:,.0f}): at the weakest strengths it is the penalty, not the data, that stops the "
            "band from widening. A band that stops growing where the information runs out is not a sign of reliability.")
    st.markdown("\n".join(f"- {line}" for line in lines))
