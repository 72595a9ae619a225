"""Walk the Study page in Chromium as a researcher would and save its screenshots to docs/img/study/.

    .venv/bin/python scripts/study_screenshots.py

Starts a Streamlit server (tests/browser_support.py) on a fresh DMLCORE_HOME and, at 1400 px wide:
a refused option (N = 10,000,000), the setup of a small study (demand-iv, N = 500, gradient
boosting, K = 2, seeds 0-5: six seeds, the fewest for which a paired two-sided Wilcoxon p can go
below 0.05), its progress, its results, and the report.html it downloads. Needs /usr/bin/chromium
and Playwright. Each shot is the whole main area (the viewport grown to its height).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import ARGS, CHROMIUM, IDLE, idle, nav, no_exception, streamlit_server  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

SHOTS = ROOT / "docs" / "img" / "study"
WIDTH = 1400


def shoot(page, name: str, selector: str = "[data-testid=stMain]") -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(f"() => document.querySelector('{selector}').scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": max(900, min(int(height) + 40, 12000))})
    page.wait_for_timeout(1200)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": WIDTH, "height": 900})
    print(f"  saved {name}.png", flush=True)


def fill(page, key: str, value) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(str(value))
    box.press("Enter")
    idle(page)


def main() -> None:
    with tempfile.TemporaryDirectory() as home, streamlit_server(Path(home), "server.log") as (base, _), \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": 900}, accept_downloads=True)
        page.set_default_timeout(600_000)
        page.goto(base)
        page.wait_for_selector(IDLE)
        nav(page, "Study")
        fill(page, "study_opt_demand-iv_n", 10_000_000)
        page.get_by_text("larger than this tool supports").first.wait_for()
        shoot(page, "01_refused")

        fill(page, "study_opt_demand-iv_n", 500)
        page.locator(".st-key-study_learner").click()
        page.get_by_role("option", name="gradient boosting").click()
        idle(page)
        fill(page, "study_folds", 2)
        fill(page, "study_seeds", "0-5")
        fill(page, "study_label", "gb, N = 500, 6 seeds")
        no_exception(page)
        shoot(page, "02_setup")

        page.locator(".st-key-study_start button").click()
        page.get_by_text("still to run").first.wait_for()
        page.locator("[data-testid=stPlotlyChart]").first.wait_for()   # a few fits in: the boxes begin to fill
        page.wait_for_timeout(3000)
        idle(page, 200)                          # between two refreshes of the progress panel
        shoot(page, "03_progress")
        page.get_by_text("· done").first.wait_for()
        idle(page, 1500)
        no_exception(page)
        shoot(page, "04_results")

        with page.expect_download() as download:
            page.get_by_role("button", name="report.html").first.click()
        report = Path(home) / "report.html"
        download.value.save_as(report)
        view = browser.new_page(viewport={"width": WIDTH, "height": 900})
        view.goto(report.as_uri())
        view.wait_for_timeout(3000)
        shoot(view, "05_report", "body")
        browser.close()


if __name__ == "__main__":
    main()
