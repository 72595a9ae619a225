"""Tests of dmlcore.data.io: loading user tables safely, preview and numeric checks."""

import io
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlcore.data.io import load_table, numeric_problems, summarize
from dmlcore.errors import DMLCoreError

FAST = settings(max_examples=60, deadline=None, database=None)


def parquet_bytes(table) -> bytes:
    buffer = io.BytesIO()
    if isinstance(table, pa.Table):
        pq.write_table(table, buffer)
    else:
        table.to_parquet(buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------ good input
@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_delimiter_is_sniffed(delimiter):
    text = delimiter.join(["y", "x", "name"]) + "\n" + delimiter.join(["1.5", "2", "a b"]) + "\n"
    table = load_table(text.encode(), "data.csv")
    assert list(table.columns) == ["y", "x", "name"]
    assert table["y"].tolist() == [1.5] and table["x"].dtype.kind == "i"


def test_tsv_extension_means_tab():
    table = load_table(b"a,b\tc\n1,5\t2\n", "data.tsv")
    assert list(table.columns) == ["a,b", "c"]


def test_sources_path_stream_and_text_stream(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,2\n")
    stream = io.BytesIO(b"a,b\n1,2\n")
    stream.read()                                   # already read once, as on a rerun
    stream.name = "upload.csv"
    for source in (path, str(path), stream, io.StringIO("a,b\n1,2\n")):
        assert load_table(source).to_dict("list") == {"a": [1], "b": [2]}


def test_bom_and_spaces_in_names_removed():
    table = load_table(b"\xef\xbb\xbf a , b\n1,2\n", "t.csv")
    assert list(table.columns) == ["a", "b"]


def test_short_rows_are_padded_with_missing():
    table = load_table(b"a,b\n1,2\n3\n", "t.csv")
    assert np.isnan(table.loc[1, "b"])


def test_parquet_by_extension_and_by_signature():
    frame = pd.DataFrame({"x": [1.0, 2.0], "n": [1, 2], "s": ["a", "b"]})
    data = parquet_bytes(frame)
    for name in ("t.parquet", "t.csv", None):
        pd.testing.assert_frame_equal(load_table(data, name), frame, check_dtype=False)


def test_text_starting_with_par1_is_not_parquet():
    assert list(load_table(b"PAR1,b\n1,2\n", "t.csv").columns) == ["PAR1", "b"]


def test_parquet_named_index_becomes_a_column():
    frame = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.Index([7, 8], name="id"))
    table = load_table(parquet_bytes(frame), "t.parquet")
    assert list(table.columns) == ["id", "x"] and table.index.tolist() == [0, 1]


def test_thousands_separators_stay_text():
    table = load_table(b'amount,n\n"1,234",2\n"5,678.5",3\n', "t.csv")
    assert table["amount"].tolist() == ["1,234", "5,678.5"]
    assert table["n"].dtype.kind == "i"
    [message] = numeric_problems(table, ["amount", "n"])
    assert "'amount'" in message and "'1,234'" in message and "thousands" in message


# ------------------------------------------------------------------- bad input
BAD_CASES = [
    (b"", "t.csv", "empty"),
    (b" \n\n \n", "t.csv", "empty"),
    (b"PK\x03\x04\x14\x00rest", "t.csv", "Excel workbook"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "t.csv", "legacy Excel"),
    ("a,b\n1,2\n".encode("utf-16"), "t.csv", "UTF-16"),
    (b"a,b\n1\x002\n", "t.csv", "NUL bytes"),
    (b"\x1f\x8b\x08rest", "t.csv", "gzip"),
    (pickle.dumps(pd.DataFrame({"a": [1]})), "t.csv", "pickle"),
    ("name,b\nJos\xe9,2\n".encode("latin-1"), "t.csv", r"not UTF-8.*0xe9 on line 2"),
    (b"a,b,a\n1,2,3\n", "t.csv", "repeated column names: 'a'"),
    (b"a ,b, a\n1,2,3\n", "t.csv", "repeated column names"),
    (b",a,b\n0,1,2\n", "t.csv", r"Column 1 \(of 3\) has no name.*row index"),
    (b"a,,b,\n1,2,3,4\n", "t.csv", r"Columns 2, 4 \(of 4\) have no name"),
    (b"a,b\n", "t.csv", "no data rows"),
    (b"a,b\n1,2\n3,4,5\n", "t.csv", r"ragged rows: line 3 has 3 fields but the header has 2"),
    (b"a,b\n1,2,3\n4,5,6\n", "t.csv", r"ragged rows: line 2"),
    (b'a,b\n1,2\n3,"x\n', "t.csv", "never closed, opened on line 3"),
    (b"a,b\n1,2\n", "t.xlsx", r"unsupported extension '\.xlsx'.*export"),
    (b"a,b\n1,2\n", "t.pkl", r"unsupported extension.*never loaded"),
    (b"a,b\n1,2\n", "t.json", "unsupported extension"),
    (b"a,b\n1,2\n", "t.parquet", "not a Parquet file"),
    (b"PAR1 but no footer", "t.parquet", "not a Parquet file.*cut short"),
    (b"PAR1 with a broken footer PAR1", "t.parquet", "could not be read as Parquet"),
]


@pytest.mark.parametrize("data, name, problem", BAD_CASES)
def test_bad_input_is_named(data, name, problem):
    with pytest.raises(DMLCoreError, match=problem) as caught:
        load_table(data, name)
    assert f"'{name}'" in str(caught.value)


def test_parquet_problems():
    header_only = parquet_bytes(pd.DataFrame({"a": pd.Series([], dtype=float)}))
    with pytest.raises(DMLCoreError, match="no data rows"):
        load_table(header_only, "t.parquet")
    twins = parquet_bytes(pa.table([pa.array([1]), pa.array([2])], names=["a", "a"]))
    with pytest.raises(DMLCoreError, match="repeated column names: 'a'"):
        load_table(twins, "t.parquet")
    zeros = parquet_bytes(pd.DataFrame({"z": np.zeros(100_000)}))
    with pytest.raises(DMLCoreError, match="unpacks to"):
        load_table(zeros, "t.parquet", max_bytes=len(zeros) + 1)


def test_size_limit_for_every_source(tmp_path):
    data = b"a,b\n" + b"1,2\n" * 100
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    for source in (data, path, io.BytesIO(data)):
        with pytest.raises(DMLCoreError, match="over the size limit"):
            load_table(source, "big.csv", max_bytes=100)


def test_missing_path_and_wrong_type(tmp_path):
    with pytest.raises(DMLCoreError, match="File not found"):
        load_table(tmp_path / "nope.csv")
    with pytest.raises(DMLCoreError, match="Cannot load a int"):
        load_table(3)


def test_unnamed_upload_is_called_uploaded_data():
    with pytest.raises(DMLCoreError, match="^The uploaded data is empty"):
        load_table(b"")


# ---------------------------------------------------------------- properties
@FAST
@given(data=st.binary(max_size=300),
       name=st.sampled_from(["t.csv", "t.tsv", "t.txt", "t.parquet", None]),
       prefix=st.sampled_from([b"", b"PAR1", b"PK\x03\x04", b"a,b\n", b"\xef\xbb\xbf"]),
       suffix=st.sampled_from([b"", b"PAR1"]))
def test_any_bytes_give_a_table_or_a_dmlcore_error(data, name, prefix, suffix):
    try:
        table = load_table(prefix + data + suffix, name)
    except DMLCoreError as err:
        assert str(err)
    else:
        assert isinstance(table, pd.DataFrame) and len(table) > 0


GOOD_PARQUET = parquet_bytes(pd.DataFrame({"x": [1.5, 2.5, 3.5], "s": ["a", "b", "c"]}))


@FAST
@given(changes=st.lists(st.tuples(st.integers(4, len(GOOD_PARQUET) - 5), st.integers(0, 255)),
                        min_size=1, max_size=8))
def test_corrupted_parquet_gives_a_table_or_a_dmlcore_error(changes):
    data = bytearray(GOOD_PARQUET)
    for position, value in changes:
        data[position] = value
    try:
        load_table(bytes(data), "t.parquet")
    except DMLCoreError as err:
        assert str(err)


cells = st.text(alphabet=st.sampled_from(list('ab1.,;\t|" \n\r-é9eE')), max_size=6)


@FAST
@given(rows=st.lists(st.lists(cells, min_size=0, max_size=5), min_size=0, max_size=6),
       delimiter=st.sampled_from([",", ";", "\t", "|"]))
def test_any_text_table_gives_a_table_or_a_dmlcore_error(rows, delimiter):
    text = "\n".join(delimiter.join(row) for row in rows)
    try:
        table = load_table(text.encode(), "t.csv")
    except DMLCoreError as err:
        assert str(err)
    else:
        assert table.columns.is_unique and all(c.strip() == c and c for c in table.columns)


names = st.text(alphabet=st.sampled_from(list("abcxyz_ 0123,;|.")), min_size=1, max_size=8).map(
    str.strip).filter(bool)
number_columns = st.one_of(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=3, max_size=3),
    st.lists(st.integers(-2**62, 2**62), min_size=3, max_size=3))


@FAST
@given(columns=st.dictionaries(names, number_columns, min_size=1, max_size=4),
       delimiter=st.sampled_from([",", ";", "\t", "|"]))
def test_good_csv_round_trips_to_the_same_numbers(columns, delimiter):
    frame = pd.DataFrame(columns)
    table = load_table(frame.to_csv(index=False, sep=delimiter).encode(), "t.csv")
    assert list(table.columns) == list(frame.columns)
    assert all(pd.api.types.is_numeric_dtype(table[c]) for c in table.columns)
    np.testing.assert_array_equal(table.to_numpy(dtype=float), frame.to_numpy(dtype=float))
    assert numeric_problems(table, table.columns) == []


# -------------------------------------------------------- preview and checks
def test_summarize():
    frame = pd.DataFrame({"x": [1.0, 3.0, None], "s": ["a", "b", "a"], "b": [True, False, True]})
    summary = summarize(frame)
    assert list(summary.columns) == ["dtype", "non_null", "missing", "unique", "mean", "std",
                                     "min", "max"]
    assert summary.loc["x", ["non_null", "missing", "unique", "mean", "min", "max"]].tolist() == [
        2, 1, 2, 2.0, 1.0, 3.0]
    assert summary.loc["s", "unique"] == 2 and np.isnan(summary.loc["s", "mean"])
    assert summary.loc["b", "mean"] == pytest.approx(2 / 3)


def test_summarize_unhashable_values():
    summary = summarize(pd.DataFrame({"l": [[1], [1], [2]]}))
    assert summary.loc["l", "unique"] == 2


def test_numeric_problems_name_column_and_first_bad_row():
    frame = pd.DataFrame({"ok": [1.0, 2.0, 3.0], "gap": [1.0, np.nan, np.nan],
                          "big": [1.0, 2.0, -np.inf], "word": ["1", "x", "2"]})
    problems = numeric_problems(frame, ["ok", "gap", "big", "word", "absent"])
    assert len(problems) == 4
    gap, big, word, absent = problems
    assert "'gap'" in gap and "2 missing" in gap and "row 1" in gap
    assert "'big'" in big and "infinite" in big and "row 2" in big
    assert "'word'" in word and "'x' in row 1" in word and "Encode" in word
    assert "'absent' is not in the table" in absent
