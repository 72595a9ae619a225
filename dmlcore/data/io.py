"""Safe loading of user tables: CSV, TSV and Parquet files, paths, bytes or uploads.

Data only: text goes through pandas' CSV parser and Parquet through pyarrow; nothing
is unpickled, evaluated or executed. Each problem a user can fix raises
:class:`~dmlcore.errors.DMLCoreError` naming the file and saying what to do.

Choices
-------
* Text must be UTF-8 (a byte-order mark is allowed). Other encodings are reported,
  not guessed: a Latin-1 fallback would accept any bytes and silently garble text.
* The delimiter of .csv and .txt files (or unnamed data) is sniffed among
  ``,`` ``;`` tab ``|``; .tsv and .tab files are tab-separated. Parquet is recognised
  by its signature (``PAR1`` at both ends), whatever the name.
* Column names lose surrounding spaces; blank or repeated names are errors.
* Values are typed as pandas infers them, with no thousands separator and ``.`` as
  decimal mark: ``"1,234"`` stays text and :func:`numeric_problems` explains why.
* A row longer than the header is an error; a shorter one is padded with missing
  values, as pandas does, and :func:`numeric_problems` reports them.
* Row numbers in :func:`numeric_problems` are 0-based positions, as in the preview.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.errors import DMLCoreError

MAX_BYTES = 200 * 2**20
DELIMITERS = (",", ";", "\t", "|")
TEXT_EXTENSIONS = (".csv", ".txt")
TAB_EXTENSIONS = (".tsv", ".tab")
PARQUET_EXTENSIONS = (".parquet", ".pq")
SUMMARY_COLUMNS = ("dtype", "non_null", "missing", "unique", "mean", "std", "min", "max")

_SUPPORTED = ".csv, .tsv, .txt or .parquet"
_RESAVE = f"Save the table as CSV (UTF-8) or Parquet and load that ({_SUPPORTED})."
_SPREADSHEET = "Spreadsheets are not read directly: export the sheet as 'CSV UTF-8' or Parquet."
_PICKLE = ("Pickle files are never loaded, because opening one can run arbitrary code. "
           "Save the table as CSV or Parquet instead.")
_EXTENSION_HINTS = {
    ".xlsx": _SPREADSHEET, ".xlsm": _SPREADSHEET, ".xls": _SPREADSHEET, ".ods": _SPREADSHEET,
    ".pkl": _PICKLE, ".pickle": _PICKLE, ".joblib": _PICKLE,
    ".gz": "Decompress it first.", ".zip": "Decompress it first.", ".bz2": "Decompress it first.",
}
_SIGNATURES = (  # (leading bytes, what the file is, what to do)
    (b"PK\x03\x04", "an Excel workbook (.xlsx) or another zip archive", _SPREADSHEET),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Excel workbook (.xls) or another Office file",
     _SPREADSHEET),
    (b"\xff\xfe", "UTF-16 text", "Save it as UTF-8 (in Excel: 'CSV UTF-8')."),
    (b"\xfe\xff", "UTF-16 text", "Save it as UTF-8 (in Excel: 'CSV UTF-8')."),
    (b"\x1f\x8b", "a gzip-compressed file", "Decompress it first."),
    (b"%PDF", "a PDF document", _RESAVE),
    *((b"\x80" + bytes([protocol]), "a Python pickle", _PICKLE) for protocol in range(2, 6)),
)
_PARQUET_MAGIC = b"PAR1"
_MAX_EXPANSION = 10          # Parquet may unpack to at most this many times max_bytes
_SNIFF_BYTES = 2**16
_SNIFF_ROWS = 50
_NUMBER_WITH_SEPARATORS = re.compile(r"[-+]?\d[\d.,' \u00a0\u202f]*\d")


# ----------------------------------------------------------------------- loading
def load_table(source, name: str | None = None, max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """Load a user's table, checking everything a user could get wrong.

    Parameters
    ----------
    source : str, os.PathLike, bytes or binary file-like
        A path (a ``str`` is always a path), the file's bytes, or an object with
        ``read()`` such as Streamlit's ``UploadedFile`` (read from the start when seekable).
    name : str, optional
        File name for messages and the extension; default: the path's or the object's name.
    max_bytes : int
        Largest accepted file size.

    Returns
    -------
    pandas.DataFrame with string column names and a 0-based RangeIndex.

    Raises
    ------
    DMLCoreError
        For any unreadable, unsupported or malformed input.
    """
    name = _source_name(source, name)
    who = f"File '{name}'" if name else "The uploaded data"
    data = _read_bytes(source, who, max_bytes)
    kind = _detect_format(data, name, who)
    if kind == "parquet":
        table = _read_parquet(data, who, max_bytes)
    else:
        table = _read_text(data, who, "\t" if kind == "tab" else None)
    _check_rows(table, who)
    return table


def _source_name(source, name: str | None) -> str | None:
    if name:
        return str(name)
    if isinstance(source, (str, os.PathLike)):
        return Path(source).name or str(source)
    attr = getattr(source, "name", None)
    return Path(attr).name if isinstance(attr, str) and attr else None


def _read_bytes(source, who: str, max_bytes: int) -> bytes:
    if isinstance(source, (str, os.PathLike)):
        return _read_path(Path(source), who, max_bytes)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > max_bytes:
            raise _too_big(who, max_bytes, len(data))
        return data
    if hasattr(source, "read"):
        return _read_stream(source, who, max_bytes)
    raise DMLCoreError(f"Cannot load a {type(source).__name__}; give a file path, the file's "
                       f"bytes or an uploaded file.")


def _read_path(path: Path, who: str, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_big(who, max_bytes, size)
        with path.open("rb") as stream:      # bounded read, even of a device or pipe
            return _read_stream(stream, who, max_bytes)
    except FileNotFoundError:
        raise DMLCoreError(f"File not found: '{path}'. Check the path.") from None
    except OSError as err:
        raise DMLCoreError(f"Cannot read '{path}': {err.strerror or err}. Check the path and "
                           f"its permissions.") from None


def _read_stream(stream, who: str, max_bytes: int) -> bytes:
    seekable = getattr(stream, "seekable", None)
    if callable(seekable) and seekable():
        stream.seek(0)
    data = stream.read(max_bytes + 1)
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(data) > max_bytes:
        raise _too_big(who, max_bytes, None)
    return data


def _too_big(who: str, max_bytes: int, size: int | None) -> DMLCoreError:
    actual = f" ({size / 2**20:.1f} MB)" if size is not None else ""
    return DMLCoreError(f"{who} is over the size limit of {max_bytes / 2**20:.1f} MB{actual}. "
                        f"Load a smaller file: a sample of the rows, or Parquet, which is more "
                        f"compact than CSV.")


def _empty(who: str) -> DMLCoreError:
    return DMLCoreError(f"{who} is empty: it holds no table. Choose the file with your data.")


def _detect_format(data: bytes, name: str | None, who: str) -> str:
    """'parquet', 'tab' or 'text' (delimiter to sniff); raise for anything else."""
    ext = Path(name).suffix.lower() if name else ""
    if ext and ext not in TEXT_EXTENSIONS + TAB_EXTENSIONS + PARQUET_EXTENSIONS:
        hint = _EXTENSION_HINTS.get(ext, _RESAVE)
        raise DMLCoreError(f"{who} has the unsupported extension '{ext}'; tables are read from "
                           f"{_SUPPORTED} files. {hint}")
    if not data or data.isspace():
        raise _empty(who)
    if data.startswith(_PARQUET_MAGIC) and data.endswith(_PARQUET_MAGIC):
        return "parquet"
    if ext in PARQUET_EXTENSIONS:
        raise DMLCoreError(f"{who} is not a Parquet file: it does not begin and end with the "
                           f"Parquet signature 'PAR1' (it may be cut short). If it is a CSV "
                           f"file, rename it to .csv.")
    for magic, what, hint in _SIGNATURES:
        if data.startswith(magic):
            raise DMLCoreError(f"{who} is {what}, not a text table. {hint}")
    if b"\x00" in data:
        raise DMLCoreError(f"{who} contains NUL bytes: it is a binary file, not a text table. "
                           f"{_RESAVE}")
    return "tab" if ext in TAB_EXTENSIONS else "text"


# --------------------------------------------------------------- delimited text
def _read_text(data: bytes, who: str, delimiter: str | None) -> pd.DataFrame:
    _check_utf8(data, who)
    delimiter = delimiter or _sniff_delimiter(_sample(data))
    head = _read_csv(data, who, delimiter, header=None, nrows=2, dtype=str, keep_default_na=False)
    names = _clean_names(head.iloc[0], who)
    table = _read_csv(data, who, delimiter, low_memory=False)
    table.columns = names
    return table


def _check_utf8(data: bytes, who: str) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise DMLCoreError(
            f"{who} is not UTF-8 text: byte 0x{data[err.start]:02x} on line {line} is not valid "
            f"UTF-8 (the file is probably Windows-1252 or Latin-1). Save it as UTF-8: in Excel "
            f"choose 'CSV UTF-8', in LibreOffice the character set 'Unicode (UTF-8)'.") from None


def _sample(data: bytes) -> str:
    """The first lines of the (valid UTF-8) data, for sniffing."""
    head = data[:_SNIFF_BYTES]
    cut = head.rfind(b"\n")
    if len(data) > _SNIFF_BYTES and cut > 0:
        head = head[:cut]
    return head.decode("utf-8-sig", errors="ignore")


def _sniff_delimiter(sample: str) -> str:
    """The delimiter that splits most records into as many fields as the header.

    Only delimiters splitting the header and most records count; ties go to the one
    with most records (a stray quote can swallow lines), then most fields, then the
    order of DELIMITERS. With none, the table has one column: a delimiter that leaves
    the header whole.
    """
    best, best_score, whole = None, None, None
    for delimiter in DELIMITERS:
        counts = _field_counts(sample, delimiter)
        if counts and counts[0] == 1:
            whole = whole or delimiter
        if not counts or counts[0] < 2 or sum(c > 1 for c in counts) <= len(counts) / 2:
            continue
        score = (sum(c == counts[0] for c in counts) / len(counts), len(counts), counts[0])
        if best_score is None or score > best_score:
            best, best_score = delimiter, score
    return best or whole or ","


def _field_counts(sample: str, delimiter: str) -> list[int]:
    """Fields per record of the first non-blank records; [] if they cannot be parsed."""
    counts = []
    try:
        for record in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter):
            if len(record) > 1 or (record and record[0].strip()):
                counts.append(len(record))
            if len(counts) == _SNIFF_ROWS:
                break
    except csv.Error:
        return []
    return counts


def _read_csv(data: bytes, who: str, delimiter: str, **options) -> pd.DataFrame:
    try:
        return pd.read_csv(io.BytesIO(data), sep=delimiter, encoding="utf-8-sig", **options)
    except pd.errors.EmptyDataError:
        raise _empty(who) from None
    except pd.errors.ParserError as err:
        raise DMLCoreError(_parser_message(who, delimiter, str(err).strip())) from None


def _parser_message(who: str, delimiter: str, message: str) -> str:
    shown = "tab" if delimiter == "\t" else repr(delimiter)
    ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
    if ragged:
        expected, line, saw = ragged.groups()
        return (f"{who} has ragged rows: line {line} has {saw} fields but the header has "
                f"{expected} names (delimiter {shown}). Quote values that contain the delimiter, "
                f"remove extra delimiters, or name every column in the header.")
    quote = re.search(r"EOF inside string starting at row (\d+)", message)
    if quote:
        return (f"{who} has a quote (\") that is never closed, opened on line "
                f"{int(quote.group(1)) + 1}. Close the quote or remove it.")
    return (f"{who} could not be read as a table with delimiter {shown}: {message}. "
            f"Check that it is a well-formed CSV file.")


# --------------------------------------------------------------------- parquet
def _read_parquet(data: bytes, who: str, max_bytes: int) -> pd.DataFrame:
    # late: pyarrow.parquet is wanted only to read a Parquet file, not by every process that imports dmlcore
    # (tests/test_cli_imports.py); pandas imports pyarrow itself, but not its parquet module
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(io.BytesIO(data))
        names = meta.schema.to_arrow_schema().names
    except Exception as err:  # any failure of the reader means a broken file
        raise _bad_parquet(who, err) from None
    _clean_names(names, who)
    unpacked = max(8 * meta.num_rows * meta.num_columns,     # 8 bytes a value at least
                   sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)))
    if unpacked > _MAX_EXPANSION * max_bytes:
        raise DMLCoreError(f"{who} unpacks to {unpacked / 2**20:.1f} MB, over the limit of "
                           f"{_MAX_EXPANSION * max_bytes / 2**20:.1f} MB. Load fewer rows or "
                           f"columns.")
    try:
        table = pd.read_parquet(io.BytesIO(data))
    except Exception as err:  # as above
        raise _bad_parquet(who, err) from None
    table = table.reset_index(drop=all(n is None for n in table.index.names))
    table.columns = _clean_names(table.columns, who)
    return table


def _bad_parquet(who: str, err: Exception) -> DMLCoreError:
    return DMLCoreError(f"{who} could not be read as Parquet ({type(err).__name__}: {err}). "
                        f"Save it again, or load it as CSV.")


# -------------------------------------------------------------------- checks
def _clean_names(names, who: str) -> list[str]:
    """Column names without surrounding spaces; raise for blank or repeated ones."""
    names = [str(n).strip() for n in names]
    blank = [i + 1 for i, n in enumerate(names) if not n]
    if blank:
        which = "Column" if len(blank) == 1 else "Columns"
        hint = (" A nameless first column is usually a row index saved with the table: save "
                "without it (pandas: index=False) or give it a name." if blank[0] == 1 else "")
        raise DMLCoreError(f"{who}: {which} {', '.join(map(str, blank))} (of {len(names)}) "
                           f"{'has' if len(blank) == 1 else 'have'} no name in the header row. "
                           f"Give every column a name.{hint}")
    repeated = [n for n, k in Counter(names).items() if k > 1]
    if repeated:
        raise DMLCoreError(f"{who} has repeated column names: {', '.join(map(repr, repeated))}. "
                           f"Give every column a distinct name.")
    return names


def _check_rows(table: pd.DataFrame, who: str) -> None:
    if table.shape[1] == 0:
        raise _empty(who)
    if len(table) == 0:
        shown = ", ".join(map(str, table.columns[:5])) + (" ..." if table.shape[1] > 5 else "")
        raise DMLCoreError(f"{who} has a header (columns {shown}) but no data rows. Add the "
                           f"data below the header row.")


# ------------------------------------------------------------------- preview
def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per column: dtype, non_null, missing, unique, mean, std, min, max.

    Statistics of non-numeric columns are NaN; booleans count as 0/1.
    """
    rows = [_column_summary(df.iloc[:, i]) for i in range(df.shape[1])]
    return pd.DataFrame(rows, index=pd.Index([str(c) for c in df.columns], name="column"),
                        columns=list(SUMMARY_COLUMNS))


def _column_summary(series: pd.Series) -> dict:
    missing = int(series.isna().sum())
    out = {"dtype": str(series.dtype), "non_null": len(series) - missing, "missing": missing,
           "unique": _nunique(series)}
    values = pd.Series(_as_float(series)) if _is_numeric(series) else pd.Series(dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):     # inf gives NaN statistics, quietly
        return out | {"mean": values.mean(), "std": values.std(), "min": values.min(),
                      "max": values.max()}


def _nunique(series: pd.Series) -> int:
    try:
        return int(series.nunique())
    except TypeError:  # unhashable values, such as Parquet lists
        return int(series.dropna().astype(str).nunique())


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_complex_dtype(series)


def _as_float(series: pd.Series) -> np.ndarray:
    return series.to_numpy(dtype=float, na_value=np.nan)


def looks_like_formatted_number(value) -> bool:
    """True for text such as '1,234', '1.234,5' or '3,5': a number with separators or a decimal comma."""
    return isinstance(value, str) and _NUMBER_WITH_SEPARATORS.fullmatch(value.strip()) is not None


FORMATTED_NUMBER_HINT = ("It looks like a number with thousands separators or a decimal comma: save the "
                         "file with plain numbers ('.' as decimal mark, no thousands separators).")


def numeric_problems(df: pd.DataFrame, columns) -> list[str]:
    """Messages about ``columns`` that are not clean numbers: text, missing or infinite values.

    Parameters
    ----------
    df : pandas.DataFrame
    columns : iterable of str
        Columns meant to be numeric (those given a role).

    Returns
    -------
    list of str, empty when every column is numeric and finite. Rows are 0-based positions.
    """
    problems = []
    for col in columns:
        if col not in df.columns:
            problems.append(f"Column '{col}' is not in the table.")
        else:
            problems += _column_problems(df[col], col)
    return problems


def _column_problems(series: pd.Series, col: str) -> list[str]:
    problems = []
    numeric = _is_numeric(series)
    if not numeric:
        problems.append(_text_problem(series, col))
    missing = np.flatnonzero(series.isna().to_numpy())
    if len(missing):
        problems.append(f"Column '{col}' has {len(missing)} missing value(s), the first in row "
                        f"{missing[0]}. Fill them in or drop those rows.")
    infinite = np.flatnonzero(np.isinf(_as_float(series))) if numeric else []
    if len(infinite):
        problems.append(f"Column '{col}' has {len(infinite)} infinite value(s), the first in row "
                        f"{infinite[0]}. Replace them or drop those rows.")
    return problems


def _text_problem(series: pd.Series, col: str) -> str:
    numbers = pd.to_numeric(series.astype(str), errors="coerce")
    bad = np.flatnonzero(series.notna().to_numpy() & numbers.isna().to_numpy())
    if not len(bad):
        return (f"Column '{col}' holds numbers stored as {series.dtype}; convert it to a numeric "
                f"type.")
    value = str(series.iloc[bad[0]])
    if looks_like_formatted_number(value):
        hint = FORMATTED_NUMBER_HINT
    else:
        hint = "Encode the column as numbers or do not use it in a numeric role."
    return (f"Column '{col}' is not numeric: {len(bad)} value(s) are not numbers, the first "
            f"{value!r} in row {bad[0]}. {hint}")
