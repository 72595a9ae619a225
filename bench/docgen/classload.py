"""docs/class.md: the class runs (``python -m bench.perf.class_load``), one table row per JSON summary."""

from __future__ import annotations

from .registry import family

COLUMNS = ("run", "date", "students' browsers", "Results pages showing their runs", "blank pages",
           "click to results: first / median / last", "page switches of a 21st session: median / 90th percentile "
           "/ max, over 2 s", "Kendall τ click vs result order", "CPU while busy: server / workers / browsers / other (cores)",
           "fits' share of the workers' time", "server had stored a session's runs: median / last")


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


@family(r"class-load:(?P<files>\S+)")
def class_runs(rows, files: str) -> str:
    """One row per class run (comma-separated JSON files in bench/results)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for file in files.split(","):
        data = rows.json(file)
        s = data["summary"]
        switches = [w["seconds"] for w in data["switches"] if w.get("seconds") is not None]
        p = s["page_switch_seconds"]
        shown = len(s["runs_shown_per_session"]) - s["sessions_without_results"]
        browsers = f"niced to {s['settings']['students_nice']}" if s["settings"].get("students_nice") else "same priority"
        if (s.get("autogroup") or {}).get("students_browser"):
            browsers += ", autogroup too"
        if (s.get("autogroup") or {}).get("server"):
            browsers += f"; server's autogroup at nice {s['settings']['server_nice']}"
        done = s.get("server_done_seconds") or {}
        cpu = s["cpu_while_busy"]
        cores = " / ".join(f"{cpu[k]:.2f}" if cpu.get(k) is not None else "–"
                           for k in ("server_cpu", "workers_cpu", "browsers_cpu", "other_cpu"))
        fill = (s.get("workers_fill") or {}).get("share")
        r = s["results_complete_seconds"]
        lines.append(
            f"| `{file}` | {s['date'][:16]} | {browsers} | {shown} of {len(s['runs_shown_per_session'])} | "
            f"{s['blank_pages']} | {r['first']:.0f} / {r['median']:.0f} / **{r['last']:.0f} s** | "
            f"{p['median']:.2f} s / **{_quantile(switches, 0.9):.2f} s** / {p['last']:.1f} s, {p['over_2s']} of {p['n']} | "
            f"{s['click_order_vs_results_order_kendall_tau']:.2f} | {cores} | "
            + (f"{100 * fill:.0f} %" if fill is not None else "not recorded") + " | "
            + (f"{done['median']:.0f} / {done['last']:.0f} s" if done.get("n") else "not recorded") + " |")
    return "\n".join(lines)
