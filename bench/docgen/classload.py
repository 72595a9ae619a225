"""docs/class.md: the class runs (``python -m bench.perf.class_load``), one table row per JSON summary."""

from __future__ import annotations

from .registry import family
from .tables import is_method, title as method_title

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
    titles = {"dml-cmr": "DML-CMR (gb, K = 5)", "naive": "naive plug-in (gb)", "2sls": method_title("2sls"),
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


def _load_of(data: dict) -> str:
    return " / ".join(f"{v:.0f}" for v in data["summary"]["load_before"])


def _switch_p90(data: dict) -> float:
    return _quantile([w["seconds"] for w in data["switches"] if w.get("seconds") is not None], 0.9)


@family(r"class-fix:(?P<files>\S+)")
def class_fix(rows, files: str) -> str:
    """The runs before and after the blank-page fix (2026-11-26 evening): one row per JSON summary, with how
    many Results pages showed their 4 runs, never finished drawing (None) or went blank (0)."""
    lines = ["| run | date | load (1/5/15 min) before it | Results pages showing their 4 runs | pages that never "
             "finished drawing | pages that went blank | click to curves: first / median / last | last page "
             "finished | page switches of a 21st session: median / 90th percentile / max, over 2 s | Kendall τ "
             "click vs result order | CPU while busy: server / workers (cores) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for file in files.split(","):
        data = rows.json(file)
        s = data["summary"]
        shown = s["runs_shown_per_session"]
        r, done, p, cpu = s["results_seconds"], s["results_complete_seconds"], s["page_switch_seconds"], s["cpu_while_busy"]
        lines.append(
            f"| `{file}` | {s['date'][:16]} | {_load_of(data)} | {sum(v == 4 for v in shown)} of {len(shown)} | "
            f"{sum(v is None for v in shown)} | {sum(v == 0 for v in shown)} | {r['first']:.0f} / {r['median']:.0f} / "
            f"**{r['last']:.0f} s** | {done['last']:.0f} s | {p['median']:.2f} s / **{_switch_p90(data):.2f} s** / "
            f"{p['last']:.1f} s, {p['over_2s']} of {p['n']} | {s['click_order_vs_results_order_kendall_tau']:.2f} | "
            f"{cpu['server_cpu']:.2f} / {cpu['workers_cpu']:.2f} |")
    return "\n".join(lines)


@family(r"class-idle:(?P<files>\S+)")
def class_idle(rows, files: str) -> str:
    """The first class runs (2026-11-26 midday), one column per JSON summary (local workers, Ray)."""
    runs = [(file, rows.json(file)) for file in files.split(",")]

    def row(title: str, cell) -> str:
        return f"| {title} | " + " | ".join(cell(d["summary"], d) for _, d in runs) + " |"

    def store(s, d) -> str:
        st = s["store"]
        yes = "yes" if st["each_session_all_its_runs"] and st["owners_distinct"] else "no"
        return f"{st['runs_stored']} = {len(d['sessions'])} × {st['runs_per_session']}, {yes}, {st['runs_of_no_session']}"

    def estimate(s, d) -> str:
        e = s["estimate_error"]["median"]
        return f"{abs(e):.0f} s too {'long' if e < 0 else 'short'}"

    lines = ["| | " + " | ".join(f"`{file}`" for file, _ in runs) + " |", "|---|" + "---|" * len(runs),
             row("sessions that saw their results (curves)", lambda s, d: f"{s['results_seconds']['n']} of {len(d['sessions'])}"),
             row("time from click to results: first / median / last", lambda s, d: (lambda r: f"{r['first']:.0f} s / "
                 f"{r['median']:.0f} s / **{r['last']:.0f} s**")(s["results_seconds"])),
             row("blank Results pages; \"fragment does not exist\" lines; tracebacks",
                 lambda s, d: f"{s['blank_pages']}; {s['fragment_gone_lines']}; {s['tracebacks_in_log']}"),
             row("page switches of the 21st session: median / max, over 2 s", lambda s, d: (lambda p: f"{p['median']:.2f} s / "
                 f"{p['last']:.1f} s, {p['over_2s']} of {p['n']}")(s["page_switch_seconds"])),
             row("CPU while fits ran (cores): server / fit workers", lambda s, d: f"{s['cpu_while_busy']['server_cpu']:.2f} / "
                 f"{s['cpu_while_busy']['workers_cpu']:.2f}"),
             row("peak memory: server / workers", lambda s, d: f"{s['peak_mib']['server']:,.0f} MiB / {s['peak_mib']['workers']:,.0f} MiB"),
             row("Train page's first estimate of the wait vs the real one: median error", estimate),
             row("run store: runs, each under its own session, runs of no session", store)]
    return "\n".join(lines)


@family(r"class-fig:(?P<file>[^:]+):(?P<path>[^:]+):(?P<spec>[^:]*)")
def class_figure(rows, file: str, path: str, spec: str) -> str:
    """One figure of a class run's JSON (``path`` dotted keys, list positions as numbers; ``p90switch``: the
    90th percentile of the page switches; ``tau`` Kendall's τ), formatted with ``spec`` (a format spec)."""
    data = rows.json(file)
    if path == "p90switch":
        value = _switch_p90(data)
    else:
        value = data
        for key in path.split("."):
            value = value[int(key)] if isinstance(value, list) else value[key]
    return format(value, spec)


def _path(data, path: str):
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


@family(r"class-range:(?P<files>[^:]+):(?P<path>[^:]+):(?P<spec>[^:]*):(?P<scale>[^:]+)")
def class_range(rows, files: str, path: str, spec: str, scale: str) -> str:
    """The lowest and highest of one figure over several runs' JSON ("157–190"), each times ``scale``
    (``p90switch``: the 90th percentile of the page switches)."""
    values = [float(scale) * (_switch_p90(d) if path == "p90switch" else _path(d, path))
              for d in (rows.json(f) for f in files.split(","))]
    lo, hi = format(min(values), spec), format(max(values), spec)
    return lo if lo == hi else f"{lo}–{hi}"


@family(r"class-cores:(?P<files>\S+)")
def class_cores(rows, files: str) -> str:
    """Server plus workers, cores while busy, lowest to highest over the runs ("0.85–0.94")."""
    values = [sum(rows.json(f)["summary"]["cpu_while_busy"][k] for k in ("server_cpu", "workers_cpu"))
              for f in files.split(",")]
    return f"{min(values):.2f}–{max(values):.2f}"


@family(r"demo-debias-fig:(?P<file>[^:]+):(?P<what>\S+)")
def demo_debias_figure(rows, file: str, what: str) -> str:
    """One figure of the demo's debiasing cost: ``load`` (1-minute load average, lowest–highest),
    ``spread`` (the largest ratio of one command's slowest to fastest repeat), ``dml-off`` (DML-CMR off:
    fastest to slowest repeat), ``ratio`` (the four fits on / off, lowest–highest)."""
    d = rows.jsonl(file)
    if what == "load":
        loads = [x for pair in d["load_avg_1min"] for x in pair]
        return f"{min(loads):.1f}–{max(loads):.1f}"
    if what == "spread":
        walls = d.groupby(["method", "debias"])["wall"]
        return f"{(walls.max() / walls.min()).max():.1f}"
    if what == "dml-off":
        w = d[is_method(d["method"], "dml-cmr") & (d["debias"] == "off")]["wall"]
        return f"{w.min():.0f} to {w.max():.0f} s"
    if what == "ratio":
        total = d.pivot_table(index="repeat", columns="debias", values="wall", aggfunc="sum")
        r = total["on"] / total["off"]
        return f"{r.min():.1f}–{r.max():.1f}"
    raise ValueError(f"demo-debias-fig: unknown figure {what!r}; one of load, spread, dml-off, ratio")


TARGETS = {"browsers": 20, "last_seconds": 120.0, "switch_p90": 2.0}   # issue 33's class targets


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def _seconds(q: dict, key: str) -> str:
    return f"{q[key]:.0f} s" if q and q.get("n") else "not recorded"


def _late_looks(sessions: list) -> list[float]:
    """Per session: seconds from the server's storing its last run until the server moved it to Results (its
    Train page's look): the click's arrival (browser click + ``queued_after``) + the page's own 'Demo
    finished' figure − ``server_done_after``. Empty for rows without these figures."""
    keys = ("page_says_seconds", "queued_after", "server_done_after")
    return [r["queued_after"] + r["page_says_seconds"] - r["server_done_after"] for r in sessions
            if all(r.get(k) is not None for k in keys)]


def _args(summary: dict) -> str:
    """The benchmark's options as typed (the command without the interpreter and the script's path)."""
    command = summary["command"]
    return command.split("class_load.py ", 1)[1] if "class_load.py " in command else command.split(" ", 1)[-1]


@family(r"class-verdict:(?P<file>[^:]+)")
def class_verdict(rows, file: str) -> str:
    """What the newest class run (``bash bench/perf/class_run.sh``) shows, in sentences generated from its
    row: a small check or the class measurement, the load, each target met or not."""
    data = rows.json(file)
    s, n = data["summary"], len(data["sessions"])
    load = s["load_before"][0]
    shown = [v for v in s["runs_shown_per_session"] if v is not None]
    own = s["store"]["runs_per_session"]
    complete, done = s["results_complete_seconds"], s.get("server_done_seconds") or {}
    says, lag, queued = s.get("page_says_seconds") or {}, s.get("browser_lag_seconds") or {}, s.get("server_queued_seconds") or {}
    p90 = _switch_p90(data)
    machine = ("a quiet machine" if load < 1.0 else
               f"the machine shared with other developers' jobs, load average {load:.0f} on 2 cores when it started")
    full = n >= TARGETS["browsers"] and load < 1.0
    kind = ("the class measurement" if full else
            f"a small check of the command and the flow, not the class measurement ({n} browsers on {machine})"
            if n < TARGETS["browsers"] else f"not the class measurement: {n} browsers on {machine}")
    all_shown = complete.get("n", 0) == n and all(v == own for v in shown)
    parts = [f"**The newest class run**: `{file}` ({s['date'][:16]} UTC, `python -m bench.perf.class_load {_args(s)}`), "
             f"{kind}. Results pages showing their own runs: {complete.get('n', 0)} of {n}"
             + (f", each its {own} runs (one MSE box a run)" if all_shown else
                f" (runs shown per page: {', '.join('–' if v is None else str(v) for v in s['runs_shown_per_session'])}"
                + (f"; {s['stayed_on_train']} left on Train" if "stayed_on_train" in s else "") + ")")
             + f"; the store held {s['store']['runs_stored']} runs, "
             + ("each session's under its owner" if s["store"]["each_session_all_its_runs"] else "not every session's")
             + f"; {s['blank_pages']} blank pages, {s['tracebacks_in_log']} tracebacks."]
    if done.get("n"):
        server = [f"stored the last session's runs {_seconds(done, 'last')} after its click (median {_seconds(done, 'median')})"]
        if queued.get("n"):
            server.insert(0, f"queued each click's runs within {_seconds(queued, 'last')} of the click")
        looks = _late_looks(data["sessions"])
        if says.get("n"):
            server.append(f"moved each student to Results within {_seconds(says, 'last')} of the click's arrival (the "
                          "page's own 'Demo finished' figure, the server's clock)"
                          + (f", {min(looks):.0f}–{max(looks):.0f} s after their runs were stored (at the Train page's "
                             "next refresh)" if looks else ""))
        said = server[0] if len(server) == 1 else ", ".join(server[:-1]) + " and " + server[-1]
        parts.append("The server " + said + "; the benchmark's browser had drawn "
                     f"the last Results page {_seconds(complete, 'last')} after its click"
                     + (f", {_seconds(lag, 'median')} at the median after the server had stored the runs" if lag.get("n") else "")
                     + f" (the students' {n} tabs share one browser process and the machine's 2 cores: "
                     f"{s['cpu_while_busy'].get('browsers_cpu') or 0:.2f} of a core for all browsers).")
    if full:
        last = complete["last"] if complete.get("n") else float("inf")
        parts.append(f"Targets: {n} of {n} showing their runs: {_met(all_shown)}; the last result within "
                     f"{TARGETS['last_seconds']:.0f} s: {_met(all_shown and last <= TARGETS['last_seconds'])} ("
                     + (_seconds(complete, 'last') if all_shown else
                        f"not every page showed its runs; the last that did: {_seconds(complete, 'last')}")
                     + f"); page switches of a 21st session within {TARGETS['switch_p90']:.0f} s "
                     f"at the 90th percentile: {_met(p90 <= TARGETS['switch_p90'])} ({p90:.2f} s).")
    else:
        parts.append(f"Page switches of the extra session: 90th percentile {p90:.2f} s. The class targets ("
                     f"{TARGETS['browsers']} browsers, the last result within {TARGETS['last_seconds']:.0f} s, switches "
                     f"within {TARGETS['switch_p90']:.0f} s at the 90th percentile) are judged only on a "
                     f"{TARGETS['browsers']}-browser run on a quiet machine; this run does not judge them.")
    return " ".join(parts)


@family(r"class-look:(?P<file>[^:]+)")
def class_look(rows, file: str) -> str:
    """How long after the server had stored a session's runs the Train page's look moved it to Results, lowest
    to highest over the sessions ("1–13")."""
    looks = _late_looks(rows.json(file)["sessions"])
    return f"{min(looks):.0f}–{max(looks):.0f}"


@family(r"class-look-over:(?P<file>[^:]+):(?P<seconds>[0-9.]+)")
def class_look_over(rows, file: str, seconds: str) -> str:
    """How many sessions' Train page looked more than ``seconds`` after their runs were stored ("1 of 6")."""
    data = rows.json(file)
    looks = _late_looks(data["sessions"])
    return f"{sum(v > float(seconds) for v in looks)} of {len(data['sessions'])}"


def _browser_cpu_seconds(samples: list, since: float, until: float) -> float:
    """CPU seconds the browsers used between two times, from a class run's samples (cores × interval)."""
    total = 0.0
    for before, after in zip(samples, samples[1:]):
        if before["t"] >= since and after["t"] <= until:
            total += after.get("browsers_cpu", 0.0) * (after["t"] - before["t"])
    return total


@family(r"class-browser-share:(?P<file>\S+)")
def browser_share(rows, file: str) -> str:
    """Where the class run's last minute went, per student: the class run's browsers' CPU after the
    first click (its samples) against one browser alone (the newest row of page-cost.jsonl,
    ``python -m bench.perf.page_cost``), and the time a student on a computer of their own would wait,
    estimated from the two."""
    data, cost = rows.json(file), rows.jsonl("page-cost.jsonl").iloc[-1]
    s, sessions = data["summary"], data["sessions"]
    first = min(x["clicked"] for x in sessions if x.get("clicked"))
    last = max(x["clicked"] + x["complete_after"] for x in sessions if x.get("complete_after"))
    used = _browser_cpu_seconds(data["samples"], first, last)
    alone, draw = cost["demo_to_results"], cost["results_reload_median"]
    stored = s["server_done_seconds"]["last"]
    from dashboard.training import POLL_RUNNING
    return (f"In `{file}` the browsers (the 20 students' tabs and the prober) used {used:.0f} CPU seconds between the "
            f"first click and the last Results page drawn, {used / len(sessions):.1f} a student, on the cores the "
            f"server and its workers needed too. One browser alone on a fresh server (`python -m bench.perf.page_cost`, "
            f"{cost['date'][:16]}, load average {cost['load_before'][0]:.1f} before it from other jobs) spent "
            f"{cost['home']['cpu_s']:.1f} CPU s opening Home, {alone['cpu_s']:.1f} CPU s from the demo's click to its "
            f"drawn Results page ({alone['wall_s']:.1f} s), and {draw['cpu_s']:.1f} CPU s ({draw['wall_s']:.1f} s) "
            f"drawing Results again. With each browser on its student's own computer, the last student would see "
            f"Results about {stored + POLL_RUNNING + draw['wall_s']:.0f} s after the click: the server's last store "
            f"({stored:.0f} s, measured in the class run), the Train page's next refresh (at most {POLL_RUNNING:g} s) "
            f"and one drawing of Results ({draw['wall_s']:.1f} s, measured alone) — an estimate from these "
            "measurements, not a measured class of 20 computers, which this machine cannot host.")
