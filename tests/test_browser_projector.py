"""The Learn page on a projector (issue 47): at 1,024 x 768 pixels no table, chart or equation of any
Learn tab, nor of the Class page with three students' runs, nor the Results page's effect table (a 2SLS run:
its coefficient, its debiased average derivative and Anderson-Rubin set; a regression: a plug-in), is cut
(wider than its container), and no chart's titles overlap each other or its legend; the effect table also at
1,400 x 900.

One browser session over every tab (Streamlit server + Playwright + Debian's Chromium); the slow
experiments behind buttons are not run. Screenshots of each tab go to artifacts/screenshots/projector/.
Skipped when /usr/bin/chromium or Playwright is missing.
"""

from __future__ import annotations

import re

import pytest

from browser_support import ARGS, CHROMIUM, ROOT, idle, needs_chromium, streamlit_server

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium

SHOTS = ROOT / "artifacts" / "screenshots" / "projector"
WIDTH, HEIGHT = 1024, 768

# What is cut or overlapped on the page now, as a list of findings (empty when all is well):
# - a data frame whose grid scrolls sideways (its columns do not all show);
# - a Markdown table or a displayed equation wider than its container;
# - a chart whose drawing is wider than its container;
# - two of a chart's texts (title, panel titles, axis titles, legend) whose boxes overlap.
PROBE = """() => {
  const out = [], rect = e => e.getBoundingClientRect(), main = document.querySelector('[data-testid=stMain]');
  for (const e of main.querySelectorAll('[data-testid=stDataFrame] .dvn-scroller'))
    if (e.scrollWidth > e.clientWidth + 2) out.push(`data frame ${e.scrollWidth} px in ${e.clientWidth} px`);
  for (const e of main.querySelectorAll('.katex-display, [data-testid=stMarkdownContainer] table, [data-testid=stTable] table')) {
    const box = e.parentElement;
    if (e.scrollWidth > e.clientWidth + 2 || rect(e).right > rect(box).right + 2)
      out.push(`${e.tagName === 'TABLE' ? 'table' : 'equation'} ${Math.round(rect(e).width)} px in ${Math.round(rect(box).width)} px: ${e.textContent.slice(0, 40)}`);
  }
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const svg = plot.querySelector('.main-svg'), box = plot.closest('[data-testid=stPlotlyChart]') || plot.parentElement;
    if (svg && rect(svg).right > rect(box).right + 2) out.push(`chart ${Math.round(rect(svg).width)} px in ${Math.round(rect(box).width)} px`);
    const texts = [...plot.querySelectorAll('.gtitle, .annotation-text, .legend, .g-xtitle, .g-ytitle')]
      .map(e => ({what: `${e.getAttribute('class')} "${(e.textContent || '').slice(0, 30)}"`, r: rect(e)}))
      .filter(t => t.r.width > 0 && t.r.height > 0);
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].r, b = texts[j].r;
      if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2)
        out.push(`chart texts overlap: ${texts[i].what} and ${texts[j].what}`);
    }
  }
  return out;
}"""


def _lessons() -> dict[str, list[str]]:
    import importlib.util
    spec = importlib.util.spec_from_file_location("learn_page_lessons", ROOT / "pages" / "6_learn.py")
    text = spec.loader.get_source("learn_page_lessons")
    # the lessons and their tabs as the page declares them (LESSONS), read without running the page
    lessons = {}
    for lesson, body in re.findall(r'\("(\d · [^"]+)", \(((?:\("[^"]+", [\w.]+\),?\s*)+)\)\)', text):
        lessons[lesson] = re.findall(r'\("([^"]+)", [\w.]+\)', body)
    return lessons


def _class_runs(home):
    """Three students' demo runs (two fast methods each) in the server's store, for the Class page; returns
    the store and the first student's runs (the Results page's, stored again under another owner)."""
    from dashboard.plan import DEMO_DATA
    from dmlcore.data.registry import load_dataset
    from dmlcore.runs import fit_run
    from dmlcore.store import RunStore
    store = RunStore(home / "runs.sqlite3")
    first = {}
    for owner, seed in (("student-a", 1), ("student-b", 2), ("student-c", 3)):
        loaded = load_dataset(DEMO_DATA["name"], n=DEMO_DATA["n"], seed=seed)
        for method in ("2sls", "regression"):
            run = fit_run(loaded.data, method, truth=loaded.truth, dataset=DEMO_DATA["name"],
                          data_params=dict(loaded.params))
            store.save(run, owner, f"#1 {method}")
            first.setdefault(method, run)
    return store, first


RESULTS_OWNER = "5e" * 16        # the browser's owner token (its cookie) for the Results page


def _results_effects(page, base, store, runs) -> dict:
    """The Results page with ``runs`` reloaded from the store: the probe's findings at 1,024 x 768 and at
    1,400 x 900 (screenshots of both), after checking that the effect grid is drawn with its numbers."""
    for method, run in runs.items():
        store.save(run, RESULTS_OWNER, f"#1 {method}")
    page.context.add_cookies([{"name": "dmlcore_owner", "value": RESULTS_OWNER, "url": base}])
    page.goto(f"{base}/results")
    idle(page, 400)
    for _ in runs:
        page.locator(".st-key-store_pick input").click()
        page.get_by_role("option").first.click()
        page.keyboard.press("Escape")
    page.locator(".st-key-store_load button").click()
    page.get_by_text("Effect of the treatment").wait_for()
    idle(page, 800)
    box = page.locator(".st-key-res_effects_box")
    header = box.evaluate("box => [...box.querySelectorAll('tr')].map(tr => [...tr.children].map(c => c.textContent))")
    assert any("95% interval" in row and "Anderson-Rubin set" in row for row in header), header
    assert not any("measured coverage" in row for row in header)         # in words under the grid
    found = {}
    for width, height in ((WIDTH, HEIGHT), (1400, 900)):
        page.set_viewport_size({"width": width, "height": height})
        box.scroll_into_view_if_needed()
        idle(page, 600)
        problems = page.evaluate(PROBE)
        if problems:
            found[f"Results {width}"] = problems
        page.screenshot(path=str(SHOTS / f"results_effects_{width}.png"))
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    return found


# the sections behind a button whose tables are probed too: their results prepared small before the server starts
PREPARED = {"Weak IV": "Montiel Olea & Pflueger (2013) is", "Invalid IV": "Parente & Santos Silva 2012"}


def _prepared_sections(home, monkeypatch):
    """The Weak IV and Invalid IV tabs' last sections (dmlcore.teaching.robust), prepared with few data sets
    in the server's DMLCORE_HOME, so that the page shows their tables without running them."""
    from dmlcore.teaching import prepared, robust
    monkeypatch.setenv("DMLCORE_HOME", str(home))
    prepared.save("robust-heteroskedastic", robust.robust_inference("heteroskedastic", draws=4))
    prepared.save("overid", robust.overidentification(draws=2))


def test_learn_tabs_and_class_fit_a_projector(tmp_path, monkeypatch):
    lessons = _lessons()
    _prepared_sections(tmp_path, monkeypatch)
    assert sum(len(tabs) for tabs in lessons.values()) == 12, lessons
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = {}
    with streamlit_server(tmp_path, "server.log", DMLCORE_TEACHER_CODE="proj47") as (base, _), \
            sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.set_default_timeout(120_000)
        page.goto(f"{base}/learn")
        idle(page, 800)
        # the compact header: title, lesson picker and notation leave most of the screen to the lesson
        tabs_top = page.get_by_role("tab").first.bounding_box()["y"]
        assert tabs_top < 300, f"the lesson's tabs start {tabs_top:.0f} px down a {HEIGHT} px screen"
        for lesson, tabs in lessons.items():
            page.locator("[data-testid=stRadio] label", has_text=lesson).click()
            idle(page, 800)
            for tab in tabs:
                page.get_by_role("tab", name=tab).click()
                if tab in PREPARED:
                    page.get_by_text(PREPARED[tab]).first.wait_for()
                idle(page, 1200)
                problems = page.evaluate(PROBE)
                if problems:
                    found[tab] = problems
                name = re.sub(r"[^a-z0-9]+", "_", tab.lower()).strip("_")
                page.screenshot(path=str(SHOTS / f"{name}_{WIDTH}.png"))          # what the projector shows first
                height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
                page.set_viewport_size({"width": WIDTH, "height": min(int(height) + 40, 9000)})
                page.wait_for_timeout(600)
                page.screenshot(path=str(SHOTS / f"{name}_{WIDTH}_whole.png"))    # the whole tab
                page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        # the Class page with three students' runs: the MSE histograms and the effects around the truth
        store, first = _class_runs(tmp_path)
        page.goto(f"{base}/class")
        idle(page, 800)
        page.locator("input[type=password]").fill("proj47")
        page.get_by_role("button", name="Open the class view").click()
        page.get_by_text("The estimated effects around the truth").wait_for()
        idle(page, 1500)
        problems = page.evaluate(PROBE)
        if problems:
            found["Class"] = problems
        assert page.locator(".js-plotly-plot").count() >= 2
        page.screenshot(path=str(SHOTS / f"class_{WIDTH}.png"))
        height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
        page.set_viewport_size({"width": WIDTH, "height": min(int(height) + 40, 9000)})
        page.wait_for_timeout(600)
        page.screenshot(path=str(SHOTS / f"class_{WIDTH}_whole.png"))
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        found.update(_results_effects(page, base, store, first))
        browser.close()
    assert not found, found
