"""A study's figures (plotly, no Streamlit): the MSE by N per method on a log scale, as the
paper's Figure 2, and the paired differences between methods seed by seed.

Both take the fits table (``StudyResult.fits``) and draw only finished fits, so a page can call
them again as fits finish. One panel per design other than N (data set, rho, IV strength, ...).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dmlcore.plots import METHOD_COLORS, PALETTE
from dmlcore.studies.summarize import data_columns, format_value

PANEL_HEIGHT = 380
X_TITLE = "N (rows)"
_LAYOUT = dict(template="plotly_white", boxmode="group", margin=dict(l=60, r=20, t=70, b=50),
               legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0))


def mse_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Box plots of the MSE over seeds, by N, one box per arm, log scale."""
    done = _finished(fits)
    if done.empty:
        return _empty("MSE by N", "no finished fits yet")
    colors = _arm_colors(done)
    panels = list(dict.fromkeys(done["panel"]))
    fig = make_subplots(rows=len(panels), cols=1, subplot_titles=_titles(panels), vertical_spacing=0.12 / len(panels))
    for arm, color in colors.items():
        for row, panel in enumerate(panels, start=1):
            part = done[(done["arm"] == arm) & (done["panel"] == panel)]
            if part.empty:
                continue
            fig.add_trace(go.Box(x=part["x"], y=part["mse"], name=arm, legendgroup=arm, marker_color=color,
                                 showlegend=not any(t.name == arm for t in fig.data), boxpoints="all",
                                 jitter=0.3, pointpos=0, marker_size=4), row=row, col=1)
    reps = done.groupby(["panel", "x", "arm"]).size()
    seeds = f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()}–{reps.max()}"
    fig.update_layout(**_LAYOUT, height=PANEL_HEIGHT * len(panels) + 90,
                      title=title or f"MSE by N ({seeds} seeds per box, log scale)")
    fig.update_yaxes(type="log", title_text="MSE")
    fig.update_xaxes(title_text=X_TITLE, **_x_order(done))
    return fig


def paired_figure(fits: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Per pair of arms, box plots of MSE(a) − MSE(b) over the seeds both finished, by N."""
    done = _finished(fits)
    arms = list(dict.fromkeys(done["arm"])) if not done.empty else []
    if len(arms) < 2:
        return _empty("Paired differences", "needs two methods with finished fits")
    diffs = []
    for (panel, x), cell in done.groupby(["panel", "x"], sort=False):
        wide = cell.pivot(index="seed", columns="arm", values="mse").astype(float)
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                if a in wide and b in wide:
                    d = (wide[a] - wide[b]).dropna()
                    diffs.append(pd.DataFrame({"panel": panel, "x": x, "pair": f"{a} − {b}", "diff": d.to_numpy()}))
    if not diffs:
        return _empty("Paired differences", "no seed finished for two methods yet")
    table = pd.concat(diffs, ignore_index=True)
    panels = list(dict.fromkeys(table["panel"]))
    fig = make_subplots(rows=len(panels), cols=1, subplot_titles=_titles(panels), vertical_spacing=0.12 / len(panels))
    for k, pair in enumerate(dict.fromkeys(table["pair"])):
        for row, panel in enumerate(panels, start=1):
            part = table[(table["pair"] == pair) & (table["panel"] == panel)]
            if not part.empty:
                fig.add_trace(go.Box(x=part["x"], y=part["diff"], name=pair, legendgroup=pair,
                                     marker_color=PALETTE[k % len(PALETTE)], boxpoints="all", jitter=0.3,
                                     pointpos=0, marker_size=4,
                                     showlegend=not any(t.name == pair for t in fig.data)), row=row, col=1)
            fig.add_hline(y=0, line_color="#555", line_width=1, row=row, col=1)
    fig.update_layout(**_LAYOUT, height=PANEL_HEIGHT * len(panels) + 90,
                      title=title or "Paired differences MSE(a) − MSE(b), seed by seed (below 0: a did better)")
    fig.update_yaxes(title_text="MSE difference", zeroline=True)
    fig.update_xaxes(title_text=X_TITLE, **_x_order(done))
    return fig


def _finished(fits: pd.DataFrame) -> pd.DataFrame:
    """Finished fits with ``panel`` (the design other than N) and ``x`` (N as a category)."""
    if fits.empty or "status" not in fits:
        return pd.DataFrame()
    done = fits[(fits["status"] == "done") & fits["mse"].notna()].copy()
    if done.empty:
        return done
    options = [c for c in data_columns(done) if c != "n" and done[c].astype(str).nunique() > 1]
    multi = done["dataset"].nunique() > 1 or options

    def panel(row) -> str:
        parts = [f"{c}={format_value(row[c])}" for c in options if pd.notna(row[c])]
        return ", ".join([row["dataset"], *parts]) if multi else row["dataset"]

    done["panel"] = done.apply(panel, axis=1)
    n = done["n"] if "n" in done else pd.Series(pd.NA, index=done.index)
    done["x"] = n.fillna(done["rows"]).map(format_value)
    return done


def _arm_colors(done: pd.DataFrame) -> dict:
    """One colour per arm: the method's own when each method is one arm."""
    method_of = dict(zip(done["arm"], done["method"]))
    one_per_method = len(set(method_of.values())) == len(method_of)
    return {arm: (METHOD_COLORS.get(method, PALETTE[i % len(PALETTE)]) if one_per_method
                  else PALETTE[i % len(PALETTE)]) for i, (arm, method) in enumerate(method_of.items())}


def _x_order(done: pd.DataFrame) -> dict:
    values = sorted(set(done["x"]), key=lambda v: float(v))
    return {"categoryorder": "array", "categoryarray": values, "type": "category"}


def _titles(panels: list[str]) -> list[str]:
    return panels if len(panels) > 1 else [""]


def _empty(title: str, note: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=note, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(template="plotly_white", title=title, height=260,
                      xaxis=dict(visible=False), yaxis=dict(visible=False))
    return fig
