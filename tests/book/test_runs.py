"""Tests of ``stumplib.book.runs``: where the committed runs are, and the seed audit read back."""
from __future__ import annotations

import json

from stumplib.book import runs
from stumplib.core.version import PACKAGE


def test_runs_dir_is_the_checkouts_scripts_folder_unless_the_environment_says(monkeypatch, tmp_path):
    monkeypatch.delenv(runs.RUNS_ENV, raising=False)
    assert runs.runs_dir() == PACKAGE.parent / "scripts"
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path))
    assert runs.runs_dir() == tmp_path and runs.run_file("x.npz") == tmp_path / "x.npz"


def test_read_audit_reads_the_configured_folder_and_is_empty_without_a_file(monkeypatch, tmp_path):
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path))
    assert runs.read_audit() == {}
    (tmp_path / runs.AUDIT_NAME).write_text(json.dumps({"commit": "abc", "claims": {}}))
    assert runs.read_audit()["commit"] == "abc"
    assert runs.read_audit(tmp_path / "other.json") == {}
