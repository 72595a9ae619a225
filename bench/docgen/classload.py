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
            + (f"{tau:.2f}" if (tau := s["click_order_vs_results_order_kendall_tau"]) is not None else "–")
            + f" | {cores} | "
            + (f"{100 * fill:.0f} %" if fill is not None else "not recorded") + " | "
            + (f"{done['median']:.0f} / {done['last']:.0f} s" if done.get("n") else "not recorded") + " |")
    return "\n".join(lines)


@family(r"class-handover:(?P<file>\S+)")
def handover(rows, file: str) -> str:
    """The queue's hand-over between fits (``python -m bench.perf.queue_handover``), in one sentence."""
    data = rows.json(file)
    s, fits = data["summary"], data["fits"]
    g = s["handover_gap_seconds"]
    first = min(r["started"] for r in fits)
    busy = sum(r["worker_ended"] - r["worker_began"] for r in fits) / (s["workers"] * (s["wall_seconds"] - first))
    return (f"{s['demos']} demos ({s['fits']} fits) on {s['workers']} worker processes, {s['date'][:16]}, load "
            f"average {s['load_before'][0]:.0f} before it started (other developers' jobs): the gap between one fit "
            f"ending in a worker process and the next starting there was {g['median']:.2f} s at the median and "
            f"{g['max']:.2f} s at most, against {s['fit_seconds_per_demo']:.1f} s of fitting per demo on this loaded "
            f"machine. From the first fit's start (after {first:.0f} s of the workers' warm-up and the demos' data "
            f"under this load) to the last fit's end the two worker processes were fitting {100 * busy:.0f} % of the "
            "time (`bench/results/" + file + "`).")


@family(r"class-autogroup:(?P<file>\S+)")
def autogroup(rows, file: str) -> str:
    """The autogroup check (``python -m bench.perf.autogroup_check``), in one sentence."""
    r = rows.json(file)
    a, b = r["others_nice_19"], r["others_nice_19_and_autogroup_19"]
    return (f"the two niced loops got {a['others_cores']:.2f} of a core against {a['ours_cores']:.2f} for ours "
            f"(nice 19 did not hold them back); with their autogroup niced to 19 as well they got "
            f"{b['others_cores']:.2f} against {b['ours_cores']:.2f} ({r['date'][:16]}, load average "
            f"{r['load_before'][0]:.0f} before it: our pair shared the machine with other developers' sessions too; "
            f"`bench/results/{file}`).")


@family(r"demo-debias:(?P<file>\S+)")
def demo_debias(rows, file: str) -> str:
    """The demo's fits with and without the debiased effect (``bench/perf/demo_debias_cost.sh``): wall
    seconds per repeat and their ratio."""
    d = rows.jsonl(file)
    titles = {"dml-cmr": "DML-CMR (gb, K = 5)", "naive": "naive plug-in (gb)", "2sls": "2SLS",
              "regression": "regression (gb)"}
    wide = d.pivot_table(index=["method", "repeat"], columns="debias", values="wall")
    lines = ["| | debiased effect on | off | on / off |", "|---|---|---|---|"]
    for method, title in titles.items():
        part = wide.loc[method]
        lines.append(f"| {title} | {', '.join(f'{v:.0f}' for v in part['on'])} | "
                     f"{', '.join(f'{v:.0f}' for v in part['off'])} | "
                     f"{', '.join(f'{a / b:.1f}' for a, b in zip(part['on'], part['off']))} |")
    total = wide.groupby(level="repeat").sum()
    lines.append(f"| the four fits | {', '.join(f'{v:.0f}' for v in total['on'])} | "
                 f"{', '.join(f'{v:.0f}' for v in total['off'])} | "
                 f"{', '.join(f'{a / b:.1f}' for a, b in zip(total['on'], total['off']))} |")
    return "\n".join(lines)
