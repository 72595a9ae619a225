"""Estimators: which methods to compare, with which learners, K, seed, draws and advanced settings."""

import streamlit as st

from dashboard import plan, state, ui
from dmlcore.estimators.settings import SETTINGS
from dmlcore.stats.covariance import few_clusters_note
from dmlcore.learners import LEARNER_REGISTRY, LEARNER_TITLES, LEARNERS
from dmlcore.estimators import METHOD_TITLES, METHODS
from dmlcore.estimators.nuisance_target import CRITERIA

state.init()  # also in app.py; pages may run on their own (AppTest, first visit)

F_TITLES = {"nn": "neural network f", "boost": "boosted f (gradient boosting of the score)", "linear": "linear f"}
ss = st.session_state


def field_widget(fld: plan.Field, key: str):
    """One advanced setting; the widget value lives in st.session_state[key]."""
    common = dict(key=key, help=fld.help or None, persist_state="session")
    if fld.kind == "sizes":
        st.text_input(fld.label, **common)
    elif fld.kind == "int":
        st.number_input(fld.label, min_value=int(fld.low or 0), step=1, **common)
    else:
        # the widget keeps values in the closed range; open ends (a learning rate of 0, a
        # dropout of 1) are caught by plan.build_plan and shown under the widget
        default = fld.default if isinstance(fld.default, (int, float)) else 0.1
        step = max(float(default) / 10, 1e-6) if default else 0.05
        st.number_input(fld.label, min_value=float(fld.low or 0.0),
                        max_value=None if fld.high is None else float(fld.high), step=step, format="%g",
                        placeholder="automatic" if fld.kind == "optional_float" else None, **common)


def reset_advanced():
    for key, value in plan.ESTIMATOR_DEFAULTS.items():
        if key.startswith("adv_") or key == "est_epochs":
            ss[key] = value


st.title("Estimators")
data = state.causal()
if data is None:
    st.info("The data has no valid roles yet; you can choose the estimators now and start them once "
            "the roles are set.", icon=":material/info:")
    st.page_link(ui.ROLES, label="Go to Roles", icon=":material/account_tree:")
_, errors = plan.build_plan(ss, data)

offered = plan.methods_for(data)  # only the methods that suit the problem (no PCL peer on IV data, ...)
if any(m not in offered for m in ss[state.EST_METHODS]):
    ss[state.EST_METHODS] = [m for m in ss[state.EST_METHODS] if m in offered]
st.multiselect("Methods to compare", offered, key=state.EST_METHODS, persist_state="session",
               format_func=lambda m: METHOD_TITLES[m])
if "est_methods" in errors:
    st.error(errors["est_methods"])
for method in ss[state.EST_METHODS]:
    st.caption(f"**{METHOD_TITLES[method]}** — {plan.METHOD_HELP[method]}")

c1, c2, c3, c4 = st.columns(4)
c1.selectbox("Nuisance learner (all methods)", LEARNERS, key=state.EST_LEARNER, persist_state="session",
             format_func=lambda lr: LEARNER_TITLES[lr],
             help="Learns s(c) = E[Y | C] and the distribution of the treatment given C; the second "
                  "stage f uses the matching model (network, boosted trees or linear).")
c2.number_input("Folds K (DML-CMR)", min_value=SETTINGS["folds"].minimum, max_value=50, step=1, key=state.EST_FOLDS,
                persist_state="session", help="Cross-fitting folds; the paper uses K = 10.")
c3.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key=state.EST_SEED, persist_state="session")
c4.number_input("Draws per row", min_value=SETTINGS["n_draws"].minimum, max_value=256, step=1, key=state.EST_DRAWS, persist_state="session",
                help="Draws from the conditional distribution averaged in E[f(inputs) | c].")
if "est_folds" in errors:
    st.error(errors["est_folds"])
st.selectbox(plan.NUISANCE_CHOICE_LABEL, plan.NUISANCE_CHOICE.choices, key=state.EST_NUISANCE_CHOICE, persist_state="session",
             format_func=lambda choice: f"{choice}: {CRITERIA[choice]}", help=plan.NUISANCE_CHOICE_HELP)
if "est_nuisance_choice" in errors:
    st.error(errors["est_nuisance_choice"])
elif (note := plan.nuisance_choice_note(ss[state.EST_NUISANCE_CHOICE], ss[state.EST_METHODS])):
    st.caption(note)

neural = [m for m in ss[state.EST_METHODS] if m in plan.SECOND_STAGE_METHODS]
c5, c6 = st.columns([3, 1])
c5.selectbox("Second stage f (DML-CMR, CE-DML-CMR, naive plug-in)", list(plan.F_MODEL_CHOICES), key=state.EST_F_MODEL,
             persist_state="session", format_func=plan.F_MODEL_CHOICES.get, help=plan.F_MODEL_HELP,
             disabled=not neural)
c6.number_input("Repeated cross-fits R", min_value=SETTINGS["reps_crossfit"].minimum, max_value=plan.MAX_REPS, step=1, key=state.EST_REPS,
                persist_state="session", help=plan.REPS_HELP, disabled=not neural)
for key in ("est_f_model", "est_reps"):
    if key in errors:
        st.error(errors[key])
st.checkbox("Debiased effect", key=state.EST_DEBIAS, persist_state="session", help=plan.DEBIAS_HELP)
if not ss[state.EST_DEBIAS]:
    st.caption("Off: each run's effect is the plug-in, with no debiased interval (as in the one-click demo).")
columns = [str(c) for c in data.table.columns] if data is not None else []
if ss.get(state.EST_CLUSTER) not in (None, *columns):
    ss[state.EST_CLUSTER] = None          # a column of the data chosen before
st.selectbox("Rows clustered by", columns, index=None, key=state.EST_CLUSTER, persist_state="session",
             placeholder="none: rows independent", help=plan.CLUSTER_HELP)
if "est_cluster" in errors:
    st.error(errors["est_cluster"])
elif ss[state.EST_CLUSTER] and (few := few_clusters_note(data.table[ss[state.EST_CLUSTER]].nunique())):
    st.warning(few, icon=":material/warning:")
devices = plan.device_choices()
if devices:  # only where torch sees a GPU
    st.selectbox("Device for the neural networks", devices, key=state.EST_DEVICE, persist_state="session",
                 help=plan.DEVICE_HELP, disabled=not neural)
if "est_device" in errors:  # also without a GPU: a remembered choice that no longer fits
    st.error(errors["est_device"])
if neural:
    with st.expander("A different learner for one method"):
        cols = st.columns(len(neural))
        for col, method in zip(cols, neural):
            col.selectbox(METHOD_TITLES[method], [plan.SAME, *LEARNERS], key=plan.learner_override_key(method),
                          persist_state="session",
                          format_func=lambda lr: lr if lr == plan.SAME else LEARNER_TITLES[lr])

with st.expander("Advanced settings (dmlcore's defaults)"):
    st.number_input("Maximum epochs / boosting stages", min_value=SETTINGS["epochs"].minimum, step=1, key=state.EST_EPOCHS,
                    persist_state="session", placeholder=f"default: {plan.EPOCH_DEFAULTS}",
                    help="Caps the training of every network and boosted model. Empty: dmlcore's "
                         f"defaults ({plan.EPOCH_DEFAULTS}). Early stopping still applies.")
    used = plan.learners_in_use(ss)
    if not used:
        st.caption("The chosen methods have no learner to tune.")
    for learner in used:
        st.markdown(f"**Nuisance learner: {LEARNER_TITLES[learner]}**")
        cols = st.columns(4)
        for i, fld in enumerate(plan.NUISANCE_FIELDS[learner]):
            key = plan.nuisance_key(learner, fld.param)
            with cols[i % 4]:
                field_widget(fld, key)
                if key in errors:
                    st.error(errors[key])
        f_model = LEARNER_REGISTRY[learner].f_model
        f_fields = plan.F_FIELDS[f_model]
        if ss[state.EST_F_MODEL] == "sieve":
            st.caption("Second stage: spline basis (sieve); its knots and penalty are chosen from the data.")
        elif f_fields:
            st.markdown(f"**Second stage: {F_TITLES[f_model]}**")
            cols = st.columns(4)
            for i, fld in enumerate(f_fields):
                key = plan.f_key(f_model, fld.param)
                with cols[i % 4]:
                    field_widget(fld, key)
                    if key in errors:
                        st.error(errors[key])
    st.button("Reset to dmlcore's defaults", key=state.EST_RESET, on_click=reset_advanced)

st.subheader("What will run")
fits, errors = plan.build_plan(ss, data)
if errors:
    st.error("Fix the settings marked above first.")
for fit in fits:
    st.markdown(f"- {plan.describe(fit)}")
if data is not None and not errors:
    st.page_link(ui.TRAIN, label="Next: train", icon=":material/arrow_forward:")
state.remember()  # a reload of this browser finds the data and choices again
