"""Chapter services (``stumplib.book``): ``start``, settings, the results cache (flat and structured
results, reuse, configuration and code keys, ``STUMPBOOK_CACHE=0``), pruning, the shared-data
folder and tables. (The cache across a library change and the book build: ``test_build_cache.py``;
bad arguments: ``test_bad_input.py``.)"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from stumplib import book
from stumplib.results_io import save_results
from stumplib.trainer import RunConfig, TrainResult, train_gd

TABLE = {"smoke": {"n": 2, "grid": (1, 2)}, "quick": {"n": 20, "grid": (1, 2, 4)},
         "full": {"n": 200, "grid": (1, 2, 4, 8)}}


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """An empty results folder for :func:`book.cached`, reuse on."""
    monkeypatch.setenv(book.RESULTS_ENV, str(tmp_path / "results"))
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    return tmp_path / "results"


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
def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value() if callable(value) else value
    return compute, calls


def test_cached_flat_dict_is_computed_once_and_reloaded(results):
    compute, calls = _counting({"x": np.arange(4.0), "n": 3})
    first = book.cached("unit", {"a": 1}, compute, verbose=False)
    again = book.cached("unit", {"a": 1}, compute, verbose=False)
    assert len(calls) == 1 and set(first) == set(again) == {"x", "n"}
    for k in first:
        assert isinstance(first[k], np.ndarray)
        np.testing.assert_array_equal(first[k], again[k])
    book.cached("unit", {"a": 2}, compute, verbose=False)  # another configuration: computes
    assert len(calls) == 2 and len(list(results.glob("unit-*.npz"))) == 2


def test_cached_turned_off_recomputes(results, monkeypatch):
    compute, calls = _counting({"x": np.ones(2)})
    book.cached("unit", {}, compute, verbose=False)
    monkeypatch.setenv(book.CACHE_ENV, "0")
    book.cached("unit", {}, compute, verbose=False)
    assert len(calls) == 2


def test_cached_key_follows_the_code_version(results, monkeypatch):
    compute, calls = _counting({"x": np.ones(2)})
    book.cached("unit", {}, compute, verbose=False)
    monkeypatch.setattr(book, "code_version", lambda: "0" * 16)
    book.cached("unit", {}, compute, verbose=False)
    assert len(calls) == 2


def test_cached_structured_result_comes_back_as_computed(results):
    """A :class:`TrainResult` (a dataclass holding RunConfig dataclasses, arrays, ``None`` and an
    int) is stored without any ``arrays()`` pair and reloads equal, with its types."""
    cfgs = [RunConfig(6, 6, seed=0, lr=1e2, beta_stop=20.5, lr_marks=((20.2, 50.0),)),
            RunConfig(6, 6, seed=1, lr=1e2)]
    compute, calls = _counting(lambda: {"run": train_gd(cfgs, 40, device="cpu", progress=False),
                                        "note": "two runs", "extra": None})
    first = book.cached("train", {"steps": 40}, compute, verbose=False)
    again = book.cached("train", {"steps": 40}, compute, verbose=False)
    assert len(calls) == 1
    for got in (first, again):
        r = got["run"]
        assert isinstance(r, TrainResult) and r.configs == cfgs and r.last_step == 40
        assert got["note"] == "two runs" and got["extra"] is None and r.scale_step is None
    for name in ("steps", "beta", "b", "loss", "diverged_at", "stop_step", "mark_step", "mark_beta"):
        np.testing.assert_array_equal(getattr(first["run"], name), getattr(again["run"], name))


def test_cached_prints_only_when_verbose(results, capsys):
    def compute():
        return {"x": np.ones(1)}
    book.cached("unit", {}, compute, verbose=False)
    assert capsys.readouterr().out == ""
    book.cached("unit", {}, compute)
    assert "reloaded" in capsys.readouterr().out


# ------------------------------------------------------------------------------------ prune
def test_prune_deletes_only_what_cannot_be_reloaded(results):
    book.cached("current", {}, lambda: {"x": np.ones(1)}, verbose=False)
    book.cached("current_tree", {}, lambda: {"x": {"y": np.ones(1)}}, verbose=False)
    old = save_results(results / "old-0123456789abcdef.npz", {"x": np.ones(1)},
                       {"config": {}, "code": "0" * 16, "compute": ""})
    (results / "broken-0000000000000000.npz").write_bytes(b"not a zip")
    (results / "current-x.npz.123.tmp").write_bytes(b"half")
    listed = book.prune_results(dry_run=True)
    assert {p.name for p in listed} == {old.name, "broken-0000000000000000.npz", "current-x.npz.123.tmp"}
    assert all(p.exists() for p in listed)
    assert book.prune_results() == listed and not any(p.exists() for p in listed)
    assert sorted(p.name.split("-")[0] for p in results.iterdir()) == ["current", "current_tree"]
    assert book.prune_results() == []


def test_prune_command_line(results, capsys):
    save_results(results / "old-0123456789abcdef.npz", {"x": np.ones(1)}, {"code": "0"})
    assert book.main(["prune", "--dry-run"]) == 0
    assert "would delete 1 files" in capsys.readouterr().out
    assert book.main(["prune"]) == 0 and not list(results.iterdir())


# ------------------------------------------------------------------------------------ shared data
def test_shared_dir_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(book.SHARED_ENV, str(tmp_path))
    assert book.shared_dir() == tmp_path
    monkeypatch.delenv(book.SHARED_ENV)
    assert book.shared_dir() == book.PACKAGE.parent.parent / "shared"


# ------------------------------------------------------------------------------------ tables
def test_table_formats_rows_as_markdown():
    md = book.table([{"a": 1.23456789, "b": "x|y", "c": True}, {"a": 2, "b": "z", "c": False}],
                    display=False).data
    lines = md.splitlines()
    assert lines[0] == "| a | b | c |" and lines[2] == "| 1.235 | x\\|y | True |"
