"""The estimator contract (dmlcore.estimators._base), checked for every method of the registry.

Each method gets tiny data (the linear IV or PCL design of conftest) and a tiny budget, so the
battery stays fast; what it checks does not depend on the budget: fit returns self, predict
before fit raises NotFittedError, the same seed gives the same numbers, should_stop cancels,
data of a problem the method does not take are refused with its name, the run record is JSON,
and get_params / set_params / clone round-trip.

Your own method (dmlcore.register_method) is checked too when its module is listed in
DMLCORE_PLUGINS: ``DMLCORE_PLUGINS=path/to/my_method.py python -m pytest tests/test_contract.py -k my-method``
runs the battery on it with its defaults (docs/studies.md, "Your own method").
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone

from conftest import make_linear_iv, make_linear_pcl
from golden_records import path_of, stable
from dmlcore.errors import DMLCoreError, FitCancelled, NotFittedError
from dmlcore.estimators import CAPABILITIES, METHODS, CMREstimator, for_method, make_estimator
from dmlcore.runs import fit_run
from dmlcore.estimators.settings import DECLARED, SETTINGS, FitSettings

# the smallest budgets that still run every step of each method (its own settings in f_params)
TINY = {
    "dml-cmr": dict(learner="linear", folds=2, n_draws=2),
    "ce-dml-cmr": dict(learner="linear", n_draws=2),
    "naive": dict(learner="linear", n_draws=2),
    "regression": dict(learner="linear"),
    "2sls": {},
    "liml": {},
    "fuller": {},
    "gmm-iv": {},
    "sieve-2sls": {},
    "kiv": dict(f_params=dict(n_features=10, grid=(1e-3, 1e-1))),
    "dfiv": dict(epochs=2, f_params=dict(stage1_iter=2, covariate_iter=2)),
    "deepgmm": dict(f_params=dict(max_epochs=4, burn_in=2, eval_every=2, batch_size=64)),
    "kpv": dict(f_params=dict(n_features=10)),
    "pmmr": dict(f_params=dict(n_features=10)),
    "nmmr": dict(epochs=3),
    "nmmr-v": dict(epochs=3),
}
ROWS = 160
BUILT_IN = {name for name, entry in METHODS.items() if entry.plugin is None}
for _name in set(METHODS) - BUILT_IN:       # a plugin's method (DMLCORE_PLUGINS): its own defaults
    TINY.setdefault(_name, {})


def on_cpu(method: str) -> dict:
    """``device="cpu"`` for a method that reads the device (the others refuse it)."""
    return {"device": "cpu"} if "device" in METHODS[method].settings else {}


def tiny(method: str, seed: int = 0):
    return make_estimator(method, seed=seed, **on_cpu(method), **TINY[method])


def data_for(method: str, seed: int = 0):
    """The linear design of the method's first problem (PCL for the proximal peers)."""
    return make_linear_pcl(ROWS, seed) if METHODS[method].problems[0] == "pcl" else make_linear_iv(ROWS, seed)


@pytest.fixture(params=list(METHODS))
def method(request):
    return request.param


def test_every_registered_method_has_a_tiny_budget():
    assert set(TINY) - (set(METHODS) - BUILT_IN) == BUILT_IN


def test_the_registry_entry_describes_its_class(method):
    entry = METHODS[method]
    est = tiny(method)
    assert isinstance(est, entry.cls) and issubclass(entry.cls, CMREstimator)
    # a setting the method reads is taken; one it does not read is refused in one line naming it
    if "cov_type" in entry.settings:
        assert type(make_estimator(method, cov_type="robust", cluster=None, **TINY[method])) is type(est)
    else:
        with pytest.raises(DMLCoreError, match=f"cov_type='robust' applies to .* only, not to {method}; leave it"):
            make_estimator(method, cov_type="robust", cluster=None, **TINY[method])
    assert set(entry.cls.capabilities) <= set(CAPABILITIES)
    assert entry.settings <= set(SETTINGS) and set(entry.problems) <= {"iv", "pcl", "cmr"}
    assert entry.title and entry.help and (entry.uses_learner or entry.record_learner)


def test_fit_returns_self_and_predict_before_fit_raises(method):
    est, data = tiny(method), data_for(method)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict(data.table[data.input_columns])
    assert est.fit(data) is est
    out = est.predict(data.table[data.input_columns])
    assert out.shape == (ROWS,) and np.isfinite(out).all()
    assert isinstance(est.input_columns_, list) and isinstance(est.fold_losses_, list)


def test_same_seed_gives_the_same_numbers(method):
    data = data_for(method)
    X = data.table[data.input_columns]
    first, second = (tiny(method, seed=3).fit(data).predict(X) for _ in range(2))
    assert np.array_equal(first, second)


def test_should_stop_cancels(method):
    calls = []

    def stop():
        calls.append(1)
        return True

    with pytest.raises(FitCancelled):
        tiny(method).fit(data_for(method), should_stop=stop)
    assert calls


def test_data_of_another_problem_are_refused_by_name(method):
    entry = METHODS[method]
    with pytest.raises(DMLCoreError, match="CausalData"):
        tiny(method).fit(data_for(method).table)
    other = [p for p in ("iv", "pcl") if p not in entry.problems]
    if not other:
        pytest.skip(f"{method} takes every problem")
    data = make_linear_iv(ROWS) if other[0] == "iv" else make_linear_pcl(ROWS)
    with pytest.raises(DMLCoreError) as err:
        tiny(method).fit(data)
    assert entry.title.split("-")[0] in str(err.value) and "\n" not in str(err.value)
    assert entry.refusal(data) is not None and entry.refusal(data_for(method)) is None


def record_of(method: str) -> dict:
    """The method's run record (through its JSON) on the fixed seed and tiny budget of this battery."""
    run = fit_run(data_for(method), method, heldout_folds=0, **on_cpu(method), **TINY[method])
    return json.loads(run.to_json())


def test_the_run_record_is_json_and_unchanged(method):
    record = record_of(method)
    assert record["method"] == method and record["n"] == ROWS
    assert record["learner"] == (TINY[method].get("learner") if METHODS[method].uses_learner
                                 else METHODS[method].record_learner)
    if method in BUILT_IN:     # the record kept in tests/records (python tests/golden_records.py writes it anew)
        assert stable(record) == path_of(method).read_text(), f"{method}'s record moved: see tests/golden_records.py"


def test_get_params_round_trips(method):
    est = tiny(method)
    params = est.get_params()
    assert est.set_params(**params) is est and _same(est.get_params(), params)
    twin = clone(est)
    assert twin is not est and type(twin) is type(est) and _same(twin.get_params(), params)
    name = next(iter(est.get_params(deep=False)))
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(no_such_setting=1)
    assert name in params


def _same(a: dict, b: dict) -> bool:
    if set(a) != set(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        if hasattr(x, "get_params"):     # a nested estimator: compared by its own parameters
            if type(x) is not type(y) or not _same(x.get_params(), y.get_params()):
                return False
        elif x != y:
            return False
    return True


def test_capabilities_are_declared_not_guessed(linear_iv):
    data = linear_iv(300)
    plain = make_estimator("dml-cmr", learner="linear", folds=2, n_draws=2).fit(data)
    sieve = make_estimator("dml-cmr", learner="linear", folds=2, n_draws=2, f_model="sieve").fit(data)
    reps = make_estimator("dml-cmr", learner="linear", folds=2, n_draws=2, reps_crossfit=2).fit(data)
    assert not plain.supports("predict_interval") and not plain.supports("linear_functional")
    assert sieve.supports("predict_interval") and sieve.supports("linear_functional")
    assert reps.supports("predict_spread") and not reps.supports("predict_interval")
    assert make_estimator("2sls").fit(data).supports("linear_functional")
    # the Anderson-Rubin set and the not-debiased baseline follow declarations, not class names
    holders = {m for m in METHODS if "anderson_rubin" in METHODS[m].cls.capabilities}
    assert holders == {"2sls", "liml", "fuller", "gmm-iv"}
    assert {m for m in METHODS if "ignores_conditioning" in METHODS[m].cls.capabilities} == {"regression"}
    assert not plain.supports("anderson_rubin") and not plain.supports("ignores_conditioning")
    with pytest.raises(DMLCoreError, match="Unknown capability"):
        plain.supports("predict_proba")


# ------------------------------------------------------------------ settings: declared once, refused where unread
@pytest.mark.parametrize("name", [n for n, s in SETTINGS.items() if s.study])
def test_every_declared_setting_round_trips_through_the_cli_and_a_study(name):
    """A study key's setting has a flag of `fit` and a key of a study grid, and a value given either way
    reaches the FitSettings that make_estimator and fit_run take (for a method that reads it); every other flag:
    tests/test_declared_once.py."""
    from dmlcore.cli import build_parser
    from dmlcore.studies.spec import spec_from_dict

    method = next(m for m, entry in METHODS.items() if name in entry.settings)
    value = SETTINGS[name].example()
    SETTINGS[name].check(value)
    args = build_parser().parse_args(["fit", "--method", method, SETTINGS[name].flag, str(value)])
    assert getattr(FitSettings.from_args(args), name) == value
    config = spec_from_dict({"dataset": "demand-iv", "methods": [method], "seeds": "0", name: [value]}).configs()[0]
    assert getattr(FitSettings.from_config(config), name) == value
    assert getattr(for_method(FitSettings.from_config(config), method), name) == value   # what the fit gets


@pytest.mark.parametrize("name", [n for n, s in SETTINGS.items() if s.scope == "method"])
def test_a_setting_a_method_does_not_read_is_refused_in_one_line_everywhere(name):
    """make_estimator, fit_run and a study grid refuse a setting its method does not read (none of them drops
    it), naming it; a method that reads it takes it."""
    from dmlcore.studies.spec import spec_from_dict

    value = SETTINGS[name].example()
    readers = [m for m, entry in METHODS.items() if name in entry.settings]
    others = [m for m in METHODS if m not in readers]
    assert readers, f"no method reads {name}"
    for method in others:
        with pytest.raises(DMLCoreError, match=f"{name}=.* not to {method}; leave it out") as err:
            make_estimator(method, **{name: value})
        assert "\n" not in str(err.value)
        with pytest.raises(DMLCoreError, match=f"{name}=.* not to {method}"):
            fit_run(data_for(method), method, **{name: value})       # refused before any fit
    if SETTINGS[name].study and others:
        with pytest.raises(DMLCoreError, match=f"does not use '{name}'"):
            spec_from_dict({"dataset": "demand-iv", "methods": [others[0]], "seeds": "0", name: [value]})


def test_a_default_is_declared_once():
    """The estimators' constructors, the study grid and the CLI take their defaults from the declarations."""
    import inspect

    from dmlcore.cli import build_parser
    from dmlcore.estimators import DEFAULTS, DMLCMR, OutcomeRegression
    from dmlcore.studies.spec import FIT_SETTINGS

    fit = vars(build_parser().parse_args(["fit"]))
    # every method's class but the peers' (their own epochs: docs/peers.md)
    for cls in {DMLCMR, OutcomeRegression, *(entry.cls for entry in METHODS.values() if not entry.peer)}:
        for name, parameter in inspect.signature(cls).parameters.items():
            if name in SETTINGS and name not in ("seed", "nuisance_params", "f_params", "cluster"):
                assert parameter.default == getattr(DEFAULTS, name), (cls.__name__, name)
    assert FIT_SETTINGS == {n: getattr(DEFAULTS, n) for n, s in SETTINGS.items() if s.study}
    assert all(fit[s.dest] == getattr(DEFAULTS, n) for n, s in SETTINGS.items()
               if "fit" in s.commands and s.cli_default is DECLARED)


def test_unknown_settings_are_refused_naming_the_known_ones():
    with pytest.raises(DMLCoreError, match="Unknown fit setting.*'n_draw'.*known: learner"):
        make_estimator("dml-cmr", n_draw=4)
    with pytest.raises(DMLCoreError, match="Unknown fit setting.*'lerner'"):
        fit_run(data_for("2sls"), "2sls", lerner="gb")


def test_every_study_setting_declares_what_a_user_reads():
    """A study key is a column of its tables: its header comes from the declaration, so none is blank."""
    from dmlcore.estimators.settings import SETTINGS, STUDY_SETTINGS
    from dmlcore.studies.summarize import COLUMN_LABELS
    assert all(SETTINGS[name].label and COLUMN_LABELS[name] == SETTINGS[name].label for name in STUDY_SETTINGS)
