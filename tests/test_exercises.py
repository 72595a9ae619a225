"""The real-data exercises and the worksheets: the Card sensitivity intervals (Conley, Hansen & Rossi),
the proximal RHC steps, and the worksheets generated from docs/teaching.md."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from dmlcore.teaching import card, plausible, rhc, worksheets

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sensitivity():
    return plausible.card_sensitivity()


def test_plausible_intervals_start_at_2sls_and_widen(sensitivity):
    steps = card.linear_steps()
    first = sensitivity["table"].iloc[0]
    assert first["delta"] == 0
    assert np.isclose(first["union lower"], steps["tsls"]["lower"]) and np.isclose(first["union upper"], steps["tsls"]["upper"])
    assert np.isclose(first["local-to-zero lower"], steps["tsls"]["lower"])
    t = sensitivity["table"]
    assert t["union lower"].is_monotonic_decreasing and (t["union upper"] >= t["union upper"].iloc[0] - 1e-12).all()
    # the union protects against the worst gamma: it contains the local-to-zero interval at every delta
    assert (t["union lower"] <= t["local-to-zero lower"] + 1e-12).all()
    assert (t["local-to-zero estimate"].diff().dropna() < 0).all()      # shifted by -delta / (2 pi)


def test_plausible_breakdown_is_where_the_lower_end_reaches_zero(sensitivity):
    y, a, z, dof = plausible._card_residuals()
    d = sensitivity["breakdown_union"]
    assert 0 < d < 0.1
    assert plausible.union_interval(y, a, z, dof, d * 0.99, 41)[0] > 0 > plausible.union_interval(y, a, z, dof, d * 1.01, 41)[0]
    d2 = sensitivity["breakdown_local"]
    assert plausible.local_to_zero(y, a, z, dof, d2 * 0.99)[1] > 0 > plausible.local_to_zero(y, a, z, dof, d2 * 1.01)[1]
    # a known gamma shifts the estimate by exactly -gamma / first stage
    b0, _ = plausible.iv_given_gamma(y, a, z, dof, 0.0)
    b1, _ = plausible.iv_given_gamma(y, a, z, dof, 0.01)
    assert np.isclose(b0 - b1, 0.01 / sensitivity["first_stage"])


def test_p2sls_matches_the_tools_2sls_on_a_small_proximal_problem():
    from dmlcore.data.registry import load_dataset
    from dmlcore.runs import fit_run
    loaded = load_dataset("demand-pcl", n=800, seed=3)
    data = loaded.data
    t = data.table
    mine = rhc.p2sls(t[data.outcome].to_numpy(float), t[data.treatment].to_numpy(float),
                     t[data.outcome_proxy].to_numpy(float), t[data.treatment_proxy].to_numpy(float),
                     t[data.covariates].to_numpy(float))
    effect = fit_run(data, "2sls", dataset="demand-pcl").record["effect"]
    assert np.isclose(mine["coef"], effect["estimate"]) and np.isclose(mine["lower"], effect["ci_lower"])


def test_measured_rhc_effects_come_from_the_rows():
    table = rhc.measured_effects()
    assert table is not None and len(table) >= 5
    assert set(table["second stage"]) <= {"linear f", "spline f", "the learner's own f (bootstrap interval)"}
    assert (table["lower"] <= table["ATE (days)"]).all() and (table["ATE (days)"] <= table["upper"]).all()


# What the referees of issue 47 found wrong, misleading or imprecise, and how each now reads: a wrong sentence
# put back (in the plan, its worksheets or the Learn page's sources) fails here.
REFEREE_WRONG = ("ξ̂(C) is linear in schooling", "weight is linear in schooling", "Completeness and ill-posedness are what", "(Jensen)",
                 "rules out gross bias", "Z affects survival only through U", "in which values near the ends are unlikely",
                 "Different covariate codings explain", "the flexible\nbridges explain", "never learn the distribution",
                 "naive plug-in {verdict} DML-CMR", "(Staiger & Stock)", "makes the point with this",
                 "the centre moves by the prior mean.", "the centre moves only by the prior mean.")
REFEREE_RIGHT = {"docs/teaching.md": ("it is ñ / Cov(ñ, educ)", "the obstacle rather than a condition",
                                      "Z ⊥ Y | A, U, X", "Canay, Santos & Shaikh 2013",
                                      "shows negative weights\nwith the same college-proximity instrument",
                                      "the centre moves by the prior mean over π, δ/(2π)"),
                 "dashboard/learn/iv.py": ("with non-negative weights ",),
                 "dashboard/learn/rhc.py": ("rhc.flagged_today()",)}


def test_teaching_text_keeps_the_referees_corrections():
    sources = ["docs/teaching.md", "README.md", *(f"docs/worksheets/{p.name}" for p in (ROOT / "docs/worksheets").glob("*.md")),
               *(f"dashboard/learn/{p.name}" for p in (ROOT / "dashboard/learn").glob("*.py")),
               *(f"dmlcore/teaching/{p.name}" for p in (ROOT / "dmlcore/teaching").glob("*.py"))]
    for source in sources:
        text = (ROOT / source).read_text()
        assert not [w for w in REFEREE_WRONG if w in text], source
    for source, needles in REFEREE_RIGHT.items():
        text = (ROOT / source).read_text()
        assert all(n in text for n in needles), (source, [n for n in needles if n not in text])


def test_rhc_flagged_today_reads_the_weak_column(tmp_path):
    import pandas as pd
    pd.DataFrame({"method": ["dml-cmr", "2sls", "naive", "dml-cmr"], "weak": [True, False, "True", True]}).to_csv(
        tmp_path / rhc.TODAY_FILE, index=False)
    assert rhc.flagged_today(tmp_path) == ["DML-CMR", "Naive plug-in"]
    assert rhc.flagged_today(tmp_path / "missing") is None


def test_worksheets_split_questions_from_answers_and_match_the_plan(tmp_path):
    plan = (ROOT / "docs" / "teaching.md").read_text()
    sessions = worksheets.parse(plan)
    assert [s.number for s in sessions] == [1, 2, 3]
    questions = [q for s in sessions for step in s.steps for q in step.questions]
    assert len(questions) == plan.count("*Ask") and all(q.answer for q in questions)
    student = worksheets.render(sessions[1], answers=False)
    teacher = worksheets.render(sessions[1], answers=True)
    assert "Expected answer" not in student and teacher.count("Expected answer") == sum(
        len(step.questions) for step in sessions[1].steps)
    assert questions[0].answer.split()[0] not in student.split("**1.**")[1].split("**2.**")[0]
    # the committed worksheets are what the plan gives (they cannot drift from docs/teaching.md)
    for path in worksheets.write(ROOT / "docs" / "teaching.md", tmp_path):
        assert path.read_text() == (ROOT / "docs" / "worksheets" / path.name).read_text(), path.name


def test_worksheets_keep_the_plans_generated_figures_and_the_printed_page_drops_the_markers():
    """An expected answer's measured figure is a generated block in docs/teaching.md: the teacher's
    worksheet carries the same block (so `bench/docs.py --check` checks it there), the PDF's HTML shows
    the figure without the markers."""
    plan = (ROOT / "docs" / "teaching.md").read_text()
    teacher = (ROOT / "docs" / "worksheets" / "session-1-teacher.md").read_text()
    block = re.search(r"<!-- BEGIN generated:teaching:card-f -->(?P<figure>[^<]+)<!-- END generated:teaching:card-f -->", plan)
    assert block and block[0] in teacher
    page = worksheets.to_html(teacher)
    assert "generated:" not in page and "&lt;!--" not in page and f"F {block['figure']}" in page
