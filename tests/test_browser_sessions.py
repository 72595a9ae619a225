"""Two browser sessions on one server, training at once; then the server is killed mid-run.

Real Chromium (Playwright) against a real Streamlit server, as in tests/test_browser.py, with
one job worker (``DMLCORE_WORKERS=1``) so that the order of the runs shows the queue's fairness:

1. session A simulates demand-iv, session B demand-pcl; both queue three fits, B while A's
   first one still runs; each sees only its own data, runs and stored results;
2. round-robin: B's first run finishes before A's last (first come, first served would run all
   of A's first);
3. A starts a long fit and the server is killed (SIGKILL) while it trains; a new server on the
   same run store lists A's finished runs and reloads one, and the Train page says what was lost.

Skipped when /usr/bin/chromium or Playwright is missing.
"""

from __future__ import annotations

import re
import signal
import time
import urllib.parse

import pytest

from dmlcore.store import RunStore

from browser_support import ARGS, CHROMIUM, idle, nav, needs_chromium, no_exception, streamlit_server

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium


# ------------------------------------------------------------------ page helpers
def fill(page, key: str, value):
    box = page.locator(f".st-key-{key} input")
    box.fill(str(value))
    box.press("Enter")
    idle(page)


def main_text(page) -> str:
    return page.locator("[data-testid=stMain]").inner_text()


def sidebar_text(page) -> str:
    return page.locator("[data-testid=stSidebar]").inner_text()




def owner_of(page) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["owner"][0]


def simulate(page, name: str, n: int = 300):
    nav(page, "Data")
    if name != "demand-iv":
        page.locator(".st-key-sim_name").click()
        page.get_by_role("option", name=re.compile(rf"^{name}:")).click()
        idle(page)
    fill(page, "sim_n", n)
    page.locator(".st-key-sim_run button").click()
    idle(page, 600)
    page.get_by_text(f"Simulated {name}").wait_for()


def small_fits(page, epochs: int = 40):
    """Three fits (DML-CMR, naive, 2SLS) with the neural network, K = 3, a few seconds each."""
    nav(page, "Estimators")
    fill(page, "est_folds", 3)
    page.get_by_text("Advanced settings").click()
    fill(page, "est_epochs", epochs)
    page.get_by_text(f"at most {epochs} epochs").first.wait_for()


def wait_done(page, batch: int, runs: int, timeout: float = 120):
    page.get_by_text(f"Batch {batch} · {runs} of {runs} done").wait_for(timeout=timeout * 1000)
    idle(page, 600)


# ------------------------------------------------------------------ the test
def test_two_sessions_train_at_once_and_finished_runs_survive_a_killed_server(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    store = RunStore(home / "runs.sqlite3")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        contexts = [browser.new_context(viewport={"width": 1400, "height": 900}) for _ in range(2)]
        a, b = (ctx.new_page() for ctx in contexts)
        for page in (a, b):
            page.set_default_timeout(60_000)
        try:
            with streamlit_server(home, "server1.log", DMLCORE_WORKERS="1") as (base, proc):
                for page in (a, b):
                    page.goto(base)
                    idle(page, 800)
                simulate(a, "demand-iv")
                simulate(b, "demand-pcl")
                small_fits(a)
                small_fits(b)
                owner_a, owner_b = owner_of(a), owner_of(b)
                assert owner_a != owner_b

                # both start: A first, B while A's first run still trains
                nav(a, "Train")
                nav(b, "Train")
                a.locator(".st-key-train_start button").click()
                a.get_by_text("Batch 1").first.wait_for()
                b.locator(".st-key-train_start button").click()
                b.get_by_text("Batch 1").first.wait_for()
                wait_done(a, 1, 3)
                wait_done(b, 1, 3)
                axes = {"demand-iv": "f(price, time = 5, type)", "demand-pcl": "E[Y | do(price)]"}
                for page, mine, theirs in ((a, "demand-iv", "demand-pcl"), (b, "demand-pcl", "demand-iv")):
                    no_exception(page)
                    assert len(page.locator("[class*=st-key-job_]").all()) == 3      # its own three runs
                    assert f"On **{mine}**" not in main_text(page)                 # (markdown rendered)
                    assert mine in main_text(page) + sidebar_text(page)
                    assert theirs not in main_text(page) + sidebar_text(page)
                    nav(page, "Results")
                    page.get_by_text("Estimated causal function").wait_for()
                    no_exception(page)
                    text, side = main_text(page), sidebar_text(page)
                    assert axes[mine] in text and axes[theirs] not in text          # its own curves
                    assert mine in side and theirs not in side
                    assert text.count("#1 ") >= 3 and "#2 " not in text

                # the store: three runs per owner, each on its own data
                runs = store.list()
                assert sorted(r["owner"] for r in runs) == sorted([owner_a] * 3 + [owner_b] * 3)
                assert {r["dataset"] for r in runs if r["owner"] == owner_a} == {"demand-iv"}
                assert {r["dataset"] for r in runs if r["owner"] == owner_b} == {"demand-pcl"}
                # fairness: with one worker, runs finish in the order they start
                order = [r["owner"] for r in reversed(runs)]
                print(f"\nfinish order: {''.join('A' if o == owner_a else 'B' for o in order)}")
                assert order.index(owner_b) < len(order) - 1 - order[::-1].index(owner_a), order

                # a long fit of A, then the server is killed while it trains
                nav(a, "Estimators")
                a.get_by_text("Advanced settings").click()
                fill(a, "est_epochs", 100000)
                fill(a, "adv_nn_patience", 5000)
                nav(a, "Train")
                a.locator(".st-key-train_start button").click()
                a.get_by_text("Batch 2").first.wait_for()
                a.get_by_text("outcome model s(c)").first.wait_for(timeout=30_000)
                finished_before = len(store.list(owner_a))
                query = urllib.parse.urlparse(a.url).query
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
            assert finished_before == 3

            # a new server on the same run store: the finished runs are there, the lost one explained
            with streamlit_server(home, "server2.log", DMLCORE_WORKERS="1") as (base, _):
                a.goto(f"{base}/train?{query}")
                idle(a, 800)
                no_exception(a)
                a.get_by_text("no longer held by the server").wait_for()
                # measured loss: the table A had loaded lived in the killed server's memory
                assert "Load data and assign valid roles" in main_text(a)
                a.goto(f"{base}/results?{query}")
                idle(a, 800)
                a.get_by_text("Stored runs", exact=True).wait_for()
                assert len(store.list(owner_a)) == 3               # nothing finished was lost
                print(f"killed mid-run: finished runs in the store before {finished_before + 3}, after "
                      f"{len(store.list())}; the run in flight is not among them")
                a.locator(".st-key-store_pick").click()
                a.get_by_role("option").first.click()
                a.keyboard.press("Escape")
                idle(a)
                a.locator(".st-key-store_load button").click()
                idle(a, 800)
                a.get_by_text("Estimated causal function").wait_for()
                a.locator("[data-testid=stPlotlyChart]").first.wait_for()
                no_exception(a)
                assert "f(price, time = 5, type)" in main_text(a)               # A's own run
        finally:
            browser.close()
