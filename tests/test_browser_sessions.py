"""Two browser sessions on one server, training at once; the session link; a killed server.

Real Chromium (Playwright) against a real Streamlit server, as in tests/test_browser.py, with
one fit at a time (``DMLCORE_WORKERS=1``, fits in worker processes) so that the order of the runs
shows the queue's policy:

1. session A simulates demand-iv, session B demand-pcl; both queue three fits, B while A's
   first one still runs; each sees only its own data, runs and stored results;
2. small batches run whole, in the order they came: all of A's runs finish before B's first;
3. the session link: the address never holds the owner token; a reload of A's browser
   reattaches, while a new browser opening A's address gets nothing of A's session;
4. A starts a long fit and the server is killed (SIGKILL) while it trains; a new server on the
   same home shows A's finished runs without asking and queues the interrupted fit again.

Skipped when /usr/bin/chromium or Playwright is missing.
"""

from __future__ import annotations

import re
import signal

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
    """The owner token this browser keeps (a cookie), after checking the address does not hold it."""
    [token] = [c["value"] for c in page.context.cookies() if c["name"] == "dmlcore_owner"]
    assert token not in page.url and "owner" not in page.url, page.url
    return token


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
                # the queue: with one worker, runs finish in the order they start; small batches whole
                order = "".join("A" if r["owner"] == owner_a else "B" for r in reversed(runs))
                print(f"\nfinish order: {order}")
                assert order == "AAABBB"

                # the session link: a reload reattaches; the address alone gives nothing
                nav(a, "Train")
                assert owner_of(a) == owner_a
                a.reload()
                idle(a, 800)
                a.get_by_text("Batch 1 · 3 of 3 done").wait_for()
                assert owner_of(a) == owner_a and "demand-iv" in sidebar_text(a)
                stranger_context = browser.new_context(viewport={"width": 1400, "height": 900})
                stranger = stranger_context.new_page()
                for address in (a.url, f"{a.url}?owner={owner_a}"):          # what a projector shows, an old link
                    stranger.goto(address)
                    idle(stranger, 800)
                    no_exception(stranger)
                    assert "No runs yet in this session" in main_text(stranger)
                    assert "No data loaded" in sidebar_text(stranger)
                    assert stranger.locator("[class*=st-key-job_]").count() == 0
                    assert stranger.locator("[class*=st-key-cancel_]").count() == 0
                    assert owner_of(stranger) != owner_a
                nav(stranger, "Results")
                assert "No finished runs yet" in main_text(stranger)
                assert store.list(owner_of(stranger)) == []
                stranger_context.close()

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
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
            assert finished_before == 3

            # a new server on the same home: the finished runs are shown, the interrupted one queued again
            with streamlit_server(home, "server2.log", DMLCORE_WORKERS="1") as (base, _):
                a.goto(f"{base}/train")
                idle(a, 800)
                no_exception(a)
                assert owner_of(a) == owner_a
                a.get_by_text("queued again after a server restart").or_(
                    a.get_by_text("outcome model s(c)")).first.wait_for(timeout=60_000)
                assert "Batch 1 · 3 of 3 done" in main_text(a)
                # measured loss: the table A had loaded lived in the killed server's memory
                assert "Load data and assign valid roles" in main_text(a)
                a.locator("[class*=st-key-cancel_]").first.locator("button").click()
                a.locator("[class*=st-key-job_]", has_text="cancelled").wait_for()
                nav(a, "Results")
                a.get_by_text("Estimated causal function").wait_for()
                a.locator("[data-testid=stPlotlyChart]").first.wait_for()
                no_exception(a)
                # A's own runs (plotly draws the axis titles after the chart's frame appears: wait for them)
                sync_api.expect(a.locator("[data-testid=stMain]")).to_contain_text("f(price, time = 5, type)", timeout=30_000)
                assert main_text(a).count("#1 ") >= 3 and len(store.list(owner_a)) == 3
        finally:
            browser.close()
