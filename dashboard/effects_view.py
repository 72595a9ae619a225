"""The Results page's effects: each run's effect with its interval, 2SLS side by side, the covariance choice
and the linear IV inference under it, and the bootstrap form (drawn by pages/5_results.py)."""

import pandas as pd
import streamlit as st

from dashboard import fits, results, state, ui
from dmlcore import plots
from dmlcore.estimators._registry import LINEAR_REFERENCE
from dmlcore.inference.first_stage import strength_label
from dmlcore.runs.typed import Config
from dmlcore.stats.covariance import COV_CHOICES, COV_DEFAULT, COV_TITLES, FEW_CLUSTERS, cluster_columns, is_clustered

ss = st.session_state


def side_by_side_2sls(chosen, reference):
    """2SLS's coefficients with their standard errors: under the page's covariance choice (below, with the
    effect) where it applies, else as the run was fitted; the table's title says which."""
    coef_item = next((it for it in chosen if it.method == LINEAR_REFERENCE), None)
    rec = coef_item.result if coef_item else (reference.result if reference is not None else None)
    if not rec or not rec.coefficients:
        return
    data = linear_iv_data(chosen, reference)
    inference = chosen_inference(data, chosen) if data is not None else None
    if isinstance(inference, results.LinearIV):
        cov = COV_TITLES[inference.cov_type] + (f" by {inference.cluster.replace(',', ' and ')}" if inference.cluster else "")
        coefficients = {k: v[0] for k, v in inference.coefficients.items()}
        errors = {k: v[1] for k, v in inference.coefficients.items()}
    else:
        config = rec.config if rec.config is not None else Config()
        fitted_cov, fitted_cluster = config.cov_type, config.cluster
        cov = COV_TITLES.get(fitted_cov or COV_DEFAULT, fitted_cov)
        cov += f" by {fitted_cluster}, as fitted" if fitted_cluster else ", as fitted"
        coefficients, errors = rec.coefficients, rec.std_errors if rec.has("std_errors") else {}
    st.markdown(f"**2SLS, side by side:** linear coefficients ± standard errors, {cov}")
    st.dataframe(pd.DataFrame({"coefficient": coefficients, "std. error": errors}), key=state.RES_2SLS)

def effects_section(chosen, reference):
    """Each run's effect of the treatment with its interval, its kind and measured coverage, the
    plug-in beside it, and a bootstrap for those without an interval. On IV data the covariance choice
    above the table sets 2SLS's interval and Anderson-Rubin set there and the Linear IV box below."""
    if results.effects_table(chosen, reference).empty:
        return
    st.markdown(f"**Effect of the treatment**: {results.estimand(chosen) or 'not available'}")
    data = linear_iv_data(chosen, reference)
    cov, inference = covariance_choice(data, chosen) if data is not None else (None, None)
    linear = (data, inference) if isinstance(inference, results.LinearIV) else None
    table = results.effects_table(chosen, reference, linear)
    # The numbers in a table whose long texts wrap in their cells (a grid cannot wrap: it scrolled sideways
    # even at 1,400 px); the notes and the measured coverage, long texts, in words under it. It fits a
    # projector's 1,024 px. The frame and its CSV keep every column.
    shown = table[[col for col in table.columns if col not in results.BESIDE_TABLE]]
    with st.container(key=state.RES_EFFECTS_BOX):
        st.table(shown.style.format({"effect": "{:.4g}"}, na_rep="—"), hide_index=True)
    st.markdown("\n".join(effect_line(row) for row in table.to_dict("records")))
    st.download_button("Effects (CSV)", table.to_csv(index=False), file_name="effects.csv", mime="text/csv",
                       key=state.DL_EFFECTS, icon=":material/download:",
                       help="The table above with the notes under it: each effect with its interval, kind, flag, spread, "
                            "clusters and measured coverage.")
    how = results.interval_descriptions(chosen, reference, linear)
    if how:
        st.markdown("\n".join(f"- **{kind}**: {text}" for kind, text in how.items()))
    for item in chosen:
        warning = item.result.effect.warning if item.result.effect is not None else None
        if warning:
            st.warning(f"{item.title}: {warning}.", icon=":material/warning:")
    st.caption(EFFECTS_NOTE)
    bootstrap_form(results.bootstrap_candidates(chosen))
    if isinstance(inference, results.LinearIV):
        linear_iv_section(data, cov, inference)


def effect_line(row: dict) -> str:
    """One effect's notes in words, under the table: its flag, spread, clusters and the measured coverage of
    its kind of interval (when measured)."""
    run, weak, spread, clusters = (row[col] for col in ("run", *results.NOTE_COLUMNS))
    line = f"- **{run}** — identification: {weak} · spread: {spread} · clusters: {clusters}"
    coverage = row.get(results.COVERAGE_COLUMN, "—")
    return line + (f" · measured coverage: {coverage}" if coverage != "—" else "")


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
    fitted = next(((config.cov_type, config.cluster) for item in chosen
                   for config in [item.result.config] if config is not None and config.cluster), None)
    if fitted is None or ss.get(state.RES_COV_FITTED) == fitted:
        return
    ss[state.RES_COV_FITTED] = fitted
    columns = cluster_columns(fitted[1])
    ss[state.RES_COV] = fitted[0] if is_clustered(fitted[0]) else "clustered"
    ss[state.RES_CLUSTER], ss[state.RES_CLUSTER2] = columns[0], (columns[1] if len(columns) > 1 else None)


def covariance_choice(data, chosen=()):
    """The "Standard errors" choice (and the cluster column): (choice, linear_iv_inference's output under it,
    or the error that kept it from being computed, or None while no cluster column is chosen)."""
    c1, c2 = st.columns(2)
    cov = c1.selectbox("Standard errors", COV_CHOICES, key=state.RES_COV, format_func=COV_TITLES.get,
                       help="Homoskedastic assumes the same error variance in every row; robust allows it to vary; "
                            "clustered also allows errors to be correlated within groups of rows (a region, a "
                            "school); CR1 multiplies the clustered variance by G/(G-1)·(n-1)/(n-k), as Stata does. "
                            "The same choice as `--cov` on the command line.")
    st.caption("Sets 2SLS's interval and Anderson-Rubin set in the table below, its coefficients' standard "
               "errors side by side above and the Linear IV inference further down; the other methods' intervals "
               "do not depend on it. Stored runs without their data keep the errors they were fitted with.")
    if is_clustered(cov):
        columns = [str(c) for c in data.table.columns]
        cluster = c2.selectbox("Cluster by", columns, index=None, key=state.RES_CLUSTER,
                               placeholder="Choose a column", help="The column whose values group the rows.")
        c2.selectbox("and by (two-way)", [c for c in columns if c != cluster], index=None, key=state.RES_CLUSTER2,
                     placeholder="none: one-way",
                     help="A second grouping column for Cameron, Gelbach & Miller's two-way clustering "
                          "(as `--cluster a,b`): errors may be correlated within either group.")
        if cluster is None:
            c2.caption("Choose the column whose values group the rows.")
    out = chosen_inference(data, chosen)
    if isinstance(out, str):
        (c2 if is_clustered(cov) else c1).error(out, icon=":material/error:")
    return cov, out


def chosen_inference(data, chosen=()):
    """linear_iv_inference on ``data`` under the page's covariance choice (its widgets' state, so that the
    sections above the choice follow it too), once per data, roles and choice; the error text when it
    cannot be computed; None while "clustered" waits for its column. A chosen 2SLS run fitted on ``data``
    under that choice gives it from its own record, without refitting (results.linear_iv_from_record: the
    demo's Results page, as fitted)."""
    cov = ss.get(state.RES_COV) or COV_DEFAULT
    cluster = ss.get(state.RES_CLUSTER) if is_clustered(cov) else None
    if is_clustered(cov) and cluster is None:
        return None
    if ss.get(state.RES_CLUSTER2) and ss[state.RES_CLUSTER2] != cluster:
        cluster += f",{ss[state.RES_CLUSTER2]}"        # two-way: cluster "a,b", as the CLI's --cluster

    fitted = next((it for it in chosen if it.method == LINEAR_REFERENCE and it.run is not None and it.run.data is data),
                  None)

    def make():
        reused = results.linear_iv_from_record(fitted.result, cov, cluster) if fitted is not None else None
        if reused is not None:
            return reused
        with st.spinner("2SLS, its first stage and the Anderson-Rubin set..."):
            return results.linear_iv_inference(data, cov, cluster)
    return state.cached(state.LINEAR_IV_CACHE, (id(data.table), data.describe_roles(), cov, cluster), make,
                        errors_as_text=True)


def linear_iv_section(data, cov, out):
    """2SLS under the covariance choice: the Wald interval beside the Anderson-Rubin set, and the first stage."""
    st.markdown("**Linear IV inference** — 2SLS on these roles under the covariance choice above, its first "
                "stage, and the Anderson-Rubin set, which stays valid however weak the instruments are")
    wald, ar, first = out.wald, out.ar, out.first
    rows = [("Wald: 2SLS ± 1.96 s.e.", [[wald.ci_lower, wald.ci_upper]])]
    if ar and ar.set is not None:
        rows.append(("Anderson-Rubin set", ar.set))
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.plotly_chart(plots.interval_sets_figure(rows, estimate=wald.estimate,
                                                   x_title=f"effect of {data.treatment[0]} (95 %)"),
                        key=state.RES_AR_FIGURE)
    with right:
        st.markdown(f"**Wald** [{wald.ci_lower:.4g}, {wald.ci_upper:.4g}]: {wald.interval}.")
        if ar:
            st.markdown(f"**{ar.interval.split(':')[0]}**: " + ar.interval.split(": ", 1)[1])
    endogenous = next(iter(first.endogenous.values()))
    label = strength_label(first.effective_f, first.n_instruments, statistic=f"effective F ({cov})",
                           cov_type=cov)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Partial R²", f"{endogenous.partial_r2:.4f}",
              help="Share of the treatment's variation left after the covariates that the instruments explain.")
    m2.metric(f"First-stage F ({cov})", f"{endogenous.f_stat_cov:,.1f}",
              help="Wald statistic of the instruments in the first stage under this covariance, divided by their "
                   "number (linearmodels).")
    few = first.n_clusters is not None and first.n_clusters < FEW_CLUSTERS
    m3.metric("Effective F", f"{first.effective_f:,.1f}",
              delta=f"unreliable: {first.n_clusters} clusters" if few else label.level, delta_arrow="off",
              delta_color="gray" if few else ui.STRENGTH_COLORS[label.level],
              help="Montiel Olea & Pflueger (2013): the first-stage F made robust to the covariance; with "
                   "homoskedastic errors it is the usual F. " + label.text)
    if first.kleibergen_paap_f is not None:
        m4.metric("Kleibergen-Paap rk F", f"{first.kleibergen_paap_f:,.1f}",
                  help="ivreg2's robust analogue of the Cragg-Donald F (linearmodels); not a test, and Stock-Yogo's "
                       "critical values do not apply to it.")
    for name, test in (first.overid or {}).items():
        if test:
            st.caption(f"Overidentification, {name}: {test.stat:.3g} (p = {test.pvalue:.3f}; null: "
                       f"{test.null.rstrip('.').lower()}).")
    for note in first.notes or []:
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
    "its own. 'Measured coverage' (in the lines under the table) is how often that kind of interval, for that "
    "method and learner, contained "
    "the true effect in simulated designs (linear, weak instrument, demand-iv, demand-pcl, nonlinear-iv, "
    "hetero-iv: docs/coverage.md), with how many data sets and, for a debiased interval, how its f-hat was "
    "cross-fitted in them (as the run did: by refitting the whole method, nuisances included, on part of the "
    "rows); it promises nothing on data unlike them. 'Weakly identified' "
    "means the instruments barely move the treatment in the directions the effect needs: the interval would "
    "be wide and unreliable, so none is printed. 'Identification' (in those lines) says whether that flag fired, "
    "and on "
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
        key = st.selectbox("Run", list(labels), key=state.RES_BOOT_RUN, format_func=lambda k: labels[k])
        item = next(it for it in candidates if it.key == key)
        refits = st.number_input("Refits (B)", min_value=2, max_value=5000, value=50, step=10, key=state.RES_BOOT_B,
                                 help="More refits give a steadier interval; 200 is common, 50 a rough one.")
        seconds = float(item.result.seconds or 0.0)
        st.caption(f"The run is refitted B times, about {seconds:.1f} s each, so about "
                   f"{refits * seconds / 60:.1f} min on one worker, as a new run that appears here when done.")
        if st.button("Start the bootstrap", key=state.RES_BOOT_START, icon=":material/play_arrow:"):
            with ui.guarded("start the bootstrap"):
                run = item.run
                fits.submit(f"{item.label} · bootstrap B={refits}", data=run.data, method=item.method,
                            truth=run.truth, dataset=item.result.dataset,
                            **results.refit_kwargs(item.result, int(refits)))
                st.success("Started: follow it on Train; it appears among the runs here when done.")
                st.page_link(ui.TRAIN, label="Follow it on Train", icon=":material/model_training:")
