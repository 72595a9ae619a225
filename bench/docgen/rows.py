"""Reading the raw rows of bench/results/ (CSV, JSON lines, JSON, ``/usr/bin/time -v`` logs), cached."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).resolve().parents[1] / "results"


class Rows:
    """The rows under ``folder``; every file is read once and handed out as a copy."""

    def __init__(self, folder: Path = RESULTS):
        self.folder = Path(folder)
        self._cache: dict = {}
        self.read: set[str] = set()  # the files handed out so far (relative names): which rows the docs use

    def _read(self, name: str, reader):
        key = (name, reader.__name__)
        if key not in self._cache:
            path = self.folder / name
            if not path.exists():
                raise FileNotFoundError(f"no rows: {path}")
            self._cache[key] = reader(path)
        self.read.add(Path(name).as_posix())
        value = self._cache[key]
        return value.copy() if hasattr(value, "copy") else value

    def csv(self, name: str) -> pd.DataFrame:
        return self._read(name, pd.read_csv)

    def jsonl(self, name: str) -> pd.DataFrame:
        return self._read(name, _jsonl)

    def json(self, name: str):
        return json.loads(self._read(name, Path.read_text))

    def text(self, name: str) -> str:
        return self._read(name, Path.read_text)

    def names(self, pattern: str) -> list[str]:
        """The files under the folder matching the glob ``pattern``, relative to it, in natural order
        (``run2`` before ``run10``)."""
        paths = [p.relative_to(self.folder).as_posix() for p in self.folder.glob(pattern)]
        return sorted(paths, key=lambda name: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)])

    def time_log(self, name: str) -> dict:
        """The ``/usr/bin/time -v`` figures at the end of a log."""
        return self._read(name, _time_log)

    def fits(self, *names: str) -> pd.DataFrame:
        """Bench CSVs as a study's finished fits (``status``, ``rows``; arms added)."""
        from dmlcore.studies.summarize import add_arms

        rows = pd.concat([self.csv(name) for name in names], ignore_index=True)
        rows = rows.drop(columns=["learner", "folds", "file", "outcome_learner", "sampler",   # settings: the
                                 "nuisance_pair", "own_loss_pair"],     # tables' nuisance line says them; the
                         errors="ignore").assign(status="done")         # pairs fitted are outcomes, not arms
        rows["rows"] = rows["n"]
        outcomes = ("method", "seed", "mse", "mse_fresh", "seconds", "status", "rows",
                    "load_1min_start", "load_1min_end", "cores", "other_work")   # a timing's load: no design
        design = [c for c in rows.columns if c not in ("dataset", "n", *outcomes)]
        return add_arms(rows[["dataset", "n", *design, *[c for c in outcomes if c in rows]]])


def _jsonl(path: Path) -> pd.DataFrame:
    return pd.DataFrame([json.loads(line) for line in path.read_text().splitlines() if line.strip()])


def _time_log(path: Path) -> dict:
    text = path.read_text()

    def grab(pattern: str) -> str:
        return re.search(pattern, text).group(1)

    wall = [float(x) for x in grab(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)").split(":")]
    return {"wall_s": sum(v * 60 ** i for i, v in enumerate(reversed(wall))),
            "user_s": float(grab(r"User time \(seconds\): (\S+)")),
            "system_s": float(grab(r"System time \(seconds\): (\S+)")),
            "cpu_percent": int(grab(r"Percent of CPU this job got: (\d+)%")),
            "peak_kib": int(grab(r"Maximum resident set size \(kbytes\): (\d+)")),
            "minor_faults": int(grab(r"Minor \(reclaiming a frame\) page faults: (\d+)"))}
