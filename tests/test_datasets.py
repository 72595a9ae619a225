"""Tests of dmlcore.data.datasets: real data sets shipped with linearmodels or dmlcore (rhc: test_rhc.py)."""

import numpy as np
import pytest

from dmlcore.data.datasets import REAL_DATASETS, load_real_dataset
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError

pytest.importorskip("linearmodels")


@pytest.fixture(scope="module", params=sorted(REAL_DATASETS))
def loaded(request):
    return request.param, load_real_dataset(request.param)


def test_required_names_are_offered():
    assert {"card", "mroz"} <= set(REAL_DATASETS)


def test_loads_with_suggested_roles_and_complete_rows(loaded):
    name, data = loaded
    info = REAL_DATASETS[name]
    assert isinstance(data, CausalData) and data.problem == info.problem and data.name == name
    assert list(data.table.columns)[:len(info.columns)] == info.columns      # the role columns first
    assert set(info.loader().columns) <= set(data.table.columns)            # and every other column kept
    assert len(data.table) == info.rows
    assert np.isfinite(data.table[info.columns].to_numpy(dtype=float)).all()
    assert data.roles() == {k: [v] if k == "outcome" else v for k, v in info.roles.items()}


def test_information_cites_source_and_warns_truth_unknown():
    for info in REAL_DATASETS.values():
        assert "Source:" in info.description and info.package in ("linearmodels", "dmlcore")
        assert "unknown" in info.caveat


def test_instruments_move_the_treatment(loaded):
    name, data = loaded
    table = data.table
    for instrument in data.instrument:
        assert abs(np.corrcoef(table[instrument], table[data.treatment[0]])[0, 1]) > 0.1, name


def test_card():
    table = load_real_dataset("card").table
    assert len(table) == 3010
    assert set(table["nearc4"].unique()) == {0, 1}
    assert table["educ"].between(1, 18).all() and table["lwage"].between(4, 8).all()
    assert (table["expersq"] == table["exper"] ** 2).all()
    near, far = (table.loc[table["nearc4"] == v, "educ"].mean() for v in (1, 0))
    assert near - far > 0.5          # more schooling near a four-year college


def test_mroz_keeps_women_with_a_wage():
    table = load_real_dataset("mroz").table
    assert len(table) == 428
    assert table["educ"].between(5, 17).all() and table["fatheduc"].ge(0).all()
    assert np.corrcoef(table["educ"], table["lwage"])[0, 1] > 0.2


def test_names_are_case_insensitive_and_unknown_names_listed():
    assert len(load_real_dataset(" Mroz ").table) == 428
    with pytest.raises(DMLCoreError, match=r"Unknown data set 'nope'.*card.*mroz"):
        load_real_dataset("nope")
