"""The Results page for four kinds of data, in Chromium at 1400 and 1000 px: docs/img/results/.

    .venv/bin/python scripts/results_screenshots.py [--only demo card rhc upload]

Starts a Streamlit server (tests/browser_support.py) with a temporary DMLCORE_HOME and, for each case,
gets runs the way a user would (the one-click demo; Card and RHC from "Real data sets"; an uploaded
CSV of Card with a region column, roles chosen by hand), with gradient-boosting learners and few folds
so that it stays quick on 2 shared cores. On Results it saves the page at 1400 and 1000 px wide and
prints what was measured there: the share of the causal-function chart's width the curves get, whether
the effect table is wider than its frame (then it scrolls) and, where the page offers the covariance
choice, the 2SLS row of the effect table and the Linear IV box's Wald interval under each choice.
Needs /usr/bin/chromium and Playwright.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import ARGS, CHROMIUM, idle, nav, no_exception, streamlit_server  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

SHOTS = ROOT / "docs" / "img" / "results"
WIDTHS = (1400, 1000)
CARD_COVARIATES = ["exper", "expersq", "black", "smsa", "south", "smsa66"]

# the curves' share of the chart: the plotting areas' span over the chart's own width
CURVE_SHARE = """() => {
  const chart = document.querySelector('[data-testid=stPlotlyChart]');
  const svg = chart.querySelector('svg.main-svg').getBoundingClientRect();
  const areas = [...chart.querySelectorAll('.nsewdrag')].map(e => e.getBoundingClientRect());
  const left = Math.min(...areas.map(r => r.left)), right = Math.max(...areas.map(r => r.right));
  return {chart: svg.width, curves: right - left};
}"""
# the effect table: the grid's full width against the frame it sits in
TABLE_FIT = """() => {
  const frame = document.querySelector('.st-key-res_effects_box');
  const scroller = frame.querySelector('.dvn-scroller') || frame;
  return {frame: frame.getBoundingClientRect().width, content: scroller.scrollWidth, visible: scroller.clientWidth};
}"""


def shoot(page, name: str) -> None:
    """The Results page at each width, the viewport grown to the main area's height; the measures printed."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    losses = page.locator(".st-key-res_losses_open summary")   # the page opens with it closed: open it once
    if losses.count() and not page.locator(".st-key-res_losses_open .js-plotly-plot").count():
        losses.click()
        page.locator(".st-key-res_losses_open .js-plotly-plot").first.wait_for(timeout=120_000)
        idle(page, 1500)
    page.mouse.move(0, 0)      # no hover: at 1000 px the menu item under the last click's spot looked chosen
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(1500)
        height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
        page.set_viewport_size({"width": width, "height": max(900, min(int(height) + 40, 12000))})
        page.wait_for_timeout(1500)
        share = page.evaluate(CURVE_SHARE)
        table = page.evaluate(TABLE_FIT) if page.locator(".st-key-res_effects_box").count() else None
        page.screenshot(path=str(SHOTS / f"{name}_{width}.png"))
        fit = ("no effect table" if table is None else
               f"effect table {table['content']:.0f} px in a {table['visible']:.0f} px frame"
               f"{' (scrolls)' if table['content'] > table['visible'] + 1 else ' (fits)'}")
        print(f"  {name}_{width}.png: curves {share['curves']:.0f} of {share['chart']:.0f} px "
              f"({share['curves'] / share['chart']:.0%}); {fit}", flush=True)
    page.set_viewport_size({"width": 1400, "height": 900})


def effect_rows(page) -> list[list[str]]:
    """The effect table's rows as the browser exposes them (the grid draws on a canvas; its accessible
    table holds the text)."""
    return page.locator(".st-key-res_effects_box").evaluate(
        "box => [...box.querySelectorAll('tr')].map(tr => [...tr.children].map(cell => cell.textContent))")


def covariance_check(page, cluster: str | None) -> None:
    """Each covariance choice: the 2SLS row of the effect table and the Linear IV box's Wald interval."""
    if page.locator(".st-key-res_cov").count() == 0:
        print("  no covariance choice (not IV data with one treatment)", flush=True)
        return
    page.set_viewport_size({"width": 1400, "height": 4000})     # the choice in view: its list opens there
    for cov, label in (("robust", "Heteroskedasticity-robust"), ("clustered", "^Clustered$"),
                       ("clustered-cr1", "CR1"), ("unadjusted", "Homoskedastic")):
        if cov.startswith("clustered") and cluster is None:
            continue
        page.locator(".st-key-res_cov").click()
        page.get_by_role("option", name=re.compile(label, re.I)).first.click()
        idle(page, 800)
        if cov == "clustered":
            page.locator(".st-key-res_cluster").click()
            page.get_by_role("option", name=cluster, exact=True).click()
            idle(page, 1500)
        wald = re.search(r"Wald \[([^\]]+)\]", page.locator("[data-testid=stMain]").inner_text())
        rows = [" | ".join(row) for row in effect_rows(page) if any("2SLS s.e." in cell for cell in row)]
        print(f"  {cov}: Linear IV box Wald [{wald[1] if wald else '?'}]; effect table: {rows}", flush=True)
        no_exception(page)


def train(page, learner: str = "gradient boosting", folds: int = 3, timeout: int = 900_000) -> None:
    nav(page, "Estimators")
    page.locator(".st-key-est_learner").click()
    page.get_by_role("option", name=learner).click()
    idle(page)
    box = page.locator(".st-key-est_folds input")
    box.fill(str(folds))
    box.press("Enter")
    idle(page)
    nav(page, "Train")
    start = time.perf_counter()
    page.locator(".st-key-train_start button").click()
    page.get_by_text(re.compile(r"Batch \d+ · (\d) of \1 done")).first.wait_for(timeout=timeout)
    print(f"  trained in {time.perf_counter() - start:.0f} s", flush=True)
    nav(page, "Results")
    page.get_by_text("Estimated causal function").wait_for(timeout=120_000)
    idle(page, 2000)
    no_exception(page)


def demo(page) -> None:
    nav(page, "Home")
    page.locator(".st-key-demo_run button").click()
    page.wait_for_url(re.compile(r"/results"), timeout=300_000)
    page.get_by_text("Estimated causal function").wait_for(timeout=300_000)
    idle(page, 2000)
    no_exception(page)
    shoot(page, "demo")


def real(page, name: str, cluster: str | None, folds: int = 3) -> None:
    nav(page, "Data")
    page.get_by_role("tab", name="Real data sets").click()
    page.locator(".st-key-real_name").click()
    page.get_by_role("option", name=re.compile(rf"^{name}", re.I)).first.click()
    idle(page)
    page.locator(".st-key-real_load button").click()
    idle(page, 1000)
    train(page, folds=folds)
    shoot(page, name)
    covariance_check(page, cluster)


def upload(page) -> None:
    from linearmodels.datasets import card

    table = card.load()
    table["region"] = table.filter(like="reg66").to_numpy().argmax(1) + 1
    table = table[["lwage", "educ", "nearc4", *CARD_COVARIATES, "region"]]
    nav(page, "Data")
    page.get_by_role("tab", name="Upload a file").click()
    page.locator(".st-key-upload input[type=file]").set_input_files(
        files=[{"name": "card_region.csv", "mimeType": "text/csv", "buffer": table.to_csv(index=False).encode()}])
    page.get_by_text("Loaded card_region.csv").wait_for()
    idle(page, 800)
    nav(page, "Roles")
    for role, columns in (("outcome", ["lwage"]), ("treatment", ["educ"]), ("instrument", ["nearc4"]),
                          ("covariates", CARD_COVARIATES)):
        for column in columns:
            box = page.locator(f".st-key-role_{role} input")
            box.click()
            box.fill(column)
            page.get_by_role("option", name=column, exact=True).click()
            idle(page, 500)
            page.keyboard.press("Escape")
    page.get_by_text("Roles are valid").wait_for()
    train(page)
    shoot(page, "upload")
    covariance_check(page, "region")


CASES = {"demo": demo, "card": lambda page: real(page, "card", None),
         "rhc": lambda page: real(page, "rhc", None, folds=2), "upload": upload}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(CASES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, streamlit_server(Path(home), "server.log") as (base, _), \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        for name in args.only or list(CASES):
            page = browser.new_page(viewport={"width": 1400, "height": 900})   # a new session per case
            page.set_default_timeout(120_000)
            page.goto(base)
            idle(page, 800)
            print(f"{name}:", flush=True)
            CASES[name](page)
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
