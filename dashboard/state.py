"""What a browser session keeps: its data, roles, estimator choices and background jobs.

Everything that must survive a page switch lives in ``st.session_state``. Background fits run in
one :class:`dmlcore.jobs.JobRegistry` per server process (fits in worker processes); a session
knows its jobs by an owner token. The token is kept in a browser cookie (``dmlcore_owner``), never
in the address: a reload of the same browser reattaches, while someone who types the address
shown on a projector gets a session of their own. The cookie lasts ``DMLCORE_OWNER_DAYS`` days
(default 30, renewed at each visit; 0: until the browser closes), so a browser restart finds its
stored runs and studies again; ``forget_browser()`` gives the browser a new, empty owner.
"""

from __future__ import annotations

import gc
import os
import re
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from dmlcore.data.roles import ALLOWED, CausalData
from dmlcore.data.simulate import GroundTruth
from dmlcore.errors import DMLCoreError
from dmlcore.jobs import JobRegistry, JobSnapshot, server_registry
from dmlcore.store import RunStore
from dmlcore.jobs.study_jobs import Studies
from dashboard.plan import ESTIMATOR_DEFAULTS

# ------------------------------------------------------------ session-state keys
# Every key the pages and the dashboard modules keep in ``st.session_state`` (widget keys included) is
# declared here once, with its default and what it holds; they use these names, never a string of their own
# (tests/test_dashboard_state.py scans for one). ``get``/``put``/``pop`` refuse an undeclared key; ``cached``
# is the one home of the pages' caches.


@dataclass(frozen=True)
class Key:
    """One session-state key: its name, the value :func:`get` returns while it is unset (a fresh copy of a
    list, dict or set), and what it holds."""

    name: str
    default: object
    holds: str


@dataclass(frozen=True)
class KeyFamily:
    """Keys made from a pattern and parts (one per job, per study view, per lesson): ``family(*parts)``."""

    pattern: str           # str.format pattern, "{}" for each part
    holds: str

    def __call__(self, *parts) -> str:
        return self.pattern.format(*parts)

    def matches(self, name: str) -> bool:
        return re.fullmatch(".+".join(re.escape(piece) for piece in self.pattern.split("{}")), name) is not None


KEYS: dict[str, Key] = {}
FAMILIES: dict[str, KeyFamily] = {}


def _key(name: str, default, holds: str) -> str:
    if name in KEYS:
        raise ValueError(f"session key {name!r} is declared twice in dashboard/state.py; keep one declaration.")
    KEYS[name] = Key(name, default, holds)
    return name


def _family(pattern: str, holds: str) -> KeyFamily:
    FAMILIES[pattern] = KeyFamily(pattern, holds)
    return FAMILIES[pattern]


def declared(name: str) -> bool:
    """Whether ``name`` is a declared key or made by a declared family."""
    return name in KEYS or any(family.matches(name) for family in FAMILIES.values())


# Roles: one key per role, plus the problem, the categorical columns and the linear options.
SINGLE_ROLES = ("outcome", "treatment")
MULTI_ROLES = ("instrument", "treatment_proxy", "outcome_proxy", "covariates", "inputs", "conditioning")
ROLE_KEYS = {role: _key(f"role_{role}", None if role in SINGLE_ROLES else [],
                        f"Roles: the {role.replace('_', ' ')} column{'' if role in SINGLE_ROLES else 's'} chosen")
             for role in (*SINGLE_ROLES, *MULTI_ROLES)}
PROBLEM_KEY = _key("role_problem", "iv", "Roles: the problem ('iv', 'pcl' or 'cmr')")
CATEGORICAL_KEY = _key("role_categorical", [], "Roles: the columns to one-hot encode")
ABSORB_KEY = _key("role_absorb", [], "Roles: the columns whose fixed effects are absorbed (at most two)")
WEIGHTS_KEY = _key("role_weights", None, "Roles: the weights column, or None")

# The Estimators page's choices: their defaults are dashboard/plan.py's ESTIMATOR_DEFAULTS (which the demo's
# DEMO_SETTINGS and plan.build_plan read too); the advanced settings' keys come from plan.nuisance_key,
# plan.f_key and plan.learner_override_key.
_ESTIMATOR_HOLDS = {
    "est_methods": "the methods to compare", "est_learner": "the nuisance learner of every method",
    "est_folds": "K, the cross-fitting folds", "est_seed": "the fits' seed", "est_draws": "draws per row",
    "est_epochs": "the cap on epochs / boosting stages (None: dmlcore's defaults)",
    "est_f_model": "the second stage f ('own' or 'sieve')", "est_reps": "R, the repeated cross-fits",
    "est_device": "the device for the networks", "est_debias": "whether the debiased effect is computed",
    "est_cluster": "the column the rows are clustered by, or None",
    "est_nuisance_choice": "how DML-CMR's auto nuisances are chosen ('own' or 'target')",
}
for _name, _default in ESTIMATOR_DEFAULTS.items():
    _key(_name, _default, "Estimators: " + _ESTIMATOR_HOLDS.get(
        _name, "a learner for one method (plan.learner_override_key)" if _name.startswith("est_learner_")
        else "an advanced setting of a learner or of f (plan.nuisance_key, plan.f_key)"))
EST_METHODS, EST_LEARNER, EST_FOLDS, EST_SEED, EST_DRAWS, EST_EPOCHS, EST_F_MODEL, EST_REPS, EST_DEVICE, EST_DEBIAS, \
    EST_CLUSTER, EST_NUISANCE_CHOICE = (KEYS[name].name for name in _ESTIMATOR_HOLDS)
EST_RESET = _key("est_reset", None, "Estimators: the 'Reset to dmlcore's defaults' button")

# Families: keys with a part that varies.
JOB_BOX = _family("job_{}", "Train: the box of one job, by job id")
JOB_CANCEL = _family("cancel_{}", "Train: one job's Cancel button, by job id")
JOB_LOSSES = _family("losses_{}", "Train: one job's loss chart, by job id")
STUDY_OPTION = _family("study_opt_{}_{}", "Study: a data set option's text input, by data set and option")
STUDY_FIGURE = _family("{}_fig_{}", "Study: a figure of a shown study, by view ('live', 'stored') and file")
STUDY_SUMMARY = _family("{}_summary", "Study: a shown study's summary table, by view")
STUDY_PAIRS = _family("{}_pairs", "Study: a shown study's paired comparisons, by view")
STUDY_DOWNLOAD = _family("{}_dl_{}", "Study: a shown study's download button, by view and what it downloads")
LEARN_NOTEBOOK = _family("learn_notebook_{}", "Learn: an experiment's notebook download, by experiment")
LEARN_RUN = _family("learn_run_{}", "Learn: an experiment's run button, by experiment")
LEARN_TABS = _family("learn_tab_{}", "Learn: the open tab of a lesson's tab strip, by lesson number")
TABLE_OF = _family("{}_table", "Learn: the table under a chart, by the chart's key")

# Every other key, by page.
OWNER = _key("owner", None, "the owner token of this browser's jobs, runs and studies (its cookie; set by init)")
DATASET = _key("dataset", None, "the Dataset the session works on (Data page; set_dataset)")
ROLES_ERROR = _key("roles_error", None, "the message of the last invalid role assignment (Roles page)")
CAUSAL = _key('causal', None, 'the CausalData with validated roles, or None while roles are missing or invalid')
CLASS_EFFECTS = _key('class_effects', None, "Class: a chart's element")
CLASS_EFFECTS_TABLE = _key('class_effects_table', None, "Class: a table's element")
CLASS_HIST = _key('class_hist', None, "Class: a chart's element")
CLASS_LEAVE = _key('class_leave', None, "Class: the 'Leave the teacher view' button")
CLASS_NEW_ROUND = _key('class_new_round', None, "Class: the 'Start a new round' button")
CLASS_SUMMARY = _key('class_summary', None, "Class: a table's element")
DATA_IMAGES = _key('data_images', None, "Data: a table's element")
DATA_PLOT = _key('data_plot', None, "Data: a chart's element")
DATA_PREVIEW = _key('data_preview', None, "Data: a table's element")
DATA_SUMMARY = _key('data_summary', None, "Data: a table's element")
DEMO_CLICKED = _key('demo_clicked', None, 'when the demo was clicked (time.time()), to time it to its results')
DEMO_GOTO_RESULTS = _key('demo_goto_results', None, "the demo's batch: Train moves to Results when it ends")
DEMO_RUN = _key('demo_run', None, "Home: the 'Run the demo' button")
DEMO_SECONDS = _key('demo_seconds', None, "seconds from the demo's click to its results, shown once on Results")
DEMO_SEED = _key('demo_seed', None, "Home: the demo's 'Data seed' number input (a class: one seed each)")
DL_EFFECTS = _key('dl_effects', None, "Results: a download button's element")
DL_PREDICTIONS = _key('dl_predictions', None, "Results: a download button's element")
DL_RECORD = _key('dl_record', None, "Results: a download button's element")
EXP_BAND_COVERAGE = _key('exp_band_coverage', None, "Learn: a table's element")
EXP_BAND_CURVE = _key('exp_band_curve', None, "Learn: a chart's element")
EXP_BAND_SWEEP = _key('exp_band_sweep', None, "Learn: a table's element")
EXP_BAND_TABLE = _key('exp_band_table', None, "Learn: a table's element")
EXP_CURVES = _key('exp_curves', None, "Learn: a chart's element")
EXP_MSE = _key('exp_mse', None, "Learn: a chart's element")
EXP_N = _key('exp_n', None, "Learn: the 'Rows' slider")
EXP_NAIVE = _key('exp_naive', None, "Learn: the 'also the naive plug-in (same learners)' checkbox")
EXP_RHO = _key('exp_rho', None, "Learn: the 'Confounding ρ' slider")
EXP_SEED = _key('exp_seed', None, "Learn: the 'Seed' number input")
EXP_STRENGTH = _key('exp_strength', None, "Learn: the 'Instrument strength' slider")
FIRST_STAGE_CACHE = _key('first_stage_cache', {}, 'Roles page: the first-stage diagnostics by (table, roles, linear options, flexible), or their error text')
FOLLOW_BATCH = _key('follow_batch', None, 'the batch number Train follows (the last batch started)')
LEARN_CARD_PLAUSIBLE = _key('learn_card_plausible', None, "Learn: a table's element")
LEARN_CMP_DRAWS = _key('learn_cmp_draws', None, "Learn: the 'Data sets' slider")
LEARN_CMP_PLOT = _key('learn_cmp_plot', None, "Learn: a chart's element")
LEARN_CMP_SETTING = _key('learn_cmp_setting', None, "Learn: the 'Setting' radio")
LEARN_CMP_TABLE = _key('learn_cmp_table', None, "Learn: a table's element")
LEARN_CONF_N = _key('learn_conf_n', None, "Learn: the 'Rows per data set' slider")
LEARN_CONF_PI = _key('learn_conf_pi', None, "Learn: the 'Instrument coefficient π' slider")
LEARN_CONF_PLOT = _key('learn_conf_plot', None, "Learn: a chart's element")
LEARN_DEMAND_DEBIASED = _key('learn_demand_debiased', None, "Learn: a table's element")
LEARN_EXCL_PI = _key('learn_excl_pi', None, "Learn: the 'Instrument coefficient π (how much the fuel cost moves the price)' slider")
LEARN_EXCL_PLOT = _key('learn_excl_plot', None, "Learn: a chart's element")
LEARN_FOLD_TABLE = _key('learn_fold_table', None, "Learn: a table's element")
LEARN_FOLDS = _key('learn_folds', None, "Learn: a chart's element")
LEARN_FORB_N = _key('learn_forb_n', None, "Learn: the 'Rows per data set' slider")
LEARN_FORB_PLOT = _key('learn_forb_plot', None, "Learn: a chart's element")
LEARN_FORB_SIGMA = _key('learn_forb_sigma', None, "Learn: the 'Spread σ of the price given the instrument' slider")
LEARN_LATE_EFFECT = _key('learn_late_effect', None, "Learn: the 'Effect for always-takers (compliers: 1, never-takers: 0)' slider")
LEARN_LATE_SHARE = _key('learn_late_share', None, "Learn: the 'Share of compliers' slider")
LEARN_LESSON = _key('learn_lesson', None, "Learn: the 'Lesson' radio")
LEARN_MEASURED = _key('learn_measured', None, "Learn: a table's element")
LEARN_NOTATION = _key('learn_notation', None, "Learn: a table's element")
LEARN_ORTH_PLOT = _key('learn_orth_plot', None, "Learn: a chart's element")
LEARN_PCL_KAPPA = _key('learn_pcl_kappa', None, "Learn: the 'Effect κ of the price on the outcome proxy' slider")
LEARN_PCL_N = _key('learn_pcl_n', None, "Learn: the 'Rows per data set' slider")
LEARN_PCL_NOISE = _key('learn_pcl_noise', None, "Learn: the 'Proxy noise τ' slider")
LEARN_PCL_PLOT = _key('learn_pcl_plot', None, "Learn: a chart's element")
LEARN_REPS_TABLE = _key('learn_reps_table', None, "Learn: a table's element")
LEARN_RHC_LINEAR = _key('learn_rhc_linear', None, "Learn: a table's element")
LEARN_RHC_METHODS = _key('learn_rhc_methods', None, "Learn: a table's element")
LEARN_RHC_STRENGTH = _key('learn_rhc_strength', None, "Learn: a table's element")
LEARN_SECOND_ORDER = _key('learn_second_order', None, "Learn: a chart's element")
LEARN_TAB = _key('learn_tab', None, "Learn: the open tab's label (a link or a test may set it to open a lesson's tab)")
LEARN_WALD_PLOT = _key('learn_wald_plot', None, "Learn: a chart's element")
LEARN_WALD_RHO = _key('learn_wald_rho', None, "Learn: the 'Confounding ρ' slider")
LEARN_WALD_SEED = _key('learn_wald_seed', None, "Learn: the 'Seed' number input")
LEARN_WEAK_COVERAGE = _key('learn_weak_coverage', None, "Learn: a table's element")
LEARN_WEAK_INTERVALS = _key('learn_weak_intervals', None, "Learn: a chart's element")
LEARN_ROBUST_ERRORS = _key('learn_robust_errors', None, "Learn: the robust section's error design (heteroskedastic or clustered)")
LEARN_ROBUST_TABLE = _key('learn_robust_table', None, "Learn: a table's element")
LEARN_OVERID_TABLE = _key('learn_overid_table', None, "Learn: a table's element")
LEARN_WEAK_K = _key('learn_weak_k', None, "Learn: the 'Instruments' radio")
LEARN_WEAK_PICK = _key('learn_weak_pick', None, "Learn: the 'Intervals of single data sets at strength' slider")
LEARN_WEAK_PLOT = _key('learn_weak_plot', None, "Learn: a chart's element")
LEARN_WEAK_RHO = _key('learn_weak_rho', None, "Learn: the 'Confounding ρ' slider")
LEARN_WEAK_TABLE = _key('learn_weak_table', None, "Learn: a table's element")
LOADED_RUNS = _key('loaded_runs', {}, 'stored runs read back into the session: {run id: StoredRun} (Results page)')
PAGE_NOW = _key('page_now', None, 'the title of the page the last full run drew (app.py; Train polls only while it is shown)')
PLOT_COLOR = _key('plot_color', None, "Data: the 'colour' select box")
PLOT_X = _key('plot_x', None, "Data: a table's element")
PLOT_Y = _key('plot_y', None, "Data: a table's element")
REAL_LOAD = _key('real_load', None, "Data: the 'Load this data set' button")
REAL_LOADED = _key('real_loaded', None, 'Data: the name of the real data set last loaded with the button')
REAL_NAME = _key('real_name', None, "Data: the 'Data set' select box")
RES_2SLS = _key('res_2sls', None, "Results: a table's element")
RES_ADD = _key('res_add', [], 'Results: run keys to add to the runs to compare at the next run (reloaded stored runs)')
RES_AR_FIGURE = _key('res_ar_figure', None, "Results: a chart's element")
RES_BOOT_B = _key('res_boot_b', None, "Results: the 'Refits (B)' number input")
RES_BOOT_RUN = _key('res_boot_run', None, "Results: the 'Run' select box")
RES_BOOT_START = _key('res_boot_start', None, "Results: the 'Start the bootstrap' button")
RES_CLUSTER = _key('res_cluster', None, "Results: the 'Cluster by' select box")
RES_CLUSTER2 = _key('res_cluster2', None, "Results: the 'and by (two-way)' select box")
RES_COEFFICIENTS = _key('res_coefficients', None, "Results: a table's element")
RES_COV = _key('res_cov', None, "Results: the 'Standard errors' select box")
RES_COV_FITTED = _key('res_cov_fitted', None, "Results: the (covariance, cluster) of the fit that last set the 'Standard errors' choice")
RES_CURVES = _key('res_curves', None, "Results: a chart's element")
RES_DETAIL = _key('res_detail', None, "Results: the 'Run' select box")
RES_EFFECTS_BOX = _key('res_effects_box', None, "Results: a container's element")
RES_LOSSES = _key('res_losses', None, "Results: a chart's element")
RES_LOSSES_OPEN = _key('res_losses_open', None, "Results: the 'Fold-wise losses' expander (open or not)")
RES_METRICS = _key('res_metrics', None, "Results: a table's element")
RES_SECOND_STAGE = _key('res_second_stage', None, "Results: a chart's element")
RES_SEEN = _key('res_seen', None, 'Results: the run keys the page has already offered, so that only new ones are added to the choice')
RES_SELECTED = _key('res_selected', None, "Results: the 'Runs to compare' multiselect")
ROLES_NP = _key('roles_np', None, "Roles: the 'Also fit a flexible (boosted) first stage (a few seconds)' toggle")
SIM_N = _key('sim_n', None, "Data: the 'Rows N' number input")
SIM_NAME = _key('sim_name', None, "Data: the 'Simulation' select box")
SIM_RHO = _key('sim_rho', None, "Data: the 'Confounding ρ' slider")
SIM_RUN = _key('sim_run', None, "Data: the 'Simulate' button")
SIM_SEED = _key('sim_seed', None, "Data: the 'Seed' number input")
SIM_STRENGTH = _key('sim_strength', None, "Data: the 'Instrument strength' slider")
STORE_LOAD = _key('store_load', None, "Results: the 'Load' button")
STORE_PICK = _key('store_pick', None, "Results: the 'Reload stored runs' multiselect")
STORE_TABLE = _key('store_table', None, "Results: a table's element")
STUDY_AGAIN = _key('study_again', None, "Study: the 'Run it again (only the missing fits run)' button")
STUDY_CANCEL = _key('study_cancel', None, "Study: the 'Cancel the study' button")
STUDY_CONFIRM = _key('study_confirm', None, "Study: the 'Run more than {CONFIRM_ABOVE:,} fits' checkbox")
STUDY_DATASET = _key('study_dataset', None, "Study: the 'Data set' select box")
STUDY_EPOCHS = _key('study_epochs', None, "Study: the 'At most epochs (empty: the learner' number input")
STUDY_FOLDS = _key('study_folds', None, "Study: the 'K (DML-CMR folds)' number input")
STUDY_FORGET = _key('study_forget', None, "Study: the 'Forget this browser' button")
STUDY_ID = _key('study_id', None, 'Study: the id of the study this session follows')
STUDY_LABEL = _key('study_label', None, "Study: the 'Name' text input")
STUDY_LEARNER = _key('study_learner', None, "Study: the 'Learner' select box")
STUDY_METHODS = _key('study_methods', None, "Study: the 'Methods' multiselect")
STUDY_NUISANCE_CHOICE = _key('study_nuisance_choice', None, "Study: the 'Nuisance choice (DML-CMR)' select box")
STUDY_PICK = _key('study_pick', None, "Study: the 'Study' select box")
STUDY_RUNNING = _key('study_running', False, "Study: whether that study was running at the last full run (sets the progress panel's refresh)")
STUDY_SEEDS = _key('study_seeds', None, "Study: the 'Seeds' text input")
STUDY_START = _key('study_start', None, "Study: the 'Start the study' button")
STUDY_TABLE_CACHE = _key('study_table_cache', {}, 'Study: the summary tables drawn, by study and its state')
STUDY_TIME_LIMIT = _key('study_time_limit', None, "Study: the 'time limit per fit' number input")
TEACHER_OK = _key('teacher_ok', False, 'Class: whether this session entered the teacher code')
TEACHER_TRIES = _key('teacher_tries', 0, 'Class: wrong teacher codes entered in this session')
TEACHER_TYPED = _key('teacher_typed', None, "Class: the 'Teacher code' text input")
TRAIN_CLEAR = _key('train_clear', None, "Train: the 'Clear finished runs from this list' button")
TRAIN_FULL_RUN = _key('train_full_run', False, "Train: set by a full run, so that the jobs panel's next fragment run keeps its refresh rate")
TRAIN_POLL = _key('train_poll', None, "Train: the jobs panel's refresh interval in seconds (None: no refresh)")
TRAIN_START = _key('train_start', None, "Train: the 'Start training' button")
UPLOAD = _key('upload', None, "Data: the 'Your table' file uploader")
UPLOAD_ERROR = _key('upload_error', None, 'Data: why the last uploaded file could not be read')
UPLOAD_ID = _key('upload_id', None, 'Data: the file id of the last upload read (a new one is read once)')
LEARN_PLIV_PLOT = _key("learn_pliv_plot", None, "Learn: the shipped PLIV simulations' chart")
LEARN_PLIV_LIVE = _key("learn_pliv_live", None, "Learn: the live PLIV simulations' chart")
RESULT_CACHE = _key("result_cache", {}, "Results: each live run's predictions, by (run key, what)")
REFERENCE_2SLS = _key("reference_2sls", {}, "Results: the 2SLS reference fit beside real-data runs (a Run, or the "
                                            "error text), by the live run's key")
LINEAR_IV_CACHE = _key("linear_iv_cache", {}, "Results: the linear IV inference under a covariance choice (or its "
                                              "error text), by (table, roles, covariance, cluster)")
CACHES = (FIRST_STAGE_CACHE, STUDY_TABLE_CACHE, RESULT_CACHE, REFERENCE_2SLS, LINEAR_IV_CACHE)


def _fresh(value):
    return type(value)(value) if isinstance(value, (list, dict, set)) else value


def get(name: str):
    """The session's value of the declared key ``name``, or its declared default."""
    if name not in KEYS and not declared(name):
        raise KeyError(f"Session key {name!r} is not declared; declare it in dashboard/state.py.")
    ss = st.session_state
    return ss[name] if name in ss else _fresh(KEYS[name].default if name in KEYS else None)


def put(name: str, value) -> None:
    """Set the declared key ``name``."""
    if not declared(name):
        raise KeyError(f"Session key {name!r} is not declared; declare it in dashboard/state.py.")
    st.session_state[name] = value


def pop(name: str, default=None):
    """Remove the declared key ``name`` and return its value (``default`` when unset)."""
    if not declared(name):
        raise KeyError(f"Session key {name!r} is not declared; declare it in dashboard/state.py.")
    return st.session_state.pop(name, default)


def cached(name: str, key, make, *, errors_as_text: bool = False, latest_only: bool = False):
    """``make()`` once per session for ``key`` in the cache ``name`` (one of CACHES); with ``errors_as_text`` a
    DMLCoreError is kept, and returned, as its message, to be shown where the value would be; with
    ``latest_only`` a new key drops the values kept for the others (a large value, needed for one key at a time)."""
    if name not in CACHES:
        raise KeyError(f"{name!r} is not one of the session's caches {CACHES}; declare it in dashboard/state.py.")
    cache = st.session_state.setdefault(name, {})
    if key not in cache:
        if latest_only:
            cache.clear()
        try:
            cache[key] = make()
        except DMLCoreError as err:
            if not errors_as_text:
                raise
            cache[key] = str(err)
    return cache[key]

MAX_REMEMBERED = 200           # sessions whose data and choices survive a browser reload
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_BATCH = re.compile(r"^#(\d+) ")
OWNER_COOKIE = "dmlcore_owner"
OWNER_DAYS = 30                # how long a browser keeps its owner cookie (DMLCORE_OWNER_DAYS)
# Sent to this site only; with a max-age, it outlives a browser restart.
_KEEP_OWNER = """<script>
document.cookie = "%s=%s; path=/; SameSite=Strict%s" + (location.protocol === "https:" ? "; Secure" : "");
</script>"""


@dataclass
class Dataset:
    """The table a session works on, where it came from, and its suggested roles."""

    name: str
    source: str                      # "simulated", "upload" or "real"
    table: pd.DataFrame
    suggested: CausalData | None     # roles filled in (simulations, real data); None for uploads
    truth: GroundTruth | None = None
    params: dict = field(default_factory=dict)
    title: str = ""
    caveat: str | None = None
    description: str = ""

    @property
    def has_images(self) -> bool:
        return bool(self.suggested is not None and self.suggested.image_columns)

    @property
    def scalar_columns(self) -> list[str]:
        """Columns that are not image pixels."""
        pixels = set(self.suggested.image_columns) if self.suggested is not None else set()
        return [str(c) for c in self.table.columns if c not in pixels]


# ------------------------------------------------------------------ registry
@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry:
    """The one job registry of this server process (see dmlcore.jobs.server_registry)."""
    reg = server_registry()
    _freeze_loaded_objects()
    return reg


def _freeze_loaded_objects() -> None:
    """Exempt what the imports created (about 300,000 objects) from garbage collection.

    A full collection then visits only what the pages create, so Streamlit's collection after
    each script run (``runner.postScriptGC``) costs next to nothing (docs/class.md).
    """
    import plotly.graph_objects  # noqa: F401  (the pages' heaviest imports, loaded before freezing)
    import dmlcore.plots  # noqa: F401
    gc.collect()
    gc.freeze()


def store() -> RunStore:
    return registry().store


@st.cache_resource(show_spinner=False)
def studies() -> Studies:
    """The studies this server runs in the background (their fits go through the registry)."""
    return Studies(registry())


class _Memory:
    """What each owner had loaded and chosen, kept in the server process (bounded, newest kept)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._items: OrderedDict[str, dict] = OrderedDict()

    def save(self, owner: str, values: dict) -> None:
        with self._lock:
            self._items[owner] = values
            self._items.move_to_end(owner)
            while len(self._items) > MAX_REMEMBERED:
                self._items.popitem(last=False)

    def load(self, owner: str) -> dict:
        with self._lock:
            return dict(self._items.get(owner, {}))


@st.cache_resource(show_spinner=False)
def memory() -> _Memory:
    return _Memory()


# What a reload of the same browser finds again (the data, the roles, the estimator choices); set at a new
# session to their declared defaults.
REMEMBERED = (DATASET, CAUSAL, FOLLOW_BATCH, LOADED_RUNS, PROBLEM_KEY, *ROLE_KEYS.values(), CATEGORICAL_KEY,
              *ESTIMATOR_DEFAULTS)


def _remembered_keys() -> list[str]:
    return list(REMEMBERED)


def remember() -> None:
    """Keep this session's data and choices for its owner, so that a browser reload finds them."""
    ss = st.session_state
    if OWNER in ss:
        memory().save(ss[OWNER], {k: ss[k] for k in _remembered_keys() if k in ss})


# --------------------------------------------------------------------- init
def browser_token() -> str | None:
    """The owner token the browser sent in its cookie (None: a new browser, or a bad value)."""
    token = st.context.cookies.get(OWNER_COOKIE)
    return token if isinstance(token, str) and _TOKEN.match(token) else None


def init() -> None:
    """Create the session's state (owner token, defaults).

    A new session from a browser that holds an owner token (a reload) gets back that owner's
    jobs, data and choices. An owner token in the address (old links) is ignored and removed.
    """
    if PagesManager.uses_pages_directory and isinstance(st.context.headers.get("Host"), str):
        # A fresh server's first visit from a browser to a page's own address (a reload after a
        # restart): Streamlit runs that page alone, as for an app without st.navigation (no menu,
        # no sidebar). Tell it that app.py navigates, and run again through app.py. (AppTest runs
        # pages alone on purpose, and sends no headers.)
        PagesManager.uses_pages_directory = False
        st.rerun()
    ss = st.session_state
    if OWNER not in ss:
        token = browser_token()
        ss[OWNER] = token or uuid.uuid4().hex
        for key, value in memory().load(ss[OWNER]).items():
            ss[key] = list(value) if isinstance(value, list) else value
    studies()   # the server's first session continues the studies a restart interrupted (dmlcore.jobs.study_jobs)
    for name in REMEMBERED:
        if name != FOLLOW_BATCH:
            ss.setdefault(name, _fresh(KEYS[name].default))
    for key in ("owner", "jobs"):
        if key in st.query_params:
            del st.query_params[key]


def owner_days() -> int:
    """Days a browser keeps its owner cookie: ``DMLCORE_OWNER_DAYS`` (default 30; 0: until it closes)."""
    raw = os.environ.get("DMLCORE_OWNER_DAYS", "").strip()
    if not raw:
        return OWNER_DAYS
    if not raw.isdigit():
        raise DMLCoreError(f"DMLCORE_OWNER_DAYS={raw!r} is not valid; give a whole number of days (0: until the "
                         "browser closes).")
    return int(raw)


def keep_owner_in_browser() -> None:
    """Have the browser keep the owner token in a cookie for ``owner_days()`` days (written at each run,
    so each visit renews it)."""
    days = owner_days()
    expiry = f"; max-age={days * 86400}" if days else ""
    st.html(_KEEP_OWNER % (OWNER_COOKIE, owner(), expiry), unsafe_allow_javascript=True)


def forget_browser() -> None:
    """Give this browser a new, empty owner (its cookie is replaced at the next run): the runs and
    studies of the old owner stay in the run store but are no longer listed here."""
    ss = st.session_state
    ss[OWNER] = uuid.uuid4().hex
    ss.pop(STUDY_ID, None)


def owner() -> str:
    return st.session_state[OWNER]


# --------------------------------------------------------------------- data
def dataset() -> Dataset | None:
    return st.session_state.get(DATASET)


def causal() -> CausalData | None:
    """The data with validated roles, or None when roles are missing or invalid."""
    return st.session_state.get(CAUSAL)


def set_dataset(ds: Dataset) -> None:
    """Make ``ds`` the session's data; its suggested roles (if any) fill the role widgets."""
    ss = st.session_state
    ss[DATASET] = ds
    sug = ds.suggested
    ss[PROBLEM_KEY] = sug.problem if sug is not None else "iv"
    for role, key in ROLE_KEYS.items():
        values = list(getattr(sug, role)) if sug is not None else []
        if role == "outcome":
            ss[key] = sug.outcome if sug is not None else None
        elif role == "treatment":
            ss[key] = values[0] if values and not ds.has_images else None
        else:
            ss[key] = values if not ds.has_images else []
    ss[CATEGORICAL_KEY] = list(sug.categorical) if sug is not None else []
    ss[CAUSAL] = sug
    ss.pop(ROLES_ERROR, None)


def roles_from_widgets() -> dict:
    """Keyword arguments of CausalData from the role widgets, only the roles the problem uses."""
    ss = st.session_state
    problem = ss[PROBLEM_KEY]
    kwargs = {}
    for role in ALLOWED[problem]:
        value = ss.get(ROLE_KEYS[role])
        if role in SINGLE_ROLES:
            kwargs[role] = value or ("" if role == "outcome" else [])
        else:
            kwargs[role] = list(value or [])
    used = {c for v in kwargs.values() for c in ([v] if isinstance(v, str) else v)} - {kwargs.get("outcome")}
    kwargs["categorical"] = [c for c in ss.get(CATEGORICAL_KEY) or [] if c in used]
    return {"problem": problem, **kwargs}


def truth() -> GroundTruth | None:
    """The ground truth, when the data is simulated and the roles are the simulator's."""
    ds, data = dataset(), causal()
    if ds is None or ds.truth is None or data is None or ds.suggested is None:
        return None
    if data.problem == ds.suggested.problem and data.roles() == ds.suggested.roles():
        return ds.truth
    return None


# --------------------------------------------------------------------- jobs
def forget_jobs(ids: list[str]) -> None:
    """Take ended jobs off the session's list (their runs stay in the store)."""
    registry().dismiss(ids, owner())


def snapshots() -> list[JobSnapshot]:
    """The owner's runs that the server holds, oldest first (not the fits of studies)."""
    return [snap for snap in registry().list(owner())[::-1] if snap.group is None]


def batch_of(label: str) -> int | None:
    """The batch number in a job label such as '#3 DML-CMR · nn'."""
    match = _BATCH.match(label or "")
    return int(match.group(1)) if match else None


def next_batch() -> int:
    numbers = [batch_of(s.label) for s in snapshots()]
    numbers += [batch_of(r["label"]) for r in stored_runs()]
    return 1 + max([n for n in numbers if n is not None], default=0)


def stored_runs(safe: bool = True) -> list[dict]:
    """Summaries of this session's runs in the store, newest first.

    With ``safe`` a store that cannot be read gives an empty list (for counters); the Results
    page passes ``safe=False`` and shows the error.
    """
    try:
        return store().list(owner())
    except Exception:
        if not safe:
            raise
        return []
