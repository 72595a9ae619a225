"""A study's files: fits.csv, summary.csv, paired.csv, spec.json, report.html and PNG figures.

``report.html`` is one self-contained page (plotly.js inlined: it opens offline) with the figures
of :func:`~dmlcore.studies.figures.study_figures` (the MSE box plots by N where a truth is known,
the effect estimates with their intervals, the held-out residual on real data, the paired
differences), the summary and paired tables with readable column names, and any failed fits.
The same figures are written as PNGs (``mse_by_n.png``, ``effects.png``, ``heldout_score.png``,
``paired_differences.png``: those the study has), exported by plotly's kaleido, which drives the
system's Chromium (``/usr/bin/chromium``, or ``BROWSER_PATH``); without one the page and the
tables are still written and ``StudyResult.png_error`` says why there are no PNGs.
"""

from __future__ import annotations

import html
import json
import platform
import time
from pathlib import Path

import pandas as pd
import plotly.io as pio
from plotly.offline import get_plotlyjs

from dmlcore._version import __version__
from dmlcore.data.registry import no_truth
from dmlcore.studies.figures import StudyFigure, study_figures
from dmlcore.studies.summarize import OUTCOMES, compact, readable

PNG_WIDTH = 1000
STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;
padding:1em;overflow:auto;font-size:12px}.note{color:#555;font-size:14px}"""


def write_outputs(result, out_dir: str | Path, *, spec=None) -> dict:
    """Write every file of ``result`` into ``out_dir``; returns {name: path} (also in ``result.files``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, frame in (("fits.csv", result.fits), ("summary.csv", result.summary), ("paired.csv", result.paired)):
        frame.to_csv(out / name, index=False)
        files[name] = out / name
    if spec is not None:
        (out / "spec.json").write_text(json.dumps(spec.to_dict(), indent=2))
        files["spec.json"] = out / "spec.json"
    shown = study_figures(result.fits)
    figures = {item.file: item.figure for item in shown}
    (out / "report.html").write_text(report_html(result, shown, spec=spec), encoding="utf-8")
    files["report.html"] = out / "report.html"
    result.png_error = write_pngs(figures, out)
    if result.png_error is None:
        files.update({name: out / name for name in figures})
    result.files = files
    return files


def write_pngs(figures: dict, out: Path) -> str | None:
    """Export ``{file name: figure}`` as PNGs in one browser session; the error in one line, or None."""
    try:
        pio.write_images(list(figures.values()), [out / name for name in figures],
                         width=[PNG_WIDTH] * len(figures), height=[int(f.layout.height or 500) for f in figures.values()])
    except Exception as exc:  # no Chromium, or kaleido failed: the page and tables stand alone
        return f"no PNG figures ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
    return None


def report_html(result, figures: list[StudyFigure] | None = None, *, spec=None) -> str:
    """The self-contained report page of ``result`` (``figures``: :func:`study_figures`'s)."""
    figures = figures if figures is not None else study_figures(result.fits)
    datasets = list(dict.fromkeys(result.fits["dataset"])) if len(result.fits) else []
    parts = [
        f"<h1>Study report: {html.escape(', '.join(datasets) or 'none')}</h1>",
        f"<p>{html.escape(result.message)}. Written {time.strftime('%Y-%m-%d %H:%M %Z')} by dmlcore "
        f"{html.escape(__version__)} on {html.escape(platform.node() or 'this machine')}.</p>",
    ]
    real = [name for name in datasets if no_truth(name)]
    if real:
        parts.append(f"<p class=note>{html.escape(real_data_note(real))}</p>")
    for item in figures:
        parts += [f"<h2>{html.escape(item.heading)}</h2>", f"<p class=note>{html.escape(item.note)}</p>",
                  _figure_html(item.figure)]
    parts += [
        "<h2>Summary</h2>",
        f"<p class=note>{html.escape(SUMMARY_NOTE)}</p>",
        _table(readable(compact(result.summary, result.fits))),
        "<h2>Paired comparisons</h2>",
        f"<p class=note>{html.escape(PAIRED_NOTE)}</p>",
        _table(readable(compact(result.paired, result.fits, drop=()))),
    ]
    failed = result.fits[result.fits["status"] != "done"] if len(result.fits) else result.fits
    if len(failed):
        keep = [c for c in failed.columns if c not in (*OUTCOMES, "seconds", "worker_seconds", "rows", "key", "arm",
                                                       "reused")]
        parts += [f"<h2>Fits without a result ({len(failed)})</h2>",
                  "<p class=note>Failed or cancelled; run the same study again to retry them.</p>",
                  _table(readable(compact(failed[keep], result.fits, drop=())))]
    if spec is not None:
        parts += ["<h2>Spec</h2>", f"<pre>{html.escape(json.dumps(spec.to_dict(), indent=2))}</pre>"]
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Study report</title>"
            f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
            + "\n".join(parts) + "</body></html>")


SUMMARY_NOTE = ("Per design and method, over finished fits: fits and failed fits; where the truth is known the "
                "median, quartiles, mean and sample sd of the MSE, the median MSE on fresh draws; mean fit seconds; "
                "the median, quartiles and sd over seeds of the effect estimates and the medians of their interval "
                "ends; on real data the median and quartiles of the held-out residual (÷ Var Y, lower is better).")
PAIRED_NOTE = ("Per design and pair of methods, over the seeds where both finished: the median of a − b (of the "
               "MSE where the truth is known, else of the held-out residual: 'Compared on'), seeds won by each (the "
               "lower value), ties, and the two-sided Wilcoxon signed-rank p-value (scipy; blank when every "
               "difference is zero; no correction for multiple comparisons). On real data the seeds share the "
               "rows, so the p-value weighs a gap against the methods' randomness, not against sampling.")


def real_data_note(names: list[str]) -> str:
    """What a study of the real data sets (or the user's table, ``table``) ``names`` can and cannot say."""
    shown = ", ".join("your table" if name == "table" else name for name in names)
    return (f"Data without a known truth ({shown}): the true causal function is unknown, so there is no MSE. Each "
            "fit reports the treatment's effect with its interval (where the method has one) and the held-out "
            "residual, which needs no truth: it flags fits that fail the moment restriction on rows they "
            "never saw. It is not an error against the true effect (with weak instruments or proxies very "
            "different fits score alike), so use it to set aside fits that fail, not to crown a winner. The rows "
            "are the same at every seed: a seed changes only the methods' randomness (initial weights, draws, "
            "cross-fitting folds) and the held-out folds.")


def _figure_html(fig) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True})


def _table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "<p class=note>(none)</p>"
    return frame.to_html(index=False, escape=True, na_rep="", float_format=lambda v: f"{v:.4g}", border=0)
