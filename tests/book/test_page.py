"""Chapter services (``stumplib.book``): ``start``, settings, tables; no data read outside the
repository.
(The results cache: ``test_cache.py``; bad arguments: ``test_bad_input.py``.)"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from stumplib import book
from stumplib.core.version import PACKAGE

TABLE = {"smoke": {"n": 2, "grid": (1, 2)}, "quick": {"n": 20, "grid": (1, 2, 4)},
         "full": {"n": 200, "grid": (1, 2, 4, 8)}}


# ------------------------------------------------------------------------------------ start
def test_start_resolves_the_profile_overrides_and_token_settings():
    ch = book.start("quick", "cpu", 3, table=TABLE, n=None)
    assert (ch.profile, ch.device.type, ch.seed, ch.token) == ("quick", "cpu", 3, False)
    assert ch.S == TABLE["quick"] and ch.S is not TABLE["quick"]
    assert book.start("full", "cpu", table=TABLE, n=7).S["n"] == 7  # a parameter overrides
    tok = book.start("full", "cpu", table=TABLE, token=True, token_overrides={"n": 1})
    assert tok.token and tok.S == {"n": 1, "grid": (1, 2, 4, 8)}  # the largest grid, token work
    assert book.start("full", "cpu", table=TABLE, token_overrides={"n": 1}).S["n"] == 200
    assert torch.get_default_dtype() == torch.float64


def test_start_pins_threads_and_starts_the_clock():
    before = torch.get_num_threads()
    ch = book.start("smoke", "cpu", threads=2)
    try:
        assert torch.get_num_threads() == 2
        assert 0 <= ch.elapsed() < 60 and ch.S == {}
    finally:
        torch.set_num_threads(before)


def test_start_prints_nothing(capsys):
    book.start("smoke", "cpu", table=TABLE)
    assert capsys.readouterr().out == ""


def test_settings_keep_the_profile_table_unchanged():
    S = book.settings("smoke", TABLE, n=5)
    assert S["n"] == 5 and TABLE["smoke"]["n"] == 2


# ------------------------------------------------------------------------------------ cache
# ------------------------------------------------------------------------ nothing outside the repo
#: ways code reaches data outside the repository (the developers' ``../shared`` folder, a machine's
#: absolute path): the published reference curves ship with the package instead
#: (``stumplib.book.studies.published.reference_file``)
OUTSIDE = [re.compile(p) for p in (
    r"""["']\.\./shared""", r"""/\s*["']shared["']""", r"STUMPBOOK_SHARED", r"shared_dir\(",
    r"""["']/work/""", r"parents\[\d\]\.parent\b")]


def _sources():
    """(name, text) of every Python file and chapter code cell the book, tests and scripts run."""
    root = PACKAGE.parent
    files = [*root.joinpath("stumplib").rglob("*.py"), *root.joinpath("tests").rglob("*.py"),
             *root.joinpath("scripts").glob("*.py"), root / "_config.yml"]
    for f in sorted(files):
        if f.resolve() != Path(__file__).resolve() and "__pycache__" not in f.parts:
            yield str(f.relative_to(root)), f.read_text()
    for f in sorted(root.joinpath("chapters").glob("*.ipynb")):
        cells = json.loads(f.read_text())["cells"]
        yield str(f.relative_to(root)), "\n".join("".join(c["source"]) for c in cells
                                                  if c["cell_type"] == "code")


def test_nothing_reads_data_outside_the_repository():
    """A clone has no ``../shared``: no library module, chapter, test or script may look there (or
    at any absolute path of a development machine)."""
    bad = [f"{name}: {m.group(0)!r}" for name, text in _sources() for rx in OUTSIDE
           for m in [rx.search(text)] if m]
    assert not bad, f"code reaching outside the repository: {bad}"


def test_the_outside_patterns_catch_the_old_routes():
    for line in ('REF = book.shared_dir() / "reference"', 'Path(x).parents[1].parent / "shared"',
                 'os.environ.get("STUMPBOOK_SHARED")', 'open("../shared/reference/a.csv")'):
        assert any(rx.search(line) for rx in OUTSIDE), line
    assert not any(rx.search('resources.files("stumplib.phase") / "reference"') for rx in OUTSIDE)


# ------------------------------------------------------------------------------------ tables
def test_table_formats_rows_as_markdown():
    md = book.table([{"a": 1.23456789, "b": "x|y", "c": True}, {"a": 2, "b": "z", "c": False}],
                    display=False).data
    lines = md.splitlines()
    assert lines[0] == "| a | b | c |" and lines[2] == "| 1.235 | x\\|y | True |"


def test_table_headers_are_typeset_and_a_pipe_in_a_header_does_not_split_it():
    md = book.table([{"alpha": 0.7, "|m| sqrt(d), d = 100": 1e-5, "`n_tau`": 3}],
                    display=False).data.splitlines()
    assert md[0] == r"| α | \|m\| √d, d = 100 | `n_tau` |"  # code spans kept as they are
    assert md[1].count("---") == 3 and md[2] == "| 0.7 | 10⁻⁵ | 3 |"


