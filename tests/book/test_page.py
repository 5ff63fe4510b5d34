"""Chapter services (``stumplib.book``): ``start``, settings, the shared-data folder and tables.
(The results cache: ``test_cache.py``; bad arguments: ``test_bad_input.py``.)"""
from __future__ import annotations

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
# ------------------------------------------------------------------------------------ shared data
def test_shared_dir_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(book.SHARED_ENV, str(tmp_path))
    assert book.shared_dir() == tmp_path
    monkeypatch.delenv(book.SHARED_ENV)
    assert book.shared_dir() == PACKAGE.parent.parent / "shared"


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


