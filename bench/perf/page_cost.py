"""What one student's browser spends: CPU seconds of Chromium per page of the class's path (issue 33).

The class run (``bench/perf/class_load.py``) puts 20 browsers on the server's own 2 cores; in a
class each student's browser runs on the student's computer. This measures one browser alone on a
fresh server, so that the class run's browser share can be read per student: opening Home, the
one-click demo from the click until its Results page has drawn its last section (the Train page
refreshing while the runs train, then the switch), and Results drawn again by a reload (three
times). CPU is this script's Chromium's (its every process, user + system, from /proc; until
2026-11-29 every Chromium on the machine was counted, other developers' browser tests included), so
other jobs on the machine change the wall times more than these; the row records the load before and after. ``server_cpu_s``:
the Streamlit server process's own CPU over the same steps (its fit workers not counted): the Train
page's refreshes and the Results page's script runs.

    python -m bench.perf.page_cost      # about 1 min; one JSON line appended to bench/results/page-cost.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import types
from pathlib import Path

from bench.perf.class_load import ARGS, CHROMIUM, IDLE, cpu_and_rss, free_port, start_server
from bench.perf.default_fit import commit, machine
from bench.perf.results_draw_cost import MARK, own_browser_cpu

OUT = Path(__file__).resolve().parents[2] / "bench" / "results" / "page-cost.jsonl"
SETTLE_MS = 1500    # after the page reports idle: what it still draws counts


def browser_cpu() -> float:
    """This script's own Chromium (its processes only: other browsers on a shared machine not counted)."""
    return own_browser_cpu()


async def measure(base: str, reloads: int, server_pid: int | None = None) -> dict:
    from playwright.async_api import async_playwright

    async def settled(page):
        await page.wait_for_selector(IDLE, timeout=600_000)
        await page.wait_for_timeout(SETTLE_MS)

    def server_cpu() -> float:
        return cpu_and_rss(server_pid)[0] if server_pid else 0.0

    out = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[*ARGS, MARK])
        page = await (await browser.new_context(viewport={"width": 1200, "height": 800})).new_page()
        cpu, start = browser_cpu(), time.time()
        await page.goto(base, timeout=600_000)
        await settled(page)
        out["home"] = {"cpu_s": browser_cpu() - cpu, "wall_s": time.time() - start}
        cpu, start, served = browser_cpu(), time.time(), server_cpu()
        await page.locator(".st-key-demo_run button").click()
        await page.wait_for_url("**/results", timeout=600_000)
        out["demo_on_train_wall_s"] = time.time() - start
        await page.get_by_role("heading", name="Stored runs").wait_for(timeout=600_000)
        await settled(page)
        out["demo_to_results"] = {"cpu_s": browser_cpu() - cpu, "wall_s": time.time() - start,
                                  "server_cpu_s": server_cpu() - served}
        draws = []
        for _ in range(reloads):
            cpu, start, served = browser_cpu(), time.time(), server_cpu()
            await page.reload()
            await page.get_by_role("heading", name="Stored runs").wait_for(timeout=600_000)
            await settled(page)
            draws.append({"cpu_s": browser_cpu() - cpu, "wall_s": time.time() - start,
                          "server_cpu_s": server_cpu() - served})
        out["results_reloads"] = draws
        out["results_reload_median"] = {k: statistics.median(d[k] for d in draws)
                                        for k in ("cpu_s", "wall_s", "server_cpu_s")}
        cpu = browser_cpu()
        await page.wait_for_timeout(5000)
        out["results_idle_cpu_per_s"] = (browser_cpu() - cpu) / 5.0
        await browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reloads", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    load_before = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="page-cost-"))
    port = free_port()
    server = start_server(home, port, types.SimpleNamespace(workers=2, executor="local", post_script_gc=None,
                                                            server_nice=None))
    try:
        pages = asyncio.run(measure(f"http://127.0.0.1:{port}", args.reloads, server.pid))
    finally:
        server.terminate()
        server.wait(30)
    row = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": machine(), **commit(),
           "command": "python -m bench.perf.page_cost" + (f" --out {args.out}" if args.out != OUT else ""), "load_before": load_before, "load_after": os.getloadavg(),
           **pages}
    print(json.dumps(row, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
