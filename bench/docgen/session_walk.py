"""docs/teaching.md: the timed walk of each class session (``python -m bench.perf.session_walk``), from
bench/results/session-walk/session-N.json and prepare.json: each session's timed total (in its heading), the
allowance rule the rows were made with, a table per step and session (before them, the class's preparation and the
restart check, timed without an allowance), and the walk that made the plan cut questions."""

from __future__ import annotations

from .registry import block, family

FOLDER = "session-walk"
SESSIONS = (1, 2, 3)
BEFORE_CUT = f"{FOLDER}/before-cut"    # the walks of the plan before questions were moved beyond the hour


def _session(rows, number: int, folder: str = FOLDER) -> dict:
    return rows.json(f"{folder}/session-{number}.json")


def _minutes(x: float) -> str:
    return f"{x:.1f}"


def _load(data: dict) -> str:
    return f"1-minute load {data['load_1min_start']:.1f}–{data['load_1min_end']:.1f}"


def rule_text(rule: dict) -> str:
    """The allowance rule in words, from a row's ``rule`` (bench.perf.session_walk.allowance)."""
    return (f"{rule['step_minutes']:g} minutes per step (the teacher says what the page shows) and "
            f"{rule['question_minutes']:g} minutes per question (read aloud, the class thinks, the answer is given "
            "and discussed)")


@family(r"session-walk:total:(?P<number>\d+)")
def total(rows, number: str) -> str:
    """A session's timed total, for its heading."""
    data = _session(rows, int(number))
    return f"{_minutes(data['total_min'])} minutes"


@block("session-walk:rule")
def rule(rows) -> str:
    """The allowance rule of the rows (every session's must be the same)."""
    rules = {tuple(sorted(_session(rows, n)["rule"].items())) for n in SESSIONS}
    if len(rules) != 1:
        raise ValueError(f"bench/results/{FOLDER}: the sessions' rows were made with different allowance rules "
                         f"{sorted(rules)}; rerun python -m bench.perf.session_walk --session all")
    return rule_text(dict(rules.pop()))


@block("session-walk:table")
def table(rows) -> str:
    """Per step and per session: the plan's slot, questions, the machine's seconds, the allowance, the total."""
    lines = ["| session · step | plan's minutes | questions | machine (s) | allowance (min) | timed (min) |",
             "|---|---|---|---|---|---|"]
    prepare = rows.json(f"{FOLDER}/prepare.json")
    before = prepare.get("before_class")
    if before is None:
        raise ValueError(f"bench/results/{FOLDER}/prepare.json has no before_class (preparing and the restart check): "
                         "rerun python -m bench.perf.session_walk --session all")
    for step in before["steps"]:           # before session 1: the machine's seconds, no allowance
        lines.append(f"| {before['title']} · {step['title']} | before | 0 | {step['machine_s']:.0f} | "
                     f"{step['allowance_min']:g} | {_minutes(step['total_min'])} |")
    notes = []
    for n in SESSIONS:
        data = _session(rows, n)
        for step in data["steps"]:
            start, end = step["slot"]
            slot = f"{start}–{end}" if start is not None else ""
            lines.append(f"| {n} · {step['title']} | {slot} | {step['questions']} | {step['machine_s']:.0f} | "
                         f"{step['allowance_min']:g} | {_minutes(step['total_min'])} |")
        lines.append(f"| **Session {n}** | {data['rule']['session_minutes']} | "
                     f"{sum(s['questions'] for s in data['steps'])} | **{data['machine_s']:.0f}** | "
                     f"{data['allowance_min']:g} | **{_minutes(data['total_min'])}** |")
        notes.append(f"session {n} {data['date'][:16]} UTC, {_load(data)}, the walk {data['wall_s']:.0f} s in all"
                     + (f" ({data['students']} students' browsers)" if n == 3 else ""))
    restart = before["steps"][-1]
    command = data["command"].split(" --other-work")[0] + (" --other-work …" if "--other-work" in data["command"] else "")
    return ("\n".join(lines) + "\n\n*`" + command + "` at commit " + data["commit"] + "; "
            + "; ".join(notes) + f". Before them, preparing the class took {prepare['seconds']:.0f} s "
            f"({_load(prepare)}), and a server restarted on the prepared `DMLCORE_HOME` opened all "
            f"{restart['prepared_listed']} prepared experiments without a refit in {restart['machine_s']:.0f} s "
            f"({_load(restart)}), neither counted in a session's hour; on {data['machine']}; what else the machine "
            f"ran: {data['other_work']}.*")


@block("session-walk:cut")
def cut(rows) -> str:
    """The walk of the plan before the cut: which sessions it timed over the hour."""
    over = []
    for n in SESSIONS:
        try:
            data = _session(rows, n, BEFORE_CUT)
        except FileNotFoundError:
            continue
        if data["total_min"] > data["rule"]["session_minutes"]:
            over.append((n, data))
    if not over:
        return "No session was cut: every one fitted its hour by its walk."
    said = "; ".join(f"session {n} at {_minutes(d['total_min'])} minutes ({d['allowance_min']:g} of them the allowance, "
                     f"{d['machine_s']:.0f} s the machine's; {d['date'][:16]} UTC, {_load(d)})" for n, d in over)
    return (f"Before, the walk timed {said}, over the hour of the plan, with the questions now under *Beyond the "
            f"hour: tF beside the Anderson–Rubin set* (session 1), *repeated cross-fitting* and *a seed used twice* "
            f"(session 3) still in it (`bench/results/{BEFORE_CUT}/`). Those questions were moved there; no "
            "step was shortened and the allowance was not changed.")
