"""The dashboard's state and fits have one home each (issue 48, item 6).

- every session-state key (widget keys included) is declared in dashboard/state.py, and pages/,
  dashboard/ and app.py use the declared names, never a string of their own;
- every fit goes through dashboard/fits.py (the job registry, or fit_now for 2SLS);
- no page is longer than ~300 lines.

Each scan is checked on planted lines first, so that a scanner that finds nothing fails.
"""

import re
from pathlib import Path

import pytest

from dashboard import fits, plan, state
from dmlcore.estimators import METHODS
from dmlcore.estimators._registry import LINEAR_REFERENCE
from dmlcore.errors import DMLCoreError

ROOT = Path(__file__).resolve().parents[1]
# dashboard/plan.py reads the Estimators page's keys from the state it is given (plan.build_plan(ss, ...)) by
# the names it declares (ESTIMATOR_DEFAULTS, nuisance_key, f_key, learner_override_key), which state.py declares
# as session keys; its reads move with the settings' declarations (issue 48, item 4).
NOT_SCANNED = {"dashboard/plan.py"}

_SS = r"(?:\bss|st\.session_state|\bsession_state)"
_STRING = r"f?[\"']"
INLINE_KEY = [
    re.compile(r"\bkey\s*=\s*" + _STRING),                                   # a widget's key="..." or key=f"..."
    re.compile(_SS + r"\[\s*" + _STRING),                                    # ss["..."]
    re.compile(_SS + r"\.(?:get|pop|setdefault)\(\s*" + _STRING),            # ss.get("...")
    re.compile(r"[\"'][\w]+[\"']\s+(?:not\s+)?in\s+" + _SS + r"\b"),        # "..." in ss
]
DIRECT_FIT = [re.compile(r"\bfit_run\("), re.compile(r"\.fit\("), re.compile(r"\bregression_table\("),
              re.compile(r"\.submit_fit\("), re.compile(r"\bimport\b.*\bfit_run\b")]   # also fit_run under another name


def _sources(*folders, skip=()):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else [ROOT / folder]:
            name = path.relative_to(ROOT).as_posix()
            if name not in skip and not any(name.startswith(prefix) for prefix in skip):
                yield name, path.read_text()


def _hits(patterns, name, text):
    return [f"{name}:{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1)
            if not line.lstrip().startswith("#") and any(p.search(line) for p in patterns)]


PLANTED_KEYS = ['st.session_state["planted"] = 1', "x = ss.get('planted', 0)", 'ss.pop("planted", None)',
                'ss.setdefault("planted", {})', 'st.button("Go", key="planted")', 'st.button("Go", key=f"p_{i}")',
                'if "planted" in ss:', 'if "planted" not in st.session_state:']
FINE_KEYS = ["ss[state.PLANTED] = 1", "record.get('method')", "st.button('Go', key=state.JOB_CANCEL(i))",
             "ss.get(key)", "config.get(\"cluster\")"]


def test_the_key_scanner_finds_planted_inline_keys_and_passes_declared_names():
    for line in PLANTED_KEYS:
        assert _hits(INLINE_KEY, "planted.py", line), line
    for line in FINE_KEYS:
        assert not _hits(INLINE_KEY, "fine.py", line), line


def test_pages_and_dashboard_use_only_declared_session_keys():
    found = [hit for name, text in _sources("pages", "dashboard", "app.py", skip=NOT_SCANNED | {"dashboard/state.py"})
             for hit in _hits(INLINE_KEY, name, text)]
    assert not found, ("Session-state keys typed inline; declare them in dashboard/state.py (_key or _family) and "
                       "use the name:\n" + "\n".join(found))


def test_every_state_name_the_pages_use_is_declared():
    used = {m for _, text in _sources("pages", "dashboard", "app.py") for m in re.findall(r"\bstate\.([A-Z][A-Z0-9_]*)\b", text)}
    assert used, "the scan found no declared names at all"
    missing = sorted(name for name in used if not hasattr(state, name))
    assert not missing, f"dashboard/state.py does not declare {missing}"


def test_every_declaration_says_what_it_holds_and_covers_the_estimator_keys():
    assert len(state.KEYS) > 100
    assert all(key.holds.strip() for key in state.KEYS.values())
    assert set(plan.ESTIMATOR_DEFAULTS) <= set(state.KEYS)        # the Estimators page's keys, advanced ones too
    assert all(state.KEYS[name].default == value for name, value in plan.ESTIMATOR_DEFAULTS.items())
    assert state.declared(state.JOB_CANCEL("abc123")) and state.declared(state.STUDY_OPTION("demand-iv", "rho"))
    assert not state.declared("undeclared_key")
    with pytest.raises(ValueError, match="declared twice"):
        state._key("owner", None, "again")
    assert set(state.CACHES) <= set(state.KEYS)


def test_the_fit_scanner_finds_planted_fits():
    for line in ("run = fit_run(data, 'dml-cmr')", "est.fit(data)", "regression_table(data)",
                 "state.registry().submit_fit(owner, 'x', data=d, method='2sls')",
                 "from dmlcore.runs import Run, fit_run as fit"):
        assert _hits(DIRECT_FIT, "planted.py", line), line
    assert not _hits(DIRECT_FIT, "fine.py", "fits.submit('x', data=d, method=m)")


def test_every_dashboard_fit_goes_through_dashboard_fits():
    # dashboard/learn is teaching: its experiments fit their own small simulations (dmlcore.teaching)
    found = [hit for name, text in _sources("pages", "dashboard", "app.py",
                                            skip={"dashboard/fits.py", "dashboard/learn/"})
             for hit in _hits(DIRECT_FIT, name, text)]
    assert not found, "Fits outside dashboard/fits.py (use fits.submit, or fits.fit_now for 2SLS):\n" + "\n".join(found)


def test_fit_now_fits_the_linear_iv_method_only():
    other = next(name for name in METHODS if name != LINEAR_REFERENCE)
    with pytest.raises(DMLCoreError, match="fits.submit"):
        fits.fit_now(None, method=other)


def test_no_page_is_over_300_lines():
    long = {name: text.count("\n") for name, text in _sources("pages") if text.count("\n") > 300}
    assert not long, f"pages over 300 lines (move their pieces into dashboard/): {long}"


def test_accessors_refuse_undeclared_keys_and_the_caches_keep_one_value_per_key():
    for access in (lambda: state.get("nope"), lambda: state.put("nope", 1), lambda: state.pop("nope"),
                   lambda: state.cached(state.RES_ADD, "k", list)):      # a key, but not a cache
        with pytest.raises(KeyError, match="declare"):
            access()
    try:
        assert state.get(state.RES_ADD) == [] and state.get(state.RES_ADD) is not state.KEYS[state.RES_ADD].default
        state.put(state.RES_ADD, ["run"])
        assert state.get(state.RES_ADD) == ["run"] and state.pop(state.RES_ADD) == ["run"]
        made = []
        assert state.cached(state.RESULT_CACHE, "a", lambda: made.append(1) or len(made)) == 1
        assert state.cached(state.RESULT_CACHE, "a", lambda: made.append(1) or len(made)) == 1 and made == [1]

        def fails():
            raise DMLCoreError("no cluster column chosen; choose one")
        assert state.cached(state.RESULT_CACHE, "b", fails, errors_as_text=True) == "no cluster column chosen; choose one"
        with pytest.raises(DMLCoreError):
            state.cached(state.RESULT_CACHE, "c", fails)
        state.cached(state.STUDY_TABLE_CACHE, "x", dict)
        state.cached(state.STUDY_TABLE_CACHE, "y", dict, latest_only=True)
        assert list(state.get(state.STUDY_TABLE_CACHE)) == ["y"]
    finally:
        for name in (state.RES_ADD, state.RESULT_CACHE, state.STUDY_TABLE_CACHE):
            state.pop(name)
