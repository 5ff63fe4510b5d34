"""Every chapter executes under papermill at the smallest settings, and is committed clean."""
from __future__ import annotations

import json

import papermill as pm
import pytest

from conftest import CHAPTERS, ROOT

EXPECTED = ["01_setup", "02_population_dynamics", "03_finite_corpus", "04_error_bound",
            "05_boundary_symmetrization", "06_positional_semantic"]


def test_toc_lists_the_six_chapters():
    toc = (ROOT / "_toc.yml").read_text()
    for name in EXPECTED:
        assert f"chapters/{name}" in toc
        assert (ROOT / "chapters" / f"{name}.ipynb").exists()


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_committed_without_outputs_and_with_parameters_cell(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") for c in code), f"{path.name} holds outputs"
    assert not any(c.get("execution_count") for c in code), f"{path.name} holds execution counts"
    first = code[0]
    assert "parameters" in first.get("metadata", {}).get("tags", []), "first code cell must be tagged parameters"
    src = "".join(first["source"])
    for name in ("profile", "device", "seed"):
        assert f"{name} =" in src, f"parameters cell lacks {name}"
    assert "STUMPBOOK_PROFILE" in src


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_executes_at_smoke_profile(path, tmp_path):
    out = tmp_path / path.name
    pm.execute_notebook(str(path), str(out), parameters={"profile": "smoke", "device": "cpu"},
                        cwd=str(path.parent), kernel_name="python3", progress_bar=False)
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.slow
def test_bad_profile_from_environment_fails_first_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("STUMPBOOK_PROFILE", "bogus")
    with pytest.raises(pm.PapermillExecutionError, match="STUMPBOOK_PROFILE"):
        pm.execute_notebook(str(CHAPTERS[0]), str(tmp_path / "out.ipynb"), cwd=str(CHAPTERS[0].parent),
                            kernel_name="python3", progress_bar=False)


@pytest.mark.slow
def test_bad_parameter_via_papermill_names_it(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="N must be an integer"):
        pm.execute_notebook(str(CHAPTERS[0]), str(tmp_path / "out.ipynb"),
                            parameters={"profile": "smoke", "N": -3}, cwd=str(CHAPTERS[0].parent),
                            kernel_name="python3", progress_bar=False)
