"""The queue on disk (SQLite), so that a restarted server finds its jobs."""

from __future__ import annotations

import os
import pickle
import sqlite3
from contextlib import closing
from pathlib import Path

from dmlcore.jobs.snapshot import ENDED


class JobFile:
    """The queue on disk (SQLite), so that a restarted server finds it."""

    SCHEMA = """CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, label TEXT NOT NULL, seq INTEGER NOT NULL,
        created REAL NOT NULL, status TEXT NOT NULL, cost REAL, attempts INTEGER NOT NULL DEFAULT 0,
        run_id TEXT, error TEXT, started REAL, finished REAL, spec BLOB)"""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(self.SCHEMA)

    def _connect(self):
        conn = sqlite3.connect(self.path, timeout=30)
        conn.row_factory = sqlite3.Row
        return closing(conn)

    def _write(self, sql: str, params) -> None:
        with self._connect() as conn, conn:
            conn.execute(sql, params)

    def add(self, job) -> None:
        self._write("INSERT OR REPLACE INTO jobs (id, owner, label, seq, created, status, cost, attempts, "
                    "spec) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (job.id, job.owner, job.label, job.seq, job.created, job.status, job.cost,
                     job.attempts, pickle.dumps(job.fit)))

    def update(self, job) -> None:
        spec = "spec = NULL, " if job.status in ENDED else ""
        self._write(f"UPDATE jobs SET {spec}status = ?, attempts = ?, run_id = ?, error = ?, started = ?, "
                    f"finished = ? WHERE id = ?",
                    (job.status, job.attempts, job.run_id, job.error, job.started, job.finished, job.id))

    def delete(self, ids) -> None:
        with self._connect() as conn, conn:
            conn.executemany("DELETE FROM jobs WHERE id = ?", [(i,) for i in ids])

    def rows(self) -> list[sqlite3.Row]:
        with self._connect() as conn:
            return list(conn.execute("SELECT * FROM jobs ORDER BY seq"))
