"""docs/results-today.md recomputed from its rows with code independent of the renderers (pandas and
scipy only): every median, quartile, mean, count of wins and Wilcoxon p of its study tables, and every
figure of its tables against the paper, matches the page."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results-today.md"
TITLES = {"DML-CMR": "dml-cmr", "CE-DML-CMR": "ce-dml-cmr", "Naive plug-in": "naive",
          "DeepIV (our naive plug-in)": "naive"}
BLOCK = re.compile(r"<!-- BEGIN generated:(table|paper):(\S+?) -->\n(.*?)\n<!-- END", re.S)


def _rows(table_id: str) -> pd.DataFrame:
    """The rows file named on the page for a table id, and its cell (N from the id where the file holds two)."""
    base = re.sub(r"^demand-iv-gb-(2000|5000)-auto$", "demand-iv-gb-auto", table_id)
    base = re.sub(r"^(demand-(?:iv|pcl)-nn)-(1000|2000)-auto$", r"\1-1000-2000-auto", base)
    frame = pd.read_csv(ROOT / "bench" / "results" / "authors" / f"{base}.csv")
    if base != table_id:
        frame = frame[frame["n"] == int(re.search(r"-(\d+)-auto$", table_id)[1])]
    return frame


def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}"


def _num3(x: float) -> str:     # the paper tables' three significant figures
    text = f"{x:.3g}"
    return f"{x:.{max(2 - int(np.floor(np.log10(abs(x)))), 0)}f}" if "e" in text else text


def test_every_figure_of_the_study_tables_is_recomputed():
    checked = 0
    for kind, table_id, body in BLOCK.findall(PAGE.read_text()):
        if kind != "table":
            continue
        frame = _rows(table_id)
        ref = frame[frame["method"] == "dml-cmr"].set_index("seed")
        for line in body.splitlines()[2:]:
            if not line.startswith("| "):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            method = frame[frame["method"] == TITLES[cells[0]]].set_index("seed")
            mse = method["mse"].to_numpy()
            q1, med, q3 = np.quantile(mse, [0.25, 0.5, 0.75])
            assert cells[1] == str(len(mse))
            assert cells[2] == f"{_fmt(med)} [{_fmt(q1)}, {_fmt(q3)}]", (table_id, cells[0])
            assert cells[3] == _fmt(mse.mean()), (table_id, cells[0])
            if len(cells) > 5:                      # demand-pcl has no fresh-draw protocol
                assert cells[5] == _fmt(method["mse_fresh"].median()), (table_id, cells[0])
            assert len(cells) == 5 + ("mse_fresh" in frame and frame["mse_fresh"].notna().any())
            checked += 4 + (len(cells) > 5)
            if cells[0] != "DML-CMR":
                diff = (ref["mse"] - method["mse"]).dropna().to_numpy()
                p = wilcoxon(diff).pvalue
                assert cells[4] == f"{(diff < 0).sum()} / {(diff > 0).sum()} of {len(diff)}, p = {p:.2g}", table_id
                checked += 3
    assert checked >= 50, checked


def test_every_figure_of_the_tables_against_the_paper_is_recomputed():
    checked = 0
    for kind, key, body in BLOCK.findall(PAGE.read_text()):
        if kind != "paper":
            continue
        frame = _rows(key.split(":")[0])
        for line in body.splitlines()[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            method = frame[frame["method"] == TITLES.get(cells[0], cells[0].lower())]
            how = "mean" if "mean" in body.splitlines()[0] else "median"
            published = float(cells[1].lstrip("~"))
            grid, fresh = (getattr(method[c], how)() for c in ("mse", "mse_fresh"))
            assert cells[2:] == [_num3(grid), f"{grid / published:.2f}", _num3(fresh), f"{fresh / published:.2f}"], key
            checked += 4
    assert checked >= 50, checked
