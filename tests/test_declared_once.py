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
