"""Results: estimated against true causal functions, MSE and time, fold-wise losses, downloads, stored runs."""

import pandas as pd
import streamlit as st

from dashboard import results, state, ui
from dmlcore import plots
from dmlcore.inference.band_coverage import band_caption
from dmlcore.data.datasets import OWN_DATA_UNKNOWN, REAL_DATASETS
from dmlcore.inference.first_stage import strength_label
from dmlcore.errors import DMLCoreError
from dmlcore.stats.covariance import COV_CHOICES, COV_TITLES, FEW_CLUSTERS, cluster_columns, is_clustered
from dmlcore.estimators import METHODS
from dmlcore.estimators._registry import LINEAR_REFERENCE
from dmlcore.learners.select import describe as describe_selection
from dmlcore.estimators import METHOD_TITLES
from dmlcore.runs import fit_run

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

ss = st.session_state


def choose_runs(items):
    """Which runs to compare: at first the newest batch (or the last three runs); afterwards every run
    that appears (a new batch, a finished bootstrap, a reloaded run) is added to the user's choice."""
    keys = [it.key for it in items]
    labels = {it.key: it.title for it in items}
    seen = ss.get("res_seen")
    if seen is None or "res_selected" not in ss:
        latest = max((it.batch for it in items if it.batch is not None), default=None)
        current = [it.key for it in items if it.batch == latest] or keys[-3:]
    else:
        current = [k for k in ss["res_selected"] if k in keys] + [k for k in keys if k not in seen]
    current += [k for k in ss.pop("res_add", []) if k in keys and k not in current]
    ss["res_selected"], ss["res_seen"] = current, set(keys)
    chosen = st.multiselect("Runs to compare", keys, key="res_selected", persist_state="session",
                            format_func=lambda k: labels[k])
    return [it for it in items if it.key in chosen]


def axis_titles(item, curve):
    """x: the curve's own column that the x values come from (else the treatment); y: what f means."""
    roles = item.record.get("roles") or {}
    treatments = roles.get("treatment") or []
    x_title = treatments[0] if len(treatments) == 1 else "x"
    if curve is not None:
        for col in curve.columns:
            if col not in ("x", "estimate", "truth", "group") and curve[col].equals(curve["x"]):
                x_title = col
                break
    if item.record.get("problem") == "pcl":
        return x_title, f"E[Y | do({x_title})]"
    if item.record.get("dataset") in ("demand-iv", "digits-iv") and item.has_truth:
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
    cache = ss.setdefault("reference_2sls", {})
    if live.key not in cache:
        try:
            cache[live.key] = fit_run(live.run.data, LINEAR_REFERENCE, dataset=live.record.get("dataset"))
        except DMLCoreError as err:
            cache[live.key] = str(err)
    return cache[live.key]


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
    st.plotly_chart(fig, key="res_curves")         # the page's whole width: the legend is under the curves
    if real:
        left, right = st.columns(2, gap="medium")
        with left:
            dataset = chosen[0].record.get("dataset")
            info = REAL_DATASETS.get(dataset)
            st.warning(info.caveat if info else OWN_DATA_UNKNOWN, icon=":material/help:")
            st.caption("The curves average f over the data's other inputs (the average structural "
                       "function). Where they bend away from the 2SLS line, a linear model may be too "
                       "simple, or the flexible fit may be overfitting: with the truth unknown, only "
                       "theory and robustness checks can tell.")
        with right:
            side_by_side_2sls(chosen, ref if ref is not None and not isinstance(ref, str) else None)
    else:
        scored = chosen[0].record.get("truth")
        caption = "Dashed black: the true causal function."
        if chosen[0].record.get("dataset") in ("demand-iv", "digits-iv"):
            caption += " One panel per customer type: f against price at time 5."
        if scored:
            caption += " " + results.score_caption(chosen[0].record)
        st.caption(caption)
    bands_caption(chosen)
    effects_section(chosen, ref if ref is not None and not isinstance(ref, str) else None)


def side_by_side_2sls(chosen, reference):
    """2SLS's coefficients with their standard errors: under the page's covariance choice (below, with the
    effect) where it applies, else as the run was fitted; the table's title says which."""
    coef_item = next((it for it in chosen if it.method == LINEAR_REFERENCE), None)
    record = coef_item.record if coef_item else (reference.record if reference is not None else None)
    if not record or not record.get("coefficients"):
        return
    data = linear_iv_data(chosen, reference)
    inference = chosen_inference(data) if data is not None else None
    if isinstance(inference, dict):
        cov = COV_TITLES[inference["cov_type"]] + (f" by {inference['cluster'].replace(',', ' and ')}" if inference["cluster"] else "")
        coefficients = {k: v[0] for k, v in inference["coefficients"].items()}
        errors = {k: v[1] for k, v in inference["coefficients"].items()}
    else:
        config = record.get("config") or {}
        cov = COV_TITLES.get(config.get("cov_type") or "unadjusted", config.get("cov_type"))
        cov += f" by {config['cluster']}, as fitted" if config.get("cluster") else ", as fitted"
        coefficients, errors = record["coefficients"], record.get("std_errors", {})
    st.markdown(f"**2SLS, side by side:** linear coefficients ± standard errors, {cov}")
    st.dataframe(pd.DataFrame({"coefficient": coefficients, "std. error": errors}), key="res_2sls")


def bands_caption(chosen):
    """What each run's shaded band is, and how far its coverage can be trusted."""
    notes = results.band_notes(chosen)
    if not notes:
        return
    kinds = {kind for item in chosen for kind in item.record.get("bands") or {}}
    text = "Shaded: each run's band along its curve; the legend names its kind. " + band_caption(kinds)
    st.markdown("\n".join(f"- {note}" for note in notes))
    st.caption(text)


def effects_section(chosen, reference):
    """Each run's effect of the treatment with its interval, its kind and measured coverage, the
    plug-in beside it, and a bootstrap for those without an interval. On IV data the covariance choice
    above the table sets 2SLS's interval and Anderson-Rubin set there and the Linear IV box below."""
    if results.effects_table(chosen, reference).empty:
        return
    st.markdown(f"**Effect of the treatment**: {results.estimand(chosen) or 'not available'}")
    data = linear_iv_data(chosen, reference)
    cov, inference = covariance_choice(data) if data is not None else (None, None)
    linear = (data, inference) if isinstance(inference, dict) else None
    table = results.effects_table(chosen, reference, linear)
    widths = {col: results.text_width(table[col], col) for col in table.columns if col != "effect"}
    if sum(widths.values()) > 500:
        st.caption("Scroll the table sideways when its right-hand columns are out of view.")
    with st.container(key="res_effects_box"):       # every text whole; the grid scrolls sideways
        st.dataframe(table, key="res_effects", hide_index=True,
                     column_config={"effect": st.column_config.NumberColumn(format="%.4g"),
                                    **{col: st.column_config.TextColumn(width=width) for col, width in widths.items()}})
    st.markdown("\n".join(f"- **{row['run']}** — identification: {row['weak identification']} · spread: "
                           f"{row['spread']} · clusters: {row['clusters']}" for _, row in table.iterrows()))
    st.download_button("Effects (CSV)", table.to_csv(index=False), file_name="effects.csv", mime="text/csv",
                       key="dl_effects", icon=":material/download:",
                       help="The table above: each effect with its interval, kind, flag, spread and clusters.")
    how = results.interval_descriptions(chosen, reference, linear)
    if how:
        st.markdown("\n".join(f"- **{kind}**: {text}" for kind, text in how.items()))
    for item in chosen:
        warning = (item.record.get("effect") or {}).get("warning")
        if warning:
            st.warning(f"{item.title}: {warning}.", icon=":material/warning:")
    st.caption(EFFECTS_NOTE)
    bootstrap_form(results.bootstrap_candidates(chosen))
    if isinstance(inference, dict):
        linear_iv_section(data, cov, inference)


def linear_iv_data(chosen, reference):
    """The data of the first live run (else the 2SLS reference's) when linear IV inference applies to it:
    IV with one tabular treatment; else None."""
    data = next((it.run.data for it in chosen if it.run is not None and it.run.data is not None), None)
    data = data if data is not None else (reference.data if reference is not None else None)
    if data is None or data.problem != "iv" or len(data.treatment) != 1 or data.image_columns:
        return None
    return data


def follow_fitted_clusters(chosen):
    """Start the "Standard errors" choice at the clusters the chosen runs were fitted with (the Estimators
    page's "Rows clustered by", a study's or the CLI's --cluster), once per such fit: otherwise 2SLS's row
    would show homoskedastic errors beside clustered debiased intervals of the same batch."""
    fitted = next(((config.get("cov_type"), config["cluster"]) for item in chosen
                   for config in [item.record.get("config") or {}] if config.get("cluster")), None)
    if fitted is None or ss.get("res_cov_fitted") == fitted:
        return
    ss["res_cov_fitted"] = fitted
    columns = cluster_columns(fitted[1])
    ss["res_cov"] = fitted[0] if is_clustered(fitted[0]) else "clustered"
    ss["res_cluster"], ss["res_cluster2"] = columns[0], (columns[1] if len(columns) > 1 else None)


def covariance_choice(data):
    """The "Standard errors" choice (and the cluster column): (choice, linear_iv_inference's output under it,
    or the error that kept it from being computed, or None while no cluster column is chosen)."""
    c1, c2 = st.columns(2)
    cov = c1.selectbox("Standard errors", COV_CHOICES, key="res_cov", format_func=COV_TITLES.get,
                       help="Homoskedastic assumes the same error variance in every row; robust allows it to vary; "
                            "clustered also allows errors to be correlated within groups of rows (a region, a "
                            "school); CR1 multiplies the clustered variance by G/(G-1)·(n-1)/(n-k), as Stata does. "
                            "The same choice as `--cov` on the command line.")
    st.caption("Sets 2SLS's interval and Anderson-Rubin set in the table below, its coefficients' standard "
               "errors side by side above and the Linear IV inference further down; the other methods' intervals "
               "do not depend on it. Stored runs without their data keep the errors they were fitted with.")
    if is_clustered(cov):
        columns = [str(c) for c in data.table.columns]
        cluster = c2.selectbox("Cluster by", columns, index=None, key="res_cluster",
                               placeholder="Choose a column", help="The column whose values group the rows.")
        c2.selectbox("and by (two-way)", [c for c in columns if c != cluster], index=None, key="res_cluster2",
                     placeholder="none: one-way",
                     help="A second grouping column for Cameron, Gelbach & Miller's two-way clustering "
                          "(as `--cluster a,b`): errors may be correlated within either group.")
        if cluster is None:
            c2.caption("Choose the column whose values group the rows.")
    out = chosen_inference(data)
    if isinstance(out, str):
        (c2 if is_clustered(cov) else c1).error(out, icon=":material/error:")
    return cov, out


def chosen_inference(data):
    """linear_iv_inference on ``data`` under the page's covariance choice (its widgets' state, so that the
    sections above the choice follow it too), once per data, roles and choice; the error text when it
    cannot be computed; None while "clustered" waits for its column."""
    cov = ss.get("res_cov") or "unadjusted"
    cluster = ss.get("res_cluster") if is_clustered(cov) else None
    if is_clustered(cov) and cluster is None:
        return None
    if ss.get("res_cluster2") and ss["res_cluster2"] != cluster:
        cluster += f",{ss['res_cluster2']}"        # two-way: cluster "a,b", as the CLI's --cluster
    cache = ss.setdefault("linear_iv_cache", {})
    key = (id(data.table), data.describe_roles(), cov, cluster)
    if key not in cache:
        try:
            with st.spinner("2SLS, its first stage and the Anderson-Rubin set..."):
                cache[key] = {**results.linear_iv_inference(data, cov, cluster), "cov_type": cov, "cluster": cluster}
        except DMLCoreError as err:
            cache[key] = str(err)
    return cache[key]


def linear_iv_section(data, cov, out):
    """2SLS under the covariance choice: the Wald interval beside the Anderson-Rubin set, and the first stage."""
    st.markdown("**Linear IV inference** — 2SLS on these roles under the covariance choice above, its first "
                "stage, and the Anderson-Rubin set, which stays valid however weak the instruments are")
    wald, ar, first = out["wald"], out["ar"], out["first"]
    rows = [(f"Wald: 2SLS ± 1.96 s.e.", [[wald["ci_lower"], wald["ci_upper"]]])]
    if ar and ar.get("set") is not None:
        rows.append(("Anderson-Rubin set", ar["set"]))
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.plotly_chart(plots.interval_sets_figure(rows, estimate=wald["estimate"],
                                                   x_title=f"effect of {data.treatment[0]} (95 %)"),
                        key="res_ar_figure")
    with right:
        st.markdown(f"**Wald** [{wald['ci_lower']:.4g}, {wald['ci_upper']:.4g}]: {wald['interval']}.")
        if ar:
            st.markdown(f"**{ar['interval'].split(':')[0]}**: " + ar["interval"].split(": ", 1)[1])
    endogenous = next(iter(first["endogenous"].values()))
    label = strength_label(first["effective_f"], first["n_instruments"], statistic=f"effective F ({cov})",
                           cov_type=cov)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Partial R²", f"{endogenous['partial_r2']:.4f}",
              help="Share of the treatment's variation left after the covariates that the instruments explain.")
    m2.metric(f"First-stage F ({cov})", f"{endogenous['f_stat_cov']:,.1f}",
              help="Wald statistic of the instruments in the first stage under this covariance, divided by their "
                   "number (linearmodels).")
    few = first.get("n_clusters") is not None and first["n_clusters"] < FEW_CLUSTERS
    m3.metric("Effective F", f"{first['effective_f']:,.1f}",
              delta=f"unreliable: {first['n_clusters']} clusters" if few else label.level, delta_arrow="off",
              delta_color="gray" if few else ui.STRENGTH_COLORS[label.level],
              help="Montiel Olea & Pflueger (2013): the first-stage F made robust to the covariance; with "
                   "homoskedastic errors it is the usual F. " + label.text)
    if first.get("kleibergen_paap_f") is not None:
        m4.metric("Kleibergen-Paap rk F", f"{first['kleibergen_paap_f']:,.1f}",
                  help="ivreg2's robust analogue of the Cragg-Donald F (linearmodels); not a test, and Stock-Yogo's "
                       "critical values do not apply to it.")
    for name, test in (first.get("overid") or {}).items():
        if test:
            st.caption(f"Overidentification, {name}: {test['stat']:.3g} (p = {test['pvalue']:.3f}; null: "
                       f"{test['null'].rstrip('.').lower()}).")
    for note in first.get("notes") or []:
        st.warning(note, icon=":material/warning:")
    st.caption("The Wald interval assumes the instruments are strong; the Anderson-Rubin set does not: it collects "
               "every coefficient the data do not reject. When the two disagree, trust the Anderson-Rubin set. Both "
               "are about the coefficient of the linear model, not the nonparametric methods' average slope.")


EFFECTS_NOTE = (
    "One number per run: the average effect (a 0/1 treatment) or the average slope of f in the treatment. "
    "For every method that fits a nonlinear f it is debiased: the plug-in (the mean of f-hat's slope, shown "
    "beside it) plus a correction, the residual Y - f-hat(X) weighted by a Riesz representer of the effect, so "
    "that a shrunk f-hat is not read as a small effect; its interval comes from the corrected score. A run with "
    "the debiased effect switched off (Estimators page; the one-click demo does so, to be quick) shows the "
    "plug-in, its kind says so, and has no debiased interval. 2SLS keeps "
    "its coefficient, a first-stage-weighted average of slopes, with the debiased average derivative on a row of "
    "its own. 'Measured coverage' is how often that kind of interval, for that method and learner, contained "
    "the true effect in simulated designs (linear, weak instrument, demand-iv, demand-pcl, nonlinear-iv, "
    "hetero-iv: docs/coverage.md), with how many data sets and, for a debiased interval, how its f-hat was "
    "cross-fitted in them (as the run did: by refitting the whole method, nuisances included, on part of the "
    "rows); it promises nothing on data unlike them. 'Weakly identified' "
    "means the instruments barely move the treatment in the directions the effect needs: the interval would "
    "be wide and unreliable, so none is printed. 'Weak identification' says whether that flag fired, and on "
    "which numbers (the linear first stage's F under the covariance chosen when fitting -- robust or clustered: the effective F "
    "(Kleibergen-Paap with several columns) with its cluster count -- and the representer's strength against their bars), or that "
    "the first stage could not be checked; 'spread' is "
    "the range of the debiased effect across the specifications the fit computed (representer bases, repeated "
    "cross-fits) in standard errors of the headline, 'sensitive' above 2; 'clusters' says whether the intervals "
    "account for clusters (the choice made when fitting, `--cov clustered --cluster COL`; for 2SLS's "
    "coefficient, the 'Standard errors' choice) or take rows as independent.")


def bootstrap_form(candidates):
    """Refit a run on resampled rows, in the background, for a bootstrap interval of its effect."""
    if not candidates:
        return
    with st.expander("Bootstrap interval: refit a run on resampled rows", icon=":material/repeat:"):
        labels = {it.key: it.title for it in candidates}
        key = st.selectbox("Run", list(labels), key="res_boot_run", format_func=lambda k: labels[k])
        item = next(it for it in candidates if it.key == key)
        refits = st.number_input("Refits (B)", min_value=2, max_value=5000, value=50, step=10, key="res_boot_b",
                                 help="More refits give a steadier interval; 200 is common, 50 a rough one.")
        seconds = float(item.record.get("seconds") or 0.0)
        st.caption(f"The run is refitted B times, about {seconds:.1f} s each, so about "
                   f"{refits * seconds / 60:.1f} min on one worker, as a new run that appears here when done.")
        if st.button("Start the bootstrap", key="res_boot_start", icon=":material/play_arrow:"):
            with ui.guarded("start the bootstrap"):
                run = item.run
                state.registry().submit_fit(state.owner(), f"{item.label} · bootstrap B={refits}", data=run.data,
                                            method=item.method, truth=run.truth, dataset=item.record.get("dataset"),
                                            **results.refit_kwargs(item.record, int(refits)))
                st.success("Started: follow it on Train; it appears among the runs here when done.")
                st.page_link(ui.TRAIN, label="Follow it on Train", icon=":material/model_training:")


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

    st.dataframe(shown, key="res_metrics", hide_index=True,
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
        st.caption(heldout_note(chosen[0].record.get("problem")))


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
    key = st.selectbox("Run", list(labels), key="res_detail", format_func=lambda k: labels[k])
    item = next(it for it in chosen if it.key == key)
    fold_losses = item.record.get("fold_losses") or []
    if fold_losses:
        losses = plots.losses_from_record(fold_losses)
        history = item.record.get("second_stage_history") or {}
        if len(history.get("epoch", [])) > 1:  # closed-form f (linear, sieve) has no training curve
            losses["f"] = {None: history}
        st.plotly_chart(plots.loss_figure(losses), key="res_losses")
        st.plotly_chart(plots.second_stage_figure(fold_losses), key="res_second_stage")
        if item.method in METHODS and METHODS[item.method].peer:
            st.caption(f"{METHOD_TITLES.get(item.method, item.method)}'s own training criteria per epoch, on "
                       "the scale it trains on: the raw outcome for NMMR's default, the standardized outcome "
                       "for the others (docs/peers.md).")
        else:
            st.caption("Losses are on the standardized scale; g reports a negative log-likelihood (neural "
                       "network) or a squared error (trees, linear). Each fold's nuisances are trained on the "
                       "other folds; the second-stage loss of fold k uses only them.")
        for role, selection in (item.record.get("nuisances") or {}).items():   # what "auto" chose, and on what
            st.caption(describe_selection(selection, role))
    else:
        st.caption(f"{METHOD_TITLES.get(item.method, item.method)} has no nuisance models, so no fold-wise losses.")
    for note in item.record.get("notes") or []:
        st.info(note, icon=":material/info:")
    if item.record.get("coefficients"):
        st.dataframe(pd.DataFrame({"coefficient": item.record["coefficients"],
                                   "std. error": item.record.get("std_errors", {})}), key="res_coefficients")
    name = results.download_name(item)
    c1, c2 = st.columns(2)
    c1.download_button("Predictions (CSV)", item.predictions().to_csv(index=False), file_name=f"{name}.csv",
                       mime="text/csv", key="dl_predictions", icon=":material/download:")
    c2.download_button("Full run record (JSON)", item.to_json(), file_name=f"{name}.json",
                       mime="application/json", key="dl_record", icon=":material/download:",
                       help="Configuration, metrics and losses: enough to reproduce the run.")


def stored_section(items, chosen):
    st.subheader("Stored runs")
    rows = state.stored_runs(safe=False)
    if not rows:
        st.caption("Runs of this session are saved as they finish and listed here.")
        return
    shown = pd.DataFrame(rows)[["label", "method", "dataset", "n", "mse", "seconds", "created"]]
    shown["mse"] = ["no truth" if v is None or pd.isna(v) else f"{v:.4g}" for v in shown["mse"]]
    st.dataframe(shown, key="store_table", hide_index=True,
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
    ss["store_pick"] = [k for k in ss.get("store_pick", []) if k in options]
    pick = st.multiselect("Reload stored runs", options, key="store_pick", format_func=lambda k: labels[k])
    if st.button("Load", key="store_load", disabled=not pick):
        for run_id in pick:
            if results.load_stored(run_id) is None:
                st.error(f"Run {run_id} is no longer in the store.")
        ss["res_add"] = list(pick)
        st.rerun()


st.title("Results")
if ss.get("demo_seconds"):
    st.success(f"Demo finished: {ss.pop('demo_seconds'):.1f} s from the click to these results.",
               icon=":material/timer:")
items = results.collect()
active = [s for s in state.snapshots() if s.active]
if active:
    st.info(f"{len(active)} run(s) still training.", icon=":material/hourglass_top:")
    st.page_link(ui.TRAIN, label="Follow them on Train", icon=":material/model_training:")
chosen = []
if not items:
    st.info("No finished runs yet. Start some on Train, try the demo on Home, or reload a stored run below.")
else:
    chosen = choose_runs(items)
    if chosen:
        follow_fitted_clusters(chosen)
        with ui.guarded("draw the estimated curves"):
            curves_section(chosen)
        with ui.guarded("summarize the runs"):
            metrics_section(chosen)
        with ui.guarded("show the run's losses and downloads"):
            details_section(chosen)
    else:
        st.info("Choose at least one run to compare.")
with ui.guarded("read the run store"):
    stored_section(items, chosen)
state.remember()  # a reload of this browser finds the data and choices again
