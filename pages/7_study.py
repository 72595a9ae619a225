"""Study: many fits as one job -- a grid of data sets (simulated, or real without a truth), methods
and seeds, checked against the library's limits and its cost before it starts, progress, failures
with their reasons, verdicts in words, figures and paired comparisons that fill in, stored studies
(kept for this browser across restarts), downloads, a paper-ready table and the command line that
reruns it.

The study runs in the background (dmlcore.jobs.study_jobs); its fits wait their turn in the server's
fair queue beside everyone's runs and run in the worker processes (or on Ray).
"""

import streamlit as st

from dashboard import plan, state, ui
from dmlcore.data.datasets import REAL_DATASETS
from dmlcore.data.registry import OPTION_LABELS, SIMULATED, dataset_options
from dmlcore.data.simulate import N_MAX, N_MIN
from dmlcore.data.tables import TABLE, keep_table
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.settings import SETTINGS
from dmlcore.learners import LEARNER_TITLES, LEARNERS
from dmlcore.estimators import METHODS, METHOD_TITLES
from dmlcore.estimators.nuisance_target import CRITERIA
from dmlcore.studies import load_study, plan_study, spec_from_dict, spec_from_flags
from dmlcore.studies.checks import check_study
from dmlcore.studies.figures import study_figures
from dmlcore.studies.paper import paper_table
from dmlcore.studies.report import (PAIRED_NOTE, RERUN, RERUN_NOTE, SUMMARY_NOTE, VERDICT_NOTE, about, real_data_note,
                                    report_html, seeds_warning, spec_json)
from dmlcore.studies.spec import CONFIRM_ABOVE, DEFAULT_METHODS, DEFAULT_SEEDS
from dmlcore.studies.summarize import paired_view, summary_view, verdict_lines
from dmlcore.jobs.study_jobs import executor_note, study_files

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

POLL_SECONDS = 3.0
ss = st.session_state


def design():
    """The grid from the widgets, as a study spec (raises DMLCoreError for a bad value); None when the
    current data cannot be studied (the reason is shown next to the widget)."""
    current = state.dataset()
    choices = [*SIMULATED, *REAL_DATASETS] + ([TABLE] if current is not None else [])
    dataset = st.selectbox("Data set", choices, key=state.STUDY_DATASET, persist_state="session",
                           format_func=dataset_title)
    if dataset in REAL_DATASETS:
        st.caption(real_data_note([dataset]))
    if dataset == TABLE:
        data = table_options(current)
        if data is None:
            return None
        st.caption(real_data_note([TABLE]))
    else:
        data = data_widgets(dataset)
    methods = st.multiselect("Methods", list(METHODS), default=list(DEFAULT_METHODS), key=state.STUDY_METHODS,
                             format_func=lambda m: METHOD_TITLES.get(m, m))
    c1, c2, c3, c4 = st.columns(4)
    learner = c1.selectbox("Learner", list(LEARNERS), key=state.STUDY_LEARNER, format_func=lambda k: LEARNER_TITLES[k])
    folds = c2.number_input("K (DML-CMR folds)", min_value=SETTINGS["folds"].minimum, max_value=50, value=5, key=state.STUDY_FOLDS)
    epochs = c3.number_input("At most epochs (empty: the learner's own)", min_value=1, value=None,
                             key=state.STUDY_EPOCHS)
    seeds = c4.text_input("Seeds", value=DEFAULT_SEEDS, key=state.STUDY_SEEDS,
                          help="A range such as 0-19 or a comma list; every method sees the same data at a seed.")
    choice = st.selectbox(plan.NUISANCE_CHOICE_LABEL, plan.NUISANCE_CHOICE.choices, key=state.STUDY_NUISANCE_CHOICE,
                          index=plan.NUISANCE_CHOICE.choices.index(plan.NUISANCE_CHOICE.default),   # declared once
                          format_func=lambda c: f"{c}: {CRITERIA[c]}", help=plan.NUISANCE_CHOICE_HELP)
    if (note := plan.nuisance_choice_note(choice, methods)):
        st.caption(note)
    limit = st.number_input(SETTINGS["time_limit"].label + " (empty: no limit)", min_value=SETTINGS["time_limit"].minimum,
                            value=None, step=60, key=state.STUDY_TIME_LIMIT,
                            help="A fit that runs longer, with every refit, stops and fails with the reason; "
                                 "the fits it finished are kept and reused whatever the limit.")
    if (unread := plan.nuisance_choice_unread(choice, methods)):
        raise DMLCoreError(unread)
    chosen = {"learner": learner, "folds": folds, "epochs": epochs, "nuisance_choice": choice}   # each passed when
    settings = {k: v for k, v in chosen.items() if any(k in METHODS[m].settings for m in methods)}  # a method reads it
    spec = spec_from_flags(dataset, methods=",".join(methods), seeds=seeds, data=data,
                           settings={**settings, "time_limit": limit})
    check_study(spec)        # the roles' and folds' rules, as every fit would meet them
    return spec


def data_widgets(dataset: str) -> dict:
    """One text box per option of a built-in data set: a value or a comma list (the grid's cells)."""
    options = dataset_options(dataset)
    cols = st.columns(max(1, len(options)))
    data = {}
    for col, (option, default) in zip(cols, options.items()):
        value = "1000, 2000" if option == "n" else str(default)
        limit = f" N from {N_MIN} to {N_MAX:,} (the simulators' limits)." if option == "n" else ""
        data[option] = col.text_input(OPTION_LABELS[option], value=value, key=state.STUDY_OPTION(dataset, option),
                                      help=f"One value or a comma list: each value is a cell of the grid.{limit}")
    return data


def table_options(current) -> dict | None:
    """The current data with its roles, kept by its content hash for the study's fits; None (and why,
    next to the data set) when its roles are not valid."""
    data = state.causal()
    if data is None:
        st.error(f"The current data ({current.title or current.name}) has no valid roles yet, so it cannot be "
                 f"studied: assign them on Roles first.", icon=":material/error:")
        st.page_link(ui.ROLES, label="Go to Roles", icon=":material/account_tree:")
        return None
    options = state.cached(state.STUDY_TABLE_CACHE, (id(current.table), data.describe_roles(), tuple(data.categorical)),
                           lambda: keep_table(data, current.title or current.name), latest_only=True)
    st.caption(f"**{options['file']}**, {len(data.table):,} rows, as set on Roles: {data.describe_roles()}. "
               f"Kept by its content (hash {options['table'][:12]}), so a changed file is a new study.")
    return {k: [v] for k, v in options.items()}


def dataset_title(name: str) -> str:
    if name == TABLE:
        return "Your current data, with its roles (uploaded or loaded; no truth)"
    if name in REAL_DATASETS:
        return f"{name}: {REAL_DATASETS[name].title.split(':')[0]} (real data, no truth)"
    return f"{name}: {SIMULATED[name].split(':')[0]}"


def cost(spec) -> bool:
    """What the grid costs, from stored timings; whether it may start."""
    plan = plan_study(spec, state.store())
    workers = state.registry().workers
    to_run = len(plan.to_run)
    text = f"**{plan.total:,} fits**: {plan.total - to_run:,} already stored (reused), {to_run:,} to run."
    if to_run and plan.estimate_seconds is not None:
        share = "" if plan.estimated == to_run else f" (timed like {plan.estimated:,} of them; the rest unknown)"
        text += (f" Estimated compute {about(plan.estimate_seconds)}{share}: "
                 f"{about(plan.estimate_seconds / workers)} on this server's {workers} workers, "
                 f"longer while others' runs share them.")
    elif to_run:
        text += (" **Time unknown**: no stored fit of this kind yet to estimate it from. It can start all the "
                 "same; once its first fits have finished, the progress bar estimates the rest from their pace.")
    st.markdown(text)
    st.caption(f"Fits run on {executor_note(state.registry())}.")
    if plan.total > CONFIRM_ABOVE:
        return st.checkbox(f"Run more than {CONFIRM_ABOVE:,} fits", key=state.STUDY_CONFIRM)
    return to_run > 0 or plan.total > 0


def show_result(result, spec, name: str):
    """Failures, verdicts, figures, tables and downloads of what has finished so far."""
    if result.failure_text():
        st.error(result.failure_text(), icon=":material/error:")
    lines = verdict_lines(result.paired, result.fits)
    if lines:
        st.markdown("**Verdicts**")
        st.caption(VERDICT_NOTE)
        st.markdown("\n".join(f"- {line}" for line in lines))
        if (warning := seeds_warning(result.paired, spec)):
            st.warning(warning, icon=":material/warning:")
    for item in study_figures(result.fits, result.curves):
        st.plotly_chart(item.figure, key=state.STUDY_FIGURE(name, item.file))
        st.caption(item.note)
    st.markdown("**Summary**")
    st.caption(SUMMARY_NOTE)
    st.dataframe(summary_view(result.summary, result.fits), hide_index=True, key=state.STUDY_SUMMARY(name))
    st.markdown("**Paired comparisons**")
    st.caption(PAIRED_NOTE)
    st.dataframe(paired_view(result.paired, result.fits), hide_index=True, key=state.STUDY_PAIRS(name),
                 column_config={"Wilcoxon p": st.column_config.NumberColumn(format="%.3g")})
    c1, c2, c3 = st.columns(3)
    c1.download_button("fits.csv", lambda: result.fits.to_csv(index=False), file_name="fits.csv",
                       mime="text/csv", key=state.STUDY_DOWNLOAD(name, "fits"), icon=":material/download:")
    c2.download_button("report.html", lambda: report_html(result, spec=spec), file_name="report.html",
                       mime="text/html", key=state.STUDY_DOWNLOAD(name, "report"), icon=":material/download:",
                       help="One self-contained page: the counts, verdicts, figures and tables; it opens offline.")
    c3.download_button("All files with PNG figures (zip)", lambda: study_files(result, spec),
                       file_name="study.zip", mime="application/zip", key=state.STUDY_DOWNLOAD(name, "zip"),
                       icon=":material/download:", help="fits.csv, summary.csv, paired.csv, spec.json, table.md, "
                       "table.tex, report.html and the figures as PNG (drawn by the system's Chromium).")
    paper_block(result, name)
    rerun_block(spec, name)


def paper_block(result, name: str):
    """The paper-ready summary table (dmlcore.studies.paper) in Markdown and LaTeX."""
    with st.expander("Paper-ready table (Markdown, LaTeX)", icon=":material/table_chart:"):
        table = paper_table(result)
        markdown, latex = table.to_markdown(), table.to_latex(label="tab:study")
        md_tab, tex_tab = st.tabs(["Markdown", "LaTeX"])
        md_tab.code(markdown, language="markdown")
        md_tab.download_button("table.md", markdown, file_name="table.md", mime="text/markdown",
                               key=state.STUDY_DOWNLOAD(name, "md"), icon=":material/download:")
        tex_tab.code(latex, language="latex")
        tex_tab.download_button("table.tex", latex, file_name="table.tex", mime="text/x-tex",
                                key=state.STUDY_DOWNLOAD(name, "tex"), icon=":material/download:")


def rerun_block(spec, name: str):
    """The command that reruns the study from its spec file, with the file."""
    if spec is None:
        return
    st.markdown("**Rerun from the command line**")
    st.caption(RERUN_NOTE)
    st.code(RERUN, language="bash")
    st.download_button("spec.json", spec_json(spec), file_name="spec.json", mime="application/json",
                       key=state.STUDY_DOWNLOAD(name, "spec"), icon=":material/download:")


def progress_panel():
    study = state.studies().get(ss.get(state.STUDY_ID, ""), state.owner())
    if study is None:
        return
    running = study.status == "running"
    if running != ss.get(state.STUDY_RUNNING):
        st.rerun()          # started or ended: the page catches up and the refresh stops
    st.subheader(f"Study {study.label or study.id[:8]}")
    left = study.seconds_left()
    when = f" · {about(left)} left" if running and left is not None else ""
    st.progress(study.ran / max(study.to_run, 1), text=f"{study.message} · {study.status}{when}")
    if running and st.button("Cancel the study", key=state.STUDY_CANCEL, icon=":material/stop:"):
        state.studies().cancel(study.id, state.owner())
        st.rerun()
    if study.error:
        st.error(study.error)
    result = study.result()
    if result is None:
        if running:
            st.info("The box plots fill in as the fits finish.")
        elif study.status == "cancelled":
            st.info("Cancelled before any fit finished: nothing to show.")
    else:
        show_result(result, study.spec, "live")


def study_status(row: dict) -> str:
    """A stored study's status in words: running (on this server), interrupted (its server is gone and
    nothing has continued it), done, cancelled or failed; "stored" for studies kept before statuses were."""
    status = row.get("status")
    if status == "running":
        live = state.studies().get(row["id"], state.owner())
        return "running" if live is not None and live.status == "running" else "interrupted"
    return status or "stored"


def forget_control():
    """How long this browser keeps its studies, and the control that forgets them."""
    days = state.owner_days()
    kept = (f"This browser is recognised by a cookie for {days} days after its last visit (DMLCORE_OWNER_DAYS)"
            if days else "This browser is recognised by a cookie until it closes (DMLCORE_OWNER_DAYS=0)")
    st.caption(f"{kept}: its studies and runs are listed here again after a browser restart. On a shared "
               "machine, forget this browser when you leave: it gets a new, empty identity; the studies stay in "
               "the run store (their fits are reused by anyone's identical study) but are no longer listed here.")
    if st.button("Forget this browser", key=state.STUDY_FORGET, icon=":material/logout:"):
        state.forget_browser()
        st.rerun()


st.title("Study")
st.markdown("Many fits as one job: every combination of the data set's options, the methods "
            "and the seeds is one fit, with the same data for every method at a seed. Fits already "
            "in the run store are reused; the rest run in the background beside everyone's runs.")
new, stored = st.tabs(["New study", "Stored studies"])
with new:
    spec = None
    with ui.guarded("read the grid"):
        spec = design()
    if spec is not None:
        label = st.text_input("Name", value="", key=state.STUDY_LABEL, placeholder="e.g. IV strength, 10 seeds")
        ready = False
        with ui.guarded("estimate the cost"):
            ready = cost(spec)
        if st.button("Start the study", key=state.STUDY_START, type="primary", disabled=not ready,
                     icon=":material/play_arrow:"):
            with ui.guarded("start the study"):
                ss[state.STUDY_ID] = state.studies().start(state.owner(), spec, label).id
    current = state.studies().get(ss.get(state.STUDY_ID, ""), state.owner())
    ss[state.STUDY_RUNNING] = current is not None and current.status == "running"
    st.fragment(run_every=POLL_SECONDS if ss[state.STUDY_RUNNING] else None)(progress_panel)()

with stored:
    rows = state.store().list_studies(state.owner())
    if not rows:
        st.caption("The studies of this browser are listed here once started.")
    else:
        labels = {r["id"]: f"{r['label'] or r['id'][:8]} · {r['fits']} fits · {study_status(r)} · {r['created']}"
                  for r in rows}
        pick = st.selectbox("Study", list(labels), key=state.STUDY_PICK, format_func=labels.get)
        with ui.guarded("open the study"):
            record = state.store().load_study(pick, state.owner())
            result = load_study(pick, state.store(), state.owner())
            st.caption(f"{study_status(record).capitalize()}: {result.message}; {len(result.fits)} of its "
                       f"{len(record['keys'])} fits are in the store.")
            try:
                again = spec_from_dict(record["spec"])
            except DMLCoreError as err:     # a grid stored before a limit was checked: its fits, no rerun
                again = None
                st.warning(f"This study's grid is refused now, so it cannot run again: {err}", icon=":material/warning:")
            whole = len(result.fits) == len(record["keys"])
            if again is not None and st.button("Run it again (only the missing fits run)" if whole else
                                               "Resume it (only the missing fits run)", key=state.STUDY_AGAIN,
                                               icon=":material/replay:" if whole else ":material/play_arrow:"):
                ss[state.STUDY_ID] = state.studies().start(state.owner(), again, record["label"]).id
                st.toast("Started: follow it under New study.")
                st.rerun()
            if len(result.fits):
                show_result(result, again, "stored")
    forget_control()
state.remember()  # a reload of this browser finds the data and choices again
