"""Each Learn experiment as a notebook (issue 47): the notebook's code calls dmlcore with the tab's
settings and gives the tab's numbers; every notebook is valid nbformat 4 JSON whose code compiles."""

from __future__ import annotations

import contextlib
import io
import json

import pandas as pd
import pytest

from dmlcore.errors import DMLCoreError
from dmlcore.teaching import notebooks


def run(name: str, params: dict | None = None) -> tuple[dict, str]:
    """Execute the notebook's code cells in order, as Jupyter would: (namespace, printed text)."""
    nb = notebooks.notebook(name, params)
    namespace, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                exec(compile(cell["source"], f"<{name}>", "exec"), namespace)   # noqa: S102
    return namespace, out.getvalue()


def test_every_notebook_is_nbformat_4_and_its_code_compiles(tmp_path):
    paths = notebooks.write_all(tmp_path)
    assert {p.stem for p in paths} == set(notebooks.EXPERIMENTS) and len(paths) >= 14
    for path in paths:
        nb = json.loads(path.read_text())
        assert nb["nbformat"] == 4 and nb["nbformat_minor"] >= 5
        kinds = [c["cell_type"] for c in nb["cells"]]
        assert kinds[0] == "markdown" and "code" in kinds
        assert len({c["id"] for c in nb["cells"]}) == len(nb["cells"])
        source = "\n".join(c["source"] for c in nb["cells"] if c["cell_type"] == "code")
        compile(source, path.name, "exec")
        assert "from dmlcore" in source and source + "\n" == notebooks.code(path.stem)


@pytest.mark.parametrize("name,params,page", [
    ("wald", dict(rho=0.5, seed=3), lambda: __import__("dmlcore.teaching.iv", fromlist=["wald"]).wald(rho=0.5, seed=3)),
    ("weak", dict(instruments=1, rho=0.9),
     lambda: __import__("dmlcore.teaching.iv", fromlist=["x"]).weak_instruments(instruments=1, rho=0.9)),
    ("proximal", dict(noise=0.5, kappa=0.2, n=500),
     lambda: __import__("dmlcore.teaching.proximal", fromlist=["x"]).proximal(proxy_noise=0.5, kappa=0.2, n=500)),
])
def test_a_notebook_reproduces_the_tab_with_its_settings(name, params, page):
    namespace, printed = run(name, params)
    expected = page().summary
    pd.testing.assert_frame_equal(namespace["exp"].summary, expected)
    assert printed.strip()                                   # it prints the tab's table


def test_the_wald_notebook_prints_the_page_s_wald_ratio():
    from dashboard.learn.common import num
    namespace, printed = run("wald")
    slopes = namespace["exp"].summary.set_index("estimate")["slope"]
    assert f"{slopes['Wald ratio']:.2f}".replace("-", "−") == num(slopes["Wald ratio"])
    assert f"{slopes['Wald ratio']:.4f}"[:5] in printed


def test_a_notebook_refuses_a_setting_it_does_not_have():
    with pytest.raises(DMLCoreError, match="no setting colour"):
        notebooks.notebook("wald", {"colour": 1})
    with pytest.raises(DMLCoreError, match="No notebook named 'nope'"):
        notebooks.notebook("nope")
