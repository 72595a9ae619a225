"""Follow docs/teaching.md in Chromium and save its screenshots to docs/img/teaching/.

    .venv/bin/python scripts/teaching_screenshots.py

Starts a Streamlit server (tests/browser_support.py), walks the lesson plan step by step as a
teacher would (Home, then every Learn tab in order, the slow experiments run with their
buttons, the demo and its Results, Roles), and prints how long each step took, the first open
of Learn included. Needs /usr/bin/chromium and Playwright (see ENGINEERING.md).
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


def shoot(page, name: str) -> None:
    """The whole main area, the viewport grown to its height."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": 1400, "height": max(900, min(int(height) + 40, 9000))})
    page.wait_for_timeout(900)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": 1400, "height": 900})
    print(f"  saved {name}.png", flush=True)


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
        for name, wait, shot in (("Confounding", "OLS moves with ρ", "03_confounding"),
                                 ("Weak instruments", "Thresholds for the first-stage F", "04_weak"),
                                 ("Invalid instruments", "tends to −1 + δ / π", "05_exclusion"),
                                 ("Forbidden regression", "Two-stage, right", "06_forbidden"),
                                 ("Proximal learning", "Proximal 2SLS", "07_proximal")):
            print(f"{name}: {tab(page, name, wait):.2f} s", flush=True)
            shoot(page, shot)
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
        print(f"Card (1995): {tab(page, 'Card (1995): real data', '4. What LATE means here'):.2f} s", flush=True)
        shoot(page, "11b_card")

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
