"""Shared fixtures: repository paths, float64 and one intra-op thread for every test (both
restored afterwards), every chapter executed once, and :func:`glued` (what an executed notebook
glued).

:func:`executed_chapter` executes a chapter at most once per test session at the ``smoke`` profile
(papermill, a fresh kernel); every test that needs an executed notebook shares that run. The
session's notebook runs (these and the ``profile=full, token=True`` runs) share one temporary
result store (:func:`notebook_results`, ``STUMPBOOK_CACHE=1``), as the book's build does: a result
two runs compute with the same configuration (chapter 6's published curves, the certified scales
chapters 3 and 4 share) is computed once per session and reloaded after (reloading returns the
stored arrays exactly: ``test_results_io.py``). The determinism rerun keeps the cache off. It
runs in :func:`clone`, a copy of the repository's files alone in a temporary folder, importing
``stumplib`` from there: the run sees what a user's clone holds and nothing beside it (no
``../shared``, no ignored or uncommitted build outputs).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

from stumplib.book.studies.published import FILES, reference_file

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.fixture
def book_cache():
    """The book's results cache installed as :func:`stumplib.core.memo.remember`'s store (as
    :func:`stumplib.book.start` does in a chapter), the previous store restored afterwards."""
    from stumplib.book import cache
    from stumplib.core import memo

    old = memo.install(cache.store)
    yield cache.store
    memo.install(old)


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
def _environment(**env: str | None):
    """Set the variables ``env`` (``None``: unset) for the duration, then restore them."""
    old = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _pythonpath(root: Path) -> str:
    """``PYTHONPATH`` with ``root`` first (before the editable install of the working tree)."""
    return os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])


def execute(path: Path, out: Path, parameters: dict, results: Path, timeout: int = 900,
            root: Path | None = None, cache: bool = False) -> dict:
    """Execute ``path`` with papermill into ``out`` (results under ``results``, reloaded from there
    only with ``cache``) and return the executed notebook; a failing cell raises
    :class:`papermill.PapermillExecutionError`.

    With ``root`` (a copy of the repository, :func:`clone`), the copy's notebook of the same name is
    executed there, with ``stumplib`` imported from the copy (first on ``PYTHONPATH``) and
    ``$STUMPBOOK_RUNS`` unset (the copy's ``scripts/``)."""
    import papermill as pm

    env: dict[str, str | None] = dict(STUMPBOOK_CACHE="1" if cache else "0",
                                      STUMPBOOK_RESULTS=str(results),
                                      MPLBACKEND="Agg")
    if root is not None:
        path = root / path.resolve().relative_to(ROOT)
        env.update(PYTHONPATH=_pythonpath(root), STUMPBOOK_RUNS=None)
    with _environment(**env):
        pm.execute_notebook(str(path), str(out), parameters=parameters, cwd=str(path.parent),
                            kernel_name="python3", progress_bar=False, execution_timeout=timeout)
    return json.loads(out.read_text())


# ------------------------------------------------------------------------------------ a clone
def clone_files(root: Path = ROOT) -> list[str] | None:
    """The files a clone of ``root``'s working tree holds: ``git ls-files --cached --others
    --exclude-standard`` (tracked files, and untracked ones git does not ignore: what committing
    the working tree would hold; ignored build outputs, results and caches are left out); ``None``
    outside a git checkout."""
    try:
        got = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted({f for f in got.stdout.decode().split("\0") if f and (root / f).is_file()})


@pytest.fixture(scope="session")
def clone(tmp_path_factory) -> Path:
    """A copy of the repository as a clone holds it (:func:`clone_files`), alone in a temporary
    folder: nothing beside it (no ``../shared``), and ``import stumplib`` with the copy first on
    ``PYTHONPATH`` resolves to the copy (checked). Outside a git checkout: the repository itself."""
    files = clone_files()
    if files is None:
        return ROOT
    root = tmp_path_factory.mktemp("clone") / ROOT.name
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, root / f, follow_symlinks=False)
    assert sorted(p.name for p in root.parent.iterdir()) == [ROOT.name]
    env = dict(os.environ, PYTHONPATH=_pythonpath(root))
    where = subprocess.run([sys.executable, "-c", "import stumplib; print(stumplib.__file__)"],
                           capture_output=True, text=True, env=env, cwd=root / "chapters",
                           check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(root.resolve()), (
        f"stumplib imported from {where}, not from the copy {root}")
    return root


@pytest.fixture(scope="session")
def notebook_results(tmp_path_factory) -> Path:
    """The result store the session's notebook runs share (caching on)."""
    return tmp_path_factory.mktemp("notebook_results")


@pytest.fixture(scope="session")
def executed_chapter(tmp_path_factory, clone, notebook_results):
    """``executed_chapter(path)`` -> the chapter's notebook executed once at ``smoke`` on the CPU (the
    same dict for every caller), in :func:`clone` (``executed_chapter.root``); the execution error,
    re-raised, if it failed."""
    runs: dict[Path, object] = {}

    def get(path: Path) -> dict:
        if path not in runs:
            tmp = tmp_path_factory.mktemp(path.stem)
            try:
                runs[path] = execute(path, tmp / path.name, {"profile": "smoke", "device": "cpu"},
                                     notebook_results, root=clone, cache=True)
            except Exception as exc:  # noqa: BLE001  (recorded once, re-raised to every user)
                runs[path] = exc
        got = runs[path]
        if isinstance(got, Exception):
            raise got
        return got  # type: ignore[return-value]

    get.root = clone  # type: ignore[attr-defined]
    return get


# ------------------------------------------------------------------------------------ reference data
#: chapter 6's published reference curves ship with stumplib (``stumplib/phase/reference/cui2024/``,
#: read through importlib.resources: :func:`stumplib.book.studies.published.reference_file`)
A0 = np.array([[0.6, 0.4], [0.4, 0.6]])
SEM_FILE = FILES["sem"]
POS_FILE = FILES["pos"]


def read_reference(name: str) -> dict:
    """The published theory file ``name`` (shipped with stumplib) as ``{column: array}``."""
    import csv

    with reference_file(name).open(newline="") as fh:
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
