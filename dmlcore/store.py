"""Finished runs kept on disk in an embedded SQLite file, so they outlive a server restart.

Public API
----------
``default_store_path() -> Path``
    ``$DMLCORE_HOME/runs.sqlite3`` (``DMLCORE_HOME`` defaults to ``~/.dmlcore``); creates the folder.

``RunStore(path: str | os.PathLike)``
    Opens (creating if needed) the database in WAL mode. Thread-safe: every call opens its own
    connection, so one object may be shared by all threads of a server, and several processes
    may use the same file.

    * ``save(run: Run, owner: str, label: str = "") -> str`` -- stores the record (JSON), the
      predictions and the plotting curve (parquet bytes); returns the new run id (uuid4 hex).
      Image pixel columns are left out of the stored predictions (they would make every row
      thousands of values wide); ``curve`` is stored as None when the run has none.
    * ``list(owner: str | None = None, *, limit: int | None = None) -> list[dict]`` -- summaries,
      newest first, each ``{"id", "owner", "label", "method", "dataset", "n", "mse", "seconds",
      "created"}`` (``created``: ISO 8601 UTC string). ``owner=None`` lists every owner's runs.
    * ``load(run_id: str, owner: str | None = None) -> StoredRun | None`` -- None when the id is
      unknown OR belongs to another owner (the two cases look the same, so ids of other users'
      runs cannot be probed). ``owner=None`` skips the check (command line, admin use).
    * ``list_records(*, dataset=None, since=None) -> list[dict]`` -- every owner's runs (of
      ``dataset``, stored since the Unix time ``since``), oldest first: summary plus ``record``.
    * ``delete(run_id: str, owner: str) -> bool`` -- True when a run of that owner was deleted.
    * ``timings(limit: int = 500) -> list[dict]`` -- the newest runs' ``{"method", "n", "seconds",
      **config}`` (the record's config: learner, folds, epochs, ...), to estimate what a fit costs.

    Fits of studies (:mod:`dmlcore.studies`) are kept apart from runs, keyed by the hash of their
    configuration and shared by every owner (a config names only built-in simulations):

    * ``save_fit(key, config, row, record=None)`` -- store (or replace) a finished fit: its config,
      its fits.csv row and its full run record (dicts of plain JSON values).
    * ``load_fits(keys) -> dict[str, dict]`` -- the stored rows of those keys that exist.
    * ``fit_record(key) -> dict | None`` -- the full run record of a stored fit.
    * ``fit_timings() -> list[dict]`` -- ``{"config", "seconds"}`` of every stored fit (cost estimates).
    * ``save_study(owner, label, spec, keys, *, reused=None, status="done", runner=None) -> str`` --
      remember a study (its spec dict and fit keys) for ``owner``, with the keys it found stored when
      it first started (``reused``: the rest are fits it ran), its status ("running", "done",
      "cancelled", "failed") and, while running, the server running it (``runner``); returns its id.
      ``set_study_status(study_id, status, runner=None)`` updates the last two;
      ``find_study(owner, keys) -> str | None`` is the newest study of ``owner`` over the same fits.
      ``list_studies(owner=None)`` gives ``{"id", "owner", "label", "fits", "created", "status",
      "runner"}``, newest first (``status`` None for studies stored before it was kept);
      ``load_study(study_id, owner=None)`` adds ``spec``, ``keys`` and ``reused`` (None when not
      kept) (None for an unknown id or another owner's study).

``StoredRun`` (frozen dataclass): ``id``, ``owner``, ``label``, ``created`` (ISO string),
``record`` (dict, as ``Run.record``), ``predictions`` (DataFrame: input columns and ``f_hat``),
``curve`` (DataFrame as ``Run.curve()``, or None).

``safe_filename(name: str, default: str = "download") -> str``
    A download name with only letters, digits, ``.``, ``-`` and ``_``: never a path, never hidden,
    never empty, at most 100 characters.
"""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import time
import unicodedata
import uuid
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from dmlcore.errors import DMLCoreError
from dmlcore.runs import Run

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    label TEXT NOT NULL,
    method TEXT,
    dataset TEXT,
    n INTEGER,
    mse REAL,
    seconds REAL,
    created TEXT NOT NULL,
    created_ts REAL NOT NULL,
    record TEXT NOT NULL,
    predictions BLOB,
    curve BLOB
);
CREATE INDEX IF NOT EXISTS runs_by_owner ON runs (owner, created_ts);
CREATE TABLE IF NOT EXISTS study_fits (
    key TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    row TEXT NOT NULL,
    record TEXT,
    seconds REAL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS studies (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    label TEXT NOT NULL,
    spec TEXT NOT NULL,
    keys TEXT NOT NULL,
    created TEXT NOT NULL,
    created_ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS studies_by_owner ON studies (owner, created_ts);
"""
# Columns added to a table after it was first released: (table, column, type), added where missing.
ADDED_COLUMNS = (("studies", "status", "TEXT"), ("studies", "reused", "TEXT"), ("studies", "runner", "TEXT"))
KEYS_PER_QUERY = 500  # SQLite caps the parameters of one statement
SUMMARY_COLUMNS = ("id", "owner", "label", "method", "dataset", "n", "mse", "seconds", "created")
MAX_FILENAME = 100
WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                    *(f"LPT{i}" for i in range(1, 10))}


def default_store_path() -> Path:
    """``$DMLCORE_HOME/runs.sqlite3`` (default ``~/.dmlcore``), creating the folder."""
    home = Path(os.environ.get("DMLCORE_HOME", "~/.dmlcore")).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home / "runs.sqlite3"


@dataclass(frozen=True)
class StoredRun:
    """A run read back from the store: its record and the tables the dashboard draws."""

    id: str
    owner: str
    label: str
    created: str
    record: dict
    predictions: pd.DataFrame
    curve: pd.DataFrame | None


class RunStore:
    """Runs saved in one SQLite file; safe to share between threads and processes."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            for table, column, kind in ADDED_COLUMNS:
                have = {row["name"] for row in conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    try:
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    except sqlite3.OperationalError as exc:   # another process added it meanwhile
                        if "duplicate column" not in str(exc):
                            raise

    @contextmanager
    def _connect(self):
        """A fresh connection that commits on success, rolls back on error and always closes."""
        with closing(sqlite3.connect(self.path, timeout=30)) as conn:
            conn.row_factory = sqlite3.Row
            with conn:
                yield conn

    def save(self, run: Run, owner: str, label: str = "") -> str:
        """Store ``run`` for ``owner``; returns its id."""
        _check_owner(owner)
        record = run.record
        now = time.time()
        row = {
            "id": uuid.uuid4().hex, "owner": owner, "label": str(label),
            "method": record.get("method"), "dataset": record.get("dataset"), "n": record.get("n"),
            "mse": record.get("mse"), "seconds": record.get("seconds"),
            "created": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
            "created_ts": now, "record": run.to_json(),
            "predictions": _to_parquet(_stored_predictions(run)), "curve": _to_parquet(_curve_or_none(run)),
        }
        names = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        with self._connect() as conn:
            conn.execute(f"INSERT INTO runs ({names}) VALUES ({marks})", row)
        return row["id"]

    def list(self, owner: str | None = None, *, limit: int | None = None) -> list[dict]:
        """Summaries of the stored runs (of ``owner``, or of everyone), newest first."""
        sql = f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM runs"
        params: list = []
        if owner is not None:
            sql += " WHERE owner = ?"
            params.append(owner)
        sql += " ORDER BY created_ts DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._connect() as conn:
            return [dict(row) for row in conn.execute(sql, params)]

    def list_records(self, *, dataset: str | None = None, since: float | None = None) -> list[dict]:
        """Every owner's runs (of ``dataset``, stored at or after the Unix time ``since``) as their
        summaries plus the parsed ``record``, oldest first: what a teacher's pooled view reads."""
        sql = f"SELECT {', '.join(SUMMARY_COLUMNS)}, record FROM runs WHERE created_ts >= ?"
        params: list = [float(since or 0.0)]
        if dataset is not None:
            sql += " AND dataset = ?"
            params.append(dataset)
        sql += " ORDER BY created_ts, rowid"
        with self._connect() as conn:
            return [dict(row) | {"record": json.loads(row["record"])} for row in conn.execute(sql, params)]

    def load(self, run_id: str, owner: str | None = None) -> StoredRun | None:
        """The run ``run_id``; None when unknown or, with ``owner`` given, owned by someone else."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or (owner is not None and row["owner"] != owner):
            return None
        return StoredRun(id=row["id"], owner=row["owner"], label=row["label"], created=row["created"],
                         record=json.loads(row["record"]), predictions=_from_parquet(row["predictions"]),
                         curve=_from_parquet(row["curve"]))

    def delete(self, run_id: str, owner: str) -> bool:
        """Delete ``owner``'s run ``run_id``; False when there is no such run of that owner."""
        with self._connect() as conn:
            cursor = conn.execute("DELETE FROM runs WHERE id = ? AND owner = ?", (run_id, owner))
        return cursor.rowcount > 0

    def timings(self, limit: int = 500) -> list[dict]:
        """The newest ``limit`` runs' wall times: ``{"method", "n", "seconds", **config}`` each,
        ``config`` as in the run record (learner, folds, epochs, ...), for cost estimates."""
        with self._connect() as conn:
            rows = conn.execute("SELECT method, n, seconds, json_extract(record, '$.config') AS config "
                                "FROM runs WHERE seconds IS NOT NULL ORDER BY created_ts DESC LIMIT ?",
                                (int(limit),)).fetchall()
        return [{**json.loads(row["config"] or "{}"), "method": row["method"], "n": row["n"],
                 "seconds": row["seconds"]} for row in rows]

    # ------------------------------------------------- study fits and studies
    def save_fit(self, key: str, config: dict, row: dict, record: dict | None = None) -> None:
        """Store (or replace) the finished study fit ``key``."""
        cost = row.get("worker_seconds") or row.get("seconds")    # data, fit, diagnostics and held-out refits
        values = (key, json.dumps(config), json.dumps(row), None if record is None else json.dumps(record),
                  cost, _now_iso())
        with self._connect() as conn:
            conn.execute("INSERT OR REPLACE INTO study_fits (key, config, row, record, seconds, created) "
                         "VALUES (?, ?, ?, ?, ?, ?)", values)

    def load_fits(self, keys) -> dict[str, dict]:
        """The stored rows of ``keys`` (those that exist), by key."""
        keys, out = list(keys), {}
        with self._connect() as conn:
            for i in range(0, len(keys), KEYS_PER_QUERY):
                chunk = keys[i:i + KEYS_PER_QUERY]
                marks = ", ".join("?" * len(chunk))
                for row in conn.execute(f"SELECT key, row FROM study_fits WHERE key IN ({marks})", chunk):
                    out[row["key"]] = json.loads(row["row"])
        return out

    def fit_record(self, key: str) -> dict | None:
        """The full run record of the stored fit ``key``; None when there is none."""
        with self._connect() as conn:
            row = conn.execute("SELECT record FROM study_fits WHERE key = ?", (key,)).fetchone()
        return None if row is None or row["record"] is None else json.loads(row["record"])

    def fit_timings(self) -> list[dict]:
        """``{"config", "seconds"}`` of every stored fit, for cost estimates: the seconds a study's
        worker spent on it (data, fit, diagnostics, held-out refits; the fit's own for fits stored
        before 2026-11-26)."""
        with self._connect() as conn:
            rows = conn.execute("SELECT config, seconds FROM study_fits WHERE seconds IS NOT NULL").fetchall()
        return [{"config": json.loads(row["config"]), "seconds": row["seconds"]} for row in rows]

    def save_study(self, owner: str, label: str, spec: dict, keys, *, reused=None, status: str = "done",
                   runner: str | None = None) -> str:
        """Remember a study for ``owner`` (``reused``: the keys stored before it first ran); returns its id."""
        _check_owner(owner)
        study_id, now = uuid.uuid4().hex, time.time()
        with self._connect() as conn:
            conn.execute("INSERT INTO studies (id, owner, label, spec, keys, created, created_ts, status, reused, runner) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (study_id, owner, str(label), json.dumps(spec), json.dumps(list(keys)),
                          _now_iso(now), now, status, None if reused is None else json.dumps(list(reused)), runner))
        return study_id

    def set_study_status(self, study_id: str, status: str, runner: str | None = None) -> None:
        """The study's status now, and the server running it (None once it has ended)."""
        with self._connect() as conn:
            conn.execute("UPDATE studies SET status = ?, runner = ? WHERE id = ?", (status, runner, study_id))

    def find_study(self, owner: str, keys) -> str | None:
        """The newest study of ``owner`` over exactly the fits ``keys``; None when there is none."""
        with self._connect() as conn:
            row = conn.execute("SELECT id FROM studies WHERE owner = ? AND keys = ? ORDER BY created_ts DESC, "
                               "rowid DESC LIMIT 1", (owner, json.dumps(list(keys)))).fetchone()
        return None if row is None else row["id"]

    def list_studies(self, owner: str | None = None) -> list[dict]:
        """Summaries of the stored studies (of ``owner``, or of everyone), newest first."""
        sql = "SELECT id, owner, label, keys, created, status, runner FROM studies"
        params = []
        if owner is not None:
            sql += " WHERE owner = ?"
            params.append(owner)
        with self._connect() as conn:
            rows = conn.execute(sql + " ORDER BY created_ts DESC, rowid DESC", params).fetchall()
        return [{"id": r["id"], "owner": r["owner"], "label": r["label"], "fits": len(json.loads(r["keys"])),
                 "created": r["created"], "status": r["status"], "runner": r["runner"]} for r in rows]

    def load_study(self, study_id: str, owner: str | None = None) -> dict | None:
        """The study ``study_id`` with its ``spec``, ``keys`` and ``reused``; None when unknown or not ``owner``'s."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM studies WHERE id = ?", (study_id,)).fetchone()
        if row is None or (owner is not None and row["owner"] != owner):
            return None
        return {"id": row["id"], "owner": row["owner"], "label": row["label"], "created": row["created"],
                "spec": json.loads(row["spec"]), "keys": json.loads(row["keys"]), "status": row["status"],
                "runner": row["runner"], "reused": None if row["reused"] is None else json.loads(row["reused"])}


def _now_iso(now: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if now is None else now, timezone.utc).isoformat(timespec="seconds")


def _check_owner(owner: str) -> None:
    if not isinstance(owner, str) or not owner:
        raise DMLCoreError(f"A run's owner must be a non-empty string; got {owner!r}.")


def _stored_predictions(run: Run) -> pd.DataFrame:
    """The predictions without image pixel columns."""
    return run.predictions().drop(columns=run.data.image_columns, errors="ignore")


def _curve_or_none(run: Run) -> pd.DataFrame | None:
    try:
        return run.curve()
    except DMLCoreError:  # e.g. several treatments and no ground truth: nothing to draw
        return None


def _to_parquet(frame: pd.DataFrame | None) -> bytes | None:
    if frame is None:
        return None
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _from_parquet(blob: bytes | None) -> pd.DataFrame | None:
    return None if blob is None else pd.read_parquet(io.BytesIO(blob))


def safe_filename(name: str, default: str = "download") -> str:
    """``name`` reduced to a plain file name that cannot leave its folder."""
    ascii_name = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_name)
    cleaned = re.sub(r"\.{2,}", ".", cleaned).strip("._-")[:MAX_FILENAME].rstrip("._-")
    if not cleaned:
        return default
    if cleaned.split(".")[0].upper() in WINDOWS_RESERVED:
        cleaned = "_" + cleaned
    return cleaned
