"""The Study page in Chromium across a browser restart: a study run in one browser is listed again
after that browser is closed and started anew on the same profile (its owner cookie has an
expiry), and "Forget this browser" gives it a new, empty identity.

A persistent Chromium profile is closed and reopened, as a user quitting and restarting the
browser; a cookie without an expiry (the probe) is gone after it, which shows the restart was real.
Skipped when /usr/bin/chromium or Playwright is missing.
"""

from __future__ import annotations

import time

import pytest

from browser_support import ARGS, CHROMIUM, idle, needs_chromium, no_exception, streamlit_server

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium
DAY = 86400


def fill(page, key: str, value):
    box = page.locator(f".st-key-{key} input")
    box.fill(str(value))
    box.press("Enter")
    idle(page)


def open_study(context, base):
    page = context.pages[0] if context.pages else context.new_page()
    page.set_viewport_size({"width": 1400, "height": 900})
    page.set_default_timeout(120_000)
    page.goto(f"{base}/study")
    idle(page, 800)
    no_exception(page)
    return page


def owner_cookie(context) -> dict:
    [cookie] = [c for c in context.cookies() if c["name"] == "dmlcore_owner"]
    return cookie


def test_stored_studies_outlive_a_browser_restart_and_forget_clears_them(tmp_path):
    profile = tmp_path / "profile"
    with streamlit_server(tmp_path, "server.log", DMLCORE_EXECUTOR="inline", DMLCORE_WORKERS="1") as (base, _), \
            sync_api.sync_playwright() as p:
        def launch():
            return p.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), headless=True,
                                                        args=ARGS)

        context = launch()
        page = open_study(context, base)
        fill(page, "study_opt_demand-iv_n", 200)
        page.locator(".st-key-study_learner").click()
        page.get_by_role("option", name="linear").click()
        idle(page)
        fill(page, "study_folds", 2)
        fill(page, "study_seeds", "0-1")
        fill(page, "study_label", "kept")
        page.locator(".st-key-study_start button").click()
        page.get_by_text("6 of 6 fits run, 0 reused · done").wait_for(timeout=180_000)
        idle(page)
        no_exception(page)
        cookie = owner_cookie(context)
        assert 29 * DAY < cookie["expires"] - time.time() <= 30 * DAY + 60      # DMLCORE_OWNER_DAYS's default
        page.evaluate("() => { document.cookie = 'probe=1; path=/'; }")         # no expiry: gone at a restart
        assert any(c["name"] == "probe" for c in context.cookies())
        context.close()                                                          # the browser quits

        context = launch()                                                       # and starts again
        assert not any(c["name"] == "probe" for c in context.cookies())         # a real restart
        assert owner_cookie(context)["value"] == cookie["value"]
        page = open_study(context, base)
        page.get_by_role("tab", name="Stored studies").click()
        page.get_by_text("6 of its 6 fits are in the store.").wait_for()
        assert page.locator(".st-key-study_pick input").input_value().startswith("kept · 6 fits")
        no_exception(page)

        page.locator(".st-key-study_forget button").click()
        idle(page)
        page.get_by_role("tab", name="Stored studies").click()
        page.get_by_text("The studies of this browser are listed here once started.").wait_for()
        page.wait_for_timeout(500)
        assert owner_cookie(context)["value"] != cookie["value"]                 # the browser keeps its new identity
        context.close()
