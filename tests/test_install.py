"""``pip install .`` (not editable) gives a working science library without the book's stack.

The package is built and installed, non-editable, into a fresh virtual environment that sees the
machine's numpy, scipy and torch (``--system-site-packages``: the test must not download torch).
In that environment, with matplotlib, IPython, myst-nb, Sphinx and jupyter blocked from import (a
meta-path finder raising ``ImportError``), ``import stumplib.phase`` and one state-evolution point
must work, ``stumplib`` must be the installed copy, not the working tree, and chapter 6's published
reference files (package data) must be in it and readable.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("matplotlib", "IPython", "myst_nb", "sphinx", "docutils", "jupyter_book", "papermill",
           "ipykernel", "dask", "distributed")

CHECK = textwrap.dedent(f"""
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {BLOCKED!r}:
                raise ImportError(f"blocked: {{name}}")
    sys.meta_path.insert(0, Block())
    import stumplib.phase
    from stumplib.phase import SolverOptions, check_model, state_evolution
    r = state_evolution(2.0, seed=0, model=check_model(omega=0.3),
                        options=SolverOptions(rtol=5e-2, max_log2_points=11))
    print("FILE", stumplib.__file__)
    print("OUTCOME", r.outcome)
    print("TEST_ERROR", float(r.test_error))
    print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r}))
    from stumplib.book.studies import published
    refs = [published.reference_file(n) for n in published.REFERENCE_FILES]
    print("REF_FILE", refs[0])
    print("REF_ROWS", len(published.read_published(refs[0])["alpha"]))
    print("REF_README", (refs[0].parent / "README.md").is_file())
""")


@pytest.mark.slow
def test_a_non_editable_install_runs_the_science_without_the_books_stack(tmp_path):
    src = tmp_path / "src"  # a copy: setuptools writes build/ next to the sources it builds
    import shutil

    shutil.copytree(ROOT / "stumplib", src / "stumplib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", src / "pyproject.toml")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    build = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps",
                            "--no-build-isolation", "--no-cache-dir", str(src)],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-2000:]
    run = subprocess.run([str(py), "-c", CHECK], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    assert str(venv) in out["FILE"], f"stumplib came from {out['FILE']}, not the installed copy"
    assert out["OUTCOME"] == "converged", run.stdout
    assert 0.001 < float(out["TEST_ERROR"]) < 0.002  # the semantic branch at alpha = 2 (~0.0014)
    assert out["LOADED"] == "[]"
    # chapter 6's published reference curves ship as package data (pyproject.toml)
    assert str(venv) in out["REF_FILE"], f"reference file from {out['REF_FILE']}, not the install"
    assert out["REF_ROWS"] == "20" and out["REF_README"] == "True", run.stdout
