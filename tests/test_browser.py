"""The dashboard in a real browser: Streamlit server + Playwright + Debian's Chromium.

Drives the whole flow (demo, data, roles, estimators, training, results, a reload, learn) and
saves a screenshot of every page to artifacts/screenshots/. Skipped when /usr/bin/chromium or
Playwright is missing (install Chromium with apt, never with `playwright install`).
"""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd
import pytest

from browser_support import ARGS, CHROMIUM, ROOT, idle, nav, needs_chromium, no_exception, streamlit_server

SHOTS = ROOT / "artifacts" / "screenshots"

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Streamlit server with its own DMLCORE_HOME."""
    with streamlit_server(tmp_path_factory.mktemp("dmlcore_home"), "server.log") as (base, _):
        yield base


@pytest.fixture(scope="module")
def page(server):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 900})
        pg.set_default_timeout(60_000)
        yield pg
        browser.close()


def shoot(page, name: str):
    """A screenshot of the whole page (the viewport grows to the content, then shrinks back)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": 1400, "height": max(900, min(int(height) + 40, 7000))})
    page.wait_for_timeout(700)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": 1400, "height": 900})




def test_full_flow_in_chromium(page, server):
    # Home, as the first visitor after the server start: one clean menu (the top navigation),
    # and Streamlit's automatic list of pages/ never appears, not even for a moment
    page.add_init_script("""
        window.__sawAutoNav = false;
        new MutationObserver(() => {
            if (document.querySelector('[data-testid=stSidebarNav]')) window.__sawAutoNav = true;
        }).observe(document, {childList: true, subtree: true});
    """)
    page.goto(server)
    idle(page, 800)
    # one link per page app.py registers (Home … Class)
    registered = (ROOT / "app.py").read_text().count("st.Page(")
    assert page.locator("[data-testid=stTopNavLink]").count() == registered == 9
    assert page.locator("[data-testid=stSidebarNav]").count() == 0
    assert page.evaluate("window.__sawAutoNav") is False
    page.get_by_text("One-click demo").wait_for()
    shoot(page, "01_home")

    # The demo: click -> Train (live) -> Results, timed
    start = time.perf_counter()
    page.locator(".st-key-demo_run button").click()
    page.wait_for_url(re.compile(r"/results"), timeout=120_000)
    page.get_by_text("Estimated causal function").wait_for(timeout=60_000)
    page.locator("[data-testid=stPlotlyChart]").first.wait_for()
    demo_seconds = time.perf_counter() - start
    idle(page, 1500)
    print(f"\ndemo: {demo_seconds:.1f} s from the click to the results plot")
    (SHOTS.parent / "demo_seconds.txt").write_text(f"{demo_seconds:.1f}\n")
    assert demo_seconds < 60
    body = page.locator("[data-testid=stMain]").inner_text()
    assert "DML-CMR" in body and "Naive plug-in" in body and "2SLS" in body
    assert page.locator("[data-testid=stDataFrame]").count() >= 1
    no_exception(page)
    shoot(page, "06_results_demo")

    # Data: an uploaded CSV (preview, types, plot), then a small simulation
    nav(page, "Data")
    page.get_by_role("tab", name="Upload a file").click()
    rng = np.random.default_rng(0)
    z = rng.normal(size=300)
    u = rng.normal(size=300)
    a = 10 + z + u
    table = pd.DataFrame({"wage": 2 * a + 3 * u + rng.normal(size=300), "school": a, "distance": z,
                          "age": rng.integers(20, 60, size=300)})
    page.locator(".st-key-upload input[type=file]").set_input_files(
        files=[{"name": "wages.csv", "mimeType": "text/csv", "buffer": table.to_csv(index=False).encode()}])
    page.get_by_text("Loaded wages.csv").wait_for()
    idle(page, 800)
    page.get_by_role("tab", name="Plot").click()
    page.wait_for_timeout(800)
    no_exception(page)
    shoot(page, "02_data_upload")
    page.get_by_role("tab", name="Simulate").click()
    n_input = page.locator(".st-key-sim_n input")
    n_input.fill("400")
    n_input.press("Enter")
    idle(page)
    page.locator(".st-key-sim_run button").click()
    idle(page, 800)
    page.get_by_text("Current data: IV ticket demand").wait_for()
    no_exception(page)
    shoot(page, "02_data")

    # Roles: filled in, diagram and first-stage diagnostics
    nav(page, "Roles")
    page.get_by_text("Roles are valid").wait_for()
    page.get_by_text("First-stage F").first.wait_for()
    assert page.locator("[data-testid=stGraphVizChart]").count() == 1
    no_exception(page)
    shoot(page, "03_roles")

    # Estimators: neural-network learners, 3 folds, at most 60 epochs (a few seconds of training)
    nav(page, "Estimators")
    page.locator(".st-key-est_learner").click()
    page.get_by_role("option", name="neural network").click()
    idle(page)
    folds = page.locator(".st-key-est_folds input")
    folds.fill("3")
    folds.press("Enter")
    idle(page)
    page.get_by_text("Advanced settings").click()
    epochs = page.locator(".st-key-est_epochs input")
    epochs.fill("60")
    epochs.press("Enter")
    idle(page)
    page.get_by_text("at most 60 epochs").first.wait_for()
    no_exception(page)
    shoot(page, "04_estimators")

    # Train: start, watch progress and live losses, reload while it runs, see it finish
    nav(page, "Train")
    page.locator(".st-key-train_start button").click()
    page.get_by_text("Batch 2").first.wait_for()
    try:
        page.get_by_text("Live losses of this run").wait_for(timeout=15_000)
        page.locator("[data-testid=stProgress]").first.wait_for(timeout=1_000)
        page.wait_for_timeout(1200)
    except sync_api.TimeoutError:
        pass                                              # finished before a chart was drawn
    shoot(page, "05_train_running")
    page.reload()
    idle(page, 800)
    page.get_by_text("Batch 2").first.wait_for()        # reattached from the URL
    page.get_by_text("Batch 2 · 4 of 4 done").wait_for(timeout=120_000)   # the demo's 4 methods
    idle(page, 800)
    no_exception(page)
    shoot(page, "05_train_done")

    # Results of the new batch, downloads present
    nav(page, "Results")
    page.get_by_text("Estimated causal function").wait_for()
    assert page.locator(".st-key-dl_predictions").count() == 1
    assert page.locator(".st-key-dl_record").count() == 1
    no_exception(page)
    shoot(page, "06_results_small")

    # Bands: DML-CMR with boosting nuisances and a spline (sieve) f, drawn with its 95 % band
    nav(page, "Estimators")
    page.locator(".st-key-est_learner").click()
    page.get_by_role("option", name="gradient boosting").click()
    idle(page)
    page.locator(".st-key-est_f_model").click()
    page.get_by_role("option", name=re.compile("spline basis")).click()
    idle(page)
    page.get_by_text("spline basis (sieve) with 95 % confidence bands").first.wait_for()
    nav(page, "Train")
    page.locator(".st-key-train_start button").click()
    page.get_by_text("Batch 3").first.wait_for()
    page.get_by_text(re.compile(r"Batch 3 · (\d) of \1 done")).wait_for(timeout=120_000)
    nav(page, "Results")
    page.get_by_text("Estimated causal function").wait_for()
    page.get_by_text("confidence band (sandwich)").first.wait_for()
    idle(page, 1500)
    no_exception(page)
    shoot(page, "06_results_bands")

    # Learn: the graphs and the experiment
    nav(page, "Learn")
    page.get_by_text("The problem.").wait_for()
    shoot(page, "07_learn_iv")
    page.get_by_text("3 · Nuisances and orthogonality").click()     # the lesson picker (docs/teaching.md's sessions)
    page.get_by_role("tab", name="Cross-fitting").click()
    page.get_by_text("Measured by this project").wait_for()
    idle(page)
    shoot(page, "07_learn_crossfit")
    page.get_by_role("tab", name="Ticket demand").click()
    page.get_by_text("Price slope").wait_for()
    page.wait_for_timeout(800)
    no_exception(page)
    shoot(page, "07_learn_experiment")
