"""Chapters 3 and 4 at the ``full`` profile with ``token=True`` on CPU: the largest shapes with a token
amount of work, so that a GPU user never meets a shape or memory error after an hour."""
from __future__ import annotations

import json

import papermill as pm
import pytest

from conftest import ROOT


@pytest.mark.slow
@pytest.mark.parametrize("name", ["03_finite_corpus", "04_error_bound"])
def test_full_profile_token_run_executes(name, tmp_path, monkeypatch):
    monkeypatch.setenv("STUMPBOOK_RESULTS", str(tmp_path / "results"))
    out = tmp_path / f"{name}.ipynb"
    pm.execute_notebook(str(ROOT / "chapters" / f"{name}.ipynb"), str(out),
                        parameters={"profile": "full", "device": "cpu", "token": True},
                        cwd=str(ROOT / "chapters"), kernel_name="python3", progress_bar=False)
    nb = json.loads(out.read_text())
    assert not [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.slow
def test_bad_parameter_is_named(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="frac"):
        pm.execute_notebook(str(ROOT / "chapters" / "04_error_bound.ipynb"), str(tmp_path / "o.ipynb"),
                            parameters={"profile": "smoke", "device": "cpu", "frac": 2.0},
                            cwd=str(ROOT / "chapters"), kernel_name="python3", progress_bar=False)
