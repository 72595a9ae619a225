"""bench.csv_rows.append: a benchmark's rows added to its CSV, earlier rows kept."""

import pandas as pd

from bench.csv_rows import append


def test_rows_are_appended_and_a_new_column_is_empty_for_the_earlier_rows(tmp_path):
    out = tmp_path / "rows.csv"
    append(out, [{"seed": 0, "mse": 1.5}])
    append(out, [{"seed": 1, "mse": 2.5, "iv_strength": 0.4}])
    frame = pd.read_csv(out)
    assert frame["seed"].tolist() == [0, 1] and frame["mse"].tolist() == [1.5, 2.5]
    assert pd.isna(frame.loc[0, "iv_strength"]) and frame.loc[1, "iv_strength"] == 0.4
