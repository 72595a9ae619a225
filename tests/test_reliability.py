"""Reliability: bad input at the library's entry points gets a DMLCoreError that names the problem.

* property-based tests (hypothesis) of the role validator :class:`CausalData` on generated bad
  tables and role choices: it raises only DMLCoreError, and the message names a column or a
  role (or, for table-level problems, the problem or the row count);
* the known bad inputs of ``tests/reliability_cases.py`` at the Python API and the CLI
  (the dashboard's answers are in ``tests/test_app_errors.py``);
* 2SLS on image data, collinear instruments, absurd settings;
* training faults: divergence, cancellation at every stage, one failing run of a comparison.

The killed-server test is in ``tests/test_browser_sessions.py`` (a Streamlit server killed
mid-run, restarted, its stored runs reloaded in the browser); ``tests/test_store.py::
test_finished_run_survives_a_process_killed_mid_run`` kills a fitting process.
"""

from __future__ import annotations

import re
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from dmlcore import cli
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import ALLOWED, PROBLEMS, REQUIRED, ROLE_NAMES, CausalData
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.jobs import JobRegistry
from dmlcore.runs import fit_run
from dmlcore.store import RunStore

import reliability_cases as cases

TIMEOUT = 30
ROLE_WORDS = {*ROLE_NAMES, "treatment proxy", "outcome proxy", "instrument", "covariate", "inputs",
              "conditioning"}


# ------------------------------------------------------------ generated bad tables
NAMES = st.sampled_from(["y", "a", "z", "z2", "x", "w", " x", "pixel_00", "é", "0", "a b", ""])


def _column(draw, n: int):
    """One column of n values of a randomly chosen (often bad) kind."""
    kind = draw(st.sampled_from(["float"] * 8 + ["int"] * 2 + ["bool"] * 2 + [
        "float_bad", "constant", "text", "mixed", "numbers_as_object", "nullable_int", "nullable_bool",
        "datetime", "category", "complex", "collinear", "collinear"]))
    floats = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    if kind == "float":
        return np.array(draw(st.lists(floats, min_size=n, max_size=n)), dtype=float), kind
    if kind == "float_bad":
        values = draw(st.lists(st.one_of(floats, st.sampled_from([np.nan, np.inf, -np.inf])),
                               min_size=n, max_size=n))
        return np.array(values, dtype=float), kind
    if kind == "int":
        return np.array(draw(st.lists(st.integers(-10**6, 10**6), min_size=n, max_size=n)), dtype=np.int64), kind
    if kind == "constant":
        return np.full(n, draw(floats)), kind
    if kind == "text":
        return pd.array(draw(st.lists(st.text(max_size=4), min_size=n, max_size=n)), dtype="str"), kind
    if kind == "mixed":
        return np.array(draw(st.lists(st.one_of(floats, st.text(max_size=3), st.none()),
                                      min_size=n, max_size=n)), dtype=object), kind
    if kind == "numbers_as_object":
        return np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=object), kind
    if kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool), kind
    if kind == "nullable_int":
        return pd.array(draw(st.lists(st.one_of(st.integers(-9, 9), st.none()), min_size=n, max_size=n)),
                        dtype="Int64"), kind
    if kind == "nullable_bool":
        return pd.array(draw(st.lists(st.one_of(st.booleans(), st.none()), min_size=n, max_size=n)),
                        dtype="boolean"), kind
    if kind == "datetime":
        return pd.date_range("2026-01-01", periods=n, freq="D").to_numpy(), kind
    if kind == "category":
        return pd.Categorical(draw(st.lists(st.sampled_from(["lo", "hi"]), min_size=n, max_size=n))), kind
    if kind == "complex":
        return np.array(draw(st.lists(floats, min_size=n, max_size=n))) * (1 + 1j), kind
    return None, kind          # "collinear": a linear function of another column, filled in below


@st.composite
def bad_tables(draw):
    """(table, problem, roles): a table of often-bad columns and often-bad role choices.

    Most draws have distinct column names, a known problem and its required roles, so that the
    value checks (text, NaN, inf, constant, collinear, too few rows) are reached; some repeat or
    blank a name, drop a required role, add a role of another problem or name a missing column.
    """
    n = draw(st.sampled_from([0, 1, 3, 4, 5, 8, 12, 30]))
    unique = draw(st.integers(0, 9)) > 0
    names = draw(st.lists(NAMES, min_size=3, max_size=8, unique=unique))
    columns = []
    for name in names:
        values, kind = _column(draw, n)
        if values is None:
            base = next((v for v, k in columns if k in ("float", "int")), None)
            values = (2.0 * np.asarray(base, dtype=float) + 1.0) if base is not None else np.zeros(n)
        columns.append((values, kind))
    table = pd.DataFrame({i: v for i, (v, _) in enumerate(columns)})
    table.columns = names                                  # may repeat or be blank
    problem = draw(st.sampled_from([*PROBLEMS] * 5 + ["rdd"]))
    allowed, required = ALLOWED.get(problem, ()), REQUIRED.get(problem, ())
    pool = list(draw(st.permutations(names)))

    def pick():
        """Mostly a column not used yet; sometimes a used one or one not in the table."""
        if pool and draw(st.integers(0, 9)) > 0:
            return pool.pop()
        return draw(st.sampled_from([*names, "missing_col"]))

    roles = {}
    for role in ROLE_NAMES:
        chance = 27 if role in required else 15 if role in allowed else 1      # out of 30
        if draw(st.integers(0, 29)) >= chance:
            continue
        if role == "outcome" or (role == "treatment" and draw(st.integers(0, 4))):
            roles[role] = pick()
        else:
            roles[role] = [pick() for _ in range(draw(st.integers(1, 2)))]
    roles.setdefault("outcome", "")                        # a required argument of CausalData
    return table, problem, roles


def _kind_of(message: str) -> str:
    """The message with names and numbers blanked out, to count kinds of answer."""
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", message.split(";")[0].split(":")[0]))[:60]


def _names_something(message: str, table: pd.DataFrame, problem: str) -> bool:
    """The message names a column, a role, the problem, or (table-level) the rows."""
    quoted = [f"'{c}'" for c in map(str, table.columns)] + ["'missing_col'"]
    return (any(q in message for q in quoted) or any(w in message for w in ROLE_WORDS)
            or problem.upper() in message or repr(problem) in message or "row" in message)


@settings(max_examples=cases.HYPOTHESIS_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(bad_tables())
def test_role_validator_raises_only_dmlcore_errors_naming_a_column_or_role(case):
    table, problem, roles = case
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # no numpy/pandas warning leaks out either
        try:
            data = CausalData(table, problem, **roles)
        except DMLCoreError as err:
            message = str(err)
            event("error: " + _kind_of(message))
            assert message and "\n" not in message
            assert _names_something(message, table, problem), message
            return
    event("accepted")
    # accepted: every used column is numeric and finite, required roles are there
    arrays = data.cmr()
    assert np.isfinite(arrays.y).all() and np.isfinite(arrays.inputs).all()
    assert np.isfinite(arrays.conditioning).all()
    assert len(data.table) >= 4


@settings(max_examples=cases.HYPOTHESIS_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_one_bad_column_in_a_good_table_is_named(data):
    """One column of a valid IV or PCL table replaced by a bad one: the answer names that column."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    n = data.draw(st.sampled_from([4, 12, 30, 200]))
    table = pd.DataFrame(rng.normal(size=(n, 6)), columns=["y", "a", "z1", "z2", "x1", "x2"])
    problem = data.draw(st.sampled_from(["iv", "pcl"]))
    if problem == "iv":
        roles = dict(outcome="y", treatment="a", instrument=["z1", "z2"], covariates=["x1", "x2"])
    else:
        roles = dict(outcome="y", treatment="a", treatment_proxy=["z1", "z2"], outcome_proxy=["x1"],
                     covariates=["x2"])
    column = data.draw(st.sampled_from(list(table.columns)))
    values, kind = _column(data.draw, n)
    if values is None:                                   # collinear with another role column
        if data.draw(st.booleans()):                     # often the second instrument / proxy
            column = "z2"
        other = data.draw(st.sampled_from([c for c in table.columns if c != column]))
        values = 2.0 * table[other].to_numpy() - 1.0
    table[column] = values
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            CausalData(table, problem, **roles)
        except DMLCoreError as err:
            event(f"{kind}: " + _kind_of(str(err)))
            assert f"'{column}'" in str(err) or (kind in ("collinear", "constant") and "linear combination"
                                                 in str(err)), (kind, str(err))
            return
    event(f"{kind}: accepted")
    assert kind in ("float", "int", "bool", "nullable_int", "nullable_bool", "collinear", "float_bad") or (
        kind == "constant" and column in ("x1", "x2"))         # a constant covariate is allowed


@settings(max_examples=cases.HYPOTHESIS_EXAMPLES // 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_valid_roles_on_a_good_table_never_fail(data):
    """The other side: on a clean table any well-formed role choice of distinct columns is accepted."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    n = data.draw(st.integers(4, 60))
    table = pd.DataFrame(rng.normal(size=(n, 6)), columns=["y", "a", "z1", "z2", "x1", "x2"])
    problem = data.draw(st.sampled_from(PROBLEMS))
    if problem == "iv":
        CausalData(table, "iv", "y", treatment="a", instrument=["z1", "z2"][:data.draw(st.integers(1, 2))],
                   covariates=data.draw(st.sampled_from([[], ["x1"], ["x1", "x2"]])))
    elif problem == "pcl":
        CausalData(table, "pcl", "y", treatment="a", treatment_proxy=["z1", "z2"], outcome_proxy="x1",
                   covariates=data.draw(st.sampled_from([[], ["x2"]])))
    else:
        CausalData(table, "cmr", "y", inputs=["a", "x1"], conditioning=["z1", "x1"])


# ------------------------------------------------------------ collinear instruments
def collinear_table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    z, u, x = rng.normal(size=(3, n))
    a = z + u
    return pd.DataFrame({"y": 2 * a + 3 * u + rng.normal(size=n), "a": a, "z1": z, "z2": 2 * z,
                         "z3": z - 0.5 * x + 1, "x": x, "noise": z + 1e-3 * rng.normal(size=n)})


@pytest.mark.parametrize("roles, column, partners", [
    (dict(instrument=["z1", "z2"]), "z2", "'z1'"),
    (dict(instrument=["z1", "z3"], covariates=["x"]), "z3", "'x', 'z1'"),
    (dict(instrument=["z3", "z1"], covariates=["x"]), "z1", "'x', 'z3'"),
])
def test_collinear_instrument_is_caught_at_role_validation(roles, column, partners):
    with pytest.raises(DMLCoreError) as caught:
        CausalData(collinear_table(), "iv", "y", treatment="a", **roles)
    message = str(caught.value)
    assert f"Column '{column}' (instrument)" in message and "linear combination" in message
    assert partners in message and "Remove it from the instruments" in message


def test_instrument_that_is_a_function_of_the_covariates_alone():
    table = collinear_table()
    table["zx"] = 3 * table["x"] - 1
    with pytest.raises(DMLCoreError, match=r"Column 'zx' \(instrument\) is a linear combination of 'x'.*"
                                           r"not identified"):
        CausalData(table, "iv", "y", treatment="a", instrument="zx", covariates=["x"])


def test_collinear_treatment_proxy_is_caught():
    table = collinear_table()
    with pytest.raises(DMLCoreError, match=r"Column 'z2' \(treatment proxy\) is a linear combination of 'z1'"):
        CausalData(table, "pcl", "y", treatment="a", treatment_proxy=["z1", "z2"], outcome_proxy="x")


def test_a_rare_dummy_instrument_on_a_large_table_is_not_called_collinear():
    table = collinear_table(n=5000)
    table["rare"] = 0.0
    table.loc[[17, 4321], "rare"] = 1.0                # constant on most row samples
    CausalData(table, "iv", "y", treatment="a", instrument=["z1", "rare"], covariates=["x"])
    table["rare_copy"] = 3 * table["rare"]
    with pytest.raises(DMLCoreError, match=r"'rare_copy' \(instrument\) is a linear combination of 'rare'"):
        CausalData(table, "iv", "y", treatment="a", instrument=["z1", "rare", "rare_copy"], covariates=["x"])


def test_nearly_collinear_instruments_are_accepted():
    CausalData(collinear_table(), "iv", "y", treatment="a", instrument=["z1", "noise"])


# ------------------------------------------------------------ 2SLS on image data
def test_2sls_drops_constant_pixel_columns_on_digits():
    loaded = load_dataset("digits-iv", n=600, seed=0)
    run = fit_run(loaded.data, "2sls", truth=loaded.truth, dataset="digits-iv")
    est = run.estimator
    constant = [c for c in loaded.data.covariates if loaded.data.table[c].nunique() == 1]
    assert constant and est.dropped_columns_ == constant
    assert not set(constant) & set(run.record["coefficients"])
    assert all(np.isfinite(v) and v >= 0 for v in run.record["std_errors"].values())
    assert any("constant" in note and constant[0] in note for note in est.notes_)
    assert np.isfinite(run.record["mse"])
    # predict still takes every input column, the dropped ones included
    frame = loaded.data.table[loaded.data.input_columns]
    assert np.allclose(est.predict(frame), est.predict(frame.to_numpy()))


def test_2sls_on_dsprites_says_what_to_use_instead_without_nan_or_warning():
    loaded = load_dataset("dsprites-pcl", n=500, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DMLCoreError) as caught:
            TwoStageLeastSquares().fit(loaded.data)
    message = str(caught.value)
    assert "4098 regressors, 4096 of them image pixels" in message and "max_columns=1000" in message
    assert "DML-CMR or the naive plug-in with the neural-network learner" in message


def test_2sls_with_more_regressors_than_rows_says_what_to_do():
    loaded = load_dataset("digits-iv", n=50, seed=0)         # 66 regressors, 50 rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DMLCoreError) as caught:
            TwoStageLeastSquares().fit(loaded.data)
    message = str(caught.value)
    assert "needs more rows than regressors" in message and "only 50 rows" in message
    assert "image pixels" in message and "Simulate at least" in message


def test_2sls_refuses_more_columns_than_max_columns():
    rng = np.random.default_rng(4)
    table = pd.DataFrame(rng.normal(size=(200, 62)), columns=["y", "a", *[f"z{i}" for i in range(60)]])
    data = CausalData(table, "cmr", "y", inputs=["a"], conditioning=[f"z{i}" for i in range(60)])
    with pytest.raises(DMLCoreError, match=r"61 instruments: more than max_columns=50.*max_columns=\.\.\."):
        TwoStageLeastSquares(max_columns=50).fit(data)
    assert np.isfinite(TwoStageLeastSquares().fit(data).std_errors_).all()


def test_2sls_standard_errors_are_finite_or_an_error():
    rng = np.random.default_rng(3)
    n = 60
    z = rng.normal(size=(n, 30))
    x = z[:, :25] @ rng.normal(size=(25, 25)) * 1e3 + rng.normal(size=(n, 25))
    table = pd.DataFrame(np.column_stack([rng.normal(size=n), x, z]),
                         columns=["y", *[f"x{i}" for i in range(25)], *[f"z{i}" for i in range(30)]])
    data = CausalData(table, "cmr", "y", inputs=[f"x{i}" for i in range(25)],
                      conditioning=[f"z{i}" for i in range(30)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            est = TwoStageLeastSquares().fit(data)
        except DMLCoreError as err:
            assert "collinear" in str(err) or "standard errors" in str(err)
        else:
            assert np.isfinite(est.std_errors_).all() and (est.std_errors_ >= 0).all()


# ------------------------------------------------------------ known bad inputs: API and CLI
@pytest.mark.parametrize("case", cases.FILE_CASES + cases.ROLE_CASES + cases.SETTING_CASES,
                         ids=lambda c: c.name)
def test_known_bad_input_through_the_api(case):
    outcome = cases.through_api(case)
    if case.ok:                                         # e.g. a ';'-separated file: it loads and fits
        assert outcome.kind == "ok", outcome
        return
    assert outcome.kind == "error", outcome
    assert outcome.clean, outcome                       # a DMLCoreError (or a documented library gap)
    assert case.expect in outcome.message, outcome.message


@pytest.mark.parametrize("case", [c for c in cases.FILE_CASES + cases.ROLE_CASES + cases.SETTING_CASES
                                  if c.cli is not None], ids=lambda c: c.name)
def test_known_bad_input_through_the_cli(case, tmp_path, capsys):
    code, out, err = cases.through_cli(case, tmp_path, capsys)
    if case.ok:
        assert code == 0 and err == "" and "2sls on" in out, (code, out, err)
        return
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and case.expect in err, err


# ------------------------------------------------------------ training faults
@pytest.fixture(scope="module")
def small_iv():
    from dmlcore.data.simulate import simulate_demand_iv
    return simulate_demand_iv(n=300, seed=0)


@pytest.mark.parametrize("method, learner, stage", [
    ("dml-cmr", "nn", "outcome model"), ("dml-cmr", "nn", "conditional distribution"),
    ("dml-cmr", "nn", "second stage"), ("dml-cmr", "gb", "outcome model"),
    ("dml-cmr", "gb", "conditional distribution"), ("dml-cmr", "gb", "second stage"),
    ("naive", "linear", "second stage"), ("2sls", None, "2SLS"), ("sieve-2sls", None, "sieve"),
])
def test_cancel_works_at_every_stage(small_iv, method, learner, stage):
    seen = {"stage": ""}

    def callback(event):
        if event["type"] == "stage":
            seen["stage"] = event["stage"]

    def should_stop():
        return seen["stage"].startswith(stage)

    kwargs = dict(learner=learner, epochs=3, **({"folds": 3} if method == "dml-cmr" else {})) if learner else {}
    with pytest.raises(FitCancelled):
        fit_run(small_iv.data, method, truth=small_iv.truth, callback=callback, should_stop=should_stop,
                **kwargs)
    assert seen["stage"].startswith(stage)


def test_a_diverging_fit_fails_clearly_and_the_rest_of_the_batch_is_kept(tmp_path, small_iv):
    store = RunStore(tmp_path / "runs.sqlite3")
    jobs = JobRegistry(workers=1, store=store)
    try:
        good = jobs.submit_fit("alice", "#1 2SLS", data=small_iv.data, method="2sls", truth=small_iv.truth)
        bad = jobs.submit_fit("alice", "#1 DML-CMR · nn", data=small_iv.data, method="ce-dml-cmr",
                              truth=small_iv.truth, learner="nn", epochs=5, nuisance_params={"lr": 1e6},
                              outcome_learner="nn", sampler="nn")
        after = jobs.submit_fit("alice", "#1 Naive plug-in · linear", data=small_iv.data, method="naive",
                                truth=small_iv.truth, learner="linear")
        snaps = {name: jobs.wait(job, "alice", TIMEOUT) for name, job in
                 (("good", good), ("bad", bad), ("after", after))}
    finally:
        jobs.close()
    assert snaps["bad"].status == "failed"
    assert "diverged" in snaps["bad"].error and "smaller learning rate" in snaps["bad"].error
    assert snaps["bad"].run is None and snaps["bad"].run_id is None
    assert snaps["good"].status == snaps["after"].status == "done"
    stored = {row["label"] for row in store.list("alice")}
    assert stored == {"#1 2SLS", "#1 Naive plug-in · linear"}         # nothing finished was lost


def test_an_unexpected_exception_in_one_run_spares_the_others_and_the_worker(small_iv):
    jobs = JobRegistry(workers=1)
    gate = threading.Event()

    def crash(report, should_stop):
        report({"type": "stage", "stage": "outcome model s(c)", "fold": 0, "progress": 0.1})
        gate.wait(TIMEOUT)
        raise MemoryError("simulated: out of memory")

    try:
        first = jobs.submit("alice", "#1 crash", crash)
        other = jobs.submit_fit("bob", "#1 2SLS", data=small_iv.data, method="2sls")
        mine = jobs.submit_fit("alice", "#1 2SLS", data=small_iv.data, method="2sls")
        gate.set()
        results = [jobs.wait(first, "alice", TIMEOUT), jobs.wait(other, "bob", TIMEOUT),
                   jobs.wait(mine, "alice", TIMEOUT)]
    finally:
        jobs.close()
    assert [r.status for r in results] == ["failed", "done", "done"]
    assert results[0].error == "unexpected MemoryError: simulated: out of memory"


def test_the_store_failing_keeps_the_finished_run_in_memory(small_iv, tmp_path):
    class BrokenStore(RunStore):
        def save(self, *args, **kwargs):
            raise OSError("disk full")

    jobs = JobRegistry(workers=1, store=BrokenStore(tmp_path / "runs.sqlite3"))
    try:
        snap = jobs.wait(jobs.submit_fit("alice", "x", data=small_iv.data, method="2sls"), "alice", TIMEOUT)
    finally:
        jobs.close()
    assert snap.status == "done" and snap.run is not None and snap.run_id is None
    assert "could not be saved" in snap.error and "disk full" in snap.error


def test_cancel_while_queued_running_and_after_the_end(small_iv):
    jobs = JobRegistry(workers=1)
    try:
        running = jobs.submit_fit("alice", "long", data=small_iv.data, method="ce-dml-cmr", learner="nn",
                                  epochs=100000)
        queued = jobs.submit_fit("alice", "queued", data=small_iv.data, method="2sls")
        deadline = time.monotonic() + TIMEOUT
        while not jobs.get(running, "alice").losses:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert jobs.cancel(queued, "alice") and jobs.get(queued, "alice").status == "cancelled"
        assert jobs.cancel(running, "alice")
        assert jobs.wait(running, "alice", TIMEOUT).status == "cancelled"
        assert jobs.cancel(running, "alice") is False                 # nothing left to cancel
        assert jobs.cancel(running, "mallory") is False               # nor someone else's
    finally:
        jobs.close()
