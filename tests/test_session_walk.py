"""The timed walk of the class sessions (issue 47, bench/perf/session_walk.py), without a browser: the walk
covers every step of docs/teaching.md in order, the allowance is the documented rule, and the kept rows
walked the plan as it is now."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bench.docgen.session_walk import rule_text
from bench.perf import session_walk as sw
from dmlcore.teaching import worksheets

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "bench" / "results" / "session-walk"

PLANTED = """# Session 1 · Test (50 minutes)

## 0–5 min · First

*Ask:* one?

*Expected answer:* yes.

### Beyond the hour: more

*Ask (optional, beyond the hour):* two?

*Expected answer:* no.

## 5–9 min · Second

*Ask (a section):* three?

*Ask:* four?

---

# Another part

## Not a step
"""


def test_the_plan_is_read_with_its_questions_and_beyond_the_hour_kept_apart():
    (session,) = sw.plan(PLANTED)
    assert [(s.title, s.start, s.end, len(s.questions), len(s.beyond)) for s in session.steps] == [
        ("First", 0, 5, 1, 1), ("Second", 5, 9, 2, 0)]
    assert sw.allowance(1) == sw.STEP_MINUTES + sw.QUESTION_MINUTES


def test_the_plans_questions_are_the_worksheets_less_those_beyond_the_hour():
    text = sw.PLAN.read_text(encoding="utf-8")
    sheets = {s.number: sum(len(step.questions) for step in s.steps) for s in worksheets.parse(text)}
    walked = {s.number: sum(len(step.questions) + len(step.beyond) for step in s.steps) for s in sw.plan(text)}
    assert walked == sheets and set(walked) == {1, 2, 3}


def test_every_step_of_the_plan_has_its_walk_in_order():
    assert sw.unwalked(sw.plan()) == []
    for session in sw.plan():
        assert list(sw.WALK[session.number]) == [s.title for s in session.steps]


def test_a_step_added_to_the_plan_without_a_walk_is_caught():
    text = sw.PLAN.read_text(encoding="utf-8")
    added = text.replace("## 12–17 min · Confounding", "## 12–14 min · A new step\n\n*Ask:* new?\n\n"
                                                      "## 14–17 min · Confounding", 1)
    assert "session 1: the plan's step 'A new step' has no walk in WALK" in sw.unwalked(sw.plan(added))
    renamed = text.replace("## 10–22 min · Orthogonality that works", "## 10–22 min · Orthogonality, renamed", 1)
    problems = sw.unwalked(sw.plan(renamed))
    assert any("'Orthogonality, renamed' has no walk" in p for p in problems)
    assert any("WALK has a step 'Orthogonality that works' the plan lacks" in p for p in problems)


class _Recorder:
    """A stand-in for the browser's Walker: records what each step would do."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args))


def _learn_labels() -> set[str]:
    """Every string in the Learn page's LESSONS (lesson labels and tab names), read from its source."""
    tree = ast.parse((ROOT / "pages" / "6_learn.py").read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "LESSONS")
    return {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}


def test_the_walk_opens_lessons_and_tabs_the_learn_page_has():
    labels, opened = _learn_labels(), []
    for number, steps in sw.WALK.items():
        for title, step in steps.items():
            if step is sw._class_study:
                continue                      # the students' browsers: only a real walk drives them
            recorder = _Recorder()
            step(recorder, {"students": []})
            opened += [args[0] for name, args in recorder.calls if name in ("lesson", "tab")]
    assert opened and set(opened) <= labels, set(opened) - labels
    assert {"Card (1995)", "Orthogonality that works", "Cross-fitting", "3 · Nuisances and orthogonality"} <= set(opened)


def _leading(node) -> str:
    """The literal text a string expression starts with (a constant, an f-string or a sum of them), up to its
    first computed part."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if not isinstance(part, ast.Constant):
                break
            text += part.value
        return text
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _leading(node.left)
    return ""


def _learn_calls(function: str) -> list[ast.Call]:
    """Every call of ``function`` in the Learn page's tabs (dashboard/learn/*.py)."""
    calls = []
    for path in sorted((ROOT / "dashboard" / "learn").glob("*.py")):
        calls += [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(n, ast.Call) and getattr(n.func, "id", None) == function]
    return calls


def _recorded(name: str, steps) -> list[tuple]:
    """The arguments of every ``name`` call that ``steps`` (walk functions) make, through the recorder."""
    calls = []
    for step in steps:
        recorder = _Recorder()
        step(recorder, {"students": []})
        calls += [args for called, args in recorder.calls if called == name]
    return calls


def _walked_steps(drop: str | None = None):
    return [step for steps in sw.WALK.values() for title, step in steps.items()
            if step is not sw._class_study and title != drop]


def _unopened(opened: list[str]) -> list[str]:
    """The Learn page's questions with an Answer expander that no step opens and that are not beyond the hour."""
    questions = [_leading(call.args[0]) for call in _learn_calls("answer")]
    return [q for q in questions if not any(q.startswith(a) for a in (*opened, *sw.ANSWERS_BEYOND))]


def test_every_answer_the_sessions_use_is_opened_by_their_walk():
    """The class opens the Answer expander of each question it discusses: a slow or broken answer is timed or
    caught. Each answer the walk opens is one of the page's, and every one of the page's is opened by a step or
    is beyond the hour."""
    questions = [_leading(call.args[0]) for call in _learn_calls("answer")]
    assert len(questions) >= 12 and all(questions), questions
    opened = [args[0] for args in _recorded("answer", _walked_steps())]
    assert all(sum(q.startswith(a) for q in questions) == 1 for a in opened), (opened, questions)
    assert _unopened(opened) == []
    assert len(opened) == len(set(opened)) == len(questions) - len(sw.ANSWERS_BEYOND)
    # a step that stops opening its answers is caught: Card's in session 1, RHC's in session 2
    for title, lost in (("Card (1995): real data, with answers", "For whom is "),
                        ("RHC (real data): proxies on real data", "Swap the roles of the proxies.")):
        assert any(q.startswith(lost) for q in _unopened([a for a in opened if not lost.startswith(a)])), title
        assert _unopened([args[0] for args in _recorded("answer", _walked_steps(drop=title))])


def test_before_class_the_restart_check_opens_every_prepared_experiment():
    """Every experiment dmlcore.teaching.prepared warms is opened on the restarted server, and the buttons the
    check refuses to see are exactly the Learn page's slow buttons that preparing replaces."""
    from dmlcore.teaching import prepared

    checked = [name for args in _recorded("shows_prepared", [sw._reopen]) for name in args[0]]
    assert sorted(checked) == sorted(prepared.SLOW)
    labels = {call.args[1].value for call in _learn_calls("slow")
              if not (isinstance(call.args[0], ast.Constant) and call.args[0].value in prepared.LIVE)}
    assert set(sw.SLOW_BUTTONS) == labels


def test_the_kept_rows_time_before_class_without_an_allowance():
    row = json.loads((ROWS / "prepare.json").read_text(encoding="utf-8"))
    before = row["before_class"]
    assert [s["title"] for s in before["steps"]] == [sw.PREPARE_STEP, sw.RESTART_STEP]
    assert all(s["allowance_min"] == 0 and s["machine_s"] > 0 for s in before["steps"])
    assert before["steps"][0]["machine_s"] == row["seconds"]
    from dmlcore.teaching import prepared
    restart = before["steps"][1]
    assert restart["prepared_listed"] == len(prepared.SLOW)
    opened = " ".join(a["action"] for a in restart["actions"])
    assert all(name in opened for name in prepared.SLOW), opened


def _rows() -> dict[int, dict]:
    return {n: json.loads((ROWS / f"session-{n}.json").read_text(encoding="utf-8")) for n in (1, 2, 3)}


def test_the_allowance_is_the_documented_rule():
    rule = {"step_minutes": sw.STEP_MINUTES, "question_minutes": sw.QUESTION_MINUTES,
            "session_minutes": sw.SESSION_MINUTES}
    for number, row in _rows().items():
        assert row["rule"] == rule, f"session-{number}.json was walked with another rule: rerun the walk"
        for step in row["steps"]:
            assert step["allowance_min"] == sw.allowance(step["questions"]), step["title"]
    # docs/teaching.md states the rule the rows were made with (a block that bench/docs.py --check renders)
    assert rule_text(rule) in sw.PLAN.read_text(encoding="utf-8")


def test_the_kept_rows_walked_the_plan_as_it_is():
    """A step or question added to or cut from docs/teaching.md since the walk makes its timed totals stale."""
    for session in sw.plan():
        row = _rows()[session.number]
        walked = [(s["title"], s["questions"]) for s in row["steps"]]
        assert walked == [(s.title, len(s.questions)) for s in session.steps], (
            f"session {session.number}: the plan changed since its walk; rerun "
            f"python -m bench.perf.session_walk --session {session.number}, then python bench/docs.py --write")
        assert row["total_min"] == pytest.approx(row["allowance_min"] + row["machine_s"] / 60, abs=0.01)
        assert row["machine_s"] > 0 and row["load_1min_start"] >= 0 and row["load_1min_end"] >= 0


def test_every_session_fits_its_hour_by_its_walk():
    """The target of issue 47. A session over its hour is cut (a step or question moved beyond the hour in
    docs/teaching.md, its walk rerun), not hidden."""
    for number, row in _rows().items():
        assert row["total_min"] <= row["rule"]["session_minutes"], (
            f"session {number} timed {row['total_min']:.1f} minutes: cut it to its hour (docs/teaching.md)")
