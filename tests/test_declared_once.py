"""Every fit setting and every data set option is declared once (issue 48, item 4): the flags of ``fit``,
``bench`` and ``study``, the dashboard's plan widgets and the study's data keys take their names, defaults,
choices and groups from the declarations (dmlcore.estimators.settings, dmlcore.data.options), and a new
declaration gets its flag with no other edit. Parsers only: no fit runs here."""

from __future__ import annotations

import argparse

import pytest

from dmlcore.cli import build_parser
from dmlcore.data import registry
from dmlcore.data.options import DataOption
from dmlcore.data.registry import DATA_OPTIONS, DATASET_OPTIONS, dataset_options
from dmlcore.estimators.settings import DEFAULTS, GROUPS, SETTINGS, FitSettings, Setting
from dmlcore.studies import spec as study_spec

COMMANDS = ("fit", "bench", "study")


def _actions(command: str) -> dict[str, argparse.Action]:
    """The options of ``command``'s parser by flag."""
    return {flag: action for action in build_parser().commands[command]._actions for flag in action.option_strings}


def _section(command: str, action: argparse.Action) -> str:
    """The title of the --help section that lists ``action``."""
    parser = build_parser().commands[command]
    return next(group.title for group in parser._action_groups
                if any(a.dest == action.dest for a in group._group_actions))


def test_every_setting_has_a_flag_in_its_group_with_the_declared_default_and_choices():
    assert all(s.commands for s in SETTINGS.values()), [n for n, s in SETTINGS.items() if not s.commands]
    assert {s.group for s in SETTINGS.values()} == set(GROUPS)
    for command in COMMANDS:
        actions = _actions(command)
        parser = build_parser().commands[command]
        titles = {a.dest: g.title for g in parser._action_groups for a in g._group_actions}
        for name, s in SETTINGS.items():
            if command not in s.commands:
                assert s.flag not in actions or command == "study", (command, s.flag)   # study: grid flags only
                continue
            action = actions[s.flag]
            assert titles[action.dest] == GROUPS[s.group], (command, name)
            if command == "study" and s.study:       # a comma list, checked by the study spec
                assert action.dest == (s.grid_dest or name) and action.default is None
                continue
            assert action.dest == s.dest, (command, name)
            assert action.default == s.flag_default(), (command, name, action.default)
            named = s.named_values()
            assert (tuple(action.choices) if action.choices else None) == (tuple(named) if named else None)


@pytest.mark.parametrize("name", [n for n, s in SETTINGS.items() if "fit" in s.commands])
def test_every_flag_of_fit_reaches_the_fit_settings(name):
    """A value other than the default given by the flag is the FitSettings' value (a switch on by default is
    turned off by --no-NAME alone)."""
    s = SETTINGS[name]
    value = s.example()
    argv = [s.flag] if s.negated else [s.flag, s.text(value)]
    args = build_parser().parse_args(["fit", *argv])
    assert getattr(FitSettings.from_args(args), name) == value != s.default


def test_every_data_option_has_its_declared_flag_and_default():
    fit, bench, study = (_actions(command) for command in COMMANDS)
    assert set(dataset_options("demand-iv")) == {"n", "rho", "iv_strength", "noise_scale", "ood_test"}
    for name, option in DATA_OPTIONS.items():
        grid = "--" + (option.grid_flag or name).replace("_", "-")
        if not option.cli:     # a kept table's options: no flag sets them (fit's --table is another option's)
            assert name not in {a.dest for a in fit.values()} | {a.dest for a in study.values()}
            continue
        action = fit[option.flag]
        assert action.dest == name and action.default == option.default, name
        assert (tuple(action.choices) if action.choices else None) == option.choices, name
        assert study[grid].default is None, name           # a study's data key: its default is the declaration's
        assert (grid if option.grid_flag else option.flag) in bench, name
        users = [d for d, names in DATASET_OPTIONS.items() if name in names]
        assert all(d in action.help for d in users), (name, action.help)
    for dataset, names in DATASET_OPTIONS.items():         # load_dataset's and the study's defaults
        assert dataset_options(dataset) == {n: DATA_OPTIONS[n].default for n in names}
    assert study_spec.OPTION_CHECKS == {n: o.check for n, o in DATA_OPTIONS.items() if o.check}
    assert study_spec.OPTION_CHOICES == {n: o.choices for n, o in DATA_OPTIONS.items() if o.choices}


def test_the_plan_widgets_take_the_declared_defaults():
    from dashboard.plan import DEMO_DATA, ESTIMATOR_DEFAULTS, F_MODEL_OWN, WIDGET_SETTINGS, build_plan

    for key, name in WIDGET_SETTINGS.items():
        default = SETTINGS[name].default
        assert ESTIMATOR_DEFAULTS[key] == (F_MODEL_OWN if default is None and name == "f_model" else default), key
    assert DEMO_DATA["rho"] == DATA_OPTIONS["rho"].default and DEMO_DATA["iv_strength"] == DATA_OPTIONS[
        "iv_strength"].default
    fits, errors = build_plan({"est_methods": ["dml-cmr"]}, None)       # no widget touched: every default
    assert not errors
    kwargs = fits[0].kwargs
    assert (kwargs["learner"], kwargs["folds"], kwargs["seed"], kwargs["n_draws"], kwargs["epochs"]) == (
        DEFAULTS.learner, DEFAULTS.folds, DEFAULTS.seed, DEFAULTS.n_draws, DEFAULTS.epochs)
    assert not {"debias", "device", "reps_crossfit", "f_model", "cluster"} & set(kwargs)   # defaults are not passed


def test_a_new_setting_gets_its_flag_without_other_edits(monkeypatch):
    """A declaration added to SETTINGS is a flag of the commands it names, in its group, with its default."""
    new = Setting("widgets", 3, "widgets per fit", kind="int", minimum=1, scope="run", study=False,
                  commands=("fit", "study"), group="run", metavar="W")
    monkeypatch.setitem(SETTINGS, "widgets", new)
    parser = build_parser()
    assert parser.parse_args(["fit"]).widgets == 3 and parser.parse_args(["fit", "--widgets", "5"]).widgets == 5
    assert parser.parse_args(["study", "--widgets", "4"]).widgets == 4
    action = _actions("fit")["--widgets"]
    assert _section("fit", action) == GROUPS["run"] and action.metavar == "W"
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "--widgets", "5"])              # not a flag of bench: it did not name it


def test_a_new_data_option_gets_its_flags_and_study_key_without_other_edits(monkeypatch, capsys):
    """An option declared beside a simulator (here added to demand-iv's) is a flag of fit and bench, a comma
    list of study, and refused for a data set that does not take it."""
    new = DataOption("season", "summer", "season of the draws", kind="text", choices=("summer", "winter"))
    monkeypatch.setitem(DATA_OPTIONS, "season", new)
    monkeypatch.setitem(DATASET_OPTIONS, "demand-iv", (*DATASET_OPTIONS["demand-iv"], "season"))
    parser = build_parser()
    assert parser.parse_args(["fit", "--season", "winter"]).season == "winter"
    assert parser.parse_args(["bench"]).season == "summer" and parser.parse_args(["study", "--season", "summer,winter"])
    assert "demand-iv" in _actions("fit")["--season"].help
    from dmlcore.cli import main
    assert main(["fit", "--dataset", "demand-pcl", "--season", "winter", "--method", "2sls"]) == 2
    assert "--season" in capsys.readouterr().err


def test_no_other_home_lists_the_data_options():
    """The registry's tables of options are the declarations' (one declaration per name)."""
    assert registry.OPTION_LABELS == {n: o.label for n, o in DATA_OPTIONS.items()}
    assert all(o.label for o in DATA_OPTIONS.values())
    assert registry.DATASET_OPTIONS == {d: tuple(o.name for o in opts) for d, opts in registry.OPTIONS_OF.items()}


def test_a_study_of_your_file_takes_every_run_flag(tmp_path, monkeypatch):
    """The run settings of a study's flags (--cov, --cluster, --no-debias, --time-limit) reach a study of your
    own file as they reach one of a data set (--time-limit was once dropped there)."""
    from dmlcore.data.simulate import simulate_demand_iv
    from dmlcore.studies.command import study_spec

    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    path = tmp_path / "mine.csv"
    simulate_demand_iv(100, seed=1).data.table.to_csv(path, index=False)
    own = ["--csv", str(path), "--outcome", "sales", "--treatment", "price", "--instrument", "fuel_price"]
    for argv in (own, ["--dataset", "demand-iv", "--sizes", "100"]):
        args = build_parser().parse_args(["study", *argv, "--methods", "2sls", "--seeds", "0", "--cov", "robust",
                                          "--no-debias", "--time-limit", "7"])
        config = study_spec(args).configs()[0]
        assert (config["cov_type"], config["debias"], config["time_limit"]) == ("robust", False, 7), argv


# --- No retyped default: a literal equal to a declared default, used as that setting's default, outside the
# declarations (issue 48, item 4). Each read of a default goes through SETTINGS / DEFAULTS, a DataOption's
# ``default`` or the constant the declaration itself reads (stats/covariance.py's COV_DEFAULT, ...).

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("dmlcore", "dashboard", "pages")
DECLARATION_FILES = {"dmlcore/estimators/settings.py", "dmlcore/data/options.py"}
# (file or folder, setting) -> why a literal equal to the declared default is not a retyped default there
ALLOWED = {
    ("dmlcore/teaching/", "rho"): "a lesson's own correlation of its confounder (teaching/iv.py's small "
                                  "experiments), a parameter of the lesson, not the data option",
    ("dmlcore/teaching/", "seed"): "a lesson's own seed (its experiment's draws), not a fit setting",
    ("dashboard/learn/iv.py", "rho"): "the Wald lesson's widget for its own experiment's rho (teaching/iv.py)",
    ("dashboard/learn/iv.py", "seed"): "the Wald lesson's widget for its own experiment's seed (teaching/iv.py)",
    ("dashboard/learn/weak.py", "rho"): "the weak-IV lesson's widget for its own experiment's rho (teaching/iv.py)",
}


def _aliases() -> dict[str, str]:
    """{a name a default is read under: the declaration's name}: the setting, its flag's dest (``cov``), the
    dashboard widget keys of dashboard/plan.py (``est_folds``), the data options."""
    from dashboard.plan import WIDGET_SETTINGS

    out = {name: name for name in DATA_OPTIONS}
    out.update({name: name for name in SETTINGS})
    out.update({s.dest: name for name, s in SETTINGS.items()})
    out.update(WIDGET_SETTINGS)
    out["strength"] = "iv_strength"      # the dashboard's and the lessons' word for it (sim_strength, exp_strength)
    return out


def _declared_default(name: str):
    return SETTINGS[name].default if name in SETTINGS else DATA_OPTIONS[name].default


def _name(node) -> str | None:
    """The name a read is of: ``x.get("cov_type")``, ``x["cov_type"]``, ``x.cov_type_``, ``state.EST_FOLDS``,
    ``getattr(x, "small_")``; lower case, without a trailing underscore, and the last word of a long name
    (``fitted_cov``: ``cov``) where that is a name of its own."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        node = node.args[0]
    elif isinstance(node, ast.Subscript):
        node = node.slice
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.Attribute):
        text = node.attr
    elif isinstance(node, ast.Name):
        text = node.id
    else:
        return None
    return text.lower().rstrip("_")


def _match(name: str | None, value, aliases: dict) -> str | None:
    """The declaration ``value`` (an AST node) retypes the default of, read under ``name``; None if none."""
    if name is None or not isinstance(value, ast.Constant) or value.value is None:
        return None
    last = name.rsplit("_", 1)[-1]
    candidates = [name, last] if "_" in name and len(last) >= 3 else [name]
    for candidate in candidates:
        declared = aliases.get(candidate)
        if declared is None:
            continue
        default = _declared_default(declared)
        if type(value.value) is type(default) and value.value == default:
            return declared
    return None


def retyped_defaults(source: str, aliases: dict | None = None) -> list[tuple[int, str, str]]:
    """(line, how, setting) of every literal in ``source`` equal to a declared default and used as that
    setting's default: a parameter's or a field's default, a fallback (``x.get(name, d)``, ``getattr(x, name,
    d)``, ``x.get(name) or d``, ``x.name or d``, ``x if x is not None else d``), an argparse ``default=`` and a widget's ``value=`` / ``index=``
    (by its ``key=``). A value passed on purpose (``fit(cov_type="robust")``, a lesson's dict) is not a default."""
    aliases = _aliases() if aliases is None else aliases
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs,
                                                                                             a.kw_defaults)]
            found |= {(d.lineno, "parameter", m) for arg, d in pairs if d is not None
                      for m in [_match(arg.arg.lower(), d, aliases)] if m}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if m := _match(node.target.id.lower(), node.value, aliases):
                found.add((node.lineno, "field", m))
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            for left, right in zip(node.values, node.values[1:]):
                if m := _match(_name(left), right, aliases):
                    found.add((node.lineno, "or", m))
        elif isinstance(node, ast.IfExp) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                and isinstance(node.test.ops[0], (ast.Is, ast.IsNot)):       # x if x is not None else d
            fallback = node.orelse if isinstance(node.test.ops[0], ast.IsNot) else node.body
            if m := _match(_name(node.test.left), fallback, aliases):
                found.add((node.lineno, "if-else", m))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            if called in ("get", "getattr", "setdefault", "pop") and len(node.args) >= 2:
                if m := _match(_name(node.args[-2]), node.args[-1], aliases):
                    found.add((node.lineno, called, m))
            if called == "add_argument" and "default" in keywords:
                flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
                dest = _name(keywords["dest"]) if "dest" in keywords else (
                    flags[0][2:].replace("-", "_") if flags else None)
                if m := _match(dest, keywords["default"], aliases):
                    found.add((node.lineno, "argparse default", m))
            if "key" in keywords:
                values = {word: keywords[word] for word in ("value", "index") if word in keywords}
                if called in ("slider", "number_input") and len(node.args) > 3:    # (label, min, max, value, ...)
                    values["value"] = node.args[3]
                for word, value in values.items():
                    if m := _match(_name(keywords["key"]), value, aliases):
                        found.add((node.lineno, f"widget {word}", m))
    return sorted(found)


def _allowed(path: str, name: str) -> bool:
    return any(path.startswith(where) and name == allowed for where, allowed in ALLOWED)


def test_no_default_is_typed_outside_its_declaration():
    aliases = _aliases()
    found = []
    for root in SCANNED:
        for path in sorted((ROOT / root).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in DECLARATION_FILES:
                continue
            lines = path.read_text().splitlines()
            found += [f"{rel}:{line}: {how} of {name}: {lines[line - 1].strip()}"
                      for line, how, name in retyped_defaults(path.read_text(), aliases) if not _allowed(rel, name)]
    assert not found, "read these defaults from the declaration (SETTINGS / DEFAULTS / a DataOption):\n" + "\n".join(
        found)


def test_the_scan_finds_planted_retyped_defaults():
    """Every form the scan looks for is found on a planted line, and values passed on purpose are not."""
    planted = '''
def fit(data, cov_type="unadjusted", *, folds=10, rho=0.9, small=False, seed=DEFAULTS.seed, n_draws=4):
    cov = config.get("cov_type") or "unadjusted"
    learner = record.get("learner", "nn")
    device = getattr(args, "device", "auto")
    k = int(ss.get(state.EST_FOLDS, 10))
    words = COV_TITLES.get(fitted_cov or "unadjusted")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--cov", dest="cov", default="unadjusted")
    st.number_input("K", value=10, key=state.EST_FOLDS); st.slider("s", 0.0, 3.0, 1.0, 0.05, key=state.SIM_STRENGTH)
    fit_run(data, "dml-cmr", cov_type="unadjusted", folds=5, seed=seed if seed is not None else 0)
class Options:
    executor: str = "local"
    debias: bool = True
    ood_test: bool = 1
'''
    found = retyped_defaults(planted)
    assert [(line, name) for line, _, name in found] == [
        (2, "cov_type"), (2, "folds"), (2, "rho"), (2, "small"), (3, "cov_type"), (4, "learner"), (5, "device"),
        (6, "folds"), (7, "cov_type"), (8, "jobs"), (9, "cov_type"), (10, "folds"), (10, "iv_strength"), (11, "seed"), (13, "executor"), (14, "debias")]
    assert _allowed("dmlcore/teaching/iv.py", "rho") and not _allowed("dmlcore/runs/fit.py", "rho")
