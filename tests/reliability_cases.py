"""The known bad inputs of docs/reliability.md, and drivers that feed each one to an entry point.

Each :class:`Case` is one bad input (a file, a role choice or a setting) with the words its
answer must contain. Three drivers give it to dmlcore the way a user would:

* :func:`through_api` -- ``load_table`` -> ``CausalData`` -> ``fit_run`` (Python);
* :func:`through_cli` -- ``python -m dmlcore fit --csv ...`` (in-process ``cli.main``);
* :func:`through_dashboard` -- the Streamlit app in AppTest: upload, role widgets, estimator
  widgets, Train.

``tests/test_reliability.py`` (API, CLI) and ``tests/test_app_errors.py`` (dashboard) assert the
answers; ``python tests/reliability_cases.py`` prints the table of docs/reliability.md.
"""

from __future__ import annotations

import io
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
HYPOTHESIS_EXAMPLES = 400          # per run of the role-validator property test
SMALL_LIMIT = 2**20                # the upload limit used to test "a file over the limit" quickly


def base_table(n: int = 300, seed: int = 1) -> pd.DataFrame:
    """A clean IV table plus columns that are bad in a role: text, NaN, inf, constant, collinear, a copy
    of the treatment."""
    rng = np.random.default_rng(seed)
    z, u, x = rng.normal(size=(3, n))
    a = z + u + rng.normal(scale=0.5, size=n)
    y = 2 * a + 3 * u + rng.normal(size=n)
    table = pd.DataFrame({"y": y, "a": a, "z": z, "x": x, "z_double": 2 * z, "a_copy": a, "constant": 1.0,
                          "label": ["p", "q"] * (n // 2), "x_nan": x, "x_inf": x,
                          "amount": [f"{v:,.1f}" for v in 1000 + 1000 * np.abs(x)]})
    table.loc[5, "x_nan"] = np.nan
    table.loc[9, "x_inf"] = np.inf
    return table


def csv_of(table: pd.DataFrame, sep: str = ",") -> bytes:
    return table.to_csv(index=False, sep=sep).encode()


GOOD_ROLES = dict(problem="iv", outcome="y", treatment="a", instrument=["z"], covariates=["x"])


@dataclass(frozen=True)
class Case:
    """One bad input and the words every entry point's answer must contain."""

    name: str
    input: str                             # what the user gave, in words
    expect: str                            # words of the answer (the same at every entry point)
    data: bytes | None = None              # the file (None: base_table as CSV)
    filename: str = "data.csv"
    roles: dict = field(default_factory=lambda: dict(GOOD_ROLES))
    settings: dict = field(default_factory=dict)   # fit_run keywords
    method: str = "2sls"
    cli: list | None = field(default_factory=list)  # extra CLI arguments; None: not reachable by CLI
    api_limit: int | None = None           # max_bytes for load_table (size-limit case)
    sparse_size: int | None = None         # CLI: a sparse file of this size instead of data
    dashboard: str | None = "upload"       # upload | roles | estimators | train | None (not enterable)
    widgets: dict = field(default_factory=dict)     # dashboard widget values
    ok: bool = False                       # True: not an error (e.g. a ';'-separated file loads)
    expect_dashboard: str | None = None    # the dashboard's words, where they differ from ``expect``


def _latin1() -> bytes:
    return "y,a,z,x\n1.0,2.0,3.0,4.0\nJos\xe9,2,3,4\n".encode("latin-1")


FILE_CASES = [
    Case("empty", "empty file (0 bytes)", "is empty", data=b""),
    Case("blank", "file of blank lines", "is empty", data=b" \n\n \n"),
    Case("xlsx_as_csv", "Excel workbook renamed .csv", "Excel workbook", data=b"PK\x03\x04\x14\x00rest"),
    Case("xls_as_csv", "legacy .xls renamed .csv", "legacy Excel workbook",
         data=b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest"),
    Case("xlsx_ext", "a .xlsx file", "Spreadsheets are not read directly", data=b"PK\x03\x04rest",
         filename="data.xlsx"),
    Case("pickle_as_csv", "a pickled DataFrame renamed .csv", "never loaded",
         data=pickle.dumps(pd.DataFrame({"a": [1]}))),
    Case("pickle_ext", "a .pkl file", "never loaded", data=b"\x80\x04rest", filename="data.pkl"),
    Case("pdf", "a PDF renamed .csv", "a PDF document", data=b"%PDF-1.7 rest"),
    Case("gzip", "a gzip file renamed .csv", "gzip-compressed", data=b"\x1f\x8b\x08rest"),
    Case("binary", "binary bytes with NUL", "NUL bytes", data=b"y,a\n1\x002\n"),
    Case("utf16", "UTF-16 text", "UTF-16", data="y,a\n1,2\n".encode("utf-16")),
    Case("latin1", "Latin-1 text (non-UTF-8)", "not UTF-8", data=_latin1()),
    Case("duplicate_names", "repeated column names", "repeated column names", data=b"y,a,a\n1,2,3\n"),
    Case("blank_name", "a blank column name (saved row index)", "no name in the header row",
         data=b",y,a\n0,1,2\n"),
    Case("header_only", "a header and no rows", "no data rows", data=b"y,a,z,x\n"),
    Case("ragged", "a row with more fields than the header", "ragged rows",
         data=b"y,a,z,x\n1,2,3,4\n1,2,3,4,5\n"),
    Case("open_quote", "a quote never closed", "never closed", data=b'y,a,z,x\n1,2,3,"4\n'),
    Case("too_big", f"a file over the upload limit ({SMALL_LIMIT // 2**20} MB in the test)",
         "over the size limit", data=b"y,a,z,x\n" + b"1,2,3,4\n" * (SMALL_LIMIT // 8 + 10),
         api_limit=SMALL_LIMIT, sparse_size=201 * 2**20),
    Case("single_row", "a single data row", "1 row(s)", data=b"y,a,z,x\n1,2,3,4\n"),
    Case("semicolon", "';'-separated file", "", data=csv_of(base_table(), ";"), ok=True),
    Case("tab", "tab-separated .tsv file", "", data=csv_of(base_table(), "\t"), filename="data.tsv", ok=True),
    Case("pipe", "'|'-separated file", "", data=csv_of(base_table(), "|"), ok=True),
    Case("decimal_comma", "decimal commas (';'-separated, '1,5')", "decimal comma",
         data="y;a;z;x\n" .encode() + "".join(f"{i},5;{i % 7},25;{i % 5},1;{i % 3},0\n" for i in range(40)).encode()),
]

ROLE_CASES = [
    Case("text_column", "text column as instrument", "Column 'label' is not numeric",
         roles=dict(GOOD_ROLES, instrument=["label"]), cli=[], dashboard="roles"),
    Case("thousands", "numbers with thousands separators as covariate", "Column 'amount' is not numeric",
         roles=dict(GOOD_ROLES, covariates=["amount"]), dashboard="roles"),
    Case("nan", "NaN in a covariate", "missing (NaN)", roles=dict(GOOD_ROLES, covariates=["x_nan"]),
         dashboard="roles"),
    Case("inf", "inf in a covariate", "infinite", roles=dict(GOOD_ROLES, covariates=["x_inf"]),
         dashboard="roles"),
    Case("constant_instrument", "constant instrument", "is constant",
         roles=dict(GOOD_ROLES, instrument=["constant"]), dashboard="roles"),
    Case("collinear_instrument", "collinear instruments (z_double = 2 z)", "linear combination",
         roles=dict(GOOD_ROLES, instrument=["z", "z_double"]), dashboard="roles"),
    Case("copied_instrument", "an instrument that copies the treatment (z = a)", "explains the treatment 'a' perfectly",
         roles=dict(GOOD_ROLES, instrument=["a_copy"]), dashboard="roles"),
    Case("two_roles", "one column in two roles (instrument = covariate)", "has two roles",
         roles=dict(GOOD_ROLES, covariates=["x", "z"]), dashboard="roles"),
    Case("missing_instrument", "no instrument (required role missing)", "role 'instrument'",
         roles={k: v for k, v in GOOD_ROLES.items() if k != "instrument"}, dashboard="roles"),
    Case("missing_outcome", "no outcome (required role missing)", "outcome",
         roles={k: v for k, v in GOOD_ROLES.items() if k != "outcome"}, dashboard="roles"),
    Case("unknown_column", "a column not in the table", "Column 'fuel' (role instrument) is not in the table",
         roles=dict(GOOD_ROLES, instrument=["fuel"]), dashboard=None),
    Case("two_treatments", "two treatment columns in IV, one instrument", "under-identified",
         roles=dict(GOOD_ROLES, treatment=["a", "x"], covariates=[]), dashboard=None),
    Case("pcl_role_in_iv", "a PCL role (outcome proxy) in an IV problem", "not used by the IV problem",
         roles=dict(GOOD_ROLES, outcome_proxy=["constant"]), cli=[], dashboard=None),
]

SETTING_CASES = [
    Case("folds_1", "K = 1 fold", "folds (K) must be an integer of at least 2", method="dml-cmr",
         settings=dict(folds=1, learner="linear"), cli=["--folds", "1"], dashboard=None),
    Case("folds_too_many", "K = 40 folds on 300 rows", "40 folds need at least 400 rows", method="dml-cmr",
         settings=dict(folds=40, learner="linear"), cli=["--folds", "40"], dashboard="estimators",
         widgets={"est_folds": 40}),
    Case("epochs_negative", "epochs = -5", "epochs must be a positive integer", method="dml-cmr",
         settings=dict(folds=3, epochs=-5, learner="nn"), cli=["--epochs", "-5", "--folds", "3"],
         dashboard=None),
    Case("draws_zero", "draws per row = 0", "n_draws must be a positive integer", method="naive",
         settings=dict(n_draws=0, learner="linear"), cli=["--n-draws", "0"], dashboard=None),
    Case("nn_lr_zero", "learning rate 0 (neural network)", "lr must be a positive number",
         method="ce-dml-cmr", settings=dict(learner="nn", outcome_learner="nn", sampler="nn", nuisance_params={"lr": 0.0}, epochs=2), cli=None,
         dashboard="estimators", widgets={"est_learner": "nn", "adv_nn_lr": 0.0},
         expect_dashboard="Learning rate must be greater than 0"),
    Case("gb_lr_zero", "learning rate 0 (gradient boosting)", "learning_rate",
         method="ce-dml-cmr", settings=dict(learner="gb", nuisance_params={"learning_rate": 0.0}), cli=None,
         dashboard="estimators", widgets={"est_learner": "gb", "adv_gb_learning_rate": 0.0},
         expect_dashboard="Learning rate must be greater than 0"),
    Case("nn_dropout_one", "dropout 1 (neural network)", "dropout must be a number in [0, 1)",
         method="ce-dml-cmr", settings=dict(learner="nn", outcome_learner="nn", sampler="nn", nuisance_params={"dropout": 1.0}, epochs=2), cli=None,
         dashboard="estimators", widgets={"est_learner": "nn", "adv_nn_dropout": 1.0},
         expect_dashboard="Dropout must be at least 0 and less than 1"),
    Case("hidden_negative", "a hidden layer of width -1", "hidden must be a non-empty list of positive layer widths",
         method="ce-dml-cmr", settings=dict(learner="nn", outcome_learner="nn", sampler="nn", nuisance_params={"hidden": (64, -1)}, epochs=2),
         cli=None, dashboard="estimators", widgets={"est_learner": "nn", "adv_nn_hidden": "64, -1"},
         expect_dashboard="layer widths between 1 and 4096"),
    Case("unknown_learner", "an unknown learner 'svm'", "'svm'", method="ce-dml-cmr",
         settings=dict(learner="svm"), cli=["--learner", "svm", "--method", "ce-dml-cmr"], dashboard=None),
    Case("unknown_method", "an unknown method 'magic'", "'magic'", method="magic", settings={},
         cli=["--method", "magic"], dashboard=None),
    Case("cluster_one_level", "clustered errors by a column with one level", "has a single level",
         settings=dict(cov_type="clustered", cluster="constant"), cli=["--cov", "clustered", "--cluster", "constant"],
         dashboard=None),
    Case("cluster_all_distinct", "clustered errors by a column with a value per row", "different value in every row",
         settings=dict(cov_type="clustered", cluster="x"), cli=["--cov", "clustered", "--cluster", "x"],
         dashboard=None),
    Case("diverging", "a diverging fit (learning rate 1e6)", "diverged", method="ce-dml-cmr",
         settings=dict(learner="nn", outcome_learner="nn", sampler="nn", nuisance_params={"lr": 1e6}, epochs=3), cli=None,
         dashboard="train", widgets={"est_learner": "nn", "adv_nn_lr": 1e6, "est_methods": ["ce-dml-cmr", "2sls"]}),
]
ALL_CASES = FILE_CASES + ROLE_CASES + SETTING_CASES
for _case in FILE_CASES:  # file problems are found when loading, whatever the command line
    assert _case.cli == []


@dataclass
class Outcome:
    kind: str                 # "error" or "ok"
    message: str = ""
    clean: bool = True        # the error was a DMLCoreError (or FitDiverged), never a bug's exception
    exc_type: str = ""


def _file_bytes(case: Case) -> bytes:
    return csv_of(base_table()) if case.data is None else case.data


def through_api(case: Case) -> Outcome:
    """load_table -> CausalData -> fit_run, as a Python user would call them."""
    from dmlcore.data.io import MAX_BYTES, load_table
    from dmlcore.data.roles import CausalData
    from dmlcore.errors import DMLCoreError, FitDiverged
    from dmlcore.runs import fit_run

    try:
        table = load_table(_file_bytes(case), case.filename, max_bytes=case.api_limit or MAX_BYTES)
        roles = dict(case.roles)
        data = CausalData(table, roles.pop("problem"), roles.pop("outcome", ""), **roles)
        fit_run(data, case.method, **case.settings)
    except (DMLCoreError, FitDiverged) as err:
        return Outcome("error", str(err), True, type(err).__name__)
    except Exception as err:                            # noqa: BLE001 - recorded, and a test fails
        return Outcome("error", str(err), False, type(err).__name__)
    return Outcome("ok")


def cli_argv(case: Case, path: Path) -> list[str]:
    roles = dict(case.roles)
    argv = ["fit", "--csv", str(path), "--problem", roles.pop("problem"), "--method", case.method]
    for role, value in roles.items():
        argv += [f"--{role.replace('_', '-')}", value if isinstance(value, str) else ",".join(value)]
    extra = list(case.cli or [])
    if "--method" in extra:
        argv = argv[:argv.index("--method")] + argv[argv.index("--method") + 2:]
    if case.method in ("dml-cmr", "ce-dml-cmr", "naive") and "--learner" not in extra:
        argv += ["--learner", (case.settings or {}).get("learner", "linear")]
    return argv + extra


def through_cli(case: Case, tmp_path: Path, capsys) -> tuple[int, str, str]:
    """``python -m dmlcore fit --csv FILE ...`` in-process; returns (exit code, stdout, stderr)."""
    from dmlcore import cli

    path = tmp_path / case.filename
    if case.sparse_size:
        with open(path, "wb") as handle:
            handle.truncate(case.sparse_size)
    else:
        path.write_bytes(_file_bytes(case))
    capsys.readouterr()
    try:
        code = cli.main(cli_argv(case, path))
    except SystemExit as exc:                           # argparse's own usage errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------ dashboard
APP = str(ROOT / "app.py")
DATA_PAGE, ROLES_PAGE, ESTIMATORS_PAGE, TRAIN_PAGE, RESULTS_PAGE = (
    "pages/1_data.py", "pages/2_roles.py", "pages/3_estimators.py", "pages/4_train.py", "pages/5_results.py")


START_DISABLED = "[the Start training button is disabled]"
LOADED = "[the file loaded]"
ROLES_VALID = "[roles valid]"


def shown_messages(at) -> list[str]:
    """Every error and warning the page shows."""
    return [str(e.value) for e in at.error] + [str(w.value) for w in at.warning]


def upload(at, name: str, data: bytes):
    at.switch_page(DATA_PAGE).run()
    at.file_uploader(key="upload").set_value((name, data, "text/csv")).run()
    return at


def set_roles(at, roles: dict):
    """Set the role widgets of the Roles page to ``roles`` (CausalData keywords).

    A select box cannot be emptied once chosen (neither in the browser nor in AppTest): when
    ``roles`` leaves the outcome or the treatment out, the good table is uploaded again first,
    which clears every role, as for a user who never chose one.
    """
    from dashboard.state import PROBLEM_KEY, ROLE_KEYS, SINGLE_ROLES
    if not all(roles.get(role) for role in SINGLE_ROLES):
        upload(at, "good.csv", csv_of(base_table()))
    at.switch_page(ROLES_PAGE).run()
    roles = dict(roles)
    at.radio(key=PROBLEM_KEY).set_value(roles.pop("problem", "iv")).run()
    for role, key in ROLE_KEYS.items():
        try:
            widget = at.selectbox(key=key) if role in SINGLE_ROLES else at.multiselect(key=key)
        except KeyError:                                # the problem does not use this role
            continue
        value = roles.get(role)
        if role in SINGLE_ROLES:
            value = value[0] if isinstance(value, list) else value
            if value:
                widget.set_value(value).run()
        else:
            widget.set_value([value] if isinstance(value, str) else list(value or [])).run()
    return at


def wait_for_runs(at, timeout: float = 60.0):
    """Poll the Train page until no run is queued or running; returns the run labels shown."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(0.4)
        at.run()
        labels = [str(m.value) for m in at.markdown if str(m.value).startswith(":") and "**#" in str(m.value)]
        if labels and not any("autorenew" in m or "schedule" in m for m in labels):
            return labels
    raise AssertionError("the runs did not finish in time")


def dashboard_session():
    """A fresh AppTest session with the good table uploaded and valid roles assigned."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    upload(at, "good.csv", csv_of(base_table()))
    set_roles(at, GOOD_ROLES)
    return at


def loaded_rows(at) -> int | None:
    """The rows of the session's data, as the Data page shows them (None without data)."""
    at.switch_page(DATA_PAGE).run()
    metrics = {m.label: m.value for m in at.metric}
    return int(metrics["Rows"].replace(",", "")) if "Rows" in metrics else None


def through_dashboard(at, case: Case) -> list[str]:
    """Give ``case`` to the session ``at`` (see :func:`dashboard_session`); the messages shown.

    Afterwards the session is back where it was (good table, valid roles, default estimator
    settings) unless the case replaced the data on purpose (a file that loads); then the good
    table is uploaded again.
    """
    if case.dashboard == "upload":
        from streamlit import config
        limit = config.get_option("server.maxUploadSize")
        if case.api_limit:
            config.set_option("server.maxUploadSize", case.api_limit // 2**20)
        try:
            upload(at, case.filename, _file_bytes(case))
        finally:
            config.set_option("server.maxUploadSize", limit)
        messages = shown_messages(at) + _captions(at)
        if not at.error:                                # it loaded: roles show the rest
            messages.append(LOADED)
            set_roles(at, GOOD_ROLES)
            if any("Roles are valid" in str(s.value) for s in at.success):
                messages.append(ROLES_VALID)
            messages += shown_messages(at)
            upload(at, "good.csv", csv_of(base_table()))
            set_roles(at, GOOD_ROLES)
        return messages
    if case.dashboard == "roles":
        set_roles(at, case.roles)
        messages = shown_messages(at)
        set_roles(at, GOOD_ROLES)
        return messages
    from dashboard.plan import ESTIMATOR_DEFAULTS
    at.switch_page(ESTIMATORS_PAGE).run()
    for key, value in case.widgets.items():
        _widget(at, key).set_value(value).run()
    if case.dashboard == "estimators":
        messages = shown_messages(at)
        at.switch_page(TRAIN_PAGE).run()
        messages += shown_messages(at)
        if at.button(key="train_start").disabled:
            messages.append(START_DISABLED)
    else:
        at.switch_page(TRAIN_PAGE).run()
        at.button(key="train_start").click().run()
        wait_for_runs(at)
        messages = shown_messages(at)
    at.switch_page(ESTIMATORS_PAGE).run()
    for key in reversed(list(case.widgets)):           # the learner last: it decides what is shown
        _widget(at, key).set_value(ESTIMATOR_DEFAULTS[key]).run()
    return messages


def _widget(at, key: str):
    if key == "est_learner":
        return at.selectbox(key=key)
    if key == "est_methods":
        return at.multiselect(key=key)
    return at.text_input(key=key) if key.endswith("hidden") else at.number_input(key=key)


def _captions(at) -> list[str]:
    return [str(c.value) for c in at.caption]


# ------------------------------------------------------------------ the table of the docs
def _one_line(text: str, width: int = 150) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= width else text[:width - 1] + "…"


def main() -> None:
    """Print the table of docs/reliability.md: every case at every entry point, as answered now."""
    import tempfile
    import contextlib

    import streamlit as st

    class Capsys:                                       # the bit of pytest's capsys that cli uses
        def __init__(self):
            self.out, self.err = io.StringIO(), io.StringIO()

        def readouterr(self):
            result = type("R", (), {"out": self.out.getvalue(), "err": self.err.getvalue()})
            self.out.seek(0), self.out.truncate(), self.err.seek(0), self.err.truncate()
            return result

    rows = ["| # | input | entry point | answer |", "|---|---|---|---|"]
    session = None
    tried = {"api": 0, "cli": 0, "dashboard": 0}
    with tempfile.TemporaryDirectory() as tmp:
        import os
        os.environ["DMLCORE_HOME"] = str(Path(tmp) / "home")
        for i, case in enumerate(ALL_CASES, 1):
            api = through_api(case)
            tried["api"] += 1
            answer = "loads (no error)" if api.kind == "ok" else (
                ("" if api.exc_type in ("DMLCoreError", "FitDiverged") else f"{api.exc_type}: ") + api.message)
            rows.append(f"| {i} | {case.input} | API | {_one_line(answer)} |")
            if case.cli is not None:
                cap = Capsys()
                with contextlib.redirect_stdout(cap.out), contextlib.redirect_stderr(cap.err):
                    code, out, err = through_cli(case, Path(tmp), cap)
                tried["cli"] += 1
                rows.append(f"| | | CLI (exit {code}) | {_one_line(err.strip() or 'ok')} |")
            if case.dashboard is None:
                rows.append("| | | dashboard | cannot be entered (the widget does not offer it) |")
                continue
            if session is None:
                st.cache_resource.clear()
                session = dashboard_session()
            messages = through_dashboard(session, case)
            tried["dashboard"] += 1
            words = case.expect_dashboard or case.expect
            shown = next((m for m in messages if words and words in m), None)
            if case.ok:
                shown = ("loads; roles valid" if LOADED in messages and ROLES_VALID in messages
                         else " / ".join(messages))
            rows.append(f"| | | dashboard ({case.dashboard}) | {_one_line(shown or ' / '.join(messages) or '—')} |")
        with contextlib.suppress(Exception):
            from dashboard import state
            state.registry().close()
    print("\n".join(rows))
    print(f"\ncases: {len(ALL_CASES)}; tried: {tried}", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
