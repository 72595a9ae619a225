"""Follow docs/teaching.md in Chromium and save its screenshots to docs/img/teaching/.

    .venv/bin/python scripts/teaching_screenshots.py

Starts a Streamlit server (tests/browser_support.py), walks the lesson plan step by step as a
teacher would (Home, then every Learn tab lesson by lesson, the slow experiments run with their
buttons, the demo and its Results, Roles), and prints how long each step took, the first open
of Learn included. Each Learn screenshot is taken at 1,400 pixels wide; the top of each lesson
(its tab strip, a projector's view) and the proximal tab also at 1,024 (``*_1024.png``). Needs
/usr/bin/chromium and Playwright (see ENGINEERING.md).
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import ARGS, CHROMIUM, IDLE, idle, nav, no_exception, streamlit_server  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

SHOTS = ROOT / "docs" / "img" / "teaching"


def shoot(page, name: str, width: int = 1400, whole: bool = True) -> None:
    """The main area at ``width`` pixels: the whole page (the viewport grown to its height) or its top
    (a projector's 768 pixels)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900 if whole else 768})
    page.wait_for_timeout(900)
    if whole:
        height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
        page.set_viewport_size({"width": width, "height": max(900, min(int(height) + 40, 9000))})
        page.wait_for_timeout(900)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(300)
    print(f"  saved {name}.png", flush=True)


def lesson(page, label: str, name: str) -> None:
    """Open a lesson of Learn and shoot its top (tab strip) at 1,024 and 1,400 pixels."""
    page.get_by_text(label, exact=True).click()
    idle(page, 600)
    no_exception(page)
    for width in (1024, 1400):
        shoot(page, f"{name}_{width}", width, whole=False)


def tab(page, name: str, wait_text: str) -> float:
    start = time.perf_counter()
    page.get_by_role("tab", name=name).click()
    page.get_by_text(wait_text).first.wait_for()
    idle(page, 600)
    no_exception(page)
    return time.perf_counter() - start


def run_button(page, label: str, wait_text: str) -> float:
    start = time.perf_counter()
    page.get_by_role("button", name=label).click()
    page.get_by_text(wait_text).first.wait_for(timeout=900_000)
    idle(page, 600)
    no_exception(page)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as home, streamlit_server(Path(home), "server.log") as (base, _), \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(base)
        page.wait_for_selector(IDLE)
        idle(page)
        shoot(page, "01_home")

        start = time.perf_counter()
        nav(page, "Learn", pause=400)
        print(f"Learn, first open: idle after {time.perf_counter() - start:.2f} s", flush=True)
        page.get_by_text("Wald ratio =").wait_for()
        shoot(page, "02_iv_wald_late")
        nav(page, "Home")
        start = time.perf_counter()
        nav(page, "Learn", pause=400)
        print(f"Learn, opened again: idle after {time.perf_counter() - start:.2f} s", flush=True)
        lesson(page, "1 · Instruments", "00_lesson_1")
        # the Weak IV and Invalid IV tabs' last sections (robust F and AR; overidentification) run on a button,
        # beyond the timed lesson (docs/teaching.md): timed on their own lines
        for name, wait, shot, extra in (
                ("Confounding", "OLS moves with ρ", "03_confounding", None),
                ("Weak IV", "Thresholds for the first-stage F", "04_weak", "Montiel Olea & Pflueger (2013) is"),
                ("Invalid IV", "tends to −1 + δ / π", "05_exclusion", "Parente & Santos Silva 2012"),
                ("Forbidden regression", "Two-stage, right", "06_forbidden", None)):
            print(f"{name}: {tab(page, name, wait):.2f} s", flush=True)
            if extra:
                print(f"  beyond the hour: {run_button(page, 'Run the 60 data sets', extra):.1f} s", flush=True)
            shoot(page, shot)
        print(f"Card (1995): {tab(page, 'Card (1995)', 'What if growing up near a college'):.2f} s", flush=True)
        print(f"  DML-CMR: {run_button(page, 'Fit DML-CMR on Card', 'Fitted in'):.1f} s", flush=True)
        shoot(page, "11b_card")
        lesson(page, "2 · Proxies", "00_lesson_2")
        print(f"Proximal learning: {tab(page, 'Proximal learning', 'Proximal 2SLS'):.2f} s", flush=True)
        shoot(page, "07_proximal")
        shoot(page, "07_proximal_1024", 1024, whole=False)
        print(f"RHC: {tab(page, 'RHC (real data)', 'What the published analyses found'):.2f} s", flush=True)
        shoot(page, "07b_rhc")
        lesson(page, "3 · Nuisances and orthogonality", "00_lesson_3")
        print(f"Orthogonal score: {tab(page, 'Orthogonal score', 'perturb the nuisances'):.2f} s", flush=True)
        print(f"  run: {run_button(page, 'Run the perturbation experiment', 'What this teaches'):.1f} s", flush=True)
        shoot(page, "08_orthogonal_score")
        print(f"Orthogonality that works: {tab(page, 'Orthogonality that works', 'The same contrast for the ticket-demand f'):.2f} s",
              flush=True)
        shoot(page, "08b_orthogonality_works")
        print(f"Cross-fitting: {tab(page, 'Cross-fitting', 'Measured by this project'):.2f} s", flush=True)
        print(f"  simple: {run_button(page, 'Run the comparison', 'Lowest median MSE'):.1f} s", flush=True)
        shoot(page, "09_crossfit_simple")
        page.get_by_text("overfitting nuisances").click()
        idle(page, 600)
        print(f"  overfit: {run_button(page, 'Run the comparison', 'Lowest median MSE'):.1f} s", flush=True)
        shoot(page, "10_crossfit_overfit")
        print(f"Ticket demand: {tab(page, 'Ticket demand', 'Why the band widens'):.2f} s", flush=True)
        shoot(page, "11_ticket_demand")

        nav(page, "Home")
        start = time.perf_counter()
        page.locator(".st-key-demo_run button").click()
        page.wait_for_url(re.compile(r"/results"), timeout=300_000)
        page.get_by_text(re.compile("Closest to the truth: ")).wait_for(timeout=300_000)
        idle(page, 1500)
        no_exception(page)
        print(f"Demo to Results: {time.perf_counter() - start:.1f} s", flush=True)
        shoot(page, "12_demo_results")
        nav(page, "Roles")
        page.get_by_text("Instrument strength").first.wait_for()
        idle(page)
        shoot(page, "13_roles_strength")
        browser.close()


if __name__ == "__main__":
    main()
