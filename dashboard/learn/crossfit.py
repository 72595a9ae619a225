"""Learn, tab Cross-fitting: the folds of the user's data, the three methods compared, and the
project's benchmark rows."""

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard.learn.common import chart, notebook_button, num, short, slow
from dmlcore import plots
from dmlcore.estimators.dml import make_folds
from dmlcore.learners import LEARNER_TITLES
from dmlcore.estimators import METHOD_TITLES
from dmlcore.teaching import figures, nuisance
from dmlcore.teaching.measured import measured


def crossfit_tab():
    data = state.causal()
    k = int(state.get(state.EST_FOLDS))
    seed = int(state.get(state.EST_SEED))
    if data is not None:
        n, source = len(data.table), f"your data ({state.dataset().name}, {len(data.table):,} rows)"
    else:
        n, source = 2000, "2,000 example rows (load data to see your own)"
    folds = make_folds(n, k, seed)
    st.markdown(
        f"With **K = {k}** folds and seed {seed} (set on *Estimators*) on {source}, DML-CMR splits the rows "
        f"at random into {k} folds. For each fold k it trains the nuisances s_k and g_k on the **other** "
        f"{k - 1} folds (blue), then uses them only on fold k's own rows (orange) in the second stage. "
        "Every row is held out exactly once, so the second stage sees all N rows, each scored by "
        "nuisances that never saw it. These are exactly the folds dmlcore uses for this N, K and seed.")
    chart(plots.folds_figure(folds, n), key=state.LEARN_FOLDS)
    table = pd.DataFrame({"fold": range(k), "held-out rows (scored)": [len(f) for f in folds],
                          "rows training s_k and g_k": [n - len(f) for f in folds],
                          "first held-out rows": [", ".join(map(str, f[:6])) + " …" for f in folds]})
    st.dataframe(table, hide_index=True, key=state.LEARN_FOLD_TABLE)
    st.caption("CE-DML-CMR and the naive plug-in skip this: one nuisance model, trained on all rows, "
               "scores the same rows it was trained on. The idea is old in IV: with many instruments the first "
               "stage of 2SLS overfits and 2SLS drifts toward OLS; jackknife IV (JIVE) and split-sample IV predict "
               "each row's treatment from the other rows, as cross-fitting does, and LIML removes the same bias "
               "another way (not simulated here).")
    st.markdown("#### Naive plug-in, CE-DML-CMR and DML-CMR over many data sets")
    st.markdown(
        "Why hold rows out? A nuisance model that **overfits** predicts its own training rows too well. A "
        "sampler that has memorized row i draws prices close to row i's own price, which carries that row's "
        "share of the hidden U, so the second stage drifts toward regressing sales on f(price), the confounded "
        "regression; an ŝ(c_i) that has memorized y_i carries the same row's U in the target. "
        "Cross-fitting scores each row with models that never saw it. The experiment fits the three methods with the same learners on the "
        "same simulated data sets (f(a) = 2 sin(a); second stage: splines, penalty chosen on validation rows).")
    c1, c2 = st.columns([3, 1])
    setting = c1.radio("Setting", list(nuisance.SETTINGS), key=state.LEARN_CMP_SETTING, persist_state="session",
                       format_func=lambda key: nuisance.SETTINGS[key].title)
    draws = c2.select_slider("Data sets", [5, 10, 20, 50], value=20, key=state.LEARN_CMP_DRAWS, persist_state="session")
    swap_note()
    timing = _timing()
    if timing:
        st.caption(timing)
    notebook_button("crossfit", setting=setting, draws=int(draws))
    exp = slow(f"compare-{setting}-{draws}", "Run the comparison",
               lambda cb: nuisance.compare_methods(setting, draws=int(draws), callback=cb))
    if exp is not None:
        # the chart, then its table at full width (beside the chart the table needed a sideways scroll even at
        # 1,400 pixels)
        chart(figures.methods_box(exp), key=state.LEARN_CMP_PLOT)
        s = exp.summary.set_index("method")
        st.dataframe(pd.DataFrame({"median MSE": s["median"], "q25": s["q25"], "q75": s["q75"],
                                   "lowest MSE on": s["lowest MSE on"]}).rename(index=METHOD_TITLES),
                     key=state.LEARN_CMP_TABLE, column_config={c: st.column_config.NumberColumn(format="%.3g")
                                                           for c in ("median MSE", "q25", "q75")})
        best = s["median"].idxmin()
        st.markdown(
            f"Lowest median MSE: **{METHOD_TITLES[best]}** ({num(s.loc[best, 'median'], 3)}); DML-CMR had the "
            f"lowest MSE on {s.loc['dml-cmr', 'lowest MSE on']} of {exp.params['draws']} data sets. The naive "
            f"plug-in's middle half spans {num(s.loc['naive', 'q25'], 3)} to {num(s.loc['naive', 'q75'], 3)}, "
            f"DML-CMR's {num(s.loc['dml-cmr', 'q25'], 3)} to {num(s.loc['dml-cmr', 'q75'], 3)}. The naive "
            "target y carries all the outcome noise; ŝ averages it before the second stage.")
        st.caption(f"Computed in {exp.seconds:.0f} s; {exp.params['n']} rows per data set, K = {exp.params['folds']}.")
    repeated_section()
    measured_section()


def repeated_section():
    """Repeated cross-fitting (the ``reps_crossfit`` setting): how much f-hat depends on the split."""
    st.markdown("#### Repeated cross-fitting: does the random split matter?")
    st.markdown(
        "The folds are drawn at random, so a second analyst with another seed gets another f̂ from the same "
        "data. Repeated cross-fitting (*Cross-fits R* on *Estimators*; `--reps-crossfit` on the command line) "
        "fits R times with seeds seed, seed + 1, … and keeps the median f̂ (Chernozhukov et al. 2018 recommend "
        "it for the same reason). The experiment fits DML-CMR on one simulated data set of the first setting "
        "with five different split seeds, once with R = 1 and once with R = 3, and measures how far the five "
        "f̂ lie from their mean (root mean square over the price grid).")
    notebook_button("crossfit-repeated")
    exp = slow("crossfit-repeated", "Run repeated cross-fitting",
               lambda cb: nuisance.repeated_crossfit("simple", callback=cb))
    if exp is None:
        return
    s = exp.summary.set_index("R")
    one, many = s.index.min(), s.index.max()
    st.dataframe(exp.summary, hide_index=True, key=state.LEARN_REPS_TABLE,
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in exp.summary.columns[1:]})
    st.markdown(
        f"- With R = {one} the {exp.params['splits']} splits' f̂ differ from their mean by "
        f"{num(s.loc[one, 'split spread'], 3)}; with R = {many}, by {num(s.loc[many, 'split spread'], 3)}"
        f" ({s.loc[many, 'split spread'] / s.loc[one, 'split spread']:.0%} of it), at {s.loc[many, 'seconds per fit'] / s.loc[one, 'seconds per fit']:.1f} "
        "times the time per fit.\n"
        f"- Median MSE against the true f over the splits: {num(s.loc[one, 'median MSE'], 3)} (R = {one}), "
        f"{num(s.loc[many, 'median MSE'], 3)} (R = {many}): one data set, so a difference here is no evidence that "
        "R lowers the error; what R buys is a result that depends less on the seed.")
    st.caption(f"Computed in {exp.seconds:.0f} s; shared with everyone using this server until it restarts.")


def measured_section():
    st.markdown("#### Measured by this project on the paper's benchmarks")
    table = measured()
    if table.empty:
        st.caption("The benchmark rows (bench/results/) are not in this installation.")
        return
    # the benchmark in one column and the files in the caption: five columns that fit a projector
    shown = pd.DataFrame({
        "benchmark": [f"{b}" + (f" {'std.' if d == 'standardized' else d}" if d else "") + f", {l}, {n:,}"
                      for b, d, l, n in zip(table["benchmark"], table["design"], table["learners"], table["N"])],
        **{m: table[m] for m in ("DML-CMR", "CE-DML-CMR", "Naive plug-in")},
        "naive wins": [f"{w} of {s}" for w, s in zip(table["naive wins"], table["paired seeds"])]})
    st.dataframe(shown, hide_index=True, key=state.LEARN_MEASURED,
                 column_config={"benchmark": short("benchmark", "design (std.: standardized noise), learners "
                                                                "(nn, gb, rf), N rows"),
                                "naive wins": short("naive wins", "naive plug-in's MSE lower than DML-CMR's, of the "
                                                                   "paired seeds")})
    st.caption("Files: " + ", ".join(f"`{f}`" for f in dict.fromkeys(table["file"])))
    lines = []
    for (bench, design, learners), part in table.groupby(["benchmark", "design", "learners"], sort=False):
        wins, seeds = int(part["naive wins"].sum()), int(part["paired seeds"].sum())
        where = f"{bench}" + (f" ({design} noise)" if design else "") + f", {LEARNER_TITLES.get(learners, learners)} learners"
        lines.append(f"On **{where}** the naive plug-in had a lower MSE than DML-CMR on {wins} of {seeds} "
                     "paired fits.")
    st.markdown(
        "Median MSE [quartiles] over seeds, the same data for every method (docs/benchmarks.md, raw rows in the "
        "files named). The paper reports DML-CMR ahead of DeepIV, a naive plug-in, on demand-iv (it runs no naive "
        "plug-in on demand-pcl); here is what this project measured (counts of paired fits, not a test: "
        "docs/benchmarks.md gives each comparison's paired signed-rank verdict):\n"
        + "\n".join(f"- {line}" for line in lines))
    if (table["design"] == "raw").any():
        st.caption("Raw noise: the appendix's outcome noise (standard deviation 1 in sales), under which the "
                   "hidden shock barely confounds; the tool now simulates demand-iv as the authors' code does "
                   "(tab *Ticket demand*), see docs/benchmarks.md for its measurements.")


def swap_note():
    """Which overfitted nuisance moves f-hat, from ``python -m bench.teaching``'s rows."""
    table = nuisance.measured_swap()
    if table is None:
        return
    mse = table.set_index(["targets", "draws"])["median"]
    st.markdown(
        "Which one matters? Refitting the second stage with one nuisance taken in-sample (CE-DML-CMR's) and the "
        "other cross-fitted (DML-CMR's), on 5 data sets of the overfitting setting "
        "(bench/results/teaching/crossfit-swap.csv), median MSE: both cross-fitted "
        f"{mse['cross-fitted', 'cross-fitted']:.3f}; in-sample ŝ {mse['in-sample', 'cross-fitted']:.3f}; in-sample "
        f"price draws {mse['cross-fitted', 'in-sample']:.3f}; both in-sample {mse['in-sample', 'in-sample']:.3f}. "
        + ("The draws do more harm than ŝ, and the two together far more than either."
           if mse['cross-fitted', 'in-sample'] > mse['in-sample', 'cross-fitted'] else
           "Here ŝ does more harm than the draws, and the two together more than either."))


def _timing() -> str | None:
    """Seconds per data set of the two settings in the saved runs (``python -m bench.teaching``:
    bench/results/teaching/run.json and compare-*.csv)."""
    runs = {key: (nuisance.saved_run(f"compare-{key}"), nuisance.saved_comparison(key)) for key in nuisance.SETTINGS}
    if not all(run and table is not None for run, table in runs.values()):
        return None
    shown = " and ".join(f"{run['seconds'] / table['draws'].iloc[0]:.1f} s for the {which} setting"
                         for which, (run, table) in zip(("first", "second"), runs.values()))
    run = next(iter(runs.values()))[0]
    return (f"About {shown} per data set, measured on {run['machine']} with other work running (load average "
            f"{run['load average']:.0f}, {run['date'][:10]}).")
