"""The book build's execution cache (``execute_notebooks: cache`` + ``stumplib.book.sphinxext``).

The slow tests build a TINY book in a temporary folder with ``jupyter-book build`` (the same
execute and extension settings as ``_config.yml``) against a *copy* of ``stumplib`` (first on
``PYTHONPATH``, so the library can be changed without touching the repository). Its one notebook
appends a line to a counter file every time it executes, uses :func:`stumplib.book.cached` (which
appends to a second counter when it computes), and glues the code version, the profile, a value
set in a code cell and the execution count; ``intro.md`` shows them through cross-document
``{glue:text}`` references, as the real landing page does.

One cold build is shared (a snapshot is restored at the same path before each test, mtimes kept,
so Sphinx's environment and the jupyter-cache stay valid); each test then makes one change and
rebuilds (six rebuilds execute the notebook in all: the code edit, the failed build and its retry,
two profile switches, one pre-execution).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

JB = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]

CONFIG = """\
title: tiny
author: test
only_build_toc_files: true
exclude_patterns: [_build, stumplib, "**.ipynb_checkpoints"]
execute:
  execute_notebooks: cache
  timeout: 300
  allow_errors: false
html:
  use_issues_button: false
  use_repository_button: false
sphinx:
  extra_extensions:
    - stumplib.book.sphinxext
  config:
    nb_execution_raise_on_error: true
    nb_execution_show_tb: true
    stumpbook_claims_registry: "tinyreg:REGISTRY"
"""

# the tiny book's claims (the landing page's tally counts them): one measured, one a consequence
# of it (not counted), one that no chapter glues (not measured)
TINYREG = """\
from stumplib.book.registry import Claim
REGISTRY = (Claim("tiny", "stump", "ch1", "c", "s", "t", "tol", "at_least"),
            Claim("tinycons", "stump", "ch1", "c", "s", "t", "tol", "at_least",
                  follows_from=("tiny",)),
            Claim("absent", "stump", "ch1", "c", "s", "t", "tol", "at_least"))
"""

TOC = """\
format: jb-book
root: intro
chapters:
  - file: ch1
  - file: summary
"""

# a page that is not the root: Sphinx rewrites the root anyway when a chapter in its toctree
# changes, but only stumplib.book.sphinxext re-reads another page that glues from a chapter
SUMMARY = """\
# Summary

Value: {glue:text}`ch1.ipynb::value:d`.
Executions: {glue:text}`ch1.ipynb::runs:d`.
"""

INTRO = """\
# Tiny book

Version: {glue:text}`ch1.ipynb::version:s`.
Profile: {glue:text}`ch1.ipynb::profile:s`.
Value: {glue:text}`ch1.ipynb::value:d`.
Executions: {glue:text}`ch1.ipynb::runs:d`.

```{claims-tally}
```
"""

SETUP_CELL = """\
import os
from pathlib import Path
import numpy as np
from myst_nb import glue
from stumplib import book
counter = Path(os.environ["TINYBOOK_COUNTER"])
if os.environ.get("TINYBOOK_FAIL"):
    raise RuntimeError("boom")
with counter.open("a") as f:
    f.write("run\\n")
runs = len(counter.read_text().splitlines())
"""

WORK_CELL = """\
def compute():
    with Path(os.environ["TINYBOOK_COMPUTES"]).open("a") as f:
        f.write("compute\\n")
    return {"x": np.arange(3.0)}

res = book.cached("tiny", {"n": 3}, compute)
value = 1
glue("version", book.code_version(), display=False)
glue("profile", os.environ.get("STUMPBOOK_PROFILE", "quick"), display=False)
glue("value", value, display=False)
glue("runs", runs, display=False)
glue("tiny_status", "holds", display=False)
glue("tinycons_status", "holds", display=False)
print("sum", float(res["x"].sum()))
"""


def _cell(kind: str, src: str) -> dict:
    c = {"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True)}
    if kind == "code":
        c.update(outputs=[], execution_count=None)
    return c


def _notebook(prose: str = "Prose, first version.", work: str = WORK_CELL) -> dict:
    return {
        "cells": [_cell("markdown", f"# Chapter one\n\n{prose}\n"), _cell("code", SETUP_CELL),
                  _cell("code", work)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


def _write_nb(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1))


class TinyBook:
    """A tiny book and the state around it (library copy, counters, results) under one folder."""

    def __init__(self, base: Path):
        self.base = base
        self.book = base / "book"
        self.lib = base / "lib"  # holds the stumplib copy; first on PYTHONPATH
        self.results = base / "results"
        self.counter = base / "executions.log"
        self.computes = base / "computes.log"

    def create(self) -> None:
        self.book.mkdir(parents=True)
        shutil.copytree(ROOT / "stumplib", self.lib / "stumplib",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (self.lib / "tinyreg.py").write_text(TINYREG)
        (self.book / "_config.yml").write_text(CONFIG)
        (self.book / "_toc.yml").write_text(TOC)
        (self.book / "intro.md").write_text(INTRO)
        (self.book / "summary.md").write_text(SUMMARY)
        _write_nb(self.book / "ch1.ipynb", _notebook())

    def env(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STUMPBOOK_")}
        env.update(PYTHONPATH=str(self.lib), STUMPBOOK_RESULTS=str(self.results),
                   TINYBOOK_COUNTER=str(self.counter), TINYBOOK_COMPUTES=str(self.computes),
                   PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
        env.update(extra)
        return env

    def build(self, **extra: str) -> tuple[float, str]:
        t0 = time.time()
        # cwd outside the repository: `python -c` puts the cwd first on sys.path
        r = subprocess.run([*JB, "build", str(self.book)], env=self.env(**extra), text=True,
                           capture_output=True, timeout=600, cwd=self.base)
        dt = time.time() - t0
        out = r.stdout + r.stderr
        assert r.returncode == 0, f"jupyter-book build failed:\n{out[-4000:]}"
        return dt, out

    def runs(self) -> int:
        return len(self.counter.read_text().splitlines()) if self.counter.exists() else 0

    def n_computes(self) -> int:
        return len(self.computes.read_text().splitlines()) if self.computes.exists() else 0

    def page_text(self, page: str) -> str:
        html = (self.book / "_build" / "html" / page).read_text()
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))

    def glued(self, page: str = "intro.html") -> dict[str, str]:
        t = self.page_text(page)
        out = {}
        for key in ("Version", "Profile", "Value", "Executions"):
            m = re.search(rf"{key}: (\S+?) ?\.", t)
            out[key.lower()] = m.group(1) if m else None
        return out


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """One cold build, snapshotted (book, library copy, counters, results, _build)."""
    base = tmp_path_factory.mktemp("tinybook")
    tb = TinyBook(base / "work")
    tb.create()
    dt, out = tb.build()
    assert tb.runs() == 1 and tb.n_computes() == 1, out[-3000:]
    snap = base / "snap"
    shutil.copytree(tb.base, snap, symlinks=True)  # copy2: modification times are kept
    return {"tb": tb, "snap": snap, "seconds": dt, "log": out}


@pytest.fixture
def tb(cold) -> TinyBook:
    """The cold-built tiny book, restored at the same path (so the caches stay valid)."""
    t: TinyBook = cold["tb"]
    shutil.rmtree(t.base)
    shutil.copytree(cold["snap"], t.base, symlinks=True)
    # a rebuild in the same second as the snapshot's files must still see edits as newer
    time.sleep(1.1)
    return t


@pytest.mark.slow
def test_cold_build_executes_and_glues_into_the_landing_page(cold):
    tb: TinyBook = cold["tb"]
    g = tb.glued()
    assert g["value"] == "1" and g["executions"] == "1" and g["profile"] == "quick", g
    assert g["version"] and re.fullmatch(r"[0-9a-f]{16}", g["version"]), g
    assert "stumpbook: executed ch1" in cold["log"]
    assert (tb.book / "_build" / ".jupyter_cache.stamp.json").is_file()


@pytest.mark.slow
def test_the_landing_tally_is_counted_when_the_page_is_written(cold):
    """``{claims-tally}``: the executed chapter's statuses counted into the page (each number in an
    element with its id) and into claims.json's summary; a consequence and an unmeasured claim
    are reported apart."""
    tb: TinyBook = cold["tb"]
    html = (tb.book / "_build" / "html" / "intro.html").read_text()
    got = dict(re.findall(r'id="(claims_\w+)"[^>]*>(\d+)<', html))
    assert got == {"claims_holds": "1", "claims_fails": "0", "claims_partly": "0",
                   "claims_undecided": "0"}, got
    text = tb.page_text("intro.html")
    assert "Of the 2 claims tested, 1 holds" in text and "1 could not be measured" in text
    assert "1 row follows from others" in text
    data = json.loads((tb.book / "_build" / "html" / "claims.json").read_text())
    assert data["summary"]["claims_holds"] == 1 and data["summary"]["claims_consequences"] == 1
    assert [r["key"] for r in data["claims"]] == ["tiny", "tinycons", "absent"]


@pytest.mark.slow
def test_unchanged_rebuild_reuses_everything(tb, cold):
    dt, out = tb.build()
    assert tb.runs() == 1, "an unchanged rebuild executed the notebook"
    assert "stumpbook: executed no notebook" in out or "0 changed" in out, out[-2000:]
    assert dt < max(60.0, cold["seconds"]), f"unchanged rebuild took {dt:.1f} s"


@pytest.mark.slow
def test_prose_edit_rebuilds_without_executing(tb):
    _write_nb(tb.book / "ch1.ipynb", _notebook(prose="Prose, second version."))
    dt, out = tb.build()
    assert tb.runs() == 1, "a markdown edit re-executed the notebook"
    assert "Prose, second version." in tb.page_text("ch1.html")
    assert tb.glued()["executions"] == "1"
    assert "reused from cache: ch1" in out, out[-2000:]


@pytest.mark.slow
def test_code_edit_reexecutes_that_notebook_and_the_landing_page_follows(tb):
    _write_nb(tb.book / "ch1.ipynb", _notebook(work=WORK_CELL.replace("value = 1", "value = 2")))
    dt, out = tb.build()
    assert tb.runs() == 2, "a code-cell edit did not re-execute the notebook"
    assert tb.n_computes() == 1, "book.cached recomputed although config and code are unchanged"
    g = tb.glued()
    assert g["value"] == "2" and g["executions"] == "2", f"the landing page did not follow: {g}"
    g = tb.glued("summary.html")
    assert g["value"] == "2" and g["executions"] == "2", f"the summary page did not follow: {g}"


@pytest.mark.slow
def test_library_change_reexecutes_even_after_a_failed_build(tb):
    """A library change clears the execution cache; a build that then fails while executing stores
    no stamp in Sphinx's environment, so the next build still re-executes (instead of showing the
    outputs of the old library), ``book.cached`` recomputes, both glueing pages follow, and the
    build after that is warm again. (One test for both: each rebuild that executes costs seconds.)"""
    old = tb.glued()["version"]
    with (tb.lib / "stumplib" / "stump" / "tasks.py").open("a") as f:
        f.write("\n# a library change\n")
    r = subprocess.run([*JB, "build", str(tb.book)], env=tb.env(TINYBOOK_FAIL="1"), text=True,
                       capture_output=True, timeout=600, cwd=tb.base)
    assert r.returncode != 0, "the failing notebook did not fail the build"
    assert "clearing the execution cache" in r.stdout + r.stderr
    assert tb.runs() == 1
    tb.build()
    assert tb.runs() == 2, "the build after a failed one did not re-execute"
    assert tb.n_computes() == 2, "book.cached reused a result of other library code"
    g = tb.glued()
    assert g["version"] != old and g["executions"] == "2", f"the landing page did not follow: {g}"
    assert tb.glued("summary.html")["executions"] == "2", "the summary page did not follow"
    tb.build()
    assert tb.runs() == 2, "the rebuild after the library change is not warm"


@pytest.mark.slow
def test_profile_change_reexecutes(tb):
    dt, out = tb.build(STUMPBOOK_PROFILE="full")
    assert tb.runs() == 2, "STUMPBOOK_PROFILE=full did not re-execute the notebook"
    assert tb.glued()["profile"] == "full"
    # back to the default profile: executes again (the cache holds one profile's outputs)
    tb.build()
    assert tb.runs() == 3 and tb.glued()["profile"] == "quick"


@pytest.mark.slow
def test_preexecuted_notebooks_are_reused_by_the_build(tb):
    """``stumplib.book.sphinxext.preexecute`` (CI executes the chapters two at a time with it) fills the
    execution cache so that the build that follows executes nothing and shows those outputs."""
    _write_nb(tb.book / "ch1.ipynb", _notebook(work=WORK_CELL.replace("value = 1", "value = 3")))
    code = ("import sys; from stumplib.book.sphinxext import preexecute; "
            "r = preexecute([sys.argv[1]], sys.argv[2]); sys.exit(0 if r['succeeded'] else 1)")
    r = subprocess.run([sys.executable, "-c", code, str(tb.book / "ch1.ipynb"),
                        str(tb.book / "_build" / ".jupyter_cache")], env=tb.env(), text=True,
                       capture_output=True, timeout=600, cwd=tb.base)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert tb.runs() == 2
    dt, out = tb.build()
    assert tb.runs() == 2, "the build executed a pre-executed notebook"
    assert tb.glued()["value"] == "3" and "reused from cache: ch1" in out, out[-2000:]


# ------------------------------------------------------------------ book.cached (no book build)
_CACHED_SCRIPT = """
import os, sys
import numpy as np
from stumplib import book
calls = []

def run():
    calls.clear()
    r = book.cached("unit", {"a": 1}, lambda: calls.append(1) or {"x": np.arange(4.0)}, verbose=False)
    assert float(r["x"].sum()) == 6.0
    return "COMPUTED" if calls else "REUSED"

print("first", run(), book.code_version())
print("again", run(), book.code_version())
os.environ["STUMPBOOK_CACHE"] = "0"
print("off", run(), book.code_version())
del os.environ["STUMPBOOK_CACHE"]
with open(sys.argv[1], "a") as f:  # change the library copy (code_version reads the files)
    f.write("\\n# a library change\\n")
print("changed", run(), book.code_version())
print("after", run(), book.code_version())
"""


def test_cached_recomputes_after_a_library_change(tmp_path):
    """``book.cached`` against a copy of the library, in a subprocess: unchanged code reuses the
    stored result, ``STUMPBOOK_CACHE=0`` recomputes, a changed library file recomputes."""
    lib = tmp_path / "lib"
    shutil.copytree(ROOT / "stumplib", lib / "stumplib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUMPBOOK_")}
    env.update(PYTHONPATH=str(lib), STUMPBOOK_RESULTS=str(tmp_path / "results"),
               PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", _CACHED_SCRIPT, str(lib / "stumplib" / "core" / "stats.py")],
                       env=env, text=True, capture_output=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    got = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()}
    assert got["first"][0] == "COMPUTED" and got["again"][0] == "REUSED", got
    assert got["again"][1] == got["first"][1]
    assert got["off"][0] == "COMPUTED", "STUMPBOOK_CACHE=0 reused a stored result"
    assert got["changed"][0] == "COMPUTED", "a library change reused the old result"
    assert got["changed"][1] != got["first"][1], "code_version did not change with the library"
    assert got["after"][0] == "REUSED", got
