"""The browser's CPU for one draw of the demo's Results page, code trees side by side (issue 47).

Starts one dashboard server per tree (``--trees NAME=DIR ...``, e.g. the code before a change and
after it; each its own fresh DMLCORE_HOME), opens one headless Chromium with a page on each, clicks
the one-click demo in all and waits until each Results page has drawn its last section. Then it
draws the Results pages in turn (before, after, after, before, ...: each round starts at the next
tree), each twice: switched to from
Home by the menu (a student's way there: the app's code is loaded already) and reloaded (the whole
app loaded again). For each draw it records the CPU seconds (user + system, from /proc) of this
script's own Chromium processes only (its browser process and every process under it: another
user's browsers on the machine are not counted), the wall time, and what the page holds
once drawn: plotly charts, their traces and points, data grids, tables. The pages not being drawn
sit idle meanwhile (their idle CPU is measured too and is a few hundredths of a second per second).
Last, where a page has the "Fold-wise losses" expander, it is opened and the same is recorded.

    python -m bench.perf.results_draw_cost --trees before=/tmp/old after=. --pairs 5 \
        --out bench/results/results-draw-cost-DATE.json

The servers share the machine, so their fits and the reloads see the same load; the row records
the load before and after. CPU seconds depend less on the load than wall times, not at all on the
other trees' servers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.perf.class_load import ARGS, CHROMIUM, IDLE, cpu_and_rss, free_port, wait_healthy
from bench.perf.default_fit import machine

LOSSES_KEY = "res_losses_open"   # dashboard/state.py's RES_LOSSES_OPEN: the 'Fold-wise losses' expander
SETTLE_MS = 1500    # after the page reports idle: what it still draws counts
MARK = "--dmlcore-draw-cost"   # an argument Chromium ignores: finds this script's browser process

CENSUS = """() => {
  const charts = [...document.querySelectorAll('.js-plotly-plot')];
  const points = charts.reduce((n, gd) => n + (gd.calcdata || []).reduce((m, t) => m + t.length, 0), 0);
  return {plotly_charts: charts.length,
          plotly_traces: charts.reduce((n, gd) => n + (gd.data || []).length, 0),
          plotly_points: points,
          data_grids: document.querySelectorAll('[data-testid=stDataFrame]').length,
          tables: document.querySelectorAll('[data-testid=stTable]').length,
          elements: document.querySelectorAll('[data-testid=stElementContainer]').length,
          dom_nodes: document.getElementsByTagName('*').length};
}"""


def own_browser_cpu() -> float:
    """CPU seconds of the Chromium started with MARK and of every process under it."""
    parent, comm = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            comm[int(entry.name)] = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
    roots = {pid for pid, cmd in comm.items() if MARK.encode() in cmd and b"--type=" not in cmd}
    tree, grew = set(roots), True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in tree and pid not in tree}
        tree |= more
        grew = bool(more)
    return sum(cpu_and_rss(pid)[0] for pid in tree)


def start(root: Path, port: int) -> subprocess.Popen:
    home = Path(tempfile.mkdtemp(prefix="draw-cost-"))
    env = dict(os.environ, DMLCORE_HOME=str(home), PYTHONPATH=str(root), DMLCORE_WORKERS="2",
               DMLCORE_EXECUTOR="local")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                             "--server.port", str(port), "--server.headless", "true"], cwd=root, env=env,
                            stdout=open(home / "server.log", "w"), stderr=subprocess.STDOUT)
    return wait_healthy(proc, port, f"The server in {root} did not start; see {home / 'server.log'}")


async def measure(bases: dict[str, str], pairs: int, servers: dict[str, subprocess.Popen]) -> dict:
    from playwright.async_api import TimeoutError, async_playwright

    async def drawn(name, page):
        deadline = time.time() + 900
        while True:
            if servers[name].poll() is not None:
                raise SystemExit(f"The server of {name!r} stopped (exit code {servers[name].returncode}); see its log")
            try:
                await page.get_by_role("heading", name="Stored runs").wait_for(timeout=10_000)
                break
            except TimeoutError:
                if time.time() > deadline:
                    raise
        await page.wait_for_selector(IDLE, timeout=900_000)
        await page.wait_for_timeout(SETTLE_MS)

    out = {name: {"switches": [], "reloads": []} for name in bases}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[*ARGS, MARK])
        pages = {}
        for name, base in bases.items():
            page = await (await browser.new_context(viewport={"width": 1200, "height": 800})).new_page()
            await page.goto(base, timeout=600_000)
            await page.wait_for_selector(IDLE, timeout=600_000)
            pages[name] = page
        start = time.time()
        await asyncio.gather(*(page.locator(".st-key-demo_run button").click() for page in pages.values()))
        for name, page in pages.items():
            await page.wait_for_url("**/results", timeout=900_000)
            await drawn(name, page)
            out[name]["demo_to_results_wall_s"] = time.time() - start
        cpu = own_browser_cpu()
        await asyncio.sleep(5)
        out["idle_cpu_per_s"] = (own_browser_cpu() - cpu) / 5
        names = list(pages)
        for round_ in range(pairs):
            # each round starts at the next tree: the first draw of a round measured higher (0.2-0.3 s in
            # the checks of 2026-11-29), so every tree takes that place equally often
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                page = pages[name]
                # a switch inside the running app (a student's way there: the menu), from Home
                await page.locator("[data-testid=stTopNavLink]", has_text="Home").click()
                await page.wait_for_url(lambda url: not url.endswith("/results"))
                await page.wait_for_selector(IDLE)
                await page.wait_for_timeout(SETTLE_MS)
                cpu, t0 = own_browser_cpu(), time.time()
                await page.locator("[data-testid=stTopNavLink]", has_text="Results").click()
                await drawn(name, page)
                out[name]["switches"].append({"cpu_s": round(own_browser_cpu() - cpu, 3),
                                              "wall_s": round(time.time() - t0, 2)})
                # a reload: the whole app loaded again, then the page
                cpu, t0 = own_browser_cpu(), time.time()
                await page.reload()
                await drawn(name, page)
                out[name]["reloads"].append({"cpu_s": round(own_browser_cpu() - cpu, 3),
                                             "wall_s": round(time.time() - t0, 2),
                                             **await page.evaluate(CENSUS)})
        for name, page in pages.items():      # the charts a user asks for once drawn (the losses' expander)
            expander = page.locator(f".st-key-{LOSSES_KEY} summary")
            if await expander.count():
                cpu, t0 = own_browser_cpu(), time.time()
                await expander.click()
                await page.wait_for_selector(f".st-key-{LOSSES_KEY} .js-plotly-plot", timeout=300_000)
                await page.wait_for_selector(IDLE)
                await page.wait_for_timeout(SETTLE_MS)
                out[name]["losses_opened"] = {"cpu_s": round(own_browser_cpu() - cpu, 3),
                                              "wall_s": round(time.time() - t0, 2), **await page.evaluate(CENSUS)}
        await browser.close()
    for name in bases:
        for how in ("switches", "reloads"):
            rows = out[name][how]
            out[name][f"{how}_median_cpu_s"] = statistics.median(r["cpu_s"] for r in rows)
            out[name][f"{how}_median_wall_s"] = statistics.median(r["wall_s"] for r in rows)
    return out


def tree_commit(root: Path) -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    return run.stdout.strip() or "not a git checkout"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs="+", required=True, metavar="NAME=DIR",
                    help="the code trees to compare, each named (e.g. before=/tmp/old after=.)")
    ap.add_argument("--pairs", type=int, default=5, help="reloads of each page, in turn")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    roots = {}
    for tree in args.trees:
        name, sep, path = tree.partition("=")
        if not sep or not name or not (Path(path) / "app.py").is_file():
            ap.error(f"--trees {tree!r}: give NAME=DIR with DIR a checkout of this project (it has app.py)")
        roots[name] = Path(path).resolve()
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    servers, bases = {}, {}
    try:
        for name, root in roots.items():
            port = free_port()
            servers[name] = start(root, port)
            bases[name] = f"http://127.0.0.1:{port}/"
        result = asyncio.run(measure(bases, args.pairs, servers))
    finally:
        for server in servers.values():
            server.terminate()
            server.wait(30)
    row = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": machine(),
           "command": "python -m bench.perf.results_draw_cost " + " ".join(sys.argv[1:]),
           "trees": {name: {"path": str(root), "commit": tree_commit(root)} for name, root in roots.items()},
           "load_before": load_before, "load_after": Path("/proc/loadavg").read_text().split()[:3], **result}
    print(json.dumps({k: v for k, v in row.items() if k not in roots}, indent=1))
    for name in roots:
        for how in ("switches", "reloads"):
            print(name, how, "median cpu_s", result[name][f"{how}_median_cpu_s"], "each:",
                  [r["cpu_s"] for r in result[name][how]])
        print(name, "census", result[name]["reloads"][-1], "losses opened:", result[name].get("losses_opened"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1) + "\n")


if __name__ == "__main__":
    main()
