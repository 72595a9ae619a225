"""A class on one server: N real browser sessions click the one-click demo within a few seconds.

Starts the dashboard (``streamlit run app.py``) on a fresh DMLCORE_HOME and opens N Playwright
contexts in /usr/bin/chromium (each its own browser profile: its own cookie, its own session).
Each loads Home, then they click "Run the demo" spread evenly over ``--spread`` seconds. For
each it records the time from its click until its Results page shows the curves, whether its
Results page was ever blank (the address says Results and the page shows nothing) and for how
long, and what it shows once the page has drawn its last section ("Stored runs"; counted earlier,
while the page was still drawing, it undercounted): its own runs of batch 1, nothing of the others'.
The clicks start when every session has opened Home (before, slow openings bunched them into one
second). Meanwhile one more session
(the prober) switches pages every few seconds and times each switch (click until the page has
run and shows its title), and the server's and the worker processes' CPU and memory are sampled
from /proc. At the end it checks the run store: every session's demo runs under its own owner,
none lost; and counts Streamlit's "fragment ... does not exist anymore" lines.

    python -m bench.perf.class_load --browsers 20 --spread 10 --out bench/results/class-load-local.json
    python -m bench.perf.class_load --browsers 20 --executor ray --out bench/results/class-load-ray.json
    python -m bench.perf.class_load --browsers 20 --students-nice 19        # students' browsers at low priority
    bash bench/perf/class_run.sh                                             # the class measurement, one command
    python -m bench.perf.class_load --browsers 4 --post-script-gc true      # a small check

CPU is sampled for the whole machine too: the students' and the prober's browsers, and everything
else (other users' jobs), so that a run says where the cores went. Linux schedules by *autogroup*
(one per session, ``/proc/sys/kernel/sched_autogroup_enabled``): Playwright starts each browser in
a session of its own, so the browsers' group got the same share of the CPU as the server's group
(server and workers) whatever the browsers' nice value. ``--students-nice`` therefore sets the
students' browser's autogroup nice as well (``/proc/self/autogroup``), and the summary records it.

Prints a summary and writes it (with one row per session, each page switch and each CPU sample)
as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-renderer-backgrounding",
        "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows"]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
BLANK_AFTER = 5.0        # seconds the Results page may show nothing before it counts as blank
PROBE_PAGES = ["Data", "Train", "Results", "Estimators", "Home"]
TICK = 1.0               # how often a session looks at its page (s)
HZ = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ the server and its processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int, args) -> subprocess.Popen:
    env = dict(os.environ, DMLCORE_HOME=str(home), PYTHONPATH=str(ROOT), DMLCORE_WORKERS=str(args.workers),
               DMLCORE_EXECUTOR=args.executor)
    log = open(home / "server.log", "w")
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
           "--server.port", str(port), "--server.headless", "true", "--logger.level", "info"]
    if args.post_script_gc is not None:
        cmd += ["--runner.postScriptGC", args.post_script_gc]
    # a session of its own (so an autogroup of its own, shared with its workers), given --server-nice
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=args.server_nice is not None)
    if args.server_nice is not None:
        try:
            Path(f"/proc/{proc.pid}/autogroup").write_text(str(args.server_nice))
        except OSError as exc:
            proc.terminate()
            raise SystemExit(f"Cannot set the server's autogroup nice to {args.server_nice} ({exc}); a negative "
                             "value needs root. Leave out --server-nice or run as root.") from None
        args.server_autogroup = Path(f"/proc/{proc.pid}/autogroup").read_text().strip()
    return wait_healthy(proc, port, f"The server did not start; see {home / 'server.log'}")


def wait_healthy(proc: subprocess.Popen, port: int, failure: str, seconds: float = 120) -> subprocess.Popen:
    """``proc`` once the Streamlit server on ``port`` answers its health check; exits with ``failure`` when it
    dies or has not answered within ``seconds``."""
    import urllib.request
    deadline = time.time() + seconds
    while True:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit(failure)
        time.sleep(0.3)


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            kids = []
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def cpu_and_rss(pid: int) -> tuple[float, float]:
    """CPU seconds used so far and resident memory (MiB) of one process; (0, 0) once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0
    return (int(fields[11]) + int(fields[12])) / HZ, rss_pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def start_tick(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


def ray_processes(since: int) -> list[int]:
    """Ray's processes (they leave the server's process tree) started after tick ``since``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            ray = cmd.startswith(b"ray::") or b"raylet" in cmd or b"gcs_server" in cmd
            if ray and start_tick(int(entry.name)) >= since:
                out.append(int(entry.name))
    return out


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (all cores; /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / HZ   # less idle and iowait (guest is inside user)


def browser_processes() -> list[int]:
    """Every Chromium process on the machine (the students' and the prober's browsers)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith(("chrom", "headless_shell")):
                out.append(int(entry.name))
    return out


class Sampler(threading.Thread):
    """CPU (share of one core) and memory of the server process and of its worker processes
    (its descendants, and with ``ray`` the Ray processes started after it); the CPU of the
    browsers and of the whole machine (the rest: ``other_cpu``, e.g. other users' jobs)."""

    def __init__(self, server_pid: int, every: float = 2.0, ray: bool = False):
        super().__init__(daemon=True)
        self.server_pid, self.every, self.samples, self.stopped = server_pid, every, [], threading.Event()
        self.ray, self.since = ray, start_tick(server_pid)
        self.last: dict[int, float] = {}
        self.peak_rss = {"server": 0.0, "workers": 0.0}

    def run(self) -> None:
        t_last, busy_last = time.time(), machine_busy()
        while not self.stopped.wait(self.every):
            now, busy = time.time(), machine_busy()
            row = {"t": now, "server_cpu": 0.0, "workers_cpu": 0.0, "server_mib": 0.0, "workers_mib": 0.0,
                   "browsers_cpu": 0.0, "machine_cpu": (busy - busy_last) / (now - t_last)}
            pids = {self.server_pid, *descendants(self.server_pid), *(ray_processes(self.since) if self.ray else ())}
            for pid in [*pids, *browser_processes()]:
                cpu, rss = cpu_and_rss(pid)
                kind = "server" if pid == self.server_pid else "workers" if pid in pids else "browsers"
                row[f"{kind}_cpu"] += max(0.0, cpu - self.last.get(pid, cpu)) / (now - t_last)
                if kind != "browsers":
                    row[f"{kind}_mib"] += rss
                self.last[pid] = cpu
            row["other_cpu"] = max(0.0, row["machine_cpu"] - row["server_cpu"] - row["workers_cpu"]
                                   - row["browsers_cpu"])
            busy_last = busy
            for kind in ("server", "workers"):
                self.peak_rss[kind] = max(self.peak_rss[kind], row[f"{kind}_mib"])
            self.samples.append(row)
            t_last = now


# ------------------------------------------------------------------ browser sessions
async def idle(page, pause_ms: int = 300) -> None:
    await page.wait_for_selector(IDLE, timeout=600_000)
    await page.wait_for_timeout(pause_ms)
    await page.wait_for_selector(IDLE, timeout=600_000)


async def owner_of(context) -> str | None:
    return next((c["value"] for c in await context.cookies() if c["name"] == "dmlcore_owner"), None)


RUN_LABEL = re.compile(r"^#\d+ ")   # a run's label ('#1 DML-CMR · gb'), as its MSE box on Results is titled


async def runs_shown(page) -> int:
    """How many runs the Results page scores: its MSE boxes, one a run, titled with the run's label. (Counting
    every box, as before 2026-11-27 afternoon, also counted the 2SLS strength box's four (F, partial R²): 8 for
    4 runs in bench/results/class-load-20-local-2026-11-27-1323-class.json.)"""
    return count_runs(await page.locator("[data-testid=stMetricLabel]").all_inner_texts())


def count_runs(metric_labels: list[str]) -> int:
    return sum(bool(RUN_LABEL.match(label.strip())) for label in metric_labels)


async def first_estimate(page, clicked: float) -> float | None:
    """The Train page's first estimate of when the session's batch is done (seconds after the click)."""
    text = await page.locator("[data-testid=stMain]").inner_text()
    found = re.findall(r"done in about (\d+) (s|min)", text) + re.findall(r"about (\d+) (s|min) left", text)
    ends = [float(v) * (60 if unit == "min" else 1) for v, unit in found]
    return time.time() - clicked + max(ends) if ends else None


def arrived(start: dict, row: dict) -> None:
    """Count a session as loaded (once); the last one sets the time of the first click."""
    if row.get("arrived"):
        return
    row["arrived"] = True
    start["loaded"] += 1
    if start["loaded"] == start["sessions"]:
        start["t0"] = time.time() + 1.0
        start["ready"].set()


async def student(i: int, browser, base: str, start: dict, gap: float, out: list) -> None:
    context = await browser.new_context(viewport={"width": 1200, "height": 800})
    page = await context.new_page()
    row = {"session": i, "clicked": None, "results_after": None, "eta_first": None, "blank_seconds": 0.0,
           "blank": False, "runs_shown": None, "exception": None, "error": None}
    out.append(row)
    try:
        await page.goto(base, timeout=600_000)
        await idle(page)
        arrived(start, row)                  # every session opens Home first; then the clicks spread
        await start["ready"].wait()
        deadline = start["t0"] + start["timeout"]
        await asyncio.sleep(max(0.0, start["t0"] + i * gap - time.time()))
        row["clicked"] = time.time()
        await page.locator(".st-key-demo_run button").click(timeout=600_000)
        blank_since = None
        while time.time() < deadline:
            await asyncio.sleep(TICK)
            if "/results" not in page.url:
                if row["eta_first"] is None and "/train" in page.url:
                    row["eta_first"] = await first_estimate(page, row["clicked"])
                continue
            main = page.locator("[data-testid=stMain]")
            text = await main.inner_text() if await main.count() else ""
            if "Estimated causal function" in text and await page.locator("[data-testid=stPlotlyChart]").count():
                row["results_after"] = time.time() - row["clicked"]
                break
            running = await page.locator(IDLE).count() == 0
            if "Results" not in text and not running:
                blank_since = blank_since or time.time()
                if time.time() - blank_since > BLANK_AFTER:
                    row["blank"] = True
            elif blank_since is not None:
                row["blank_seconds"] += time.time() - blank_since
                blank_since = None
        if blank_since is not None:
            row["blank_seconds"] += time.time() - blank_since
        if row["results_after"] is not None:
            # the curves come first; count what the page shows once it has drawn its last section
            await page.get_by_role("heading", name="Stored runs").wait_for(timeout=600_000)
            await idle(page)
            row["complete_after"] = time.time() - row["clicked"]
            table = page.locator(".st-key-res_metrics")
            row["runs_shown"] = await runs_shown(page)
            text = await page.locator("[data-testid=stMain]").inner_text()
            said = re.search(r"Demo finished: ([\d.]+) s", text)
            row["page_says_seconds"] = float(said[1]) if said else None
            row["batches_shown"] = sorted(set(re.findall(r"#(\d+) ", text)))
            row["table_shown"] = await table.count() > 0
            row["results_text"] = " ".join(text.split())[:600]
            await page.wait_for_timeout(5000)
            await idle(page)
            row["runs_shown_later"] = await runs_shown(page)
            row["main_chars_later"] = len(await page.locator("[data-testid=stMain]").inner_text())
        row["exception"] = await page.locator("[data-testid=stException]").count() > 0
        row["owner"] = await owner_of(context)
        row["url"] = page.url
    except Exception as exc:          # a session that broke is a finding, not the end of the run
        row["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        arrived(start, row)
    finally:
        await context.close()


async def prober(browser, base: str, stop: asyncio.Event, out: list, every: float) -> None:
    context = await browser.new_context(viewport={"width": 1200, "height": 800})
    page = await context.new_page()
    await page.goto(base, timeout=600_000)
    await idle(page)
    while not stop.is_set():
        for title in PROBE_PAGES:
            if stop.is_set():
                break
            started = time.time()
            try:
                await page.locator("[data-testid=stTopNavLink]", has_text=title).click(timeout=240_000)
                await page.wait_for_url(re.compile(rf"/{title.lower()}\b|/$"), timeout=240_000)
                await page.get_by_role("heading", name=re.compile(rf"^{'dmlcore' if title == 'Home' else title}"))\
                    .first.wait_for(timeout=240_000)
                await page.wait_for_selector(IDLE, timeout=240_000)
                out.append({"t": started, "page": title, "seconds": time.time() - started})
            except Exception as exc:
                out.append({"t": started, "page": title, "seconds": None, "error": type(exc).__name__})
            await asyncio.sleep(every)
    await context.close()


async def drive(args, base: str) -> tuple[list, list, float]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        prober_path = CHROMIUM
        if args.server_nice is not None:   # the prober stands for a student on a computer of their own too
            folder = Path(tempfile.mkdtemp())
            prober_path = folder / "chromium-prober"
            prober_path.write_text(f'#!/bin/sh\necho {args.server_nice} > /proc/self/autogroup 2>/dev/null\n'
                                   f'cat /proc/self/autogroup > {folder}/autogroup 2>/dev/null\n'
                                   f'exec {CHROMIUM} "$@"\n')
            prober_path.chmod(0o755)
        browser = await p.chromium.launch(executable_path=str(prober_path), headless=True, args=ARGS)
        if args.server_nice is not None:
            group = Path(prober_path).parent / "autogroup"
            args.prober_autogroup = group.read_text().strip() if group.exists() else None
        students = browser
        if args.students_nice:   # the students' browsers at low priority: as if on their own computers
            folder = Path(tempfile.mkdtemp())
            wrapper = folder / "chromium-niced"
            # Playwright starts the browser in a session (so an autogroup) of its own: nice the group too
            wrapper.write_text(f'#!/bin/sh\necho {args.students_nice} > /proc/self/autogroup 2>/dev/null\n'
                               f'cat /proc/self/autogroup > {folder}/autogroup 2>/dev/null\n'
                               f'exec nice -n {args.students_nice} {CHROMIUM} "$@"\n')
            wrapper.chmod(0o755)
            students = await p.chromium.launch(executable_path=str(wrapper), headless=True, args=ARGS)
            group = folder / "autogroup"
            args.students_autogroup = group.read_text().strip() if group.exists() else None
        elif args.server_nice is not None:   # a browser of their own, at the default priority
            students = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        sessions, switches, stop = [], [], asyncio.Event()
        probe = asyncio.create_task(prober(browser, base, stop, switches, args.probe_every))
        start = {"loaded": 0, "sessions": args.browsers, "ready": asyncio.Event(), "t0": None,
                 "timeout": args.timeout}
        gap = args.spread / max(1, args.browsers - 1)
        tasks = [asyncio.create_task(student(i, students, base, start, gap, sessions))
                 for i in range(args.browsers)]
        await asyncio.gather(*tasks)
        t0 = start["t0"] or time.time()
        stop.set()
        await probe
        if students is not browser:
            await students.close()
        await browser.close()
    return sessions, switches, t0


# ------------------------------------------------------------------ the report
def quantiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    values = sorted(values)
    return {"n": len(values), "first": values[0], "median": statistics.median(values), "last": values[-1]}


def click_order_tau(sessions: list) -> float | None:
    """Kendall's tau between the order of the clicks and the order in which results appeared."""
    from scipy.stats import kendalltau
    rows = [s for s in sessions if s["clicked"] and s["results_after"] is not None]
    if len(rows) < 3:
        return None
    return float(kendalltau([s["clicked"] for s in rows], [s["clicked"] + s["results_after"] for s in rows])[0])


def spread_of(values: list[float]) -> float | None:
    return max(values) - min(values) if values else None


def check_store(home: Path, sessions: list) -> dict:
    from dashboard.plan import DEMO_SETTINGS
    from dmlcore.store import RunStore
    per_session = len(DEMO_SETTINGS["est_methods"])
    runs = RunStore(home / "runs.sqlite3").list()
    by_owner: dict[str, list] = {}
    for run in runs:
        by_owner.setdefault(run["owner"], []).append(run)
    owners = [s.get("owner") for s in sessions]
    return {"runs_stored": len(runs), "owners_distinct": len(set(owners)) == len(owners) and None not in owners,
            "runs_per_session": per_session,
            "each_session_all_its_runs": all(len(by_owner.get(o, [])) == per_session for o in owners),
            "runs_of_no_session": sum(len(v) for k, v in by_owner.items() if k not in owners)}


def workers_fill(home: Path, workers: int, t0: float, done: list[float]) -> dict:
    """How much of the workers' time the fits filled between the first click and the last result:
    the fits' own seconds (run records) over workers x that span. Low: the workers waited (for the
    queue, for the CPU) rather than fitted."""
    from dmlcore.store import RunStore
    records = RunStore(home / "runs.sqlite3").list_records(since=t0 - 1)
    fit_seconds = sum(float(r["record"].get("seconds") or 0.0) for r in records)
    span = max(done) if done else None
    return {"fits": len(records), "fit_seconds": fit_seconds, "span_seconds": span,
            "share": fit_seconds / (workers * span) if span else None}


def server_done(home: Path, sessions: list) -> list[float]:
    """For each session that clicked: seconds from its click until the server had stored the last of
    its runs (what the server took, whatever the browsers' own speed); also put on the rows."""
    import sqlite3
    from contextlib import closing
    with closing(sqlite3.connect(home / "runs.sqlite3")) as conn:
        stored = dict(conn.execute("SELECT owner, MAX(created_ts) FROM runs GROUP BY owner").fetchall())
    out = []
    for row in sessions:
        if row.get("clicked") and row.get("owner") in stored:
            row["server_done_after"] = stored[row["owner"]] - row["clicked"]
            out.append(row["server_done_after"])
    return out


def server_queued(home: Path, sessions: list) -> list[float]:
    """For each session that clicked: seconds from its click (the browser's) until the server had queued
    its runs (the queue's ``created``): how long the click took to reach the server through a busy browser
    and server; also put on the rows. Empty when the queue's file is not there."""
    import sqlite3
    from contextlib import closing
    path = home / "queue.sqlite3"
    if not path.exists():
        return []
    with closing(sqlite3.connect(path)) as conn:
        queued = dict(conn.execute("SELECT owner, MIN(created) FROM jobs GROUP BY owner").fetchall())
    out = []
    for row in sessions:
        if row.get("clicked") and row.get("owner") in queued:
            row["queued_after"] = queued[row["owner"]] - row["clicked"]
            out.append(row["queued_after"])
    return out


def browser_lag(sessions: list) -> list[float]:
    """For each session whose Results page showed its runs: seconds from the server's storing its last run
    until the page had drawn them (the Train page's refresh, the switch and the drawing, in the browser)."""
    return [s["complete_after"] - s["server_done_after"] for s in sessions
            if s.get("complete_after") is not None and s.get("server_done_after") is not None]


def autogroups() -> dict:
    try:
        enabled = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        enabled = None
    return {"enabled": enabled, "this_process": Path("/proc/self/autogroup").read_text().strip()
            if Path("/proc/self/autogroup").exists() else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--browsers", type=int, default=20)
    ap.add_argument("--spread", type=float, default=10.0, help="seconds over which the clicks are spread")
    ap.add_argument("--workers", type=int, default=2, help="fits at once (DMLCORE_WORKERS)")
    ap.add_argument("--executor", default="local", choices=["local", "ray", "inline"])
    ap.add_argument("--post-script-gc", choices=["true", "false"], default=None,
                    help="override runner.postScriptGC (default: .streamlit/config.toml)")
    ap.add_argument("--probe-every", type=float, default=3.0, help="seconds between the prober's page switches")
    ap.add_argument("--students-nice", type=int, default=0,
                    help="run the N students' browsers at this nice level (e.g. 19), in a browser of their own, "
                         "so that the server, its workers and the prober come first: roughly a class whose "
                         "browsers run on their own computers")
    ap.add_argument("--server-nice", type=int, default=None,
                    help="start the server in a session of its own and set that autogroup's nice (e.g. -10; "
                         "negative needs root), and the prober's browser's too: the server, its workers and the "
                         "prober come first, the students' browsers (a browser of their own) get what is left, as "
                         "when the students' browsers run on their own computers")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds after the first click to give up")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    load_before = os.getloadavg()        # before the server and the browsers add their own

    home = Path(tempfile.mkdtemp(prefix="class-load-"))
    port = free_port()
    server = start_server(home, port, args)
    sampler = Sampler(server.pid, ray=args.executor == "ray")
    sampler.start()
    try:
        sessions, switches, t0 = asyncio.run(drive(args, f"http://127.0.0.1:{port}"))
    finally:
        sampler.stopped.set()
        server.terminate()
        server.wait(30)
    log = (home / "server.log").read_text()
    done = [s["results_after"] for s in sessions if s["results_after"] is not None]
    times = [w["seconds"] for w in switches if w["seconds"] is not None]
    busy = [r for r in sampler.samples if r["t"] >= t0 and r["t"] <= t0 + max(done or [0]) + args.spread]
    summary = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_implementation()} "
                   f"{platform.python_version()}",
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "settings": vars(args) | {"out": str(args.out)},
        "results_seconds": quantiles(done),
        "results_complete_seconds": quantiles([s["complete_after"] for s in sessions if s.get("complete_after")]),
        "server_done_seconds": quantiles(server_done(home, sessions)),
        "server_queued_seconds": quantiles(server_queued(home, sessions)),
        "browser_lag_seconds": quantiles(browser_lag(sessions)),
        "page_says_seconds": quantiles([s["page_says_seconds"] for s in sessions if s.get("page_says_seconds")]),
        "stayed_on_train": sum(s["results_after"] is None and "/train" in (s.get("url") or "") for s in sessions),
        "estimate_error": quantiles([s["results_after"] - s["eta_first"] for s in sessions
                                     if s["results_after"] is not None and s["eta_first"] is not None]),
        "sessions_without_results": len(sessions) - len(done),
        "click_order_vs_results_order_kendall_tau": click_order_tau(sessions),
        "clicks_spread_seconds": spread_of([s["clicked"] for s in sessions if s["clicked"]]),
        "runs_shown_per_session": [s.get("runs_shown_later", s.get("runs_shown")) for s in
                                   sorted(sessions, key=lambda r: r["session"])],
        "blank_pages": sum(s["blank"] for s in sessions),
        "blank_seconds_total": sum(s["blank_seconds"] for s in sessions),
        "sessions_with_errors": [s for s in sessions if s.get("error") or s.get("exception")],
        "page_switch_seconds": quantiles(times) | {"over_2s": sum(t > 2 for t in times),
                                                   "failed": sum(w["seconds"] is None for w in switches)},
        "cpu_while_busy": {k: statistics.mean(r.get(k, 0.0) for r in busy) if busy else None
                           for k in ("server_cpu", "workers_cpu", "browsers_cpu", "other_cpu", "machine_cpu")},
        "workers_fill": workers_fill(home, args.workers, t0, done),
        "autogroup": autogroups() | {"students_browser": getattr(args, "students_autogroup", None),
                                     "server": getattr(args, "server_autogroup", None),
                                     "prober_browser": getattr(args, "prober_autogroup", None)},
        "peak_mib": sampler.peak_rss,
        "fragment_gone_lines": log.count("does not exist anymore"),
        "tracebacks_in_log": log.count("Traceback"),
        "store": check_store(home, sessions),
        "isolation_runs_shown": sorted({s.get("runs_shown") for s in sessions if s.get("runs_shown") is not None}),
    }
    print(json.dumps(summary, indent=2, default=str))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "sessions": sessions, "switches": switches,
                                        "samples": sampler.samples, "home": str(home)}, indent=1, default=str))


if __name__ == "__main__":
    main()
