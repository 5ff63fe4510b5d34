"""Shared fixtures: repository paths, float64 and one intra-op thread for every test (both
restored afterwards), every chapter executed once, and :func:`glued` (what an executed notebook
glued).

:func:`executed_chapter` executes a chapter at most once per test session at the ``smoke`` profile
(papermill, a fresh kernel, ``STUMPBOOK_CACHE=0`` so nothing is reloaded, results written under a
temporary ``STUMPBOOK_RESULTS``); every test that needs an executed notebook shares that run.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

from stumplib.book import shared_dir

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread for every test, restored afterwards: the tests' tensors are small, gain
    nothing from two threads, and on a shared machine idle threads spinning slow them ten-fold. A
    test that needs more sets them itself (and this fixture restores the count after it)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def glued(nb: dict) -> dict[str, dict]:
    """What an executed notebook glued: name -> the output's data (mime type -> payload; papermill
    records them as ``application/papermill.record/<mime>``)."""
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None:
                out[name] = o.get("data", {})
    return out


def payload(data: dict, mimes: tuple[str, ...] = ("image/png", "image/svg+xml", "text/html", "text/plain")
            ) -> tuple[str, str] | None:
    """The first of ``mimes`` present in a glued output's data, as ``(mime, text)``; ``None`` if none."""
    for mime in mimes:
        got = [k for k in data if k.endswith(mime)]
        if got:
            v = data[got[0]]
            return mime, "".join(v) if isinstance(v, list) else v
    return None


@contextmanager
def _environment(**env: str):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute(path: Path, out: Path, parameters: dict, results: Path, timeout: int = 900) -> dict:
    """Execute ``path`` with papermill into ``out`` (caching off, results under ``results``) and return
    the executed notebook; a failing cell raises :class:`papermill.PapermillExecutionError`."""
    import papermill as pm

    with _environment(STUMPBOOK_CACHE="0", STUMPBOOK_RESULTS=str(results), MPLBACKEND="Agg"):
        pm.execute_notebook(str(path), str(out), parameters=parameters, cwd=str(path.parent),
                            kernel_name="python3", progress_bar=False, execution_timeout=timeout)
    return json.loads(out.read_text())


@pytest.fixture(scope="session")
def executed_chapter(tmp_path_factory):
    """``executed_chapter(path)`` -> the chapter's notebook executed once at ``smoke`` on the CPU (the
    same dict for every caller); the execution error, re-raised, if it failed."""
    runs: dict[Path, object] = {}

    def get(path: Path) -> dict:
        if path not in runs:
            tmp = tmp_path_factory.mktemp(path.stem)
            try:
                runs[path] = execute(path, tmp / path.name, {"profile": "smoke", "device": "cpu"},
                                     tmp / "results")
            except Exception as exc:  # noqa: BLE001  (recorded once, re-raised to every user)
                runs[path] = exc
        got = runs[path]
        if isinstance(got, Exception):
            raise got
        return got  # type: ignore[return-value]

    return get


# ------------------------------------------------------------------------------------ reference data
#: the published reference curves of chapter 6 (``book.shared_dir()``: ``$STUMPBOOK_SHARED`` or the
#: ``shared/`` folder next to the repository)
REF = shared_dir() / "reference" / "cui2024"
A0 = np.array([[0.6, 0.4], [0.4, 0.6]])
SEM_FILE = "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv"
POS_FILE = "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3_para.csv"
#: tests that read the published files skip only where the shared folder itself is absent (a user's
#: clone); where it exists and a file is missing they fail
needs_shared = pytest.mark.skipif(not REF.parent.parent.exists(),
                                  reason=f"{REF.parent.parent} absent (not a developer checkout)")


def read_reference(name: str) -> dict:
    """The published reference file ``name`` as ``{column: array}``."""
    import csv

    if not (REF / name).exists():
        pytest.fail(f"published reference file missing: {REF / name} (the shared folder exists)")
    with open(REF / name) as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0] if k}


# ------------------------------------------------------------------------- chapter 6 sample problems
def teacher_sample(d: int, n: int, *, seed: int = 0, omega: float = 0.3):
    """A small sample of the positional/semantic task: ``(generator, Z (n, d), q* (d, 2), T)``
    with ``T = data.teacher_matrix(Z, q*, omega)``, all drawn from one seeded generator (the
    generator is returned so a test can draw more from the same stream)."""
    from stumplib.phase import data

    g = torch.Generator().manual_seed(seed)
    Z = data.sample_tokens(n, d, generator=g)
    qs = data.sample_teacher(d, generator=g)
    return g, Z, qs, data.teacher_matrix(Z, qs, omega=omega)
