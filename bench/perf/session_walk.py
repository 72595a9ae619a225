"""The timed walk of each class session of docs/teaching.md: what the machine takes, plus an allowance for the
teacher and the class, step by step.

    python -m bench.perf.session_walk --session before|1|2|3|all [--students 2] [--out bench/results/session-walk]

First, **before class**, it prepares the class in a fresh ``DMLCORE_HOME`` (``python -m dmlcore.teaching.prepared``,
as a teacher does once before session 1), timed; then it starts the dashboard on that home and stops it, starts it
again (the restart between two classes) and opens every prepared experiment there (:func:`_reopen`): each must show
its result and offer no button to compute it (else the walk fails: the class would wait for a refit). Both are
steps of their own (``prepare.json``'s ``before_class``: the machine's seconds, no allowance; no session counts
them). ``--session before`` does only this. Then, for each session,
it starts the dashboard as ``scripts/run.sh`` does (the same script, on a free port, with that home and a
teacher code of its own) and, in Chromium at a projector's 1,024 x 768, performs every step of the session in
the plan's order: each page, lesson and tab opened, each slider moved and button clicked that the step or its
questions ask for, each *Answer* expander of the step's questions opened (:meth:`Walker.answer`), each fit waited
for. A wait ends when what the class looks at is there (the step's text,
table or chart drawn and the page's script finished), never after a fixed sleep. Every session starts its
own server and browser (the prepared results are on disk and survive the restart, as between two classes).

The steps are read from docs/teaching.md itself (:func:`plan`): a session is a ``# Session N · title``
heading, a step a ``## A–B min · title`` heading under it, a question an ``*Ask:*`` paragraph outside the
``### Beyond the hour`` sections (the worksheets' questions, dmlcore.teaching.worksheets, less those beyond the
hour). What the browser does in each step is :data:`WALK`, keyed by the steps' titles;
``tests/test_session_walk.py`` fails when a step of the plan has no walk, or the walk one the plan lacks, when a
question's answer on the Learn page is opened by no step (:data:`ANSWERS_BEYOND` names those beyond the hour), and
when a prepared experiment is left out of the restart check.

**The time of a step** = the machine's seconds, measured, plus the allowance for the teacher and the class
(:func:`allowance`, the one rule, also stated in docs/teaching.md, "How the sessions are timed"):
:data:`STEP_MINUTES` per step (the teacher says what the page shows) and :data:`QUESTION_MINUTES` per
question (read aloud, the class thinks, the answer is given and discussed). The same rule for every step.

Rows: one JSON per session, ``session-N.json`` (the command, date, commit, machine, the 1-minute load at the
start and the end of the session and of each step, and per step the machine's seconds, each action's seconds,
the allowance and the total), and ``prepare.json``. Needs /usr/bin/chromium and Playwright.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "teaching.md"
OUT = ROOT / "bench" / "results" / "session-walk"

# ------------------------------------------------------------------ the allowance: one rule for every step
STEP_MINUTES = 2.0       # per step of the plan: the teacher says what the page shows and what to look at
QUESTION_MINUTES = 3.0   # per question: read aloud, the class thinks, the expected answer given and discussed
SESSION_MINUTES = 50     # the hour of the plan (a design's constant: "Three 50-minute classes")

VIEWPORT = {"width": 1024, "height": 768}   # a projector
TEACHER_CODE = "walk-teacher"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-renderer-backgrounding",
        "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows"]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
# the buttons of the Learn page's slow experiments (dashboard/learn: slow(name, label, ...)) that preparing the class
# replaces by their results; "Run the small version" (prepared.LIVE) is left to run in class on purpose
SLOW_BUTTONS = ("Run the 60 data sets", "Fit DML-CMR on Card's data", "Run the perturbation experiment",
                "Run the comparison", "Run repeated cross-fitting")
# the Learn page's questions with an Answer expander (dashboard/learn: answer(question, ...)) that no step walks:
# their questions are beyond the hour (docs/teaching.md)
ANSWERS_BEYOND = ("The Anderson–Rubin set",)      # Card, section 2b: "Beyond the hour: tF beside the AR set"


def allowance(questions: int) -> float:
    """Minutes the teacher and the class take in a step with ``questions`` questions (the one rule)."""
    return STEP_MINUTES + QUESTION_MINUTES * questions


# ------------------------------------------------------------------ the plan, read from docs/teaching.md
SESSION = re.compile(r"^# Session (\d+) · (.+)$")
STEP = re.compile(r"^## (?:(?P<start>\d+)–(?P<end>\d+) min · )?(?P<title>.+)$")
BEYOND = re.compile(r"^### Beyond the hour\b")


@dataclass
class PlanStep:
    title: str                     # the heading after "A–B min · "
    start: int | None              # the plan's slot, minutes
    end: int | None
    questions: list[str] = field(default_factory=list)   # the Asks in the timed hour
    beyond: list[str] = field(default_factory=list)      # the Asks under "### Beyond the hour"


@dataclass
class PlanSession:
    number: int
    title: str
    steps: list[PlanStep] = field(default_factory=list)


def plan(text: str | None = None) -> list[PlanSession]:
    """The sessions of docs/teaching.md, every step with its questions (the worksheets' rules:
    dmlcore.teaching.worksheets), the questions under a ``### Beyond the hour`` heading kept apart."""
    from dmlcore.teaching.worksheets import ASK, GENERATED, _paragraphs

    text = PLAN.read_text(encoding="utf-8") if text is None else text
    sessions: list[PlanSession] = []
    inside = beyond = False
    for block in _paragraphs(text):
        head = SESSION.match(block)
        if head or block.startswith("# "):        # a session, or another part of the document
            if head:              # the title without its "(50 minutes; timed walk ...)"
                sessions.append(PlanSession(int(head[1]), re.sub(r"\s*\(.*\)$", "", GENERATED.sub("", head[2])).strip()))
            inside, beyond = bool(head), False
            continue
        if not inside:
            continue
        step = STEP.match(block) if block.startswith("## ") else None
        if step:
            sessions[-1].steps.append(PlanStep(step["title"].strip(), step["start"] and int(step["start"]),
                                               step["end"] and int(step["end"])))
            beyond = False
            continue
        if block.startswith("### "):
            beyond = bool(BEYOND.match(block))
            continue
        ask = ASK.match(block)
        if ask and sessions[-1].steps:
            where = sessions[-1].steps[-1].beyond if beyond or "beyond the hour" in (ask["context"] or "") \
                else sessions[-1].steps[-1].questions
            where.append(block[ask.end():].strip())
    return sessions


# ------------------------------------------------------------------ the browser: an action, timed to what is seen
WATCH = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  if (!app) return false;
  if (window.__walkApp !== app) {
    window.__walkApp = app;
    window.__walkObs = new MutationObserver(() => {
      if (app.getAttribute('data-test-script-state') === 'running') window.__walkRan = true; });
    window.__walkObs.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  }
  window.__walkRan = false;
  return true;
}"""
RAN_AND_IDLE = ("() => window.__walkRan === true && "
                "document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'")
QUIET_MS = 500    # after a wait: the page must stay idle this long (not counted), else the wait goes on


class Walker:
    """One browser page at a projector's size, and the timed actions of the steps."""

    def __init__(self, page, base: str):
        self.page, self.base = page, base
        self.actions: list[dict] = []

    def act(self, what: str, do: Callable[[], None], see=None, *, rerun: bool = True, timeout: float = 900.0):
        """Do ``do`` and wait until the page's script has run and finished (``rerun``) and ``see`` (text, a
        compiled pattern or a locator) is visible; seconds from the action until then, without the quiet check."""
        page = self.page
        page.evaluate(WATCH)
        start = time.perf_counter()
        do()
        end = self._settle(see, rerun, timeout, start)
        self.actions.append({"action": what, "seconds": round(end - start, 2)})
        print(f"    {what}: {end - start:.1f} s", flush=True)
        return end - start

    def _settle(self, see, rerun: bool, timeout: float, start: float) -> float:
        page, ms = self.page, timeout * 1000
        while True:
            if rerun:
                page.wait_for_function(RAN_AND_IDLE, timeout=ms, polling=50)
            else:
                page.wait_for_selector(IDLE, timeout=ms)
            if see is not None:
                self.locate(see).first.wait_for(state="visible", timeout=ms)
            page.wait_for_selector(IDLE, timeout=ms)
            end = time.perf_counter()
            page.evaluate(WATCH)             # quiet: no further run of the script (a slider's second commit)
            page.wait_for_timeout(QUIET_MS)
            if not page.evaluate("() => window.__walkRan") and page.locator(IDLE).count():
                self.no_exception()
                return end
            rerun, ms = True, max(1000.0, timeout * 1000 - (time.perf_counter() - start) * 1000)

    def locate(self, see):
        """A text or a compiled pattern as the page's locator of it; a locator as it is."""
        return self.page.get_by_text(see) if isinstance(see, (str, re.Pattern)) else see

    def no_exception(self):
        errors = self.page.locator("[data-testid=stException]")
        if errors.count():
            raise RuntimeError(f"the page shows an exception: {errors.first.inner_text()[:800]}")

    # the teacher's moves
    def open(self, see: str):
        self.act("open the dashboard (Home)", lambda: self.page.goto(self.base), see, rerun=False, timeout=180)

    def nav(self, title: str, see):
        link = self.page.locator("[data-testid=stTopNavLink]", has_text=title)
        if not link.count():          # a narrow header folds the menu: "N more"
            self.page.get_by_text(re.compile(r"^\d+ more$")).first.click()
        self.act(f"page {title}", lambda: self.page.locator("[data-testid=stTopNavLink]", has_text=title).first.click(),
                 see)

    def lesson(self, label: str, see):
        self.act(f"lesson {label}", lambda: self.page.get_by_text(label, exact=True).first.click(), see)

    def tab(self, name: str, see):
        self.act(f"tab {name}", lambda: self.page.get_by_role("tab", name=name).first.click(), see)

    def click(self, label: str, see, timeout: float = 900.0):
        self.act(f"button {label}", lambda: self.page.get_by_role("button", name=label).first.click(), see,
                 timeout=timeout)

    def choose(self, option: str, see=None):
        """Choose ``option`` of a radio; fails when it is not chosen after the click."""
        self.act(f"choose {option}", lambda: self.page.get_by_text(option, exact=True).first.click(), see)
        if not self.page.get_by_role("radio", name=option, exact=True).first.is_checked():
            raise RuntimeError(f"the option {option!r} is not chosen after its click: fix the step in WALK")

    def slide(self, label: str, keys: list[str], expect: str, see=None):
        """Move the slider ``label`` with the keyboard (``keys``: Home, End, ArrowLeft, ...) to ``expect`` (its
        shown value); fails when it did not get there."""
        thumb = self.page.locator("[data-testid=stSlider]", has_text=label).first.get_by_role("slider").first

        def do():
            thumb.focus()
            for key in keys:
                self.page.keyboard.press(key)
        self.act(f"{label} to {expect}", do, see)
        shown = [thumb.get_attribute(a) for a in ("aria-valuetext", "aria-valuenow")]
        if not any(_number(v) == float(expect) for v in shown):
            raise RuntimeError(f"the slider {label!r} shows {shown!r} after {keys}, not {expect!r}: the walk's step "
                               "no longer moves it as the plan asks; fix its keys in WALK")

    def scroll_to(self, see):
        """Bring ``see`` into view (no script runs; the time to find it drawn)."""
        self.act(f"scroll to {see}", lambda: self.locate(see).first.scroll_into_view_if_needed(), see, rerun=False)

    def answer(self, question: str):
        """Open the *Answer* expander under the Learn page's question that contains ``question`` (an
        ``*Ask:*`` line of dashboard/learn's ``answer``) and wait until its text is shown; fails when the page
        has no such question, its answer is empty or the page shows an exception."""
        page = self.page
        ask = page.locator("p", has=page.locator("em", has_text="Ask:")).filter(has_text=question)
        if not ask.count():
            raise RuntimeError(f"no question containing {question!r} on the page: fix the step's answers in WALK")
        expander = ask.first.locator("xpath=following::*[@data-testid='stExpander'][1]")
        shown = expander.locator("[data-testid=stExpanderDetails]")

        def do():
            if expander.locator("details[open]").count() == 0:
                expander.locator("summary").first.click()
        self.act(f"answer {question}", do, shown, rerun=False)
        if not expander.locator("details[open]").count():
            raise RuntimeError(f"the answer to {question!r} did not open on its click")
        if not shown.first.inner_text().strip():
            raise RuntimeError(f"the answer to {question!r} is empty")

    def shows_prepared(self, names: list[str], see):
        """``see`` is shown and the page offers no button of a slow experiment: the results ``names`` were read
        from disk (:mod:`dmlcore.teaching.prepared`), not refitted; fails otherwise."""
        self.page.wait_for_selector(IDLE)
        offered = [label for label in SLOW_BUTTONS if self.page.get_by_role("button", name=label).count()]
        if offered:
            raise RuntimeError(f"after the restart the page offers {offered} where {', '.join(names)} should be "
                               "shown: the prepared results were not used (a class would wait for a refit)")
        self.act(f"prepared {', '.join(names)}", lambda: self.locate(see).first.scroll_into_view_if_needed(), see,
                 rerun=False)


def _number(text) -> float | None:
    try:
        return round(float(str(text).replace("−", "-").strip()), 6)
    except ValueError:
        return None


# ------------------------------------------------------------------ the walk of each step (keyed by the plan's titles)
def _home(w: Walker, ctx):
    w.open("Run the demo")
    w.nav("Learn", "Wald ratio =")                  # "Open Learn, lesson 1 · Instruments" (it opens there)


def _wald(w: Walker, ctx):
    w.scroll_to("Wald ratio =")
    w.slide("Confounding ρ", ["Home"], "0.00", "Wald ratio =")                      # Ask: move ρ to 0
    w.scroll_to("LATE (compliers)")
    w.slide("Effect for always-takers", ["ArrowLeft"] * 4, "1.00", "LATE (compliers)")   # Ask: set it to 1


def _confounding(w: Walker, ctx):
    w.tab("Confounding", "OLS moves with ρ")
    w.slide("Instrument coefficient π", ["Home"], "0.25", "OLS moves with ρ")    # the answer: π to 0.25


def _weak(w: Walker, ctx):
    w.tab("Weak IV", "Thresholds for the first-stage F")
    w.choose("1 instrument", "Thresholds for the first-stage F")   # Lee et al.'s 104.7 and tF: one instrument
    w.choose("4 instruments", "Thresholds for the first-stage F")


def _invalid(w: Walker, ctx):
    w.tab("Invalid IV", "tends to −1 + δ / π")
    w.slide("Instrument coefficient π", ["End"], "1.00", "tends to −1 + δ / π")    # Ask: move π to 1


def _forbidden(w: Walker, ctx):
    w.tab("Forbidden regression", "Two-stage, right")


def _card(w: Walker, ctx):
    w.tab("Card (1995)", "What if growing up near a college")     # sections 1, 2, 2b and 4 (the tab's last is 5)
    w.answer("Which assumption makes the ratio an effect")           # its four questions, each answer opened
    w.answer("2SLS is larger than OLS")
    w.answer("F is above 10")
    w.scroll_to("What 2SLS estimates here, and for whom")
    w.answer("For whom is")


def _card_plausible(w: Walker, ctx):
    w.open("Run the demo")
    w.nav("Learn", "Wald ratio =")
    w.tab("Card (1995)", "What if growing up near a college")
    w.scroll_to("What if growing up near a college")
    w.answer("How large a direct effect of growing up near a college")
    w.answer("Why is the union of intervals wider")


def _proximal(w: Walker, ctx):
    w.lesson("2 · Proxies", "Proximal 2SLS")
    w.slide("Proxy noise τ", ["Home"], "0.00", "Proximal 2SLS")                     # Ask: τ to 0
    w.slide("Proxy noise τ", ["ArrowRight"] * 10, "1.00", "Proximal 2SLS")
    w.slide("Effect κ of the price", ["ArrowRight"] * 4, "0.20", "Proximal 2SLS")  # Ask: κ to 0.2


def _rhc(w: Walker, ctx):
    w.tab("RHC (real data)", "What the published analyses found")
    w.answer("Both F statistics are above 10")
    w.answer("The regression says")
    w.answer("Swap the roles of the proxies")
    w.answer("The nonparametric methods say")


def _wrap_up(w: Walker, ctx):
    pass                                              # words only: no page to open


def _orthogonal_score(w: Walker, ctx):
    w.open("Run the demo")
    w.nav("Learn", "Wald ratio =")
    w.lesson("3 · Nuisances and orthogonality", "What this teaches")   # the perturbation experiment, prepared


def _pliv(w: Walker, ctx):
    w.tab("Orthogonality that works", "The same contrast for the ticket-demand f")
    w.click("Run the small version", "computed on this server")          # run in class on purpose


def _crossfit(w: Walker, ctx):
    from dmlcore.teaching.nuisance import SETTINGS

    w.tab("Cross-fitting", "Lowest median MSE")
    w.choose(SETTINGS["overfit"].title, "Lowest median MSE")                # the second setting, prepared


def _demand(w: Walker, ctx):
    w.tab("Ticket demand", "Why the band widens")
    w.tab("Orthogonality that works", "The same contrast for the ticket-demand f")   # its last section
    w.scroll_to("The same contrast for the ticket-demand f")
    w.lesson("1 · Instruments", "Wald ratio =")                            # Card, section 3, fitted before class
    w.tab("Card (1995)", "Fitted in")
    w.scroll_to("Fitted in")
    w.answer("Why do DML-CMR's plug-in and debiased effect differ")


def _class_study(w: Walker, ctx):
    """Students type their seat number as the data seed on Home and click Run the demo (each its own browser);
    the teacher opens Class with the code. Timed: from the clicks until the Class page shows every student's
    runs and every student's Results page shows its fits."""
    from dashboard.plan import DEMO_SETTINGS

    students = ctx["students"]
    runs = len(DEMO_SETTINGS["est_methods"]) * len(students)
    for seat, page in enumerate(students, start=1):          # before the step's clock: the students' own laptops
        page.goto(w.base)
        page.get_by_role("button", name="Run the demo").wait_for(timeout=180_000)
        seed = page.get_by_label("Data seed", exact=True).and_(page.get_by_test_id("stNumberInputField"))
        seed.fill(str(seat))
        seed.press("Enter")
        page.wait_for_timeout(800)
        page.wait_for_selector(IDLE, timeout=120_000)
    start, first = time.perf_counter(), len(w.actions)
    for page in students:
        page.get_by_role("button", name="Run the demo").click()
    w.nav("Class", "Teacher code")
    w.act("teacher code", lambda: (w.page.get_by_label("Teacher code", exact=True).and_(w.page.locator("input")).fill(TEACHER_CODE),
                                   w.page.get_by_role("button", name="Open the class view").click()),
          re.compile(r"runs? from|No demo runs"))
    for page in students:                                     # every student sees the demo's Results
        page.get_by_text(re.compile("Closest to the truth: ")).first.wait_for(timeout=900_000)
    students_done = time.perf_counter() - start
    pattern = re.compile(rf"^{runs} runs from {len(students)} sessions")
    w.page.get_by_text(pattern).first.wait_for(timeout=900_000)
    w.page.wait_for_selector(IDLE, timeout=120_000)
    class_done = time.perf_counter() - start
    for action in w.actions[first:]:          # the teacher's clicks, made while the demos run
        action["within"] = "the demos' wait"
    w.actions.append({"action": f"{len(students)} students' demos: their Results pages", "seconds": round(students_done, 2),
                      "within": "the demos' wait"})
    w.actions.append({"action": f"{len(students)} students' demos ({runs} runs) on the Class page, from the clicks",
                      "seconds": round(class_done, 2), "spans": "the actions marked within"})
    print(f"    class: students' results {students_done:.1f} s, Class page {class_done:.1f} s", flush=True)


WALK: dict[int, dict[str, Callable]] = {
    1: {"Home": _home,
        "IV and LATE: the Wald estimator": _wald,
        "Confounding": _confounding,
        "Weak IV: weak instruments": _weak,
        "Invalid IV: invalid instruments": _invalid,
        "Forbidden regression": _forbidden,
        "Card (1995): real data, with answers": _card},
    2: {"Card, section 5: an instrument that is only plausibly excluded": _card_plausible,
        "Proximal learning": _proximal,
        "RHC (real data): proxies on real data": _rhc,
        "Wrap-up": _wrap_up},
    3: {"Orthogonal score": _orthogonal_score,
        "Orthogonality that works": _pliv,
        "Cross-fitting": _crossfit,
        "Ticket demand, the debiased effect, and Card's DML-CMR": _demand,
        "The class runs a study: Home → demo with your own seed; Class page": _class_study},
}


def unwalked(sessions: list[PlanSession], whole: bool = True) -> list[str]:
    """What the plan (``sessions``: all of it when ``whole``) and :data:`WALK` disagree on: a step of the plan
    with no walk, a walk of a step the plan lacks, or the steps in another order (empty when they agree)."""
    problems = []
    for session in sessions:
        walk, titles = WALK.get(session.number, {}), [s.title for s in session.steps]
        problems += [f"session {session.number}: the plan's step {t!r} has no walk in WALK" for t in titles
                     if t not in walk]
        problems += [f"session {session.number}: WALK has a step {t!r} the plan lacks" for t in walk if t not in titles]
        if not problems and list(walk) != titles:
            problems.append(f"session {session.number}: WALK's steps are in another order than the plan's {titles}")
    if whole:
        problems += [f"WALK has a session {n} the plan lacks" for n in WALK if n not in {s.number for s in sessions}]
    return problems


# ------------------------------------------------------------------ before class: the prepared results after a restart
BEFORE = "Before class"
PREPARE_STEP = "Prepare the class"
RESTART_STEP = "Restart the server: every prepared experiment opens without a refit"


def _reopen(w: Walker, ctx):
    """Every prepared experiment (dmlcore.teaching.prepared.SLOW) opened on a server restarted on the prepared
    DMLCORE_HOME: its result is shown and its button is not offered."""
    from dashboard.learn.robust import DESIGN_TITLES
    from dmlcore.teaching import nuisance, prepared, robust

    w.open("Run the demo")
    w.nav("Learn", "Wald ratio =")
    w.tab("Weak IV", "Thresholds for the first-stage F")
    for i, errors in enumerate(robust.ERRORS):       # the radio opens at the first
        if i:
            w.choose(DESIGN_TITLES[errors], "The effective F of Montiel Olea")
        w.shows_prepared([f"robust-{errors}"], "The effective F of Montiel Olea")
    w.tab("Invalid IV", "tends to −1 + δ / π")
    w.shows_prepared(["overid"], "All valid: Sargan rejects")
    w.tab("Card (1995)", "DML-CMR: a flexible f with the same instrument")    # the tab's text, prepared or not
    w.shows_prepared(["card-linear", "card-dml-cmr"], "Fitted in")
    w.lesson("3 · Nuisances and orthogonality", "Experiment: perturb the nuisances by a known amount")
    w.shows_prepared(["orthogonality"], "What this teaches")
    w.tab("Cross-fitting", "over many data sets")
    for i, setting in enumerate(nuisance.SETTINGS):  # the radio opens at the first
        if i:
            w.choose(nuisance.SETTINGS[setting].title, "Lowest median MSE")
        w.shows_prepared([f"compare-{setting}-20"], "Lowest median MSE")
    w.shows_prepared(["crossfit-repeated"], "times the time per fit")
    w.tab("Ticket demand", "Why the band widens")
    w.shows_prepared([name for name in prepared.SLOW if name.startswith("demand-")], "Why the band widens")


def before_class(home: Path, prepared: dict) -> dict:
    """Before class, after preparing: the class's server is started on the prepared home (its Card tab opened) and
    stopped, as between two sessions; a new one is started on the same home (the restart, timed) and every
    prepared experiment is opened there (:func:`_reopen`), timed; the command's ``--list`` must say each is
    prepared. The row's steps: preparing and the restart, the machine's seconds, no allowance (before class)."""
    from playwright.sync_api import sync_playwright

    print(f"{BEFORE}: restart the server on the prepared home", flush=True)
    load_start = load_1min()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        server = Server(home)
        try:                                   # the server before the restart: a class opened Card's tab
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.set_default_timeout(180_000)
            w = Walker(page, server.base)
            w.open("Run the demo")
            w.nav("Learn", "Wald ratio =")
            w.tab("Card (1995)", "DML-CMR: a flexible f with the same instrument")    # prepared or not
            page.context.close()
        finally:
            server.stop()
        start = time.perf_counter()
        server = Server(home)                  # the restart: a new process, the same DMLCORE_HOME
        restart_s = time.perf_counter() - start
        try:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.set_default_timeout(180_000)
            w = Walker(page, server.base)
            w.actions = [{"action": "restart the server (a new process on the same DMLCORE_HOME)",
                          "seconds": round(restart_s, 2)}]
            _reopen(w, {})
        finally:
            server.stop()
        browser.close()
    env = dict(os.environ, DMLCORE_HOME=str(home), PYTHONPATH=str(ROOT))
    listed = subprocess.run([sys.executable, "-m", "dmlcore.teaching.prepared", "--list"], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=True).stdout
    missing = [line for line in listed.splitlines() if not line.endswith(": prepared")]
    if missing:
        raise RuntimeError(f"after the restart, python -m dmlcore.teaching.prepared --list says {missing}")
    machine_s = round(sum(a["seconds"] for a in w.actions), 1)
    steps = [{"title": PREPARE_STEP, "machine_s": prepared["seconds"], "allowance_min": 0,
              "total_min": round(prepared["seconds"] / 60, 2),
              "load_1min_start": prepared["load_1min_start"], "load_1min_end": prepared["load_1min_end"]},
             {"title": RESTART_STEP, "machine_s": machine_s, "allowance_min": 0, "total_min": round(machine_s / 60, 2),
              "actions": w.actions, "prepared_listed": len(listed.splitlines()),
              "load_1min_start": load_start, "load_1min_end": load_1min()}]
    print(f"  restart and every prepared experiment opened: {machine_s:.0f} s", flush=True)
    return {"title": BEFORE, "steps": steps, "machine_s": round(sum(s["machine_s"] for s in steps), 1)}


# ------------------------------------------------------------------ provenance and load
def load_1min() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S+0000")


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


# ------------------------------------------------------------------ preparing, the server
def prepare(home: Path) -> dict:
    """``python -m dmlcore.teaching.prepared`` in ``home``, timed."""
    env = dict(os.environ, DMLCORE_HOME=str(home), PYTHONPATH=str(ROOT))
    load_start, date, start = load_1min(), now(), time.perf_counter()
    print(f"Preparing the class in {home} ...", flush=True)
    done = subprocess.run([sys.executable, "-m", "dmlcore.teaching.prepared"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"preparing the class failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    each = {m[1]: float(m[2]) for m in re.finditer(r"^(\S+): (\d+) s -> ", done.stdout, re.M)}
    print(f"  prepared in {seconds:.0f} s", flush=True)
    return {"command": "python -m dmlcore.teaching.prepared", "date": date, "seconds": round(seconds, 1),
            "seconds_each": each, "load_1min_start": load_start, "load_1min_end": load_1min(),
            "loadavg_end": loadavg()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``bash scripts/run.sh`` (without its setup step) on a free port, with ``home`` and a known teacher code."""

    def __init__(self, home: Path):
        self.port = free_port()
        self.log = home / f"server-{self.port}.log"
        env = dict(os.environ, DMLCORE_HOME=str(home), PYTHONPATH=str(ROOT), DMLCORE_SKIP_SETUP="1",
                   DMLCORE_TEACHER_CODE=TEACHER_CODE)
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(["bash", "scripts/run.sh", "--server.port", str(self.port),
                                          "--server.headless", "true"], cwd=ROOT, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 120
        while True:
            try:
                if urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError(f"the dashboard did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.3)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)      # the server run.sh exec'd and its workers, by its id
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# ------------------------------------------------------------------ a session
def walk_session(session: PlanSession, home: Path, students: int, command: str, prepared: dict,
                 partial: Path | None = None, code: str | None = None) -> dict:
    """Walk one session; after each step the row so far is written to ``partial`` (a crash keeps the steps done)."""
    from playwright.sync_api import sync_playwright

    problems = unwalked([session], whole=False)
    if problems:
        raise RuntimeError("; ".join(problems) + " (docs/teaching.md and bench/perf/session_walk.py's WALK)")
    steps = WALK[session.number]
    row = {"session": session.number, "title": session.title, "command": command, "date": now(),
           "commit": code or commit(), "machine": machine(), "cores": os.cpu_count(), "viewport": VIEWPORT,
           "rule": {"step_minutes": STEP_MINUTES, "question_minutes": QUESTION_MINUTES,
                    "session_minutes": SESSION_MINUTES},
           "prepared": {k: prepared[k] for k in ("date", "seconds", "home") if k in prepared},
           "students": students, "load_1min_start": load_1min(), "loadavg_start": loadavg(), "steps": []}
    print(f"Session {session.number} · {session.title}", flush=True)
    wall = time.perf_counter()
    server = Server(home)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.set_default_timeout(180_000)
            ctx = {"students": [browser.new_context(viewport=VIEWPORT).new_page() for _ in range(students)]}
            w = Walker(page, server.base)
            for step in session.steps:
                print(f"  {step.title}", flush=True)
                w.actions = []
                load_start = load_1min()
                steps[step.title](w, ctx)
                machine_s = sum(a["seconds"] for a in w.actions if "spans" not in a and "within" not in a)
                spans = [a["seconds"] for a in w.actions if "spans" in a]
                machine_s += sum(spans)          # a span holds the actions marked within it
                minutes = allowance(len(step.questions))
                row["steps"].append({
                    "title": step.title, "slot": [step.start, step.end], "questions": len(step.questions),
                    "machine_s": round(machine_s, 1), "allowance_min": minutes,
                    "total_min": round(minutes + machine_s / 60, 2), "actions": w.actions,
                    "load_1min_start": load_start, "load_1min_end": load_1min()})
                if partial is not None:
                    write(partial, row)
            browser.close()
    finally:
        server.stop()
    row["machine_s"] = round(sum(s["machine_s"] for s in row["steps"]), 1)
    row["allowance_min"] = sum(s["allowance_min"] for s in row["steps"])
    row["total_min"] = round(row["allowance_min"] + row["machine_s"] / 60, 2)
    row["wall_s"] = round(time.perf_counter() - wall, 1)
    row["load_1min_end"], row["loadavg_end"] = load_1min(), loadavg()
    print(f"  machine {row['machine_s']:.0f} s + allowance {row['allowance_min']:g} min = {row['total_min']:.1f} min "
          f"(load {row['load_1min_start']:.2f} -> {row['load_1min_end']:.2f}; walk took {row['wall_s']:.0f} s)",
          flush=True)
    return row


def write(path: Path, row: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", default="all", choices=["before", "1", "2", "3", "all"],
                        help="a session of docs/teaching.md, all of them, or only what happens before class "
                             "(preparing it and the restart check)")
    parser.add_argument("--students", type=int, default=2, help="students' browsers in session 3's class study")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--other-work", default=None, help="what else the machine runs, as you know it")
    parser.add_argument("--home", type=Path, default=None,
                        help="walk in this DMLCORE_HOME, already prepared, instead of preparing a fresh one (a rerun; "
                             "the rows then say that the preparation was not timed and prepare.json is left as it is)")
    args = parser.parse_args(argv)
    if args.students < 1:
        parser.error(f"--students {args.students}: at least one student runs the demo in session 3; give 1 or more")
    command = "python -m bench.perf.session_walk " + shlex.join(argv if argv is not None else sys.argv[1:])
    problems = unwalked(plan())
    if problems:                           # before the minutes of preparing
        parser.error("; ".join(problems) + " (docs/teaching.md and WALK in bench/perf/session_walk.py)")
    sessions = [s for s in plan() if args.session == "all" or s.number == int(args.session)] \
        if args.session != "before" else []
    code = commit()                        # before the walk writes its own rows
    with tempfile.TemporaryDirectory(prefix="session-walk-") as folder:
        home = Path(folder)
        if args.home is None:
            prepared = prepare(home)
            prepared.update(command=f"{prepared['command']} (by {command.strip()})", commit=code,
                            machine=machine(), cores=os.cpu_count(), other_work=args.other_work or "not stated")
            write(args.out / "prepare.json", prepared)
            prepared["before_class"] = before_class(home, prepared)   # its own step: timed, and checked
            write(args.out / "prepare.json", prepared)
        else:
            if args.session == "before":
                parser.error("--session before prepares a fresh home; leave out --home")
            home, prepared = args.home, {"date": None, "seconds": None, "home": str(args.home)}
        for session in sessions:
            partial = args.out / f"session-{session.number}.partial.json"
            row = walk_session(session, home, args.students, command.strip(), prepared, partial, code)
            row["other_work"] = args.other_work or "not stated"
            write(args.out / f"session-{session.number}.json", row)
            partial.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
