"""A study's files: fits.csv, summary.csv, paired.csv, fold_losses.csv (each also as .parquet),
provenance.json, spec.json, report.html and PNG figures.

``provenance.json`` (:mod:`~dmlcore.studies.provenance`): the dmlcore version and commit, the library
versions, the machine, its cores and the 1-minute load at the study's start and end; report.html
says it in one line. ``fold_losses.csv``: every fit's fold losses (:func:`~dmlcore.studies.summarize.fold_loss_table`).

``report.html`` is one self-contained page (plotly.js inlined: it opens offline) with the fits'
counts (those of fits.csv) and, when fits failed, their first reasons; the verdict of every pair
of methods in words (:func:`~dmlcore.studies.summarize.verdict_lines`); the figures of
:func:`~dmlcore.studies.figures.study_figures` (the MSE box plots by N where a truth is known, the
estimated curves over seeds, the plug-in and debiased effects with the true effect, the held-out
residual on real data, the paired differences), the summary and paired tables with readable column
names, the paper-ready table (:mod:`~dmlcore.studies.paper`, also ``table.md`` and ``table.tex``),
any failed fits, and the command that reruns the study from its ``spec.json``.
The same figures are written as PNGs (``mse_by_n.png``, ``curves.png``, ``effects.png``,
``heldout_score.png``, ``paired_differences.png``: those the study has), exported by plotly's kaleido, which drives the
system's Chromium (``/usr/bin/chromium``, or ``BROWSER_PATH``); without one the page and the
tables are still written and ``StudyResult.png_error`` says why there are no PNGs.
"""

from __future__ import annotations

import html
import json
import math
import time
from pathlib import Path

import pandas as pd
import plotly.io as pio
from plotly.offline import get_plotlyjs

from dmlcore._version import __version__
from dmlcore.data.registry import no_truth
from dmlcore.studies.figures import StudyFigure, study_figures
from dmlcore.studies.paper import paper_table
from dmlcore.studies.provenance import provenance, provenance_line, snapshot
from dmlcore.studies.summarize import (OUTCOMES, compact, fixed, fold_loss_table, min_pairs, paired_view, readable, smallest_p, summary_view,
                                      verdict_lines)

PNG_WIDTH = 1000
STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;
padding:1em;overflow:auto;font-size:12px}.note{color:#555;font-size:14px}.wide{overflow-x:auto}
.failed{background:#fdecea;border-left:4px solid #c62828;padding:.6em 1em}.warn{background:#fff8e1;
border-left:4px solid #f9a825;padding:.6em 1em}"""
RERUN = "python -m dmlcore study --spec spec.json --out study"


def write_outputs(result, out_dir: str | Path, *, spec=None) -> dict:
    """Write every file of ``result`` into ``out_dir``; returns {name: path} (also in ``result.files``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    losses = fold_loss_table(result.fits, getattr(result, "fold_losses", {}) or {})
    for name, frame in (("fits.csv", result.fits), ("summary.csv", result.summary), ("paired.csv", result.paired),
                        ("fold_losses.csv", losses)):
        frame.to_csv(out / name, index=False)
        files[name] = out / name
        parquet = name.replace(".csv", ".parquet")          # the same table, typed, beside the CSV
        _parquet(frame).to_parquet(out / parquet, index=False)
        files[parquet] = out / parquet
    (out / "provenance.json").write_text(json.dumps(result_provenance(result), indent=2))
    files["provenance.json"] = out / "provenance.json"
    if spec is not None:
        (out / "spec.json").write_text(spec_json(spec))
        files["spec.json"] = out / "spec.json"
    table = paper_table(result)
    for name, text in (("table.md", table.to_markdown()), ("table.tex", table.to_latex(label="tab:study"))):
        (out / name).write_text(text, encoding="utf-8")
        files[name] = out / name
    shown = study_figures(result.fits, result.curves)
    figures = {item.file: item.figure for item in shown}
    (out / "report.html").write_text(report_html(result, shown, spec=spec), encoding="utf-8")
    files["report.html"] = out / "report.html"
    result.png_error = write_pngs(figures, out)
    if result.png_error is None:
        files.update({name: out / name for name in figures})
    result.files = files
    return files


def _parquet(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its mixed object columns (numbers beside text or None) as text, which Parquet needs."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            kinds = {type(v) for v in out[column] if v is not None and not (isinstance(v, float) and math.isnan(v))}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                out[column] = out[column].map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v))
                                              else str(v))
    return out


def result_provenance(result) -> dict:
    """The result's provenance (dmlcore.studies.provenance); for a reopened study, where it was written."""
    return getattr(result, "provenance", None) or {**provenance(snapshot()), "started": None, "load_1min_start": None,
                                                   "note": "reopened from the store: where the report was written"}


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
    figures = figures if figures is not None else study_figures(result.fits, result.curves)
    datasets = list(dict.fromkeys(result.fits["dataset"])) if len(result.fits) else []
    parts = [
        f"<h1>Study report: {html.escape(', '.join(datasets) or 'none')}</h1>",
        f"<p id=counts>{html.escape(result.message)}.</p>",
        f"<p class=note>Written {time.strftime('%Y-%m-%d %H:%M %Z')} by dmlcore {html.escape(__version__)}. "
        f"<span id=provenance>Ran with: {html.escape(provenance_line(result_provenance(result)))}</span> "
        "(provenance.json).</p>",
    ]
    if result.failure_text():
        parts.append(f"<p class=failed id=failures>{html.escape(result.failure_text())}</p>")
    if result.pending:
        parts.append(f"<p class=warn>The study was still running when this report was written: {result.pending} "
                     "fits had not finished.</p>")
    real = [name for name in datasets if no_truth(name)]
    if real:
        parts.append(f"<p class=note>{html.escape(real_data_note(real))}</p>")
    lines = verdict_lines(result.paired, result.fits)
    if lines:
        parts += ["<h2>Verdicts</h2>", f"<p class=note>{html.escape(VERDICT_NOTE)}</p>",
                  "<ul id=verdicts>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>"]
        if (warning := seeds_warning(result.paired, spec)):
            parts.append(f"<p class=warn>{html.escape(warning)}</p>")
    for item in figures:
        parts += [f"<h2>{html.escape(item.heading)}</h2>", f"<p class=note>{html.escape(item.note)}</p>",
                  _figure_html(item.figure)]
    table = paper_table(result)
    parts += [
        "<h2>Summary</h2>",
        f"<p class=note>{html.escape(SUMMARY_NOTE)}</p>",
        _table(summary_view(result.summary, result.fits)),
        "<h2>Paired comparisons</h2>",
        f"<p class=note>{html.escape(PAIRED_NOTE)}</p>",
        _table(paired_view(result.paired, result.fits)),
        "<h2>Paper-ready table</h2>",
        "<p class=note>Also table.md and table.tex in the study's files (the LaTeX needs the booktabs and graphicx packages).</p>",
        f"<pre>{html.escape(table.to_markdown())}</pre>",
        f"<pre>{html.escape(table.to_latex(label='tab:study'))}</pre>",
    ]
    failed = result.fits[result.fits["status"] != "done"] if len(result.fits) else result.fits
    if len(failed):
        keep = [c for c in failed.columns if c not in (*OUTCOMES, "seconds", "worker_seconds", "rows", "key", "arm",
                                                       "reused")]
        parts += [f"<h2>Fits without a result ({len(failed)})</h2>",
                  "<p class=note>Failed or cancelled; run the same study again to retry them.</p>",
                  _table(readable(compact(failed[keep], result.fits, drop=())))]
    if spec is not None:
        parts += ["<h2>Rerun from the command line</h2>",
                  f"<p class=note>{html.escape(RERUN_NOTE)}</p>", f"<pre id=rerun>{html.escape(RERUN)}</pre>",
                  "<h3>spec.json</h3>", f"<pre>{html.escape(spec_json(spec))}</pre>"]
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Study report</title>"
            f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
            + "\n".join(parts) + "</body></html>")


SUMMARY_NOTE = ("Per design and method, over finished fits: fits and failed fits; where the truth is known the "
                "median, quartiles, mean and sample sd of the MSE, the median MSE on fresh draws; mean seconds of the "
                "fit alone and with every refit (data, fit, diagnostics, held-out and debiased-effect refits); "
                "the median, quartiles and sd over seeds of the effect estimates and the medians of their interval "
                "ends; on real data the median and quartiles of the held-out residual (÷ Var Y, lower is better).")
PAIRED_NOTE = ("Per design and pair of methods, over the seeds where both finished: the verdict; the Holm p (the "
               "two-sided Wilcoxon signed-rank p corrected by Holm's method over every comparison of the study); the "
               "Hodges–Lehmann estimate of a − b with its 95 % signed-rank interval (not corrected; blank below six "
               "seeds); the effect size r, the rank-biserial correlation (−1: a lower on every seed; +1: b lower on "
               "every seed); the uncorrected Wilcoxon p (scipy; blank when every difference is zero); seeds won by "
               "each (the lower value), ties and the median of a − b (of the MSE where the truth is known, else of "
               "the held-out residual: 'Compared on'). On real data the seeds share the rows, so the p-value weighs "
               "a gap against the methods' randomness, not against sampling.")


VERDICT_NOTE = ("By the project's one rule (dmlcore.studies.verdict): a method is ahead of another, and the other "
                "behind, only when the two-sided Wilcoxon signed-rank p of their paired differences, corrected by "
                "Holm's method over all the study's comparisons, is below 0.05; the direction is the test's own "
                "(the sign of the rank-biserial correlation r, from the signed-rank sums), not the sign of the median "
                "difference. Otherwise the two are level, whatever the counts of seeds won.")
RERUN_NOTE = ("Save spec.json (in the study's files), then run this where dmlcore is installed: it runs the same "
              "grid, reuses the fits already in that machine's run store and writes these files to the folder "
              "study. Add --jobs N for N fits at once, or --executor ray --address HOST:PORT for a Ray cluster.")


def spec_json(spec) -> str:
    """The study's spec as the JSON file ``study --spec`` reads."""
    return json.dumps(spec.to_dict(), indent=2)


def seeds_warning(paired: pd.DataFrame, spec=None) -> str | None:
    """A warning when the study (``spec``'s seeds; else the pairs') has fewer seeds than a verdict other
    than level needs under Holm's correction over the study's comparisons; None otherwise (a running
    study's pairs that are still short say so line by line)."""
    if paired.empty:
        return None
    fewest = (min(len(grid.seeds) for grid in spec.grids) if spec is not None else int(paired["pairs"].min()))
    comparisons = max(int(paired["comparisons"].max()), 1) if "comparisons" in paired and paired["comparisons"].notna().any() else 1
    need = min_pairs(comparisons=comparisons)
    if fewest >= need:
        return None
    holm = f" times {comparisons} comparisons (Holm)" if comparisons > 1 else ""
    return (f"Too few seeds for a verdict: with {fewest} paired seed{'s' if fewest != 1 else ''} the two-sided "
            f"Wilcoxon p cannot go below {smallest_p(fewest):.2g}{holm}, so every pair reads level whatever the "
            f"counts. Run at least {need} seeds for a corrected p below 0.05 to be possible (more to detect a "
            "small difference).")


def about(seconds: float) -> str:
    """A duration as people say it: 'about 40 s', 'about 3 min', 'about 31 h 23 min'."""
    if seconds < 55:
        return f"about {max(5, 5 * round(seconds / 5)):.0f} s"
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h" + (f" {minutes} min" if minutes else "")


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
    frame = frame.assign(**{c: fixed(frame[c].to_numpy(dtype=float)) for c in frame.columns
                            if pd.api.types.is_float_dtype(frame[c])})      # one rounding per column
    return ("<div class=wide>" + frame.to_html(index=False, escape=True, na_rep="",
                                              border=0) + "</div>")
