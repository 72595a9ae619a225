"""A table of the user's own (an uploaded or loaded file, with its roles) as a study's data set.

A study's fit is a plain JSON config that a worker turns back into data, so the table is kept
by its content: ``$DMLCORE_HOME/tables/<sha256>.parquet`` holds the columns the roles use (and a
cluster column), named by the SHA-256 of their names, types and values
(:func:`table_hash`). The config's ``data`` is ``{"table": hash, "file": name, "roles": JSON of
the problem, roles and categorical columns}``: the hash is part of every fit's store key, so a
changed file is a new study and an unchanged one reuses its stored fits.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd

from dmlcore.data.options import DataOption
from dmlcore.data.roles import ROLE_NAMES, CausalData
from dmlcore.errors import DMLCoreError

TABLE = "table"     # the data set name of a user's table in a study


def table_hash(table: pd.DataFrame) -> str:
    """SHA-256 of the table's column names, types and values (not of its row index)."""
    digest = hashlib.sha256()
    digest.update(json.dumps([[str(c), str(t)] for c, t in table.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def tables_dir() -> Path:
    """``$DMLCORE_HOME/tables`` (default ``~/.dmlcore/tables``)."""
    return Path(os.environ.get("DMLCORE_HOME", "~/.dmlcore")).expanduser() / "tables"


def roles_text(data: CausalData) -> str:
    """The problem, roles and categorical columns of ``data`` (and its absorbed columns and weights, when
    set) as canonical JSON."""
    roles = {role: getattr(data, role) for role in ROLE_NAMES[1:] if getattr(data, role)}
    return json.dumps({"problem": data.problem, "outcome": data.outcome, **roles,
                       "categorical": list(data.categorical), **data.linear_options()}, sort_keys=True)


def keep_table(data: CausalData, file: str, extra: list[str] | None = None) -> dict:
    """Keep the columns ``data`` uses (and ``extra`` ones, e.g. a cluster column) under their
    hash; return the study data options ``{"table", "file", "roles"}``."""
    if data.image_columns:
        raise DMLCoreError("A study of your own table takes tabular columns; this data has image columns. Use the "
                           "built-in image data sets instead.")
    options = data.absorb + ([data.weights] if data.weights else [])     # fixed effects, weights (linear IV)
    columns = list(dict.fromkeys(data.used_columns() + options + [c for c in extra or [] if c in data.table]))
    table = data.table[columns].reset_index(drop=True)
    key = table_hash(table)
    path = tables_dir() / f"{key}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        table.to_parquet(partial, index=False)
        partial.replace(path)
    return {"table": key, "file": str(file), "roles": roles_text(data)}


# The options of the data set "table" (dmlcore.data.options): a study's kept copy of a user's file, written by
# keep_table, never on the command line
_FILE = DataOption("file", "", "the file's name", kind="text", label="File", cli=False)
TABLE_OPTIONS = (DataOption("table", None, "the kept table's content hash", kind="text", label="Table (content hash)",
                            cli=False),
                 _FILE,
                 DataOption("roles", "", "the roles (roles_text)", kind="text", label="Roles", cli=False))


def load_kept_table(table: str | None, roles: str, file: str = _FILE.default) -> CausalData:
    """The CausalData of a kept table (:func:`keep_table`) with its roles."""
    if not table:
        raise DMLCoreError("The 'table' data set is a file of your own: give it with --csv FILE and its roles "
                           "(study --csv, or the Study page's current data).")
    path = tables_dir() / f"{table}.parquet"
    if not path.exists():
        raise DMLCoreError(f"The table {file or table[:12]} of this study is no longer in {tables_dir()}; load the file "
                           f"again and start the study from it.")
    spec = json.loads(roles)
    problem, outcome = spec.pop("problem"), spec.pop("outcome")
    return CausalData(pd.read_parquet(path), problem, outcome, name=file or table[:12], **spec)
