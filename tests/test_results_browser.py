"""The Results page in Chromium on an uploaded file: the curves get the chart's width, and the covariance
choice ("Standard errors") changes every number it concerns: the effect table's 2SLS interval and its kind,
the Linear IV box's Wald interval and the 2SLS coefficients' standard errors side by side."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from browser_support import ARGS, CHROMIUM, idle, nav, needs_chromium, no_exception, streamlit_server

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium


def _table(n=400, groups=40, seed=5) -> pd.DataFrame:
    """IV data with a shock shared within groups and noise growing with the instrument: the three
    covariance choices give three different standard errors."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n)
    z = rng.normal(size=n) + 0.5 * rng.normal(size=groups)[g]
    u = rng.normal(size=n)
    d = z + u
    y = 1.5 * d + 2 * u + (1 + np.abs(z)) * rng.normal(size=n) + 2 * rng.normal(size=groups)[g]
    return pd.DataFrame({"y": y, "d": d, "z": z, "x": rng.normal(size=n), "g": g})


def _choose(page, key: str, option: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.click()
    box.fill(option)
    page.get_by_role("option", name=option, exact=True).click()
    idle(page, 500)
    page.keyboard.press("Escape")


def _tables(page) -> dict:
    """What the page shows for 2SLS: the effect table's row (interval, kind), the Linear IV box's Wald
    interval and the side-by-side table's title; the grid draws on a canvas, its text is in its
    accessible table (text_content, not inner_text)."""
    rows = page.locator(".st-key-res_effects_box").evaluate(
        "box => [...box.querySelectorAll('tr')].map(tr => [...tr.children].map(cell => cell.textContent))")
    header = next(r for r in rows if "kind" in r)
    row = dict(zip(header, next(r for r in rows if r and r[0] == "#1 2SLS")))
    main = page.locator("[data-testid=stMain]").inner_text()
    wald = re.search(r"Wald \[(-?[\d.e+-]+), (-?[\d.e+-]+)\]", main)
    side = re.search(r"2SLS, side by side: linear coefficients ± standard errors, (.*)$", main, re.M)
    return {"interval": row["95% interval"], "kind": row["kind"], "wald": f"{wald[1]} to {wald[2]}" if wald else None,
            "side": side[1] if side else None}


def test_covariance_choice_changes_the_effect_table_and_the_linear_iv_box(tmp_path):
    with streamlit_server(tmp_path, "server.log") as (base, _), sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(base)
        idle(page, 800)
        nav(page, "Data")
        page.get_by_role("tab", name="Upload a file").click()
        page.locator(".st-key-upload input[type=file]").set_input_files(
            files=[{"name": "groups.csv", "mimeType": "text/csv", "buffer": _table().to_csv(index=False).encode()}])
        page.get_by_text("Loaded groups.csv").wait_for()
        idle(page, 800)
        nav(page, "Roles")
        for key, column in (("role_outcome", "y"), ("role_treatment", "d"), ("role_instrument", "z"),
                            ("role_covariates", "x")):
            _choose(page, key, column)
        page.get_by_text("Roles are valid").wait_for()
        nav(page, "Estimators")
        page.locator(".st-key-est_learner").click()
        page.get_by_role("option", name="linear").click()
        idle(page)
        nav(page, "Train")
        page.locator(".st-key-train_start button").click()
        page.get_by_text(re.compile(r"Batch \d+ · (\d) of \1 done")).first.wait_for(timeout=600_000)
        nav(page, "Results")
        page.get_by_text("Estimated causal function").wait_for()
        idle(page, 1500)
        no_exception(page)
        # the curves: nearly the chart's whole width (the legend is below them)
        share = page.evaluate("""() => {
            const chart = document.querySelector('[data-testid=stPlotlyChart]');
            const svg = chart.querySelector('svg.main-svg').getBoundingClientRect();
            const area = chart.querySelector('.nsewdrag').getBoundingClientRect();
            return area.width / svg.width; }""")
        assert share >= 0.7
        seen = {"unadjusted": _tables(page)}
        page.set_viewport_size({"width": 1400, "height": 4000})    # the choice in view: its list opens there
        for cov, label, words in (("robust", "heteroskedasticity-robust", "heteroskedasticity-robust"),
                                  ("clustered", "clustered", "clustered by 'g'")):
            page.locator(".st-key-res_cov").click()
            page.get_by_role("option", name=re.compile(label, re.I)).first.click()
            idle(page, 800)
            if cov == "clustered":
                page.locator(".st-key-res_cluster").click()
                page.get_by_role("option", name="g", exact=True).click()
                idle(page, 1500)
            no_exception(page)
            seen[cov] = shown = _tables(page)
            assert shown["interval"] == shown["wald"], shown          # one number, in both places
            assert words in shown["kind"], shown
            assert shown["side"] is not None and shown["side"].lower().startswith(label), shown
        assert seen["unadjusted"]["interval"] == seen["unadjusted"]["wald"]
        assert "homoskedastic" in seen["unadjusted"]["kind"] and "homoskedastic" in seen["unadjusted"]["side"]
        assert len({seen[c]["interval"] for c in seen}) == 3              # three different intervals
        browser.close()
