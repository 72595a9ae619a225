"""Studies of the user's own table (``study --csv`` and the Study page's current data): the table
is kept by its content hash, seeds change the split and the learners' randomness, fits are paired."""

from __future__ import annotations

import pandas as pd
import pytest

from dmlcore import cli
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.data.tables import keep_table, table_hash
from dmlcore.studies import run_study
from dmlcore.studies.spec import config_key, spec_from_flags
from tests.reliability_cases import GOOD_ROLES, base_table

ROLE_ARGS = ["--outcome", "y", "--treatment", "a", "--instrument", "z", "--covariates", "x"]
METHODS = ["--methods", "2sls,dml-cmr", "--learner", "linear", "--folds", "2"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    return tmp_path


def _data(table):
    roles = dict(GOOD_ROLES)
    return CausalData(table, roles.pop("problem"), roles.pop("outcome"), **roles)


def test_a_csv_study_runs_is_paired_and_reused(home, capsys):
    path = home / "mine.csv"
    base_table().to_csv(path, index=False)
    argv = ["study", "--csv", str(path), *ROLE_ARGS, *METHODS, "--seeds", "0-2", "--out", str(home / "out")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "study: 6 fits, 0 stored, 6 to run" in out
    fits = pd.read_csv(home / "out" / "fits.csv")
    assert set(fits["dataset"]) == {"table"} and (fits["status"] == "done").all()
    assert fits["heldout_relative"].notna().all()               # no truth: the held-out residual instead
    tsls, dml = (fits[fits["method"] == m].sort_values("seed") for m in ("2sls", "dml-cmr"))
    assert tsls["effect_estimate"].nunique() == 1                # same rows at every seed: 2SLS does not move
    assert dml["effect_estimate"].nunique() == 3                 # the split and the learners' randomness do
    paired = pd.read_csv(home / "out" / "paired.csv")
    assert paired.loc[0, "pairs"] == 3 and paired.loc[0, "metric"] == "heldout_relative"
    assert cli.main(argv) == 0                                   # the same file again: every fit reused
    assert "6 stored, 0 to run" in capsys.readouterr().out
    changed = base_table()
    changed.loc[0, "y"] += 1.0                                   # one value changed: a new table, new fits
    changed.to_csv(path, index=False)
    assert cli.main(argv) == 0
    assert "0 stored, 6 to run" in capsys.readouterr().out


def test_the_store_key_includes_the_content_hash(home):
    data = _data(base_table())
    options = keep_table(data, "mine.csv")
    assert options["table"] == table_hash(base_table()[data.used_columns()])
    loaded = load_dataset("table", **options).data
    assert loaded.describe_roles() == data.describe_roles() and len(loaded.table) == len(base_table())
    spec = spec_from_flags("table", methods="2sls", seeds="0", data={k: [v] for k, v in options.items()})
    (config,) = spec.configs()
    other = dict(config, data=dict(config["data"], table="0" * 64))
    assert config["data"]["table"] == options["table"] and config_key(config) != config_key(other)
    result = run_study(spec, keep=False)
    assert result.fits.loc[0, "status"] == "done"


@pytest.mark.parametrize("argv, words", [
    (["--outcome", "y", "--treatment", "a"], "needs a column with the role 'instrument'"),
    (["--outcome", "y", "--treatment", "a", "--instrument", "a"], "has two roles"),
    ([*ROLE_ARGS, "--sizes", "100"], "--sizes does not apply"),
])
def test_a_study_on_a_table_without_valid_roles_is_one_line_and_exit_2(home, capsys, argv, words):
    path = home / "mine.csv"
    base_table().to_csv(path, index=False)
    assert cli.main(["study", "--csv", str(path), *argv, "--methods", "2sls", "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err
