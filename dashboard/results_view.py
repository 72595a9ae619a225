"""The Results page's sections: the runs to compare, the curves, accuracy and cost, one run in detail, the
stored runs (drawn by pages/5_results.py; the effects are in dashboard/effects_view.py)."""

import pandas as pd
import streamlit as st

from dashboard import effects_view, fits, results, state
from dmlcore import plots
from dmlcore.data.datasets import OWN_DATA_UNKNOWN, REAL_DATASETS
from dmlcore.estimators import METHOD_TITLES, METHODS
from dmlcore.estimators._registry import LINEAR_REFERENCE
from dmlcore.inference.band_coverage import band_caption
from dmlcore.learners.select import describe as describe_selection
from dmlcore.runs.typed import History, nuisances_chosen

ss = st.session_state


def choose_runs(items):
    """Which runs to compare: at first the newest batch (or the last three runs); afterwards every run
    that appears (a new batch, a finished bootstrap, a reloaded run) is added to the user's choice."""
    keys = [it.key for it in items]
    labels = {it.key: it.title for it in items}
    seen = ss.get(state.RES_SEEN)
    if seen is None or state.RES_SELECTED not in ss:
        latest = max((it.batch for it in items if it.batch is not None), default=None)
        current = [it.key for it in items if it.batch == latest] or keys[-3:]
    else:
        current = [k for k in ss[state.RES_SELECTED] if k in keys] + [k for k in keys if k not in seen]
    current += [k for k in ss.pop(state.RES_ADD, []) if k in keys and k not in current]
    ss[state.RES_SELECTED], ss[state.RES_SEEN] = current, set(keys)
    chosen = st.multiselect("Runs to compare", keys, key=state.RES_SELECTED, persist_state="session",
                            format_func=lambda k: labels[k])
    return [it for it in items if it.key in chosen]


def axis_titles(item, curve):
    """x: the curve's own column that the x values come from (else the treatment); y: what f means."""
    treatments = item.result.role("treatment")
    x_title = treatments[0] if len(treatments) == 1 else "x"
    if curve is not None:
        for col in curve.columns:
            if col not in ("x", "estimate", "truth", "group") and curve[col].equals(curve["x"]):
                x_title = col
                break
    if item.result.problem == "pcl":
        return x_title, f"E[Y | do({x_title})]"
    if item.result.dataset in ("demand-iv", "digits-iv") and item.has_truth:
        return x_title, "f(price, time = 5, type)"
    if not item.has_truth:
        return x_title, "average structural function"
    return x_title, "causal function f"


def reference_2sls(items):
    """For real data: a 2SLS fit on the same data when none was selected (live runs only)."""
    if any(it.method == LINEAR_REFERENCE for it in items):
        return None
    live = next((it for it in items if it.run is not None), None)
    if live is None:
        return None
    return state.cached(state.REFERENCE_2SLS, live.key,
                        lambda: fits.fit_now(live.run.data, dataset=live.result.dataset), errors_as_text=True)


def curves_section(chosen):
    st.subheader("Estimated causal function")
    real = [it for it in chosen if not it.has_truth]
    named, methods = [], []
    for item in chosen:
        curve = item.curve()
        if curve is None:
            st.caption(f"{item.title}: no curve to draw (several treatment columns).")
            continue
        named.append((item.title, curve))
        methods.append(item.method)
    ref = reference_2sls(chosen) if real else None
    if ref is not None and not isinstance(ref, str):
        named.append(("2SLS (reference)", ref.curve()))
        methods.append(LINEAR_REFERENCE)
    if not named:
        return
    x_title, y_title = axis_titles(chosen[0], named[0][1])
    fig = plots.curve_figure(named, methods=methods, x_title=x_title, y_title=y_title, lines_in_view=True)
    st.plotly_chart(fig, key=state.RES_CURVES)         # the page's whole width: the legend is under the curves
    if real:
        left, right = st.columns(2, gap="medium")
        with left:
            dataset = chosen[0].result.dataset
            info = REAL_DATASETS.get(dataset)
            st.warning(info.caveat if info else OWN_DATA_UNKNOWN, icon=":material/help:")
            st.caption("The curves average f over the data's other inputs (the average structural "
                       "function). Where they bend away from the 2SLS line, a linear model may be too "
                       "simple, or the flexible fit may be overfitting: with the truth unknown, only "
                       "theory and robustness checks can tell.")
        with right:
            effects_view.side_by_side_2sls(chosen, ref if ref is not None and not isinstance(ref, str) else None)
    else:
        first = chosen[0].result
        caption = "Dashed black: the true causal function."
        if first.dataset in ("demand-iv", "digits-iv"):
            caption += " One panel per customer type: f against price at time 5."
        if first.truth:
            caption += " " + results.score_caption(first)
        st.caption(caption)
    bands_caption(chosen)
    effects_view.effects_section(chosen, ref if ref is not None and not isinstance(ref, str) else None)

def bands_caption(chosen):
    """What each run's shaded band is, and how far its coverage can be trusted."""
    notes = results.band_notes(chosen)
    if not notes:
        return
    kinds = {kind for item in chosen for kind in item.result.bands or {}}
    text = "Shaded: each run's band along its curve; the legend names its kind. " + band_caption(kinds)
    st.markdown("\n".join(f"- {note}" for note in notes))
    st.caption(text)

def metrics_section(chosen):
    st.subheader("Accuracy and cost")
    table = results.metrics_table(chosen)
    with_truth = table.dropna(subset=["MSE"]) if "MSE" in table else table.iloc[0:0]
    if not with_truth.empty:
        cols = st.columns(min(len(with_truth), 5))
        best = with_truth["MSE"].min()
        for col, (_, row) in zip(cols, with_truth.iterrows()):
            col.metric(row["run"], f"{row['MSE']:.4g}", help="Mean squared error against the truth (lower is better).",
                       delta="lowest MSE" if row["MSE"] == best and len(with_truth) > 1 else None,
                       delta_color="off", delta_arrow="off")
        for note in results.closest_notes(chosen):
            st.markdown(note)
    helps = results.metric_help(chosen)
    shown = results.for_display(table, chosen)
    numeric = shown["MSE"].dtype.kind == "f"      # else text: "no truth" for runs without one

    def scored(fmt, help):
        return (st.column_config.NumberColumn(format=fmt, help=help) if numeric
                else st.column_config.TextColumn(help=help))

    st.dataframe(shown, key=state.RES_METRICS, hide_index=True,
                 column_config={"MSE": scored("%.4g", helps.get("mse")),
                                "MSE (fresh draws)": scored("%.4g", helps.get("mse_fresh")),
                                "held-out residual": st.column_config.NumberColumn(format="%.4g", help=HELDOUT_HELP),
                                "held-out s.e.": st.column_config.NumberColumn(
                                    format="%.2g", help="Standard error of the held-out residual."),
                                "seconds": st.column_config.NumberColumn(format="%.1f"),
                                "band coverage": scored("%.2f", "Share of the points where the band contains the truth."),
                                "band width": st.column_config.NumberColumn(
                                    format="%.4g", help="Mean width of the band, on the outcome's scale.")})
    if "MSE (fresh draws)" in table:
        st.caption(f"**MSE**: {helps['mse']}. **MSE (fresh draws)**: {helps['mse_fresh']}.")
    if "held-out residual" in table:
        st.caption(heldout_note(chosen[0].result.problem))


HELDOUT_HELP = ("An estimate of E[(E[Y − f̂(X) | C])²] ÷ Var(Y) on rows the fit never saw: a squared size, so 0 "
                "at best; its estimate is noisy and can dip slightly below 0. Lower is better; no truth needed.")


def heldout_note(problem: str | None) -> str:
    """What the held-out residual is and what it can be used for, in the words of the data's problem."""
    weak = ("weak proxies (treatment proxies that say little about the outcome proxies)" if problem == "pcl"
            else "a weak instrument")
    measured = (" Measured on 150 simulated IV data sets (docs/coverage.md): with a strong instrument and a linear "
                "f it ranked the methods almost as the true MSE did, and it gave the regression that ignores the "
                "instrument the worst value 91 times in 100; with a weak instrument it was no guide (the confounded "
                "regression scored as well as 2SLS)." if problem != "pcl" else "")
    return (
        "**Held-out residual** (needs no truth): every method aims at E[Y − f(X) | C] = 0. The method is refitted "
        "on half the rows; on the other half the residual Y − f̂(X) is regressed on C, and the value estimates the "
        "mean square of that regression (the projected residual), ÷ Var(Y), the two halves swapped and averaged. "
        "The quantity is a square, so it is 0 at best; its estimate is unbiased but noisy and can come out "
        "slightly negative — read anything within about two standard errors of 0 as no detectable misfit. Lower "
        f"means f̂ meets the restriction better on new rows; it is not the error against the true f: with {weak} "
        f"very different f's meet the restriction almost equally well.{measured} Use it to set aside fits that "
        "fail the restriction, not to pick a winner among fits that pass (Study reads it the same way).")


def details_section(chosen):
    st.subheader("One run in detail: losses and downloads")
    labels = {it.key: it.title for it in chosen}
    key = st.selectbox("Run", list(labels), key=state.RES_DETAIL, format_func=lambda k: labels[k])
    item = next(it for it in chosen if it.key == key)
    rec = item.result
    fold_losses = [fold.to_dict() for fold in rec.fold_losses or []]
    if fold_losses:
        losses_charts(item, fold_losses)
        if chosen_nuisances := nuisances_chosen(rec.nuisances):   # what "auto" chose, by which criterion, and on what
            st.caption(f"**Nuisances:** auto: {chosen_nuisances}.")
        for role, selection in (rec.nuisances or {}).items():
            st.caption(describe_selection(selection.to_dict(), role))
    else:
        st.caption(f"{METHOD_TITLES.get(item.method, item.method)} has no nuisance models, so no fold-wise losses.")
    for note in rec.notes or []:
        st.info(note, icon=":material/info:")
    if rec.coefficients:
        st.dataframe(pd.DataFrame({"coefficient": rec.coefficients,
                                   "std. error": rec.std_errors if rec.has("std_errors") else {}}),
                     key=state.RES_COEFFICIENTS)
    name = results.download_name(item)
    c1, c2 = st.columns(2)
    c1.download_button("Predictions (CSV)", item.predictions().to_csv(index=False), file_name=f"{name}.csv",
                       mime="text/csv", key=state.DL_PREDICTIONS, icon=":material/download:")
    c2.download_button("Full run record (JSON)", item.to_json(), file_name=f"{name}.json",
                       mime="application/json", key=state.DL_RECORD, icon=":material/download:",
                       help="Configuration, metrics and losses: enough to reproduce the run.")


LOSSES_LABEL = "Fold-wise losses: the outcome model s, the distribution model g, f, and f's loss per fold"


def losses_charts(item, fold_losses):
    """The run's loss curves and its second-stage loss per fold, in an expander that runs only when opened
    (on_change="rerun": closed, it draws nothing). Drawn on every Results page, they were 2 of its 4 plotly
    charts and most of their points (the demo: 23 of 60 traces, 3,835 of 5,939 points;
    bench/perf/results_draw_cost.py), which the 20 browsers of a class draw on the server's own cores
    (issue 47). Opened, it stays open for the other runs."""
    rec = item.result
    box = st.expander(LOSSES_LABEL, key=state.RES_LOSSES_OPEN, on_change="rerun", icon=":material/show_chart:")
    if not box.open:
        return
    with box:
        losses = plots.losses_from_record(fold_losses)
        history = History.from_dict(rec.second_stage_history or {})
        if len(history.epoch or []) > 1:  # closed-form f (linear, sieve) has no training curve
            losses["f"] = {None: history.to_dict()}
        st.plotly_chart(plots.loss_figure(losses), key=state.RES_LOSSES)
        st.plotly_chart(plots.second_stage_figure(fold_losses), key=state.RES_SECOND_STAGE)
        if item.method in METHODS and METHODS[item.method].peer:
            st.caption(f"{METHOD_TITLES.get(item.method, item.method)}'s own training criteria per epoch, on "
                       "the scale it trains on: the raw outcome for NMMR's default, the standardized outcome "
                       "for the others (docs/peers.md).")
        else:
            st.caption(results.loss_caption(rec.f_model, "f" in losses))


def stored_section(items, chosen):
    st.subheader("Stored runs")
    rows = state.stored_runs(safe=False)
    if not rows:
        st.caption("Runs of this session are saved as they finish and listed here.")
        return
    shown = pd.DataFrame(rows)[["label", "method", "dataset", "n", "mse", "seconds", "created"]]
    shown["mse"] = ["no truth" if v is None or pd.isna(v) else f"{v:.4g}" for v in shown["mse"]]
    st.dataframe(shown, key=state.STORE_TABLE, hide_index=True,
                 column_config={"mse": st.column_config.TextColumn("MSE"),
                                "seconds": st.column_config.NumberColumn(format="%.1f")})
    present = {it.key for it in items}
    options = [r["id"] for r in rows if r["id"] not in present]
    if not options:
        st.caption(f"Every stored run of this session ({len(rows)}) is already loaded; {len(chosen)} of them "
                   f"{'is' if len(chosen) == 1 else 'are'} selected under 'Runs to compare' above, where the "
                   f"others can be added.")
        return
    labels = {r["id"]: f"{r['label']} · {r['dataset']} · {r['created']}" for r in rows}
    ss[state.STORE_PICK] = [k for k in ss.get(state.STORE_PICK, []) if k in options]
    pick = st.multiselect("Reload stored runs", options, key=state.STORE_PICK, format_func=lambda k: labels[k])
    if st.button("Load", key=state.STORE_LOAD, disabled=not pick):
        for run_id in pick:
            if results.load_stored(run_id) is None:
                st.error(f"Run {run_id} is no longer in the store.")
        ss[state.RES_ADD] = list(pick)
        st.rerun()
