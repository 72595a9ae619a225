"""Your own method (dmlcore.register_method, DMLCORE_PLUGINS, the CLI's --plugin): a CMREstimator subclass in a
file outside the package runs in a study from the CLI beside the built-in methods."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from dmlcore import CMREstimator, register_method
from dmlcore.cli import main
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHOD_TITLES, METHODS
from dmlcore import plugins

PLUGIN = textwrap.dedent('''
    """A user's own method: f is the mean outcome everywhere."""
    import numpy as np

    import dmlcore


    class MeanOutcome(dmlcore.CMREstimator):
        """Predicts the mean outcome everywhere."""

        def __init__(self, shrink: float = 0.0, seed: int = 0):
            self.shrink, self.seed = shrink, seed

        @classmethod
        def check_roles(cls, data):
            if data.problem == "pcl":
                raise dmlcore.DMLCoreError("Mean outcome takes IV and CMR problems, not PCL; choose IV data.")

        def _fit(self, data, monitor):
            monitor.stage("mean")
            self.mean_ = (1 - self.shrink) * float(np.mean(data.table[data.outcome]))
            self.input_columns_ = list(data.input_columns)
            self.fold_losses_ = []

        def predict(self, X):
            self._check_fitted()
            return np.full(len(X), self.mean_)


    dmlcore.register_method("{name}", MeanOutcome, title="Mean outcome", problems=("iv", "cmr"))
''')


@pytest.fixture
def own_method(tmp_path, monkeypatch):
    """A plugin file outside the package; the registry and DMLCORE_PLUGINS as they were afterwards."""
    name = f"mean-outcome-{os.getpid()}"
    path = tmp_path / "elsewhere" / "my_mean.py"
    path.parent.mkdir()
    path.write_text(PLUGIN.replace("{name}", name))
    monkeypatch.setenv(plugins.ENV, "")
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    yield name, path
    METHODS.pop(name, None)
    METHOD_TITLES.pop(name, None)
    plugins._loaded.pop(str(path), None)
    sys.modules.pop("dmlcore_plugin_my_mean", None)


def test_a_method_in_a_file_outside_the_package_runs_in_a_study_from_the_cli(own_method, tmp_path, capsys):
    name, path = own_method
    assert name not in METHODS
    code = main(["--plugin", str(path), "study", "--dataset", "demand-iv", "--sizes", "200", "--methods",
                 f"2sls,{name}", "--seeds", "0-5", "--no-debias", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    fits = pd.read_csv(tmp_path / "out" / "fits.csv")
    mine = fits[fits["method"] == name]
    assert len(mine) == 6 and (mine["status"] == "done").all() and mine["mse"].notna().all()
    assert f"2SLS is ahead of Mean outcome" in out                    # beside the built-in one, by its title
    assert os.environ[plugins.ENV] == str(path)                          # what the study's workers inherit
    assert METHODS[name].plugin == "dmlcore_plugin_my_mean" and METHODS[name].cls.__name__ == "MeanOutcome"


def test_the_contract_battery_runs_on_a_plugin_method(own_method, tmp_path):
    name, path = own_method
    env = {**os.environ, plugins.ENV: str(path), "PYTHONPATH": os.pathsep.join(sys.path)}
    tests = Path(__file__).parent
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(tests /
                           "test_contract.py"), "-k", name], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tests.parent)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " 0 passed" not in proc.stdout


def test_register_method_refuses_in_one_line(own_method):
    class NotAnEstimator:
        pass

    class Mine(CMREstimator):
        def __init__(self, folds: int = 5):
            self.folds = folds

    with pytest.raises(DMLCoreError, match="'2sls' is taken"):
        register_method("2sls", Mine)
    with pytest.raises(DMLCoreError, match="subclass of dmlcore.CMREstimator"):
        register_method("mine", NotAnEstimator)
    with pytest.raises(DMLCoreError, match="lower-case"):
        register_method("My Method", Mine)
    with pytest.raises(DMLCoreError, match="takes no argument learner"):
        register_method("mine", Mine, settings=("folds", "learner"))
    with pytest.raises(DMLCoreError, match="unknown speed"):
        register_method("mine", Mine, settings=("speed",))
    assert "mine" not in METHODS


def test_a_missing_plugin_is_refused_in_one_line(own_method, tmp_path, capsys):
    assert main(["--plugin", str(tmp_path / "nowhere.py"), "list", "methods"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere.py" in err and "does not exist" in err


def test_a_broken_dmlcore_plugins_warns_at_import_and_the_cli_refuses(own_method, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(plugins.ENV, str(tmp_path / "gone.py"))
    monkeypatch.setattr(plugins, "failure", None)
    with pytest.warns(RuntimeWarning, match="gone.py"):
        plugins.load_at_import()
    assert "does not exist" in plugins.failure
    assert main(["list", "methods"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gone.py" in err
