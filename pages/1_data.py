"""Data: simulate a data set with a known truth, upload a table, or load a real data set."""

import streamlit as st

from dashboard import state, training, ui
from dmlcore import plots
from dmlcore.data.datasets import REAL_DATASETS
from dmlcore.data.ihdp import IHDP_DESIGNS
from dmlcore.data.io import load_table, numeric_problems, summarize
from dmlcore.data.roles import check_usable
from dmlcore.data.registry import DATA_OPTIONS, SIMULATED
from dmlcore.data.simulate import NOISE_SCALES
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.settings import DEFAULTS

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

SIM_PARAMS = {  # which knobs each simulation has
    "demand-iv": ("n", "rho", "iv_strength", "seed", "noise_scale"),
    "digits-iv": ("n", "rho", "iv_strength", "seed", "noise_scale"),
    "demand-pcl": ("n", "seed"),
    "dsprites-pcl": ("n", "seed"),
    "ihdp-like": ("seed", "design"),
    "linear-iv": ("n", "iv_strength", "seed"),
}
DSPRITES_COST = (  # measured, docs/benchmarks.md
    "64×64 pictures are slow to fit on a CPU. On one core, at N = 1000, the naive plug-in took "
    "about 1.2 min, CE-DML-CMR 2.3 min and DML-CMR with K = 10 folds 16 min; at N = 5000 one "
    "took 70 min on two cores, before a change that cut such fits by about a third. Start with "
    "N = 1000 and the naive or CE method, or fewer folds.")
MAX_BYTES = int(st.get_option("server.maxUploadSize")) * 2**20
HIST, NO_COLOR = "(histogram of x)", "(none)"
ss = st.session_state


def design_radio(label: str, choices: dict, key: str, short: dict) -> str:
    """A simulator's code-or-text choice: one radio (short labels), each choice's meaning under it."""
    value = st.radio(label, list(choices), key=key, persist_state="session", horizontal=True,
                     format_func=short.get, help=" · ".join(f"**{k}**: {v}" for k, v in choices.items()))
    st.caption(choices[value].capitalize() + ".")
    return value


def simulate_tab():
    name = st.selectbox("Simulation", list(SIMULATED), key=state.SIM_NAME, persist_state="session",
                        format_func=lambda n: f"{n}: {SIMULATED[n].split(':')[0].split('(')[0].strip()}")
    st.caption(SIMULATED[name])
    knobs = SIM_PARAMS.get(name, ("n", "seed"))
    cols = st.columns(4)
    params = {}
    if "n" in knobs:
        params["n"] = cols[0].number_input("Rows N", min_value=50, max_value=100_000, step=500,
                                           value=2000, key=state.SIM_N, persist_state="session")
    if "rho" in knobs:
        params["rho"] = cols[1].slider("Confounding ρ", 0.0, 0.99, DATA_OPTIONS["rho"].default, 0.01, key=state.SIM_RHO,
                                       persist_state="session",
                                       help="Correlation of the outcome noise with the price noise.")
    if "iv_strength" in knobs:
        params["iv_strength"] = cols[2].slider("Instrument strength", 0.0, 3.0, DATA_OPTIONS["iv_strength"].default, 0.05, key=state.SIM_STRENGTH,
                                               persist_state="session",
                                               help="How strongly the instrument moves the treatment (the fuel price the ticket price, "
                                                    "in the demand designs).")
    params["seed"] = cols[3].number_input("Seed", min_value=0, max_value=2**31 - 1, value=DEFAULTS.seed, key=state.SIM_SEED,
                                          persist_state="session")
    if "noise_scale" in knobs:
        params["noise_scale"] = design_radio("Outcome noise", NOISE_SCALES, "sim_noise_scale",
                                             {"standardized": "as the paper's code (sd 158 in sales)",
                                              "raw": "as the appendix's text (sd 1 in sales)"})
    if "design" in knobs:
        params["design"] = design_radio("Design", IHDP_DESIGNS, "sim_ihdp_design",
                                        {"code": "as the paper's code (confounder sd 1, noises sd 0.1)",
                                         "text": "as the appendix's text (confounder sd 0.1, noises sd 1)"})
    if name in ("digits-iv", "dsprites-pcl"):
        st.caption("Image data: use the neural-network learner; tree learners see thousands of pixels.")
    if name == "dsprites-pcl":
        st.info(DSPRITES_COST, icon=":material/hourglass:")
    if st.button("Simulate", key=state.SIM_RUN, type="primary", icon=":material/casino:"):
        with ui.guarded(f"simulate {name}"):      # on failure the data loaded before is kept
            with st.spinner("Simulating..."):
                ds = training.dataset_from_registry(name, **params)
            state.set_dataset(ds)
            st.success(f"Simulated {name}: roles are filled in, the truth is known.")


def upload_tab():
    st.caption(f"CSV, TSV or Parquet, up to {MAX_BYTES // 2**20} MB. The file stays in this session.")
    upload = st.file_uploader("Your table", key=state.UPLOAD)
    if upload is None:
        ss.pop(state.UPLOAD_ERROR, None)
        ss.pop(state.UPLOAD_ID, None)
    elif ss.get(state.UPLOAD_ID) != upload.file_id:
        try:
            table = load_table(upload, name=upload.name, max_bytes=MAX_BYTES)
            check_usable(table, upload.name)    # parses but cannot hold a problem: keep what was loaded
        except DMLCoreError as err:             # the data loaded before stays, with its roles
            current = state.dataset()
            ss[state.UPLOAD_ERROR] = str(err) + (f" The data loaded before ({current.title or current.name}) and its roles "
                                             f"are kept." if current is not None else "")
        else:
            ss.pop(state.UPLOAD_ERROR, None)
            state.set_dataset(state.Dataset(name=upload.name, source="upload", table=table, suggested=None,
                                            params={"file": upload.name}, title=upload.name))
        ss[state.UPLOAD_ID] = upload.file_id
    if ss.get(state.UPLOAD_ERROR):
        st.error(ss[state.UPLOAD_ERROR])
    elif upload is not None:
        st.success(f"Loaded {upload.name}. Next: assign the roles of its columns.")
        st.page_link(ui.ROLES, label="Assign roles", icon=":material/account_tree:")


def real_tab():
    name = st.selectbox("Data set", list(REAL_DATASETS), key=state.REAL_NAME, persist_state="session",
                        format_func=lambda n: REAL_DATASETS[n].title)
    info = REAL_DATASETS[name]
    st.markdown(info.description)
    st.markdown(f"**Suggested roles** ({'proximal' if info.problem == 'pcl' else 'instrumental variable'}): "
                f"{info.roles_text()}.")
    current = state.dataset()
    if ss.get(state.REAL_LOADED) == name and current is not None and current.name == name:
        st.success(f"Loaded {name} with its suggested roles.")
    elif current is None or current.name != name:      # once loaded, the caveat is shown below
        st.warning(info.caveat, icon=":material/help:")
    if st.button("Load this data set", key=state.REAL_LOAD, type="primary"):
        with ui.guarded(f"load {name}"):          # on failure the data loaded before is kept
            state.set_dataset(training.dataset_from_registry(name))
            ss[state.REAL_LOADED] = name
            st.rerun()                            # drawn again: the caveat once, under the current data


def current_data(ds: state.Dataset):
    table = ds.table
    columns = ds.scalar_columns
    st.subheader(f"Current data: {ds.title or ds.name}")
    if ds.description:
        st.caption(ds.description)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Rows", f"{len(table):,}")
    m2.metric("Columns", f"{table.shape[1]:,}")
    m3.metric("Source", {"simulated": "simulated", "upload": "your file", "real": "real data"}[ds.source])
    m4.metric("Ground truth", "known" if ds.truth is not None else "unknown",
              help="Only simulations know the true causal function, so only they can be scored.")
    if ds.caveat:
        st.warning(ds.caveat, icon=":material/help:")
    if ds.has_images:
        st.caption(f"{len(ds.suggested.image_columns):,} pixel columns are hidden from the preview.")
    tab_prev, tab_sum, tab_plot = st.tabs(["Preview", "Column types and statistics", "Plot"])
    with tab_prev:
        st.dataframe(table[columns].head(200), height=300, key=state.DATA_PREVIEW)
    with tab_sum:
        st.dataframe(summarize(table[columns]), key=state.DATA_SUMMARY)
        problems = numeric_problems(table, columns)
        for problem in problems[:5]:
            st.caption(f":orange[:material/warning:] {problem}")
    with tab_plot:
        numeric = [c for c in columns if table[c].dtype.kind in "biuf"]
        if not numeric:
            st.info("No numeric column to plot.")
        else:
            c1, c2, c3 = st.columns(3)
            default_x = ds.suggested.treatment[0] if ds.suggested is not None and ds.suggested.treatment \
                and ds.suggested.treatment[0] in numeric else numeric[0]
            x = c1.selectbox("x", numeric, index=numeric.index(default_x), key=state.PLOT_X)
            y_default = ds.suggested.outcome if ds.suggested is not None and ds.suggested.outcome in numeric else HIST
            y = c2.selectbox("y", [HIST, *numeric], index=[HIST, *numeric].index(y_default), key=state.PLOT_Y)
            color = c3.selectbox("colour", [NO_COLOR, *numeric], key=state.PLOT_COLOR)
            y = None if y == HIST else y
            color = None if color == NO_COLOR else color
            st.plotly_chart(plots.column_figure(table, x, y, color=color), key=state.DATA_PLOT)
        if ds.has_images:
            shape = ds.suggested.image_shape
            pixels = table[ds.suggested.image_columns].to_numpy()
            idx = list(range(min(6, len(table))))
            st.plotly_chart(plots.image_grid_figure([pixels[i].reshape(shape) for i in idx],
                                                    [f"row {i}" for i in idx]), key=state.DATA_IMAGES)


st.title("Data")
tab_sim, tab_up, tab_real = st.tabs(["Simulate", "Upload a file", "Real data sets"])
with tab_sim:
    simulate_tab()
with tab_up:
    upload_tab()
with tab_real:
    real_tab()

st.divider()
current = state.dataset()
if current is None:
    st.info("No data loaded yet: simulate, upload or load one above.")
else:
    with ui.guarded("show the data"):
        current_data(current)
    st.page_link(ui.ROLES, label="Next: roles", icon=":material/arrow_forward:")
state.remember()  # a reload of this browser finds the data and choices again
